/**
 * Bad serving options through the CLI: one line `weight-spec: …`, exit 2 for usage errors, exit 1
 * for a request the graph cannot serve; nothing written by a refused export.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';
import { tempDirs } from '../../../test/support/temp';
import { ws } from '../support/serving-support';

const tmp = tempDirs('ws-serving-cli-');

function model(root: string): string {
  const d = path.join(root, 'mistral');
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify(SYNTHETIC_CONFIGS.mistral));
  return d;
}

it('export refuses incomplete or out-of-range serving options with one line and exit 2', async () => {
  const root = tmp();
  const cfg = model(root);
  const out = path.join(root, 'out');
  const cases: [string[], RegExp][] = [
    [['--ctx-len', '32', '--comp-ctx-lengths-prefill', '16'], /--comp-ctx-lengths-prefill and --comp-ctx-lengths-decode together/],
    [['--comp-ctx-lengths-prefill', '16', '--comp-ctx-lengths-decode', '32'], /need --ctx-len/],
    [['--ctx-len', '32', '--comp-ctx-lengths-prefill', '16,x', '--comp-ctx-lengths-decode', '32'], /"x" is not a positive integer/],
    [['--ctx-len', '32', '--comp-ctx-lengths-prefill', '0', '--comp-ctx-lengths-decode', '32'], /"0" is not a positive integer/],
    [['--max-top-k', '8'], /--max-top-k and --return-pdfs go with --sampler/],
    [['--sampler', '--max-top-k', '97'], /--max-top-k must be between 1 and the vocabulary size 96/],
  ];
  for (const [flags, msg] of cases) {
    const r = await ws(root, ['export', '--config', cfg, '--out', out, ...flags], false);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(msg);
    expect(r.stderr).toMatch(/^weight-spec: /);
    expect(fs.existsSync(out)).toBe(false);
  }
  const legacy = await ws(root, ['export', '--onnx', path.join(root, 'x.onnx'), '--checkpoint', cfg, '--out', out, '--sampler'], false);
  expect(legacy.status).toBe(2);
  expect(legacy.stderr).toMatch(/--sampler goes with --config/);
});

it('run refuses bad sampling values (exit 2) before opening the model', async () => {
  const root = tmp();
  const cases: [string[], RegExp][] = [
    [['--top-p', '0'], /--top-p 0: must be in \(0, 1\]/],
    [['--temperature', '-1'], /--temperature -1: must be ≥ 0/],
    [['--min-p', '2'], /--min-p 2: must be in \[0, 1\]/],
    [['--repetition-penalty', '0'], /--repetition-penalty 0: must be > 0/],
  ];
  for (const [flags, msg] of cases) {
    const r = await ws(root, ['run', path.join(root, 'missing'), '--input-ids', '1,2', ...flags], false);
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(msg);
  }
});
