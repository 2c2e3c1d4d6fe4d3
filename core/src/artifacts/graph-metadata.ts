/**
 * How an exported graph says it carries QEfficient's serving features — the metadata keys the
 * exporter writes and the inputs/outputs that give them away — read by `run`, `compile` (qaic
 * specializations), `inspect` and the language server's hover. No graph-building code here, so
 * the language server bundles only this.
 */
import { PipelineError } from '../errors';

/** metadata_props keys recording the serving features (read by `run`, `inspect` and the language server). */
export const SERVING_METADATA = {
  cclPrefill: 'weight_spec.comp_ctx_lengths_prefill',
  cclDecode: 'weight_spec.comp_ctx_lengths_decode',
  sampler: 'weight_spec.sampler',
  /** LoRA graphs: `{"adapters": [dir…], "rank": R}`, adapter k + 1 = adapters[k] (export-lora.ts). */
  lora: 'weight_spec.lora_adapters',
  /** The TLM's proposal lengths K (`--num-speculative-tokens`), comma-separated. */
  speculative: 'weight_spec.num_speculative_tokens',
  /** A disaggregated-serving prefill graph (`--phase prefill` of a SPECIALIZED_DISAGG arch): JSON `{"enable_chunking", "num_experts"}`. */
  disaggPrefill: 'weight_spec.disagg_prefill',
} as const;

/**
 * QEfficient's `SPECIALIZED_DISAGG_SERVING_MODEL_ARCH` (`QEfficient/transformers/modeling_utils.py`,
 * main ebf55e81): the model types whose `--phase prefill` export is QEfficient's prefill-only graph.
 */
export const DISAGG_SERVING_MODEL_TYPES: readonly string[] = ['gpt_oss', 'qwen3_moe', 'glm4_moe', 'kimi_k2', 'kimi_k25', 'gemma4'];

/** What a disaggregated prefill graph records (undefined for any other graph). */
export function disaggPrefillFromMetadata(
  metadata: readonly { key: string; value: string }[],
): { enableChunking: boolean; numExperts?: number } | undefined {
  const v = metadata.find((e) => e.key === SERVING_METADATA.disaggPrefill)?.value;
  if (v === undefined) return undefined;
  let p: unknown;
  try {
    p = JSON.parse(v);
  } catch {
    p = undefined;
  }
  const o = p as { enable_chunking?: unknown; num_experts?: unknown } | undefined;
  if (typeof o?.enable_chunking !== 'boolean')
    throw new PipelineError(`the graph's metadata ${SERVING_METADATA.disaggPrefill} is not {"enable_chunking": bool, …}: ${v}`);
  return { enableChunking: o.enable_chunking, ...(typeof o.num_experts === 'number' ? { numExperts: o.num_experts } : {}) };
}

/** The CCL lists a graph's metadata records (`[]` for a list not recorded). */
export function cclFromMetadata(metadata: readonly { key: string; value: string }[]): { prefill: number[]; decode: number[] } {
  const list = (key: string) =>
    (metadata.find((e) => e.key === key)?.value ?? '')
      .split(',')
      .filter((v) => /^\d+$/.test(v.trim()))
      .map(Number);
  return { prefill: list(SERVING_METADATA.cclPrefill), decode: list(SERVING_METADATA.cclDecode) };
}

/** The TLM's proposal lengths K a graph's metadata records, sorted and distinct (`[]` when none). */
export function speculativeFromMetadata(metadata: readonly { key: string; value: string }[]): number[] {
  const v = metadata.find((e) => e.key === SERVING_METADATA.speculative)?.value ?? '';
  return [
    ...new Set(
      v
        .split(',')
        .filter((x) => /^\d+$/.test(x.trim()))
        .map(Number),
    ),
  ].sort((a, b) => a - b);
}

/**
 * The sampler's state inputs (QEfficient's penalty buffers, `[cache batch, vocab]` bool), each
 * retained like a cache: the names here, the descriptor in artifacts/graph-interface.ts
 * (`samplerStates`), which the decoder, the sampler block and `run` read.
 */
export const SAMPLER_STATES = ['past_repetition_penalty_buffer', 'past_presence_penalty_buffer'] as const;

/** The sampler's graph inputs in QEfficient's order (after the model's own inputs). */
export const SAMPLER_INPUTS = [
  'last_accepted_output_tokens',
  SAMPLER_STATES[0],
  'repetition_penalties',
  SAMPLER_STATES[1],
  'presence_penalties',
  'temperatures',
  'top_ks',
  'top_ps',
  'min_ps',
  'random_numbers',
] as const;

/** A graph value as both ONNX readers describe it (wire model, summary). */
interface Value {
  name: string;
  dims: (number | string)[];
}

/** The serving features of a graph. */
export interface ServingFeatures {
  /** CCL buckets; `[]` lists when the graph takes comp_ctx_lengths but records none. */
  ccl?: { prefill: number[]; decode: number[] };
  /** On-device sampler: K = random_numbers' second dim; probs output present. */
  sampler?: { maxTopK: number; returnPdfs: boolean; vocab: number };
  /** Speculative decoding's target model: the `num_logits_to_keep` input; the proposal lengths K recorded at export (`[]` when none). */
  speculative?: { ks: number[] };
}

/** Reads the features from a model's inputs, outputs and metadata. */
export function servingFeatures(
  model: string,
  inputs: readonly Value[],
  outputs: readonly Value[],
  metadata: readonly { key: string; value: string }[],
): ServingFeatures {
  const f: ServingFeatures = {};
  if (inputs.some((i) => i.name === 'comp_ctx_lengths')) f.ccl = cclFromMetadata(metadata);
  if (inputs.some((i) => i.name === 'num_logits_to_keep')) {
    f.speculative = { ks: speculativeFromMetadata(metadata) };
  }
  if (outputs.some((o) => o.name === 'next_tokens')) {
    const rn = inputs.find((i) => i.name === 'random_numbers');
    const buf = inputs.find((i) => i.name === SAMPLER_STATES[0]);
    const k = rn?.dims[1];
    const vocab = buf?.dims[1];
    if (typeof k !== 'number' || typeof vocab !== 'number') {
      throw new PipelineError(
        `${model}: the graph outputs next_tokens but its random_numbers / ${SAMPLER_STATES[0]} inputs have no fixed [batch, max_top_k_ids] / [batch, vocab] shape`,
      );
    }
    f.sampler = { maxTopK: k, returnPdfs: outputs.some((o) => o.name === 'probs'), vocab };
  }
  return f;
}

/**
 * One line per serving feature a graph carries (for `inspect` and the language server's hover);
 * empty for a plain graph.
 */
export function servingSummary(
  model: string,
  inputs: readonly Value[],
  outputs: readonly Value[],
  metadata: readonly { key: string; value: string }[],
): string[] {
  let f: ServingFeatures;
  try {
    f = servingFeatures(model, inputs, outputs, metadata);
  } catch (e) {
    return [`on-device sampler: ${(e as Error).message}`];
  }
  const lines: string[] = [];
  if (f.ccl) {
    const list = (xs: number[]) => (xs.length ? xs.join(',') : '(not recorded)');
    lines.push(`CCL: comp_ctx_lengths input; buckets prefill ${list(f.ccl.prefill)}, decode ${list(f.ccl.decode)}`);
  }
  if (f.speculative) {
    const ks = f.speculative.ks;
    lines.push(
      `speculative decoding (TLM): num_logits_to_keep input; logits for K + 1 positions per call${ks.length ? `, K = ${ks.join(',')}` : ''}`,
    );
  }
  if (f.sampler) {
    lines.push(
      `on-device sampler: next_tokens${f.sampler.returnPdfs ? ' + probs' : ''} instead of logits; max_top_k_ids ${f.sampler.maxTopK}, vocab ${f.sampler.vocab}`,
    );
  }
  if (inputs.some((i) => i.name === 'lora_ids')) {
    const n = loraAdapters(metadata);
    lines.push(`LoRA: lora_ids [batch, 1] picks 0 (base)${n ? ` or ${n.map((d, i) => `${i + 1} = ${d}`).join(', ')}` : ' or an adapter'}`);
  }
  return lines;
}

/** The adapter folders a LoRA graph's metadata names (id k = the k-th), if it names them. */
export function loraAdapters(metadata: readonly { key: string; value: string }[]): string[] | undefined {
  const v = metadata.find((e) => e.key === SERVING_METADATA.lora)?.value;
  if (v === undefined) return undefined;
  try {
    const adapters = (JSON.parse(v) as { adapters?: unknown }).adapters;
    return Array.isArray(adapters) ? adapters.map(String) : undefined;
  } catch {
    return undefined;
  }
}
