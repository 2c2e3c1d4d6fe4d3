/**
 * Issue #14, point 14: inputs that used to get a misleading message (or none) now get one
 * line that says what is wrong: a spec with a BOM or in UTF-16, a folder where a file is
 * expected, an empty location, `--ctx-len 9007199254740993` / `--ctx-len 0x10` (accepted as
 * 9007199254740992 and 16 before), `--out ''` (the current directory before).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { twoFileCheckpoint } from '../support/check-helpers';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-messages-');

function cli(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', WEIGHT_SPEC_DEBUG: '' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, first: r.stderr.split('\n')[0] };
}

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
});

describe('messages that used to mislead (#14.14)', () => {
  it('a spec with a UTF-8 BOM, or in UTF-16, says so', () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(dir);
    const text = JSON.stringify(spec, null, 2);
    fs.writeFileSync(path.join(dir, 'bom.weight_spec.json'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]));
    fs.writeFileSync(path.join(dir, 'u16.weight_spec.json'), Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
    fs.writeFileSync(path.join(dir, 'u16be.weight_spec.json'), Buffer.from(text, 'utf16le').swap16());
    const bom = cli(['check', 'bom.weight_spec.json', '--no-onnx'], dir);
    expect(bom.code).toBe(1);
    expect(bom.stderr).toBe(
      `weight-spec: ${path.join(dir, 'bom.weight_spec.json')}: starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM (at byte 0)\n`,
    );
    for (const f of ['u16.weight_spec.json', 'u16be.weight_spec.json']) {
      const r = cli(['check', f, '--no-onnx'], dir);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `weight-spec: ${path.join(dir, f)}: is UTF-16 encoded; a weight spec is UTF-8 JSON (save it as UTF-8) (at byte 0)\n`,
      );
    }
  });

  it('a folder where a file is expected (EISDIR) and an empty location', () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(dir);
    fs.mkdirSync(path.join(dir, 'folder.weight_spec.json'));
    const eisdir = cli(['check', 'folder.weight_spec.json'], dir);
    expect(eisdir.code).toBe(1);
    expect(eisdir.stderr).toBe('weight-spec: folder.weight_spec.json: is a folder, expected a file\n');
    const empty = structuredClone(spec) as unknown as { inputs: { location: unknown }[] };
    empty.inputs[0]!.location = {};
    fs.writeFileSync(path.join(dir, 'empty.weight_spec.json'), JSON.stringify(empty, null, 2));
    const r = cli(['check', 'empty.weight_spec.json', '--no-onnx'], dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/error \[schema\] inputs\[0\]\.location: missing required field "file"/);
    expect(r.stdout).toMatch(/error \[schema\] inputs\[0\]\.location: missing required field "key"/);
  });

  it("--ctx-len beyond 2^53 or in hex, and --out '', are usage errors", () => {
    const dir = tmp();
    const config = path.join(fixturesDir(), 'llama');
    const big = cli(['export', '--config', config, '--out', 'o', '--ctx-len', '9007199254740993'], dir);
    expect(big.code).toBe(2);
    expect(big.first).toBe('weight-spec: export: --ctx-len is too large (got 9007199254740993; at most 9007199254740991)');
    const hex = cli(['export', '--config', config, '--out', 'o', '--ctx-len', '0x10'], dir);
    expect(hex.code).toBe(2);
    expect(hex.first).toBe('weight-spec: export: --ctx-len needs a decimal integer (got "0x10")');
    const empty = cli(['export', '--config', config, '--out', ''], dir);
    expect(empty.code).toBe(2);
    expect(empty.first).toBe('weight-spec: export: --out needs a value <dir> (got an empty string)');
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
