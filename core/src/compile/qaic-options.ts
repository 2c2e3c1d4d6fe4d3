/**
 * What a qaic compile is asked for (the CLI's flags) and what the graph says about itself: the
 * inputs of every qaic planner (qaic-command.ts for causal LMs, qaic-vlm.ts, qaic-whisper.ts,
 * qaic-embedding.ts). Types only.
 */
import type { MdpNode } from '../artifacts/mdp-partition';

/** What the qaic backend is asked for (the CLI's flags). */
export interface QaicOptions {
  numCores?: number;
  mxfp6Matmul?: boolean;
  mxint8KvCache?: boolean;
  aicHwVersion?: string;
  batchSize?: number;
  prefillSeqLen?: number;
  ctxLen?: number;
  fullBatchSize?: number;
  /** An embedding graph: one specialization per sequence length (`--seq-len 32,64`; qaic-embedding.ts). */
  seqLens?: number[];
  /** A vision-language export: the image size compiled for (qaic-vlm.ts; refused for a text model). */
  imgHeight?: number;
  imgWidth?: number;
  imgSize?: number;
  /** Extra compiler options `a_b=v` (→ `-a-b=v`) or `a_b` (boolean → `-a-b`), in order. */
  extra?: string[];
  /** `--num-devices`: QEfficient's `num_devices` → `mdp_ts_num_devices` (multi-device partitioning). */
  numDevices?: number;
  /** `--pipeline-partitions`: `_compile`'s `mdp_num_partitions` (layer-balanced pipeline stages). */
  pipelinePartitions?: number;
}

/** What the graph says about itself (from its inputs). */
export interface GraphShapeFacts {
  /** The state inputs (graph-interface.ts `statesOfGraph`: `past_key.{i}`, `past_value.{i}`, …) in graph order; empty without a cache. */
  states: readonly string[];
  /** True when the graph takes `batch_index` (continuous batching). */
  continuousBatching: boolean;
  /** Fixed ctx_len of the cache inputs, when the dim is a number. */
  ctxLen?: number;
  /** Fixed batch of input_ids, when a number. */
  batch?: number;
  /** Fixed sequence length of input_ids, when a number (1: an export made with `--phase decode`). */
  seqLen?: number;
  /** Fixed batch of the cache inputs (the full batch with continuous batching), when a number. */
  cacheBatch?: number;
  /** A vision-language model's graph: `vision` takes pixel_values, `language` takes vision_embeds. */
  vlmRole?: 'vision' | 'language';
  /** A Whisper export's graph: `encoder` takes input_features, `decoder` takes encoder_hidden_states (qaic-whisper.ts). */
  whisperRole?: 'encoder' | 'decoder';
  /** CCL: the graph takes `comp_ctx_lengths`; the export's bucket lists (ONNX metadata). */
  ccl?: { prefill: number[]; decode: number[] };
  /** Speculative decoding's target model: the graph takes `num_logits_to_keep`; the proposal lengths K (ONNX metadata). */
  speculative?: number[];
  /** The graph's compute and KV dtype (`weight_spec.kv_dtype`), when recorded. */
  dtype?: string;
  /** The export's phase (`weight_spec.phase`): `compile`'s prefill_only is true for prefill, false for decode. */
  phase?: string;
  /** The export's `weight_spec.model_type` (gpt_oss's prefill-only graph has its own specializations). */
  modelType?: string;
  /** A disaggregated-serving prefill graph (`--phase prefill` of a SPECIALIZED_DISAGG arch): its chunking and expert count. */
  disaggPrefill?: { enableChunking: boolean; numExperts?: number };
  /** The nodes and initializers, read only for a pipeline partition config (`--pipeline-partitions` > 1). */
  graph?: { nodes: MdpNode[]; initializers: string[] };
}
