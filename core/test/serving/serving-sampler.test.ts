/**
 * QEfficient's on-device sampler (`export --sampler`) and `run`'s sampling flags, against
 * quic/efficient-transformers `QEfficient/transformers/sampler/sampler.py` (`sampler_forward`,
 * commit 86aaad21a0ee906f991c9c67fc6912881eaea9be):
 * - temperature 0 gives exactly the greedy tokens (every text fixture);
 * - a fixed seed reproduces the tokens, and a sampler graph and a plain graph (host sampling)
 *   given the same seed and parameters give the same tokens;
 * - the first sampled token follows softmax(logits / T) restricted by top-k / top-p / min-p
 *   (chi-square at the 1 % level over 3000 draws, one batched ORT call);
 * - repetition and presence penalties give the probabilities computed here by hand from the
 *   plain graph's logits, for the prefill call and for a decode call.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { PenaltyBuffers, sampleToken, uniformStream, type SamplingParams } from '../../src/run';
import { describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import {
  dumpLogits,
  exportCompiled,
  f32,
  generate,
  i64,
  ort,
  reference,
  session,
  textFixtures,
  ws,
  zeroCaches,
} from '../support/serving-support';

const tmp = tempDirs('ws-sampler-');

/** softmax in float64. */
function softmax64(x: number[]): number[] {
  const m = Math.max(...x);
  const e = x.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
}

/**
 * The distribution QEfficient's sampler draws from, from its definitions: logits / T; the top-k
 * largest; of those (probabilities over the top-k set, ascending) drop a token while the
 * cumulative sum up to it is ≤ 1 − top_p (never the largest); drop tokens below min_p × the
 * largest probability; softmax over what is left.
 */
function expectedDistribution(logits: number[], T: number, topK: number, topP: number, minP: number): number[] {
  const x = logits.map((v) => v / T);
  const desc = x
    .map((_, i) => i)
    .sort((a, b) => x[b]! - x[a]! || a - b)
    .slice(0, topK);
  const asc = [...desc].reverse();
  const q = softmax64(asc.map((i) => x[i]!));
  const keep = asc.map(() => true);
  let cum = 0;
  asc.forEach((_, j) => {
    cum += q[j]!;
    if (j < asc.length - 1 && cum <= 1 - topP) keep[j] = false;
  });
  const qMax = q[q.length - 1]!;
  asc.forEach((_, j) => q[j]! < minP * qMax && (keep[j] = false));
  const kept = asc.filter((_, j) => keep[j]);
  const p = softmax64(kept.map((i) => x[i]!));
  const out = new Array<number>(logits.length).fill(0);
  kept.forEach((i, j) => (out[i] = p[j]!));
  return out;
}

/** Pearson's chi-square of `counts` against `probs` (bins with expectation < 5 pooled) and its 1 % critical value. */
function chiSquare(counts: number[], probs: number[]): { stat: number; critical: number; df: number } {
  const n = counts.reduce((a, b) => a + b, 0);
  let stat = 0;
  let bins = 0;
  let poolO = 0;
  let poolE = 0;
  counts.forEach((o, i) => {
    const e = probs[i]! * n;
    if (e >= 5) {
      stat += (o - e) ** 2 / e;
      bins++;
    } else {
      poolO += o;
      poolE += e;
    }
  });
  if (poolE > 0) {
    stat += (poolO - poolE) ** 2 / Math.max(poolE, 1e-12);
    bins++;
  }
  const df = bins - 1;
  // Wilson–Hilferty: chi2_{0.99}(df) ≈ df (1 − 2/(9df) + z √(2/(9df)))³, z = 2.3263
  const critical = df * (1 - 2 / (9 * df) + 2.3263 * Math.sqrt(2 / (9 * df))) ** 3;
  return { stat, critical, df };
}

it("penalties on the host follow QEfficient's formulas, by hand", async () => {
  // logits, tokens 0,1 seen in the prompt, token 3 generated (decode marks it in both buffers)
  const buf = new PenaltyBuffers(5);
  buf.observe([0, 1, 0], [0, 1, 2]); // prefill: repetition {0,1}, presence cleared
  expect(Array.from(buf.repetition)).toEqual([1, 1, 0, 0, 0]);
  expect(Array.from(buf.presence)).toEqual([0, 0, 0, 0, 0]);
  buf.observe([3], [3]); // decode
  expect(Array.from(buf.repetition)).toEqual([1, 1, 0, 1, 0]);
  expect(Array.from(buf.presence)).toEqual([0, 0, 0, 1, 0]);
  buf.observe([4], [-1]); // padding is not marked
  expect(buf.repetition[4]).toBe(0);
  const greedy = (logits: number[], r: number, q: number) =>
    sampleToken(
      logits,
      buf,
      { temperature: 0, topK: 0, topP: 1, minP: 0, repetitionPenalty: r, presencePenalty: q },
      5,
      new Float32Array(0),
    );
  // r = 2: token 0: 3 → 1.5; token 1: −1 → −2; token 3: 2.9 → 1.45, then q = 0.5 → 0.95; token 2 stays 1.2
  expect(greedy([3, -1, 1.2, 2.9, 0], 1, 0)).toBe(0);
  expect(greedy([3, -1, 1.2, 2.9, 0], 2, 0)).toBe(0); // 1.5 > 1.45 > 1.2
  expect(greedy([3, -1, 1.2, 2.9, 0], 2, 0.5)).toBe(0); // 1.5, 1.2, 0.95
  expect(greedy([3, -1, 1.2, 2.9, 0], 2.6, 0)).toBe(2); // 3/2.6 = 1.154 < 1.2, 2.9/2.6 = 1.115
  expect(greedy([-3, -1, -2.5, -0.4, -0.5], 2, 0)).toBe(4); // −0.4·2 = −0.8 < −0.5
  // a new PenaltyBuffers after a prefill starting at position 0 restarts the repetition buffer
  buf.observe([2, 2], [0, 1]);
  expect(Array.from(buf.repetition)).toEqual([0, 0, 1, 0, 0]);
});

it('the host sampler draws from softmax(logits / T) after top-k / top-p / min-p (chi-square, 1 %)', async () => {
  const draw = uniformStream(5);
  const logits = Array.from({ length: 40 }, (_, i) => Math.sin(i * 1.7) * 3 + (i % 7) * 0.2);
  const params: SamplingParams = { temperature: 1.3, topK: 25, topP: 0.9, minP: 0.03, repetitionPenalty: 1, presencePenalty: 0 };
  const counts = new Array<number>(40).fill(0);
  const buf = new PenaltyBuffers(40);
  for (let n = 0; n < 4000; n++) counts[sampleToken(logits, buf, params, 40, draw(40))]!++;
  const exp = expectedDistribution(logits, 1.3, 25, 0.9, 0.03);
  const c = chiSquare(counts, exp);
  expect(c.df).toBeGreaterThan(3);
  expect(c.stat).toBeLessThan(c.critical);
  // the same draws are far from the unfiltered softmax(logits / T): the test can fail
  expect(chiSquare(counts, softmax64(logits.map((v) => v / 1.3))).stat).toBeGreaterThan(c.critical);
  expect(counts.filter((k, i) => exp[i] === 0 && k > 0)).toEqual([]);
});

describeFixtures('the on-device sampler', () => {
  const root = tmp();

  for (const fam of textFixtures()) {
    it(`${fam}: temperature 0 gives exactly the greedy tokens`, async () => {
      const ref = reference(fam);
      const out = await exportCompiled(root, fam, `${fam}-sampler`, ['--ctx-len', '32', '--sampler']);
      const r = await generate(root, out, ref.input_ids, ref.generated_ids.length);
      expect(r.tokens).toEqual(ref.generated_ids);
      expect(r.stderr).toContain("the graph's on-device sampler");
    });
  }

  it('llama: a fixed seed reproduces the tokens; the sampler graph and host sampling on a plain graph agree', async () => {
    const ref = reference('llama');
    const dev = await exportCompiled(root, 'llama', 'llama-sampler-seed', ['--ctx-len', '32', '--sampler']);
    const plain = await exportCompiled(root, 'llama', 'llama-plain', ['--ctx-len', '32']);
    const flags = ['--temperature', '1.5', '--seed', '11'];
    // a sampler graph has no logits: --dump-logits is one line, exit 1, nothing written
    const dump = await ws(root, ['run', dev, '--input-ids', '1,2', '--dump-logits', path.join(root, 'no.json')], false);
    expect([dump.status, dump.stderr.split('\n').length]).toEqual([1, 2]);
    expect(dump.stderr).toMatch(/^weight-spec: .*on-device sampler \(next_tokens\); it has no logits to dump/);
    expect(fs.existsSync(path.join(root, 'no.json'))).toBe(false);
    const a = (await generate(root, dev, ref.input_ids, 20, flags)).tokens;
    expect((await generate(root, dev, ref.input_ids, 20, flags)).tokens).toEqual(a);
    expect(a).not.toEqual(ref.generated_ids.concat(a.slice(5)));
    expect((await generate(root, dev, ref.input_ids, 20, ['--temperature', '1.5', '--seed', '12'])).tokens).not.toEqual(a);
    for (const f of [
      flags,
      ['--temperature', '0.8', '--top-k', '20', '--top-p', '0.9', '--min-p', '0.05', '--seed', '7'],
      ['--repetition-penalty', '1.7', '--presence-penalty', '0.8'],
      ['--temperature', '1.2', '--repetition-penalty', '1.3', '--presence-penalty', '0.5', '--top-k', '50', '--seed', '3'],
    ]) {
      const host = await generate(root, plain, ref.input_ids, 20, f);
      expect(host.stderr).toContain("QEfficient's sampler on the host");
      expect((await generate(root, dev, ref.input_ids, 20, f)).tokens).toEqual(host.tokens);
    }
  });

  it('llama: the first sampled token follows softmax(logits / T) after top-k / top-p / min-p (chi-square, 1 %)', async () => {
    const ref = reference('llama');
    const dev = await exportCompiled(root, 'llama', 'llama-sampler-chi', ['--ctx-len', '32', '--sampler']);
    const logits = (await dumpLogits(root, await exportCompiled(root, 'llama', 'llama-plain-chi', ['--ctx-len', '32']), ref.input_ids)).at(
      -1,
    )!;
    const { s, dims } = await session(dev);
    const K = dims.get('random_numbers')![1] as number;
    const V = logits.length;
    const N = 3000;
    const ids = ref.input_ids;
    const rows = <T>(v: T[]) => Array.from({ length: N }, () => v).flat();
    const u = uniformStream(99);
    const rn = new Float32Array(N * K);
    for (let b = 0; b < N; b++) rn.set(u(K), b * K);
    const [T, k, p, m] = [1.4, 60, 0.92, 0.01];
    const out = await s.run({
      ...zeroCaches(dims, N),
      input_ids: i64(rows(ids), [N, ids.length]),
      position_ids: i64(rows(ids.map((_, i) => i)), [N, ids.length]),
      last_accepted_output_tokens: i64(rows(ids), [N, ids.length]),
      past_repetition_penalty_buffer: new ort.Tensor('bool', new Uint8Array(N * V), [N, V]),
      past_presence_penalty_buffer: new ort.Tensor('bool', new Uint8Array(N * V), [N, V]),
      repetition_penalties: f32(1, [N, 1]),
      presence_penalties: f32(0, [N, 1]),
      temperatures: f32(T, [N, 1]),
      top_ks: new ort.Tensor('int32', new Int32Array(N).fill(k), [N, 1]),
      top_ps: f32(p, [N, 1]),
      min_ps: f32(m, [N, 1]),
      random_numbers: new ort.Tensor('float32', rn, [N, K]),
    });
    const tokens = Array.from(out.next_tokens!.data as BigInt64Array, Number);
    expect(out.next_tokens!.dims).toEqual([N, 1, 1]);
    const counts = new Array<number>(V).fill(0);
    for (const t of tokens) counts[t]!++;
    const exp = expectedDistribution(logits, T, k, p, m);
    const c = chiSquare(counts, exp);
    expect(c.df).toBeGreaterThan(3);
    expect(c.stat).toBeLessThan(c.critical);
    expect(chiSquare(counts, softmax64(logits.map((v) => v / T))).stat).toBeGreaterThan(c.critical);
    expect(tokens.filter((t) => exp[t] === 0)).toEqual([]);
  });

  it('llama: repetition and presence penalties give the hand-computed probabilities (prefill, then decode)', async () => {
    const ref = reference('llama');
    const dev = await exportCompiled(root, 'llama', 'llama-sampler-pdfs', ['--ctx-len', '32', '--sampler', '--return-pdfs']);
    const ids = ref.input_ids;
    const t = ref.generated_ids[0]!;
    const plainRows = await dumpLogits(root, await exportCompiled(root, 'llama', 'llama-plain-pen', ['--ctx-len', '32']), [...ids, t]);
    const { s, dims } = await session(dev);
    const V = plainRows[0]!.length;
    const K = dims.get('random_numbers')![1] as number;
    const [r, q] = [1.8, 0.7];
    const params = () => ({
      repetition_penalties: f32(r, [1, 1]),
      presence_penalties: f32(q, [1, 1]),
      temperatures: f32(1, [1, 1]),
      top_ks: new ort.Tensor('int32', Int32Array.of(K), [1, 1]),
      top_ps: f32(1, [1, 1]),
      min_ps: f32(0, [1, 1]),
      random_numbers: f32(0.5, [1, K]),
    });
    const pre = await s.run({
      ...zeroCaches(dims, 1),
      input_ids: i64(ids, [1, ids.length]),
      position_ids: i64(
        ids.map((_, i) => i),
        [1, ids.length],
      ),
      last_accepted_output_tokens: i64(ids, [1, ids.length]),
      past_repetition_penalty_buffer: new ort.Tensor('bool', new Uint8Array(V), [1, V]),
      past_presence_penalty_buffer: new ort.Tensor('bool', new Uint8Array(V), [1, V]),
      ...params(),
    });
    // by hand: logits of prompt tokens divided by r when > 0, multiplied by r when < 0; no presence at prefill
    const penal = (row: number[], rep: Set<number>, pres: Set<number>) =>
      row.map((x, v) => (rep.has(v) ? (x > 0 ? x / r : x * r) : x) - (pres.has(v) ? q : 0));
    const expPre = softmax64(penal(plainRows[ids.length - 1]!, new Set(ids), new Set()));
    const gotPre = Array.from(pre.probs!.data as Float32Array);
    expect(pre.probs!.dims).toEqual([1, 1, V]);
    expect(Math.max(...gotPre.map((v, i) => Math.abs(v - expPre[i]!)))).toBeLessThanOrEqual(1e-5);

    const caches: Record<string, ort.Tensor> = {};
    for (const n of s.inputNames) if (/^past_/.test(n)) caches[n] = pre[`${n}_RetainedState`]!;
    const dec = await s.run({
      ...caches,
      input_ids: i64([t], [1, 1]),
      position_ids: i64([ids.length], [1, 1]),
      last_accepted_output_tokens: i64([t], [1, 1]),
      ...params(),
    });
    // decode: t joins the repetition set and is the only presence-penalized token
    const expDec = softmax64(penal(plainRows[ids.length]!, new Set([...ids, t]), new Set([t])));
    const gotDec = Array.from(dec.probs!.data as Float32Array);
    expect(Math.max(...gotDec.map((v, i) => Math.abs(v - expDec[i]!)))).toBeLessThanOrEqual(1e-5);
    // the retained buffers hold exactly those sets
    const rep = Array.from(dec.past_repetition_penalty_buffer_RetainedState!.data as Uint8Array);
    const pres = Array.from(dec.past_presence_penalty_buffer_RetainedState!.data as Uint8Array);
    expect(rep.flatMap((b, v) => (b ? [v] : []))).toEqual([...new Set([...ids, t])].sort((a, b) => a - b));
    expect(pres.flatMap((b, v) => (b ? [v] : []))).toEqual([t]);
  });
});
