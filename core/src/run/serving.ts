/**
 * What `run` feeds a graph carrying QEfficient's serving features, read from the graph itself:
 *
 * - CCL (`comp_ctx_lengths` input): a 1-D tensor whose length is the bucket. The bucket is the
 *   smallest of the phase's list (prefill for prompt chunks, decode for generated tokens) with
 *   `max position < bucket`, as QEfficient's host does
 *   (`QEfficient/generation/text_generation_inference.py`: `run_prefill` moves to the next
 *   prefill bucket when a chunk ends past the current one, `initialize_ccl` / `run_decode` start
 *   at the first decode bucket above the position and move up as `cache_index` reaches
 *   `bucket − 1`). ctx_len is always a candidate, so a position beyond every listed bucket still
 *   reads the whole cache instead of silently losing context.
 * - the on-device sampler (`next_tokens` output): `last_accepted_output_tokens` = the call's
 *   input_ids, the sampling parameters per row, `random_numbers` `[batch, max_top_k_ids]`, and the
 *   two penalty buffers fed back from their `_RetainedState` outputs.
 */
import type { OrtModule, OrtTensor } from '../ort/loader';
import type { SamplingParams } from './sampling';
import { SAMPLER_INPUTS, SAMPLER_STATES } from '../artifacts/graph-metadata';

export { servingFeatures, servingSummary, type ServingFeatures } from '../artifacts/graph-metadata';

/** The sampler's inputs `run` feeds (QEfficient's names). */
export const SAMPLER_INPUT_NAMES: readonly string[] = SAMPLER_INPUTS;

/** The smallest of `buckets` ∪ {ctxLen} with `maxPosition < bucket` (ctxLen when none is). */
export function pickBucket(buckets: readonly number[], maxPosition: number, ctxLen: number): number {
  const candidates = [...new Set([...buckets, ctxLen])].sort((a, b) => a - b);
  return candidates.find((b) => maxPosition < b) ?? ctxLen;
}

/** The comp_ctx_lengths feed for a bucket (QEfficient feeds `np.zeros(length)`; only the length matters). */
export function cclTensor(ort: OrtModule, bucket: number): OrtTensor {
  return new ort.Tensor('int64', new BigInt64Array(bucket), [bucket]);
}

/** Fresh penalty buffers `[cacheBatch, vocab]` (bool). */
export function samplerState(ort: OrtModule, cacheBatch: number, vocab: number): Record<string, OrtTensor> {
  const z = () => new ort.Tensor('bool', new Uint8Array(cacheBatch * vocab), [cacheBatch, vocab]);
  return Object.fromEntries(SAMPLER_STATES.map((name) => [name, z()]));
}

/** The sampler's per-call inputs for `batch` identical rows. */
export function samplerFeeds(
  ort: OrtModule,
  p: SamplingParams,
  batch: number,
  maxTopK: number,
  lastAccepted: OrtTensor,
  uniforms: Float32Array,
): Record<string, OrtTensor> {
  const col = (v: number) => new ort.Tensor('float32', new Float32Array(batch).fill(v), [batch, 1]);
  const rn = new Float32Array(batch * maxTopK);
  for (let b = 0; b < batch; b++) rn.set(uniforms, b * maxTopK);
  return {
    last_accepted_output_tokens: lastAccepted,
    repetition_penalties: col(p.repetitionPenalty),
    presence_penalties: col(p.presencePenalty),
    temperatures: col(p.temperature),
    // top-k off = every candidate the graph keeps
    top_ks: new ort.Tensor('int32', new Int32Array(batch).fill(p.topK === 0 ? maxTopK : Math.min(p.topK, maxTopK)), [batch, 1]),
    top_ps: col(p.topP),
    min_ps: col(p.minP),
    random_numbers: new ort.Tensor('float32', rn, [batch, maxTopK]),
  };
}

/** Names of the sampler's retained buffers (fed back each call). */
export const SAMPLER_STATE: readonly string[] = SAMPLER_STATES;
