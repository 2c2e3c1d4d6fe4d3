/**
 * `export --config`'s options and the checks that do not need the graph: the CCL lists, the
 * speculative-decoding proposal lengths, the disaggregated prefill of a MoE arch, and what a
 * Whisper or a vision-language export refuses (export-config.ts routes and builds).
 */
import { UsageError } from '../errors';
import type { ExportDtype } from '../formats/dtype';
import type { ArchSpec } from './blocks/arch';
import type { Phase } from './exporter/decoder';
import type { LayoutPlanner } from './exporter/layout';
import type { SlidingCache } from './blocks/attention-window';
import { DISAGG_SERVING_MODEL_TYPES } from '../artifacts/graph-metadata';

/** Options of {@link exportFromConfig}. */
export interface ConfigExportOptions {
  /** Model directory holding config.json (or the config.json file itself). */
  config: string;
  out: string;
  dtype?: ExportDtype;
  ctxLen?: number;
  batchSize?: number;
  continuousBatching?: boolean;
  phase?: Phase;
  /** Used when the model directory holds a checkpoint. */
  planner?: LayoutPlanner;
  /** Default-domain opset, 17 (default, QEfficient's) … 21. */
  opset?: number;
  /** `--moe-flavour expert_parallel --pipeline-stages P`: the MoE blocks consume prepare's packed `[N, P, …]` layout. */
  expertParallel?: { stages: number };
  /** `--mla-cache`: the KV cache form of Multi-head Latent Attention models (per head by default). */
  mlaCache?: 'per-head' | 'compressed';
  /** `--sliding-cache`: Gemma 3's sliding layers over a ctx_len cache (`full`, default) or a `sliding_window` ring (`window`). */
  slidingCache?: SlidingCache;
  /** CCL buckets (`--comp-ctx-lengths-prefill` / `--comp-ctx-lengths-decode`); needs ctxLen. */
  compCtxLengths?: { prefill: number[]; decode: number[] };
  /** The on-device sampler (`--sampler`); maxTopK defaults to min(512, vocab). */
  sampler?: { maxTopK?: number; returnPdfs?: boolean };
  /** `--num-speculative-tokens`: the proposal lengths K of a speculative-decoding target model (QEfficient's TLM). */
  numSpeculativeTokens?: number[];
  /** `--enable-chunking`: QEfficient's chunked prefill-only graph (`--phase prefill` of a disaggregated-serving arch). */
  enableChunking?: boolean;
  /** `--replicate-kv-heads N`: QEfficient's ReplicateKVHeadTransform, N × the KV heads (blocks/replicate-kv.ts). */
  replicateKvHeads?: number;
  /** `--keep-quantized`: GPTQ/AWQ Linears stay packed and compute with MatMulNBits (keep-quantized.ts). */
  keepQuantized?: boolean;
  /** `--lora`: PEFT adapter folders served from one graph, ids 1… in this order (export-lora.ts). */
  lora?: readonly string[];
}

/**
 * QEfficient's treatment of explicit CCL lists (`QEfficient/utils/check_ccl_specializations.py`
 * `process_ccl_specializations`, steps 1–2): each value capped at ctx_len, duplicates removed,
 * sorted. (Making the prefill list disjoint from the decode list is a compiler limit, applied
 * where the qaic specializations are written.)
 */
export function normalizeCcl(values: number[], ctxLen: number, flag: string): number[] {
  if (values.length === 0) throw new UsageError(`${flag} needs at least one length`);
  for (const v of values) if (!(Number.isInteger(v) && v > 0)) throw new UsageError(`${flag}: ${v} is not a positive integer`);
  return [...new Set(values.map((v) => Math.min(v, ctxLen)))].sort((x, y) => x - y);
}

/**
 * The model types QEfficient's `SpDTransform` maps (`QEfficient/transformers/models/pytorch_transforms.py`
 * at main ebf55e81: QEffLlamaForCausalLM, QEffQwen2ForCausalLM, QEffQwen3ForCausalLM; any other
 * class raises "does not yet support returning multiple logits to keep").
 */
export const SPD_MODEL_TYPES: readonly string[] = ['llama', 'qwen2', 'qwen3'];

/**
 * `--num-speculative-tokens`, checked as QEfficient's compile checks it: sorted and deduplicated
 * (`sorted(set(num_speculative_tokens))`); the on-device sampler takes no K > 0 ("Currently,
 * sampler does not support `num_speculative_tokens` > 0"); CCL with a TLM raises
 * NotImplementedError there; a decode-only graph (one token per call) cannot take K + 1.
 */
export function speculativeTokens(ks: number[], modelType: string, o: ConfigExportOptions): number[] {
  if (!SPD_MODEL_TYPES.includes(modelType))
    throw new UsageError(
      `--num-speculative-tokens: QEfficient's SpDTransform supports ${SPD_MODEL_TYPES.join(', ')}; ${modelType} does not return multiple logits yet`,
    );
  const sorted = [...new Set(ks)].sort((a, b) => a - b);
  if (o.sampler && sorted[sorted.length - 1]! > 0)
    throw new UsageError("--num-speculative-tokens with --sampler: QEfficient's sampler does not support num_speculative_tokens > 0");
  if (o.compCtxLengths)
    throw new UsageError('--num-speculative-tokens with --comp-ctx-lengths-*: QEfficient does not compile a TLM with comp_ctx_lengths yet');
  if (o.phase === 'decode')
    throw new UsageError('--num-speculative-tokens with --phase decode: a decode-only graph takes one token per call, not K + 1');
  return sorted;
}

/**
 * `--phase prefill` of a disaggregated-serving arch (`DISAGG_SERVING_MODEL_TYPES`), as
 * `QEFFAutoModelForCausalLM.export(prefill_only=True)` builds it (`QEfficient/transformers/models/modeling_auto.py`
 * and `pytorch_transforms.py`, main ebf55e81): `PrefillOnlyTransform` / `PrefillOnlyChunkedTransform`
 * swap only the MoE block of qwen3_moe, glm4_moe and kimi (QEffPrefillChunked…MoE: the same routed sum,
 * computed expert-blocked over `num_cores` NSPs) and keep attention and the cache interface, so
 * the graph is the plain one, recorded as a prefill graph with its chunking and expert count for
 * compile's checks. gpt_oss's `PrefillOnlyTransform` also swaps attention: {@link gptOssPrefillOnly}
 * (its chunked variant is refused). Without chunking a continuous-batching prefill graph is QEfficient's
 * NotImplementedError ("prefix-caching without chunking").
 */
export function disaggPrefill(arch: ArchSpec, o: ConfigExportOptions): { enable_chunking: boolean; num_experts?: number } | undefined {
  const disaggArch = DISAGG_SERVING_MODEL_TYPES.includes(arch.modelType);
  if (o.enableChunking && !(disaggArch && o.phase === 'prefill'))
    throw new UsageError(
      `--enable-chunking goes with --phase prefill of a disaggregated-serving model (${DISAGG_SERVING_MODEL_TYPES.join(', ')})`,
    );
  if (!disaggArch || o.phase !== 'prefill') return undefined;
  if (arch.modelType === 'gpt_oss' && o.enableChunking)
    throw new UsageError(
      "--phase prefill --enable-chunking of gpt_oss: QEfficient's chunked prefill-only GPT-OSS attention (QEffPrefillOnlyChunkedGptOssAttention) is not built yet",
    );
  if (arch.modelType === 'gpt_oss' && o.compCtxLengths)
    throw new UsageError(
      "--phase prefill of gpt_oss with --comp-ctx-lengths-*: QEfficient's prefill-only GPT-OSS attention reads no cache",
    );
  if (o.continuousBatching && !o.enableChunking)
    throw new UsageError(
      '--phase prefill with --continuous-batching needs --enable-chunking (QEfficient: "prefix-caching without chunking, this feature is not available yet")',
    );
  // gpt_oss's unchunked QEffPrefillOnlyGptOssMLP is not expert-blocked (no supports_moe_prefill_blocking): no expert count to check
  const moe = arch.modelType === 'gpt_oss' ? undefined : arch.layers.find((l) => l.mlp.kind === 'moe')?.mlp;
  return { enable_chunking: !!o.enableChunking, ...(moe?.kind === 'moe' ? { num_experts: moe.weights.experts } : {}) };
}

/** The first text-model flag given that a Whisper export cannot honour (its flag name), else undefined. */
export function whisperRefusal(o: ConfigExportOptions): string | undefined {
  if (o.phase !== undefined && o.phase !== 'both') return `--phase ${o.phase}`;
  if (o.continuousBatching) return '--continuous-batching';
  if (o.expertParallel) return '--moe-flavour expert_parallel';
  if (o.mlaCache) return '--mla-cache';
  if (o.slidingCache !== undefined) return '--sliding-cache';
  if (o.compCtxLengths) return '--comp-ctx-lengths-prefill/--comp-ctx-lengths-decode';
  if (o.sampler) return '--sampler';
  if (o.lora?.length) return '--lora';
  if (o.replicateKvHeads) return '--replicate-kv-heads';
  return undefined;
}

/** The `export --config` options a vision-language export refuses, each with one line (the first given, in this order). */
export function refuseVlmOptions(o: ConfigExportOptions): void {
  if (o.keepQuantized) throw new UsageError('--keep-quantized is not supported for vision-language models yet');
  // QEfficient's dual-QPC VLM exports its language graph prefill-only (prefill_only=True) or for both phases; no decode-only graph
  if (o.phase === 'decode')
    throw new UsageError(`--phase decode is not supported for vision-language models (the language graph serves both phases)`);
  if (o.enableChunking)
    throw new UsageError(
      `--enable-chunking goes with --phase prefill of a disaggregated-serving model (${DISAGG_SERVING_MODEL_TYPES.join(', ')}), not a vision-language model`,
    );
  if (o.expertParallel)
    throw new UsageError('--moe-flavour expert_parallel is not supported for vision-language models yet (export the plain layout)');
  if (o.mlaCache)
    throw new UsageError('--mla-cache goes with a Multi-head Latent Attention model (deepseek_v3, kimi_k2), not a vision-language model');
  if (o.numSpeculativeTokens)
    throw new UsageError("--num-speculative-tokens goes with a text model (QEfficient's SpDTransform: llama, qwen2, qwen3)");
}
