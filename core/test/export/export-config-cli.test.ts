/**
 * `weight-spec export --config` through the built CLI (node dist/cli.js): exit codes, the
 * one-screen summary, usage errors, and the full-size configs of the benchmark exporting.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configsDir, haveFixtures, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

const cli = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-export-cli-')();
const run = (...args: string[]) => spawnSync(process.execPath, [cli, 'export', ...args], { encoding: 'utf8', cwd: tmp });

describe('weight-spec export --config (CLI)', () => {
  it('exports a config-only model directory and prints a one-screen summary', () => {
    const dir = path.join(tmp, 'tiny-qwen3');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify(SYNTHETIC_CONFIGS.qwen3));
    const r = run('--config', dir, '--out', 'out', '--ctx-len', '32', '--dtype', 'float16');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).toBeLessThanOrEqual(24);
    expect(lines[0]).toMatch(/^exported tiny-qwen3 \(qwen3, 2 layers/);
    expect(r.stdout).toContain('weight_spec.json');
    for (const f of ['model.onnx', 'weight_spec.json', 'export-report.json']) expect(existsSync(path.join(tmp, 'out', f))).toBe(true);
  });

  it('usage errors exit 2, bad configs exit 1, each with one line', () => {
    const none = run('--out', 'x');
    expect(none.status).toBe(2);
    const both = run('--config', 'a', '--onnx', 'b.onnx', '--out', 'x');
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/exactly one of --config/);
    const bad = path.join(tmp, 'bad');
    mkdirSync(bad);
    writeFileSync(
      path.join(bad, 'config.json'),
      JSON.stringify({ ...SYNTHETIC_CONFIGS.qwen3, rope_scaling: { rope_type: 'dynamic', factor: 4 } }),
    );
    const r = run('--config', bad, '--out', 'bad-out');
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/bad\/config\.json: rope_scaling type "dynamic" is not supported/);
    expect(existsSync(path.join(tmp, 'bad-out', 'model.onnx'))).toBe(false);
  });

  it.runIf(haveFixtures())('the benchmark configs (Qwen3-30B-A3B, Llama-3.1-8B, Mixtral-8x7B) export', () => {
    for (const name of ['qwen3-30b-a3b', 'llama-3.1-8b', 'mixtral-8x7b']) {
      const dir = path.join(tmp, name);
      mkdirSync(dir);
      copyFileSync(path.join(configsDir(), `${name}.json`), path.join(dir, 'config.json'));
      const r = run('--config', dir, '--out', `${name}-out`);
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const report = JSON.parse(readFileSync(path.join(tmp, `${name}-out`, 'export-report.json'), 'utf8'));
      expect(report.graph.layers).toBe(name === 'qwen3-30b-a3b' ? 48 : 32);
    }
  });
});
