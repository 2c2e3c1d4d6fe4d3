/**
 * The acceptance path through the real CLI for every fixture family (and for the
 * other families on bf16 checkpoints made in code, judged by the float64 reference):
 * export --config → prepare → compile (ORT) → run --dump-logits (fed through the KV cache one
 * id at a time) against reference.json, greedy run --max-new-tokens 5 against generated_ids,
 * float32 (≤ 1e-4) and float16 (≤ 2e-2, gemma2 8e-2: see float16Tolerance); and --phase prefill / decode graphs over one
 * prepared checkpoint giving the logits of `both`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, float16Tolerance, LEGACY_FAMILIES, type FixtureRef } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { referenceForward } from '../support/graph-reference';
import { SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-export-e2e-')();

/**
 * `weight-spec <args>` run in this process (the commands' code as the CLI runs it; the
 * process itself is covered by cli.test.ts and compile-cli.test.ts): ONNX Runtime loads once
 * instead of once per step, which halves this file's time.
 */
const ws = (...args: string[]): Promise<string> => cliStdout(tmp, ...args);

describeFixtures('export --config → prepare → compile → run equals the fixtures', () => {
  for (const fam of LEGACY_FAMILIES) {
    for (const dtype of ['float32', 'float16'] as const) {
      it(`${fam} ${dtype}`, async () => {
        const src = path.join(fixturesDir(), fam);
        const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as FixtureRef;
        const prepared = path.join(tmp, `${fam}-qeff-prepared-${dtype}`);
        const out = path.join(tmp, `${fam}-${dtype}-export`);
        await ws('export', '--config', src, '--out', out, '--dtype', dtype, '--ctx-len', '32');
        await ws('prepare', '--checkpoint', src, '--dtype', dtype, '--out', prepared);
        await ws('compile', out, '--prepared', prepared);
        const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
        const dump = path.join(tmp, `${fam}-${dtype}-logits.json`);
        await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
        const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
        expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(dtype === 'float32' ? 1e-4 : float16Tolerance(fam));
        if (dtype === 'float32') {
          const gen = (await ws('run', out, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5')).trim();
          expect(gen).toBe(ref.generated_ids.join(','));
        }
      });
    }
  }

  // families without fixtures: bf16 checkpoints made in code, judged by the float64 reference
  for (const name of [
    'mistral',
    'qwen3',
    'gemma',
    'qwen3_moe',
    'llama-rope-llama3',
    'gpt2-prefixed',
    'granite',
    'olmo2',
    'falcon-7b',
    'falcon-40b',
    'falcon-seq',
  ]) {
    it(`${name} (checkpoint made in code) float32 and float16`, async () => {
      const cfg = SYNTHETIC_CONFIGS[name]!;
      const src = path.join(tmp, `synthetic-${name}`);
      const raw = await writeRandomModel(src, cfg, 11);
      const ids = [4, 19, 33, 7, 61, 2, 45, 12, 28];
      const ref = referenceForward(cfg, raw, ids);
      for (const dtype of ['float32', 'float16']) {
        const prepared = path.join(tmp, `synthetic-${name}-qeff-prepared-${dtype}`);
        const out = path.join(tmp, `synthetic-${name}-${dtype}-export`);
        await ws('export', '--config', src, '--out', out, '--dtype', dtype, '--ctx-len', '16');
        await ws('prepare', '--checkpoint', src, '--dtype', dtype, '--out', prepared);
        await ws('compile', out, '--prepared', prepared);
        const dump = path.join(tmp, `synthetic-${name}-${dtype}.json`);
        await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
        const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
        expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(dtype === 'float32' ? 1e-4 : 2e-2);
        if (dtype === 'float32') {
          // greedy decoding gives the reference's tokens (argmax of its logits, fed back)
          const want: number[] = [];
          for (let t = 0; t < 4; t++) {
            const last = referenceForward(cfg, raw, [...ids, ...want]).at(-1)!;
            want.push(last.indexOf(Math.max(...last)));
          }
          expect((await ws('run', out, '--input-ids', ids.join(','), '--max-new-tokens', '4')).trim()).toBe(want.join(','));
        }
      }
    });
  }

  it('--phase prefill and --phase decode graphs over one prepared checkpoint give the logits of both', async () => {
    const src = path.join(fixturesDir(), 'mixtral');
    const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as FixtureRef;
    const prepared = path.join(tmp, 'phase-qeff-prepared-float32');
    await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const specs: string[] = [];
    for (const phase of ['prefill', 'decode', 'both']) {
      const out = path.join(tmp, `phase-${phase}`);
      await ws('export', '--config', src, '--out', out, '--phase', phase, '--ctx-len', '32');
      await ws('compile', out, '--prepared', prepared);
      specs.push(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'));
      const dump = path.join(tmp, `phase-${phase}.json`);
      await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
      const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
      expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
    }
    expect(specs[0]).toBe(specs[2]);
    expect(specs[1]).toBe(specs[2]);
  });
});
