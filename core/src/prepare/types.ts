/**
 * The data a prepare plan is made of. A plan is a list of {@link Task}s; each task reads
 * source tensors (refs at stage `source`), passes each output tensor through its stages
 * (e.g. `stacked` → `packed` → `final`) in memory, and writes one output file. Everything
 * here is plain JSON-serializable data: tasks are posted to worker threads as they are.
 */
import type { DType, PrepareDtype } from '../formats/dtype';

/** A logical tensor at one stage of its transformation. */
export interface TensorRef {
  key: string;
  stage: string;
}

/** Where a source tensor's bytes are (absolute file + absolute byte offset). */
export interface SourceTensor {
  key: string;
  file: string;
  dtype: DType;
  shape: number[];
  offset: number;
  byteLength: number;
}

/**
 * How one slot (expert slice) of a stacked output tensor is produced. `whole`: a whole
 * source tensor; `range`: a byte range of a source tensor (fused splits); `mxfp4`: the
 * dequantized rows of one expert (`parity` 0/1 keeps every other row, GPT-OSS gate/up);
 * `columns`: every other column of a 2-D source row (interleaved biases); `half-columns`:
 * one expert's `[rows, 2·cols]` matrix of a `[E, rows, 2·cols]` source, keeping the first
 * (`half` 0) or last (1) `cols` of every row (Qwen3-VL-MoE's fused `gate_up_proj [E, H, 2I]`).
 */
export type SlicePlan =
  | { kind: 'whole'; src: string; scale?: ScaleRef }
  | { kind: 'range'; src: string; start: number; length: number; scale?: ScaleRef }
  | { kind: 'mxfp4'; blocks: string; scales: string; expert: number; parity?: 0 | 1 }
  | { kind: 'columns'; src: string; row: number; parity: 0 | 1 }
  | { kind: 'half-columns'; src: string; expert: number; half: 0 | 1; scale?: ScaleRef };

/**
 * The scale a quantized source is dequantized with (transforms/fp8.ts): element `[…, i, j]`
 * is multiplied by `key[…, ⌊i/block[0]⌋, ⌊j/block[1]⌋]` (a `grid` of scale rows × columns per
 * matrix), in f32, before any other step — so stacking, splitting and packing see real values.
 */
export interface ScaleRef {
  key: string;
  block: [number, number];
  grid: [number, number];
}

/** One tensor a task writes, with the recipe for its bytes. */
export interface OutputTensor {
  key: string;
  dtype: DType;
  shape: number[];
  /** Stages the tensor passes, first `source`, last `final` (for the plan and traces). */
  stages: string[];
  /** `convert`: one source tensor, converted in chunks; `slots`: concatenated slices. */
  recipe: { kind: 'convert'; src: string; scale?: ScaleRef } | { kind: 'slots'; slots: SlicePlan[] };
  /**
   * When set, this tensor is computed together with the named sibling from the same source
   * reads (GPT-OSS gate/up share each expert's blocks): the sibling's bytes are kept in
   * memory while this one streams, then written, so every source byte is read once.
   */
  pairedWith?: string;
  /**
   * Each slot's bytes are the source matrix `[b, a]` of a `[a, b]` slice (the last two dims
   * of `shape`) and are transposed as they are written: QEfficient's canonical MoE layout
   * stores each expert's `nn.Linear` weight `[out, in]` as `[in, out]`.
   */
  transposeSlots?: boolean;
}

/** A unit of work: reads some source tensors, writes exactly one output file. */
export interface Task {
  id: string;
  /** Transform that declared it (`dense`, `moe-stack`, `fused-split`, `mxfp4`). */
  transform: string;
  /** Transform parameters that change the bytes (dtype, P/E, …). */
  params: Record<string, unknown>;
  inputs: TensorRef[];
  outputs: TensorRef[];
  /** Absolute source files the task reads. */
  sourceFiles: string[];
  /** Output file name, relative to the prepared directory. */
  file: string;
  /** Upper bound of the bytes the task holds at once (buffers in flight). */
  peakBytes: number;
  /** Bytes the task writes (tensor data). */
  outBytes: number;
  /** Source tensors by key. */
  sources: Record<string, SourceTensor>;
  /** Output tensors in file order. */
  tensors: OutputTensor[];
  /**
   * Absolute source file that already is this task's output byte for byte (a dense shard
   * with no transform and no dtype change): the task links it into place (a hard link, else
   * a relative symlink) instead of writing its bytes — QEfficient reuses the source
   * checkpoint in that case too (`QEfficient/base/checkpoint_transforms.py`).
   */
  link?: string;
}

/** Options shared by {@link planPrepare} and runPrepare. */
export interface PrepareOptions {
  /** Checkpoint directory, index file, or single safetensors file. */
  checkpoint: string;
  dtype: PrepareDtype;
  /** `expert_parallel` packs stacked experts as view(P, N, …).transpose(0, 1), N = E / P. */
  moeFlavour?: 'expert_parallel';
  /** P: QEfficient's num_pipeline_stages. */
  pipelineStages?: number;
  /** N: QEfficient's num_parallelized_experts = E / P; derived when absent, a UsageError when P · N ≠ E. */
  parallelExperts?: number;
  /** Output directory (default `<parent>/<name>-prepared-<dtype>-<hash>`). */
  out?: string;
  /** RAM budget in bytes; a task above it fails at planning. */
  budgetBytes?: number;
  /** A weight_spec.json: write exactly its files and keys (spec-layout.ts); the default out is its files' folder. */
  spec?: string;
}

/** A planned prepared tensor (what export writes its spec against). */
export interface PlannedTensor {
  file: string;
  dtype: DType;
  shape: number[];
}

/** The plan: tasks, where each key lands, the fingerprint and the output directory. */
export interface PreparePlan {
  fingerprint: string;
  outDir: string;
  /** The source checkpoint directory (absolute). */
  source: string;
  dtype: PrepareDtype;
  tasks: Task[];
  outputs: Map<string, PlannedTensor>;
  /** Source safetensors files with size and mtime (part of the fingerprint). */
  sourceFiles: { path: string; size: number; mtimeMs: number }[];
  /** Expert-parallel packing, when asked for: P stages, N = E / P experts per stage. */
  expertParallel?: { stages: number; experts: number };
  /** Sum of the tasks' output bytes. */
  totalBytes: number;
}

/** What an output tensor got: non-finite values written (`n`), and how many of them were FP8 NaN codes. */
export interface NonFinite {
  n: number;
  fp8Nan: number;
}

/** What a task did: bytes read per source key, written per output key, each output's stages. */
export interface TaskStats {
  readBytes: Record<string, number>;
  writtenBytes: Record<string, number>;
  stages: Record<string, string[]>;
  ms: number;
  /** Set when the task linked its source file instead of writing (links.ts). */
  linked?: 'hardlink' | 'symlink';
  /** Output tensors that got ±Inf/NaN values (narrowing overflow, FP8 NaN codes), counted by the kernels (overflow.ts). */
  nonFinite?: Record<string, NonFinite>;
  /** Set when the task sealed its file (`seal` option): the caller commits it (commitSealedFile). */
  sealed?: { tempFile: string; file: string };
}
