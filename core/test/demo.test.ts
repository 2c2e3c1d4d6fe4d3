/**
 * The README's first command: `weight-spec demo` makes its own tiny model and runs export →
 * prepare → compile → check → run. This keeps that promise true.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../test/support/fixtures';

it('weight-spec demo runs the whole pipeline on the tiny model it makes', () => {
  const out = mkdtempSync(path.join(os.tmpdir(), 'ws-demo-'));
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), 'demo', '--out', out, '--max-new-tokens', '4'], {
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' },
  });
  expect(r.status, r.stderr).toBe(0);
  // The run step prints the generated ids on their own line: four ids in the tiny vocab.
  const ids = r.stdout.split('\n').find((l) => /^\d+(,\d+){3}$/.test(l));
  expect(ids, r.stdout).toBeDefined();
  for (const id of ids!.split(',').map(Number)) expect(id).toBeLessThan(128);
  const spec = JSON.parse(readFileSync(path.join(out, 'tiny-llama-export', 'weight_spec.json'), 'utf8'));
  expect(spec.version).toBe(5);
  expect(existsSync(path.join(out, 'tiny-llama-export', 'compile.json'))).toBe(true);
  expect(r.stdout).toContain('weight_spec.json: ok');
});
