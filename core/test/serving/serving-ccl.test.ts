/**
 * Compute-context-length (CCL), QEfficient's `comp_ctx_lengths`, through the real CLI and ONNX
 * Runtime on the text fixtures:
 * - export --comp-ctx-lengths-prefill 16 --comp-ctx-lengths-decode 16,32 --ctx-len 32 reproduces
 *   reference.json (run --dump-logits, ≤ 1e-4) and its greedy tokens;
 * - attention reads only the bucket: NaN written into the cache beyond the bucket leaves the
 *   logits unchanged (and poisons them when the bucket covers it), while the KV write still
 *   lands in the full cache;
 * - run picks the smallest covering bucket and moves up while decoding, as QEfficient's host
 *   (`QEfficient/generation/text_generation_inference.py`, quic/efficient-transformers:
 *   `run_prefill`, `initialize_ccl`, `run_decode`) does.
 */
import { expect, it } from 'vitest';
import { pickBucket } from '../../src/run';
import { describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/compile-support';
import { dumpLogits, exportCompiled, generate, i64, reference, session, textFixtures, zeroCaches } from '../support/serving-support';

const tmp = tempDirs('ws-ccl-');
const CCL = ['--ctx-len', '32', '--comp-ctx-lengths-prefill', '16', '--comp-ctx-lengths-decode', '16,32'];

it('pickBucket: the first bucket with position < bucket, as QEfficient picks it; ctx_len past every bucket', async () => {
  // initialize_ccl: `if max_position_id < comp_ctx_lengths_decode[i]: ccl_id = i; break`
  expect(pickBucket([16, 32], 0, 64)).toBe(16);
  expect(pickBucket([16, 32], 15, 64)).toBe(16);
  expect(pickBucket([16, 32], 16, 64)).toBe(32);
  expect(pickBucket([32, 16], 20, 64)).toBe(32);
  expect(pickBucket([16, 32], 40, 64)).toBe(64);
  expect(pickBucket([], 3, 32)).toBe(32);
});

describeFixtures('CCL exports reproduce the fixtures', () => {
  const root = tmp();
  for (const fam of textFixtures()) {
    it(`${fam}: run --dump-logits ≤ 1e-4 of reference.json, greedy tokens equal`, async () => {
      const ref = reference(fam);
      const out = await exportCompiled(root, fam, `${fam}-ccl`, CCL);
      const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
      expect(maxAbsDiff(await dumpLogits(root, out, ids), ref.logits)).toBeLessThanOrEqual(1e-4);
      expect((await generate(root, out, ref.input_ids, ref.generated_ids.length)).tokens).toEqual(ref.generated_ids);
    });
  }

  it('llama: decoding past the first bucket moves up to 32 and gives the tokens and logits of the plain export', async () => {
    const ref = reference('llama');
    const ccl = await exportCompiled(root, 'llama', 'llama-ccl-move', CCL);
    const plain = await exportCompiled(root, 'llama', 'llama-plain', ['--ctx-len', '32']);
    const a = await generate(root, ccl, ref.input_ids, 22); // positions up to 28 > 16
    expect(a.stderr).toContain('comp_ctx_lengths buckets 16 → 32');
    expect(a.tokens).toEqual((await generate(root, plain, ref.input_ids, 22)).tokens);
    // 24 ids one at a time: positions 16… need the next bucket
    const ids = [...ref.input_ids, ...a.tokens].slice(0, 24);
    expect(maxAbsDiff(await dumpLogits(root, ccl, ids), await dumpLogits(root, plain, ids))).toBeLessThanOrEqual(1e-5);
  });

  it('llama: attention reads only the bucket — NaN beyond it changes nothing; the write still reaches the full cache', async () => {
    const ref = reference('llama');
    const out = await exportCompiled(root, 'llama', 'llama-ccl-poison', CCL);
    const { s, dims } = await session(out);
    const ids = ref.input_ids;
    const base = {
      input_ids: i64(ids, [1, ids.length]),
      position_ids: i64(
        ids.map((_, i) => i),
        [1, ids.length],
      ),
    };
    const poisoned = () => {
      const caches = zeroCaches(dims, 1);
      for (const t of Object.values(caches)) {
        const [, h, c, d] = t.dims as number[];
        const data = t.data as Float32Array;
        for (let k = 0; k < h!; k++) for (let j = 16; j < c!; j++) data.fill(NaN, (k * c! + j) * d!, (k * c! + j + 1) * d!);
      }
      return caches;
    };
    const run = async (caches: Record<string, unknown>, bucket: number) =>
      (await s.run({ ...base, ...(caches as Record<string, never>), comp_ctx_lengths: i64(Array(bucket).fill(0), [bucket]) })).logits!
        .data as Float32Array;
    const clean = await run(zeroCaches(dims, 1), 16);
    const dirty = await run(poisoned(), 16);
    expect(Array.from(dirty).every(Number.isFinite)).toBe(true);
    expect(Array.from(dirty)).toEqual(Array.from(clean));
    // with the whole cache as the bucket the same poison reaches the logits (0 · NaN = NaN)
    expect(Array.from(await run(poisoned(), 32)).some(Number.isNaN)).toBe(true);
    // unpoisoned, bucket 16 and bucket 32 agree for positions < 16
    expect(maxAbsDiff([Array.from(clean)], [Array.from(await run(zeroCaches(dims, 1), 32))])).toBeLessThanOrEqual(1e-6);

    // a token at position 20 under bucket 16: its k/v land at slot 20 of the retained cache
    const caches = zeroCaches(dims, 1);
    const r = await s.run({
      ...caches,
      input_ids: i64([ids[0]!], [1, 1]),
      position_ids: i64([20], [1, 1]),
      comp_ctx_lengths: i64(Array(16).fill(0), [16]),
    });
    const k0 = r['past_key.0_RetainedState']!;
    const [, h, c, d] = k0.dims as number[];
    const data = k0.data as Float32Array;
    const slot = (j: number) =>
      Array.from({ length: h! }, (_, k) => Array.from(data.subarray((k * c! + j) * d!, (k * c! + j + 1) * d!))).flat();
    expect(slot(20).some((v) => v !== 0)).toBe(true);
    expect(slot(19).every((v) => v === 0)).toBe(true);
  });
});
