/**
 * Speculative decoding's target model (QEfficient's TLM), `export --num-speculative-tokens K`,
 * against quic/efficient-transformers main ebf55e81:
 * - `QEfficient/transformers/spd/spd_transform_forward.py` `filter_hidden_states`: with
 *   `num_logits_to_keep` (only its first dim N counts) the logits are the N positions ending at the
 *   last valid one (argmax of position_ids), from 0 when that index is below N;
 * - `QEfficient/transformers/models/pytorch_transforms.py` `SpDTransform`: llama, qwen2, qwen3 only;
 * - `QEfficient/transformers/models/modeling_auto.py` `compile`: the sampler takes no K > 0, CCL
 *   with a TLM is refused;
 * - `examples/performance/speculative_decoding/prompt_lookup.py` `find_candidate_pred_tokens`: the
 *   proposals `run` checks (speculative.ts), whose accepted tokens are the target's argmax — so a
 *   TLM run gives the plain export's greedy tokens.
 * Numbers are judged against the fixture's reference.json (≤ 1e-4) and the plain export's rows.
 */
import path from 'node:path';
import { expect, it } from 'vitest';
import { findCandidatePredTokens } from '../../src/run/speculative';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/compile-support';
import { dumpLogits, exportCompiled, generate, i64, reference, session, ws, zeroCaches } from '../support/serving-support';

const tmp = tempDirs('ws-tlm-');
const TLM = ['--ctx-len', '32', '--num-speculative-tokens', '3'];

it('find_candidate_pred_tokens, by hand', () => {
  // last 3-gram [7, 8, 9] occurs at 1: continuation 4, 5 (2 tokens before the tail's own start)
  expect(findCandidatePredTokens([6, 7, 8, 9, 4, 5, 7, 8, 9], 3, 3)).toEqual({ tokens: [4, 5, 7], count: 3 });
  // only a 1-gram matches: [9] at 1 → 3, 4 (K = 2)
  expect(findCandidatePredTokens([1, 9, 3, 4, 5, 9], 3, 2)).toEqual({ tokens: [3, 4], count: 2 });
  // a match whose continuation starts at or past len − n is skipped (self-match): n = 2 has none; n = 1 at idx 0 → [2, 2]
  expect(findCandidatePredTokens([2, 2, 2], 2, 3)).toEqual({ tokens: [2, 2], count: 2 });
  // nothing: no proposals
  expect(findCandidatePredTokens([1, 2, 3], 3, 3)).toEqual({ tokens: [], count: 0 });
});

describeFixtures('TLM export (llama fixture): K + 1 logits per call', () => {
  const root = tmp();

  it('run --dump-logits feeds 4 ids per call and reproduces reference.json (≤ 1e-4) and the plain export', async () => {
    const ref = reference('llama');
    const tlm = await exportCompiled(root, 'llama', 'llama-tlm', TLM);
    const plain = await exportCompiled(root, 'llama', 'llama-plain', ['--ctx-len', '32']);
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)]; // 11 ids: calls of 4, 4, 3 (+1 padded at −1)
    const rows = await dumpLogits(root, tlm, ids);
    expect(rows).toHaveLength(ids.length);
    expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(rows, await dumpLogits(root, plain, ids))).toBeLessThanOrEqual(1e-5);
  });

  it('run --max-new-tokens: prompt-lookup proposals checked 4 at a time give the plain greedy tokens, some accepted', async () => {
    const ref = reference('llama');
    const tlm = await exportCompiled(root, 'llama', 'llama-tlm-gen', ['--ctx-len', '64', '--num-speculative-tokens', '3']);
    const plain = await exportCompiled(root, 'llama', 'llama-plain-gen', ['--ctx-len', '64']);
    const a = await generate(root, tlm, ref.input_ids, 40);
    expect(a.tokens.slice(0, ref.generated_ids.length)).toEqual(ref.generated_ids);
    expect(a.tokens).toEqual((await generate(root, plain, ref.input_ids, 40)).tokens);
    const m = /speculative decoding \(prompt lookup, K = 3\): (\d+) target calls of 4 tokens/.exec(a.stderr);
    // 39 tokens after the prefill's: fewer calls than tokens means accepted proposals (the fixture's continuation repeats itself)
    expect(Number(m![1])).toBeLessThan(39);
  });

  it('the graph: num_logits_to_keep [N, 1] → logits [1, N, vocab], the rows ending at the last valid position', async () => {
    const ref = reference('llama');
    const tlm = await exportCompiled(root, 'llama', 'llama-tlm-feed', TLM);
    const { s, dims } = await session(tlm);
    expect(dims.get('num_logits_to_keep')).toEqual(['num_logits_to_keep', 1]);
    const ids = ref.input_ids.slice(0, 6);
    const feed = (positions: number[], n: number) =>
      s.run({
        ...zeroCaches(dims, 1),
        input_ids: i64(ids, [1, 6]),
        position_ids: i64(positions, [1, 6]),
        num_logits_to_keep: i64(Array(n).fill(0), [n, 1]),
      });
    const rowsOf = (t: { data: unknown; dims: readonly number[] }) => {
      const v = t.dims[2]!;
      const d = t.data as Float32Array;
      return Array.from({ length: t.dims[1]! }, (_, r) => Array.from(d.subarray(r * v, (r + 1) * v)));
    };
    const four = (await feed([0, 1, 2, 3, 4, 5], 4)).logits!;
    expect(four.dims).toEqual([1, 4, ref.logits[0]!.length]);
    // last valid index 5, N = 4: rows 2…5, i.e. reference rows 2…5
    expect(maxAbsDiff(rowsOf(four), ref.logits.slice(2, 6))).toBeLessThanOrEqual(1e-4);
    // last valid index 2 (padding at −1) < N = 4: rows 0…3 (rows 0…2 are the reference's)
    const padded = rowsOf((await feed([0, 1, 2, -1, -1, -1], 4)).logits!);
    expect(maxAbsDiff(padded.slice(0, 3), ref.logits.slice(0, 3))).toBeLessThanOrEqual(1e-4);
    const one = (await feed([0, 1, 2, 3, 4, 5], 1)).logits!;
    expect(one.dims).toEqual([1, 1, ref.logits[0]!.length]);
    expect(maxAbsDiff(rowsOf(one), [ref.logits[5]!])).toBeLessThanOrEqual(1e-4);
  });

  it('refused with one line: a family SpDTransform does not map, the sampler, --phase decode, CCL', async () => {
    const bad = async (fam: string, flags: string[], msg: RegExp) => {
      const r = await ws(root, ['export', '--config', path.join(fixturesDir(), fam), '--out', path.join(root, 'bad'), ...flags], false);
      expect(r.status).toBe(2);
      // the reason on the first line (the usage synopsis follows)
      expect(r.stderr.split('\n')[0]).toMatch(msg);
    };
    await bad('gpt2', TLM, /SpDTransform supports llama, qwen2, qwen3; gpt2/);
    await bad('llama', [...TLM, '--sampler'], /sampler does not support num_speculative_tokens > 0/);
    await bad('llama', [...TLM, '--phase', 'decode'], /decode-only graph takes one token per call/);
    await bad('llama', [...TLM, '--comp-ctx-lengths-prefill', '16', '--comp-ctx-lengths-decode', '32'], /comp_ctx_lengths/);
    await bad('llama', ['--num-speculative-tokens', '3,x'], /"x" is not a non-negative integer/);
  });
});

describeFixtures('TLM export: ONNX checker', () => {
  describeOnnxChecker('python3-onnx', () => {
    it('the TLM graph passes check_model and strict shape inference', async () => {
      const root = tmp();
      const out = path.join(root, 'tlm');
      await ws(root, ['export', '--config', path.join(fixturesDir(), 'llama'), '--out', out, ...TLM]);
      expectOnnxValid([path.join(out, 'model.onnx')]);
    });
  });
});
