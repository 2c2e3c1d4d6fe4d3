/**
 * Issue 15.4: one contract for missing and wrong paths. Usage errors (exit 2, short usage)
 * are about the command line; a path that does not exist, is of the wrong kind or cannot be
 * read is exit 1 with one sentence naming it. Every command is tried against a missing path,
 * a file where a folder is expected, a folder where a file is expected and a folder without
 * permission (run as an unprivileged user when the tests run as root, who may read anything).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-cli-paths-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

function workspace(): string {
  const d = tmp();
  fs.chmodSync(d, 0o755);
  fs.writeFileSync(path.join(d, 'afile'), 'x');
  fs.mkdirSync(path.join(d, 'adir'));
  fs.mkdirSync(path.join(d, 'noperm'));
  fs.chmodSync(path.join(d, 'noperm'), 0o000);
  return d;
}

function cli(cwd: string, args: string[], unprivileged = false) {
  const cmd = unprivileged && asRoot ? 'setpriv' : process.execPath;
  const argv =
    unprivileged && asRoot ? [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, CLI, ...args] : [CLI, ...args];
  const r = spawnSync(cmd, argv, { cwd, encoding: 'utf8', timeout: 20_000, env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
  return { code: r.status, lines: (r.stderr ?? '').split('\n').filter((l) => l !== ''), stdout: r.stdout ?? '' };
}

/** Each command with `X` where the path goes, and what a file / folder there is. */
const COMMANDS: { args: string[]; file: RegExp; folder: RegExp }[] = [
  {
    args: ['export', '--config', 'X', '--out', 'o'],
    file: /is a file, expected a folder/,
    folder: /has no config\.json — to export from an existing ONNX use --onnx/,
  },
  { args: ['export', '--onnx', 'X', '--checkpoint', 'adir', '--out', 'o'], file: /./, folder: /is a folder, expected a file/ },
  {
    args: ['prepare', '--checkpoint', 'X', '--dtype', 'float32', '--out', 'p'],
    file: /is a file, expected a folder/,
    folder: /has no model\.safetensors\.index\.json and no \*\.safetensors/,
  },
  { args: ['compile', 'X'], file: /is a file, expected a folder — give the export directory/, folder: /no model\.onnx/ },
  { args: ['run', 'X', '--input-ids', '1'], file: /is a file but not an \.onnx model/, folder: /no compile\.json/ },
  { args: ['check', 'X'], file: /./, folder: /is a folder, expected a file/ },
  { args: ['inspect', 'X'], file: /./, folder: /has no model\.safetensors\.index\.json/ },
];
const sub = (args: string[], x: string) => args.map((a) => (a === 'X' ? x : a));

describe('paths on the command line: exit 1 and one sentence, never usage text or a raw errno', () => {
  const ws = workspace();
  for (const c of COMMANDS) {
    const name = c.args.slice(0, 2).join(' ');
    it(`${name}: a missing path`, () => {
      const r = cli(ws, sub(c.args, 'nope'));
      expect(r.code).toBe(1);
      expect(r.lines).toEqual(['weight-spec: nope: no such file or directory']);
    });
    it(`${name}: a file / a folder of the wrong kind`, () => {
      for (const [x, want] of [
        ['afile', c.file],
        ['adir', c.folder],
      ] as const) {
        const r = cli(ws, sub(c.args, x));
        expect(r.code, r.lines.join('\n')).toBe(c.args[0] === 'check' && x === 'afile' ? 1 : 1);
        expect(r.lines.length, r.lines.join('\n')).toBe(c.args[0] === 'check' && x === 'afile' ? 0 : 1);
        if (r.lines.length) {
          expect(r.lines[0]).toMatch(/^weight-spec: /);
          expect(r.lines[0]).toMatch(want);
          expect(r.lines[0]).not.toMatch(/\b(ENOENT|EACCES|EEXIST|EISDIR|ENOTDIR)\b|usage:/);
        }
      }
    });
    it(`${name}: a folder without permission`, () => {
      const r = cli(ws, sub(c.args, 'noperm'), true);
      expect(r.code, r.lines.join('\n')).toBe(1);
      expect(r.lines).toHaveLength(1);
      const wantsFile = c.args[0] === 'check' || c.args[1] === '--onnx';
      expect(r.lines[0]).toBe(
        wantsFile
          ? 'weight-spec: noperm: is a folder, expected a file'
          : 'weight-spec: noperm: permission denied (the folder cannot be listed)',
      );
    });
  }
  it('--out that is a file or a FIFO is refused in one line', () => {
    fs.mkdirSync(path.join(ws, 'm'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'm', 'config.json'), '{}');
    const r = cli(ws, ['export', '--config', 'm', '--out', 'afile']);
    expect(r.code).toBe(1);
    expect(r.lines).toEqual(['weight-spec: afile: is a file, expected a folder for the output']);
  });
});
