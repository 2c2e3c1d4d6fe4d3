/**
 * Issue #14, point 10: control characters in keys and names never reach the terminal or the
 * editor raw. A key `evil\e[2K\r\e[32mok` would erase the line and print a forged green "ok";
 * every human-readable output writes it as `\u001b[2K\u000d\u001b[32mok`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { startInMemory } from '../../../server/test/harness';
import { twoFileCheckpoint, writeTensors } from '../support/check-helpers';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-escape-');
const EVIL = 'evil\u001b[2K\r\u001b[32mok';
const SHOWN = 'evil\\u001b[2K\\u000d\\u001b[32mok';
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

function cli(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', WEIGHT_SPEC_DEBUG: '' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
});

describe('control characters are escaped in human-readable output (#14.10)', () => {
  it('inspect and check print a hostile key escaped; --json stays exact JSON', () => {
    const dir = tmp();
    writeTensors(path.join(dir, 'evil.safetensors'), [{ key: EVIL, dtype: 'F32', shape: [2] }]);
    const ins = cli(['inspect', 'evil.safetensors'], dir);
    expect(ins.code).toBe(0);
    expect(ins.stdout).toContain(SHOWN);
    expect(ins.stdout).not.toMatch(RAW);
    const json = cli(['inspect', 'evil.safetensors', '--json'], dir);
    expect((JSON.parse(json.stdout) as { tensors: { key: string }[] }).tensors[0]!.key).toBe(EVIL);

    const { spec } = twoFileCheckpoint(dir);
    spec.inputs[0]!.location.key = EVIL;
    fs.writeFileSync(path.join(dir, 'model.weight_spec.json'), JSON.stringify(spec, null, 2));
    const chk = cli(['check', 'model.weight_spec.json', '--no-onnx'], dir);
    expect(chk.code).toBe(1);
    expect(chk.stdout).toContain(SHOWN);
    expect(chk.stdout + chk.stderr).not.toMatch(RAW);
  });

  it('the language server escapes them in diagnostics', async () => {
    const dir = tmp();
    const { spec } = twoFileCheckpoint(dir);
    spec.inputs[0]!.location.key = EVIL;
    const file = path.join(dir, 'model.weight_spec.json');
    fs.writeFileSync(file, JSON.stringify(spec, null, 2));
    const client = await startInMemory();
    try {
      const { diagnostics } = await client.open(file);
      const messages = diagnostics.map((d) => d.message).join('\n');
      expect(messages).toContain(SHOWN);
      expect(messages).not.toMatch(RAW);
    } finally {
      client.close();
    }
  });
});
