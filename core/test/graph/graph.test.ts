/**
 * The graph builder against the fixtures' reference logits (ONNX Runtime, weights fed as
 * inputs from the real fixture checkpoints; MoE experts stacked per the prepared layout).
 * Also validates the independent float64 reference forward used by graph-families.test.ts.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { archFromConfig, buildCausalLM, checkGraph } from '../../src/export/exporter';
import { describeFixtures, fixturesDir, float16Tolerance, LEGACY_FAMILIES, type FixtureRef } from '../../../test/support/fixtures';
import { referenceForward } from '../support/graph-reference';
import { argmax, GraphRunner, loadCheckpoint, maxAbsDiff, stackExperts } from '../support/graph-support';

const CTX = 32;

async function fixture(fam: string) {
  const dir = path.join(fixturesDir(), fam);
  const cfg = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const raw = await loadCheckpoint(dir);
  const ref = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8')) as FixtureRef;
  return { dir, cfg, raw, prepared: stackExperts(raw), ref, ids: [...ref.input_ids, ...ref.generated_ids.slice(0, -1)] };
}

describeFixtures('graph builder vs fixture reference logits', () => {
  for (const fam of LEGACY_FAMILIES) {
    it(`${fam}: the float64 reference forward reproduces reference.json (validates the judge)`, async () => {
      const f = await fixture(fam);
      expect(maxAbsDiff(referenceForward(f.cfg, f.raw, f.ids), f.ref.logits)).toBeLessThanOrEqual(1e-4);
    });

    it(`${fam}: token-at-a-time logits match, greedy decode reproduces generated_ids`, async () => {
      const f = await fixture(fam);
      const a = archFromConfig(f.cfg, path.join(f.dir, 'config.json'), { keys: new Set(f.prepared.keys()) });
      const g = buildCausalLM(a, { dtype: 'float32', ctxLen: CTX });
      expect(checkGraph(g.model)).toEqual([]);
      const r = await GraphRunner.open(g, f.prepared);
      const { rows } = await r.tokenByToken(f.ids, r.emptyCache(1, a.nKv, CTX, a.headDim));
      expect(maxAbsDiff(rows, f.ref.logits)).toBeLessThanOrEqual(1e-4);

      // greedy: prefill the prompt in one call, then feed back the argmax
      let s = await r.step([f.ref.input_ids], [f.ref.input_ids.map((_, i) => i)], r.emptyCache(1, a.nKv, CTX, a.headDim));
      const gen: number[] = [];
      for (let t = 0; t < f.ref.generated_ids.length; t++) {
        const next = argmax(s.logits[0]!);
        gen.push(next);
        s = await r.step([[next]], [[f.ref.input_ids.length + t]], s.cache);
      }
      expect(gen).toEqual(f.ref.generated_ids);
    });

    it(`${fam}: prefill then decode equals one token at a time; prefill/decode phase graphs equal both`, async () => {
      const f = await fixture(fam);
      const a = archFromConfig(f.cfg, 'config.json', { keys: new Set(f.prepared.keys()) });
      const both = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: CTX }), f.prepared);
      const pre = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: CTX, phase: 'prefill' }), f.prepared);
      const dec = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: CTX, phase: 'decode' }), f.prepared);
      const n = f.ref.input_ids.length;
      const rest = f.ids.slice(n);
      for (const [p, d] of [
        [both, both],
        [pre, dec],
      ] as const) {
        const s = await p.step([f.ref.input_ids], [f.ref.input_ids.map((_, i) => i)], p.emptyCache(1, a.nKv, CTX, a.headDim));
        const { rows } = await d.tokenByToken(rest, s.cache, n);
        expect(maxAbsDiff([s.logits[0]!, ...rows], f.ref.logits.slice(n - 1))).toBeLessThanOrEqual(1e-4);
      }
    });

    it(`${fam}: padded batch prefill (position -1 padding) gives each row its last valid logits`, async () => {
      const f = await fixture(fam);
      const a = archFromConfig(f.cfg, 'config.json', { keys: new Set(f.prepared.keys()) });
      const r = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: CTX }), f.prepared);
      const n = f.ref.input_ids.length;
      const short = f.ref.input_ids.slice(0, n - 3);
      const ids = [f.ref.input_ids, [...short, 0, 0, 0]];
      const pos = [ids[0]!.map((_, i) => i), [...short.map((_, i) => i), -1, -1, -1]];
      const s = await r.step(ids, pos, r.emptyCache(2, a.nKv, CTX, a.headDim));
      expect(maxAbsDiff([s.logits[0]!, s.logits[1]!], [f.ref.logits[n - 1]!, f.ref.logits[n - 4]!])).toBeLessThanOrEqual(1e-4);
    });

    it(`${fam}: continuous batching, two sequences in different cache slots`, async () => {
      const f = await fixture(fam);
      const a = archFromConfig(f.cfg, 'config.json', { keys: new Set(f.prepared.keys()) });
      const r = await GraphRunner.open(
        buildCausalLM(a, { dtype: 'float32', ctxLen: CTX, continuousBatching: true, batchSize: 3 }),
        f.prepared,
      );
      const A = f.ids;
      const B = f.ids.slice(2); // a different sequence: same tokens shifted, positions from 0
      const refB = referenceForward(f.cfg, f.raw, B);
      let cache = r.emptyCache(3, a.nKv, CTX, a.headDim);
      // prefill A into slot 2 and B into slot 0 in separate calls, then decode both together
      const k = 4;
      const pa = await r.step([A.slice(0, k)], [[0, 1, 2, 3]], cache, [2]);
      const pb = await r.step([B.slice(0, k)], [[0, 1, 2, 3]], pa.cache, [0]);
      cache = pb.cache;
      const rowsA = [pa.logits[0]!];
      const rowsB = [pb.logits[0]!];
      for (let t = k; t < B.length; t++) {
        const s = await r.step([[A[t]!], [B[t]!]], [[t], [t]], cache, [2, 0]);
        rowsA.push(s.logits[0]!);
        rowsB.push(s.logits[1]!);
        cache = s.cache;
      }
      expect(maxAbsDiff(rowsA, f.ref.logits.slice(k - 1, B.length))).toBeLessThanOrEqual(1e-4);
      expect(maxAbsDiff(rowsB, refB.slice(k - 1))).toBeLessThanOrEqual(1e-4);
    });

    it(`${fam}: --dtype float16 stays within ${float16Tolerance(fam)} of the reference`, async () => {
      const f = await fixture(fam);
      const a = archFromConfig(f.cfg, 'config.json', { keys: new Set(f.prepared.keys()) });
      const r = await GraphRunner.open(buildCausalLM(a, { dtype: 'float16', ctxLen: CTX }), f.prepared, true);
      const { rows } = await r.tokenByToken(f.ids, r.emptyCache(1, a.nKv, CTX, a.headDim));
      expect(maxAbsDiff(rows, f.ref.logits)).toBeLessThanOrEqual(float16Tolerance(fam));
    });
  }
});
