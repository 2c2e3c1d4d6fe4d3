/**
 * Sampling for `run`: the parameters, the seeded uniform numbers, and QEfficient's sampler
 * (`QEfficient/transformers/sampler/sampler.py` `sampler_forward`, commit
 * 86aaad21a0ee906f991c9c67fc6912881eaea9be) on the host, for graphs without the on-device
 * sampler. The host follows the graph step for step — penalty buffers updated per call as
 * `prefill_path` / `decode_path` do, repetition then presence penalty, greedy taken before the
 * temperature, top-k over the K largest in ascending order, top-p, min-p, Gumbel-max with the
 * same uniform numbers — so a sampler graph and a plain graph given the same seed agree.
 */
import { UsageError } from '../errors';
import { rng } from '../foundation/rng';

/** `run --temperature … --seed` (QEfficient's sampling_params, one row). */
export interface SamplingParams {
  /** 0 = greedy (the default). */
  temperature: number;
  /** 0 = no top-k (the whole vocabulary, or the graph's max_top_k_ids). */
  topK: number;
  /** 1 = no top-p. */
  topP: number;
  /** 0 = no min-p. */
  minP: number;
  /** 1 = none; > 1 discourages tokens seen in the prompt and output. */
  repetitionPenalty: number;
  /** 0 = none; > 0 discourages tokens seen in the output. */
  presencePenalty: number;
  /** Seed of the uniform numbers (absent: a random one). */
  seed?: number;
}

/** Greedy decoding with no penalties. */
export const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, repetitionPenalty: 1, presencePenalty: 0 };

/** Checks the ranges QEfficient documents (sampler.py docstring). */
export function checkSampling(p: SamplingParams): SamplingParams {
  const bad = (flag: string, v: number, want: string) => new UsageError(`run: --${flag} ${v}: must be ${want}`);
  if (!(Number.isFinite(p.temperature) && p.temperature >= 0)) throw bad('temperature', p.temperature, '≥ 0');
  if (!(Number.isInteger(p.topK) && p.topK >= 0)) throw bad('top-k', p.topK, 'an integer ≥ 0 (0 = off)');
  if (!(p.topP > 0 && p.topP <= 1)) throw bad('top-p', p.topP, 'in (0, 1]');
  if (!(p.minP >= 0 && p.minP <= 1)) throw bad('min-p', p.minP, 'in [0, 1]');
  if (!(Number.isFinite(p.repetitionPenalty) && p.repetitionPenalty > 0)) throw bad('repetition-penalty', p.repetitionPenalty, '> 0');
  if (!Number.isFinite(p.presencePenalty)) throw bad('presence-penalty', p.presencePenalty, 'a number');
  if (p.seed !== undefined && !(Number.isInteger(p.seed) && p.seed >= 0 && p.seed < 2 ** 32))
    throw bad('seed', p.seed, 'an integer in [0, 2^32)');
  return p;
}

/** True when decoding needs anything beyond argmax of the raw logits. */
export function needsSampler(p: SamplingParams): boolean {
  return p.temperature !== 0 || p.repetitionPenalty !== 1 || p.presencePenalty !== 0;
}

/**
 * Uniform numbers in (0, 1) for Gumbel-max, `k` per step, from a seeded generator. Each is
 * (m + ½)/2^24, exact in float32 and never 0 or 1 (u = 1 would make −log(−log u) infinite).
 */
export function uniformStream(seed: number): (k: number) => Float32Array {
  const next = rng(seed);
  return (k) => Float32Array.from({ length: k }, () => (Math.floor(next() * 16777216) + 0.5) / 16777216);
}

/** QEfficient's penalty buffers for one row (`past_repetition_penalty_buffer`, `past_presence_penalty_buffer`). */
export class PenaltyBuffers {
  readonly repetition: Uint8Array;
  readonly presence: Uint8Array;
  constructor(vocab: number) {
    this.repetition = new Uint8Array(vocab);
    this.presence = new Uint8Array(vocab);
  }

  /**
   * One graph call: `tokens` at `positions` (−1 = padding). More than one token is prefill
   * (`prefill_path`): the repetition buffer restarts when the chunk starts at position 0 and
   * marks the tokens, the presence buffer is cleared. One token is decode (`decode_path`): the
   * token (QEfficient's `last_accepted_output_tokens`) is marked in both.
   */
  observe(tokens: number[], positions: number[]): void {
    if (tokens.length > 1) {
      if (positions[0] === 0) this.repetition.fill(0);
      tokens.forEach((t, i) => positions[i] !== -1 && (this.repetition[t] = 1));
      this.presence.fill(0);
    } else if (positions[0] !== -1) {
      this.repetition[tokens[0]!] = 1;
      this.presence[tokens[0]!] = 1;
    }
  }
}

const FP16_MIN = -65504;

/**
 * The next token from one row of logits, as `sampler_forward` computes it with `maxTopK` = K
 * (the vocabulary size for plain graphs) and `uniforms` of length K.
 */
export function sampleToken(
  logits: ArrayLike<number>,
  buf: PenaltyBuffers,
  p: SamplingParams,
  maxTopK: number,
  uniforms: Float32Array,
): number {
  const V = logits.length;
  const L = new Float32Array(V);
  for (let v = 0; v < V; v++) {
    let x = logits[v]!;
    if (buf.repetition[v]) x *= p.repetitionPenalty ** -Math.sign(x);
    if (buf.presence[v]) x -= p.presencePenalty;
    L[v] = x;
  }
  let greedy = 0;
  for (let v = 1; v < V; v++) if (L[v]! > L[greedy]!) greedy = v;
  if (p.temperature === 0) return greedy;
  for (let v = 0; v < V; v++) L[v] = L[v]! / p.temperature;

  // the K largest, descending with lower index first on ties (ONNX TopK), then ascending
  const K = Math.min(maxTopK, V);
  const order = Array.from({ length: V }, (_, i) => i)
    .sort((a, b) => L[b]! - L[a]! || a - b)
    .slice(0, K)
    .reverse();
  const vals = Float32Array.from(order, (i) => L[i]!);
  const k = Math.min(p.topK === 0 ? K : p.topK, K);
  for (let i = 0; i < K - k; i++) vals[i] = FP16_MIN;
  const probs = softmax(vals);
  let cum = 0;
  const keep = Float32Array.from(vals);
  for (let i = 0; i < K; i++) {
    cum = Math.fround(cum + probs[i]!);
    if (i < K - 1 && cum <= Math.fround(1 - p.topP)) keep[i] = FP16_MIN;
  }
  const floor = Math.fround(p.minP * probs[K - 1]!);
  for (let i = 0; i < K; i++) if (probs[i]! < floor) keep[i] = FP16_MIN;
  let best = 0;
  let bestY = -Infinity;
  for (let i = 0; i < K; i++) {
    const y = Math.fround(keep[i]! - Math.log(-Math.log(uniforms[i]!)));
    if (y > bestY) {
      bestY = y;
      best = i;
    }
  }
  return order[best]!;
}

/** Softmax in float32 storage (max-subtracted). */
export function softmax(x: ArrayLike<number>): Float32Array {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]!);
  const e = Float32Array.from({ length: x.length }, (_, i) => Math.exp(x[i]! - m));
  let s = 0;
  for (let i = 0; i < e.length; i++) s += e[i]!;
  for (let i = 0; i < e.length; i++) e[i] = e[i]! / s;
  return e;
}
