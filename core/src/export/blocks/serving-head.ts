/**
 * QEfficient's serving features at the head of a decoder graph, shared by the text decoder
 * (exporter/decoder.ts) and the VLM language graphs (vlm/language*.ts):
 * - CCL: the `comp_ctx_lengths` input, declared after the states (QEfficient's dummy-input order:
 *   `past_key_values`, `batch_index`, `comp_ctx_lengths`), whose length limits what attention reads;
 * - the on-device sampler (sampler.ts), whose `probs?` / `next_tokens` replace `logits` and whose
 *   penalty buffers are retained after the caches.
 * For VLMs QEfficient's `sampler_forward` (QEfficient/transformers/sampler/sampler.py, main
 * ebf55e8) calls the wrapper's forward with `vision_embeds`/`image_idx` and samples over
 * `position_ids[0]` when the positions are MRoPE's 3-D ones; `SamplerOutput` orders the outputs
 * probs, next_tokens, vision_embeds, image_idx, past_key_values, the penalty buffers.
 */
import type { Dim, GraphBuilder } from './builder';
import type { Ctx } from './ops';
import { appendSampler, resolveSampler, type SamplerOptions, type SamplerValues } from './sampler';
import { samplerStates } from '../../artifacts/graph-interface';
import { SAMPLER_INPUTS, SERVING_METADATA } from '../../artifacts/graph-metadata';

/** The serving options a decoder graph takes (`--comp-ctx-lengths-*`, `--sampler`). */
export interface ServingOptions {
  /** CCL buckets; adds the `comp_ctx_lengths` input. */
  compCtxLengths?: { prefill: number[]; decode: number[] };
  /** The on-device sampler after the logits. */
  sampler?: SamplerOptions;
}

/** Serving options as asked on the command line: the sampler's K may still default to the vocabulary's. */
export interface ServingRequest {
  compCtxLengths?: { prefill: number[]; decode: number[] };
  sampler?: { maxTopK?: number; returnPdfs?: boolean };
}

/** {@link ServingRequest} resolved against the graph's vocabulary (sampler.ts `resolveSampler`). */
export function resolveServing(o: ServingRequest, vocab: number): ServingOptions {
  return {
    ...(o.compCtxLengths ? { compCtxLengths: o.compCtxLengths } : {}),
    ...(o.sampler ? { sampler: resolveSampler(o.sampler, vocab) } : {}),
  };
}

/** Declares `comp_ctx_lengths` (int64 `[comp_ctx_lengths]`) when CCL is on; call after the states. */
export function declareCcl(g: GraphBuilder, o: ServingOptions, io: { inputs: string[] }): string | undefined {
  if (!o.compCtxLengths) return undefined;
  io.inputs.push('comp_ctx_lengths');
  return g.input('comp_ctx_lengths', 'int64', ['comp_ctx_lengths']);
}

/** What the head needs: the last-position logits `[B, 1, vocab]` and the call's tokens and positions `[B, S]`. */
export interface HeadWiring {
  logits: string;
  inputIds: string;
  positionIds: string;
  batchIndex?: string;
  vocab: number;
  batch: Dim;
  seq: Dim;
  cacheBatch: Dim;
}

/**
 * Outputs `logits`, or the sampler's `probs?` and `next_tokens` (declaring its inputs), and
 * records them in `io`; the caller then outputs its retained states and calls {@link retainSampler}.
 */
export function servingHead(
  c: Ctx,
  w: HeadWiring,
  o: ServingOptions,
  io: { inputs: string[]; outputs: string[] },
): SamplerValues | undefined {
  const g = c.g;
  if (!o.sampler) {
    g.output(w.logits, 'logits', 'float32', [w.batch, 1, w.vocab]);
    io.outputs.push('logits');
    return undefined;
  }
  const sampled = appendSampler(c, w, o.sampler);
  if (sampled.probs) g.output(sampled.probs, 'probs', 'float32', [w.batch, 1, w.vocab]);
  g.output(sampled.nextTokens, 'next_tokens', 'int64', [w.batch, 1, 1]);
  io.outputs.push(...(sampled.probs ? ['probs'] : []), 'next_tokens');
  io.inputs.push(...SAMPLER_INPUTS);
  return sampled;
}

/** The sampler's penalty buffers, retained after the caches (graph-interface.ts `samplerStates`). */
export function retainSampler(
  g: GraphBuilder,
  sampled: SamplerValues | undefined,
  cacheBatch: Dim,
  vocab: number,
  io: { outputs: string[] },
): void {
  if (!sampled) return;
  const buffers = samplerStates(cacheBatch, vocab);
  for (const s of buffers) g.output(sampled.states[s.name], s.retained, s.dtype, s.dims);
  io.outputs.push(...buffers.map((s) => s.retained));
}

/** The graph metadata `run` and `compile` read the serving features from (graph-metadata.ts). */
export function servingMetadata(o: ServingOptions): Record<string, string> {
  return {
    ...(o.compCtxLengths
      ? {
          [SERVING_METADATA.cclPrefill]: o.compCtxLengths.prefill.join(','),
          [SERVING_METADATA.cclDecode]: o.compCtxLengths.decode.join(','),
        }
      : {}),
    ...(o.sampler
      ? { [SERVING_METADATA.sampler]: JSON.stringify({ max_top_k_ids: o.sampler.maxTopK, return_pdfs: o.sampler.returnPdfs }) }
      : {}),
  };
}
