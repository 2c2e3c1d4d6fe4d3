/**
 * Where each weight input's bytes will live: the prepared checkpoint's layout. With a
 * checkpoint, the prepare planner says (its `outputs` map). From config.json alone there is
 * nothing to plan from, so the layout is derived the way prepare lays tensors out (docs/
 * ARCHITECTURE.md, "Prepared layout"): dense tensors in `base-NNNN.safetensors` shards (in
 * graph order, a new shard past {@link BASE_SHARD_BYTES}), each MoE layer's stacked experts in
 * `experts-layer-NNNNN.safetensors`. `weight-spec check` flags any drift once the prepared
 * checkpoint exists.
 */
import path from 'node:path';
import { PipelineError } from '../../errors';
import { BASE_SHARD_BYTES } from '../../prepare';
import type { ArchSpec, WeightInput } from './arch';
import { moeWeightInputs } from './moe';

/** One planned tensor of the prepared checkpoint. */
export interface PlannedTensor {
  /** File relative to the prepared directory. */
  file: string;
  dtype: string;
  shape: number[];
}

/** The prepared checkpoint the spec points into. */
export interface PreparedLayout {
  /** Absolute prepared directory (the spec's `model_id`). */
  dir: string;
  tensors: Map<string, PlannedTensor>;
  /** `plan`: from the prepare planner over a real checkpoint; `config`: derived from config alone. */
  source: 'plan' | 'config';
}

/** Dense shard size limit: the planner's, so a derived layout shards like prepare would. */
export { BASE_SHARD_BYTES };

/** QEfficient's prepared directory: `<parent>/<name>-qeff-prepared-<dtype>` beside the source. */
export function preparedDirFor(modelDir: string, dtype: string): string {
  const abs = path.resolve(modelDir);
  return path.join(path.dirname(abs), `${path.basename(abs)}-qeff-prepared-${dtype}`);
}

const DTYPE_BYTES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };
const ONNX_TO_ST: Record<string, string> = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' };

/** Safetensors dtype name of a CLI dtype name. */
export function safetensorsDtype(dtype: string): string {
  return ONNX_TO_ST[dtype] ?? dtype;
}

/** The layout derived from the architecture alone (no checkpoint given). */
export function layoutFromConfig(a: ArchSpec, weights: WeightInput[], dir: string, dtype: string): PreparedLayout {
  const st = safetensorsDtype(dtype);
  const size = DTYPE_BYTES[st] ?? 4;
  const expertLayer = new Map<string, number>();
  a.layers.forEach((l, i) => {
    if (l.mlp.kind === 'moe') for (const w of moeWeightInputs(l.mlp.weights)) expertLayer.set(w.name, i);
  });
  const tensors = new Map<string, PlannedTensor>();
  let shard = 0;
  let used = 0;
  for (const w of weights) {
    const bytes = w.shape.reduce((x, y) => x * y, 1) * size;
    const layer = expertLayer.get(w.name);
    let file: string;
    if (layer !== undefined) {
      file = `experts-layer-${String(layer).padStart(5, '0')}.safetensors`;
    } else {
      if (used > 0 && used + bytes > BASE_SHARD_BYTES) {
        shard++;
        used = 0;
      }
      used += bytes;
      file = `base-${String(shard).padStart(4, '0')}.safetensors`;
    }
    tensors.set(w.name, { file, dtype: st, shape: w.shape });
  }
  return { dir, tensors, source: 'config' };
}

/**
 * Checks that the layout holds every weight input with the shape the graph declares; a
 * mismatch means config.json and the checkpoint disagree, and the graph would not bind.
 */
export function checkLayout(weights: WeightInput[], layout: PreparedLayout, configFile: string): void {
  for (const w of weights) {
    const t = layout.tensors.get(w.name);
    if (!t) {
      throw new PipelineError(`${configFile}: the prepared checkpoint would have no tensor "${w.name}" (the graph needs it; does config.json match the checkpoint?)`);
    }
    if (t.shape.length !== w.shape.length || t.shape.some((d, i) => d !== w.shape[i])) {
      throw new PipelineError(`${configFile}: "${w.name}" is [${t.shape.join(', ')}] in the prepared checkpoint but the config implies [${w.shape.join(', ')}]`);
    }
  }
}
