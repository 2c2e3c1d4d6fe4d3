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
import { modelHome } from '../../hub/hf-cache';
import { PipelineError } from '../../errors';
import type { ExportDtype } from '../../formats/dtype';
import { BASE_SHARD_BYTES, type LoraStack } from '../../prepare';
import type { ArchSpec } from '../blocks/arch';
import type { WeightInput } from '../blocks/weight-inputs';
import { familyOfConfig } from '../families/registry';
import { moeWeightInputs } from '../blocks/moe';
import { proposeByName } from '../../resolve/name-strategies';
import { qeffCheckpointHome, qeffPreparedFolderName } from '../../artifacts/prepared-folder';

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
  /** `--lora`: the adapters the planner stacked (prepare/lora-plan.ts). */
  lora?: LoraStack;
}

/** Plans the prepared layout of a real checkpoint (the prepare planner, adapted); `expertParallel`: the packed MoE layout over P stages. */
export type LayoutPlanner = (
  checkpointDir: string,
  dtype: ExportDtype,
  o?: { expertParallel?: { stages: number }; keepQuantized?: boolean; lora?: readonly string[] },
) => Promise<PreparedLayout>;

/** Dense shard size limit: the planner's, so a derived layout shards like prepare would. */
export { BASE_SHARD_BYTES };

/**
 * QEfficient's prepared directory: `<parent>/<name>-qeff-prepared-<dtype>` beside the source
 * (for a snapshot of the Hugging Face cache, in weight-spec's home: never inside the cache), or
 * in QEfficient's checkpoint home when `QEFF_CHECKPOINT_HOME` is set (prepared-folder.ts).
 */
export function preparedDirFor(modelDir: string, dtype: string, env: NodeJS.ProcessEnv = process.env): string {
  const home = modelHome(modelDir, env);
  const qeffHome = qeffCheckpointHome(env);
  return path.join(qeffHome ? path.resolve(qeffHome) : home.parent, qeffPreparedFolderName(home.name, dtype));
}

const DTYPE_BYTES: Record<string, number> = { F32: 4, F16: 2, BF16: 2 };
const ONNX_TO_ST: Record<string, string> = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' };

/** Safetensors dtype name of a CLI dtype name. */
export function safetensorsDtype(dtype: string): string {
  return ONNX_TO_ST[dtype] ?? dtype;
}

/** The layout derived from the architecture alone (no checkpoint given). */
export function layoutFromConfig(a: Pick<ArchSpec, 'layers'>, weights: WeightInput[], dir: string, dtype: string): PreparedLayout {
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
 * The prepared key a graph input reads. Inputs are named by the module's parameter path, as
 * QEfficient names them; the checkpoint may store the tensor under another key (GPT-2 saved
 * from GPT2Model: `wte.weight` for `transformer.wte.weight`). QEfficient's name strategies
 * decide, in its order (exact, strip `base_model.`, add/strip the base-model prefix, …).
 */
export function keyForInput(name: string, layout: PreparedLayout, config?: Record<string, unknown>): string | undefined {
  if (layout.tensors.has(name)) return name;
  return proposeByName(name, (k) => layout.tensors.has(k), config).find((p) => p.strategy !== 'tied')?.key;
}

/**
 * Checks that the layout holds every weight input with the shape the graph declares (a
 * mismatch means config.json and the checkpoint disagree, and the graph would not bind) and
 * returns each input's key in the layout.
 */
export function checkLayout(
  weights: WeightInput[],
  layout: PreparedLayout,
  configFile: string,
  config?: Record<string, unknown>,
): Map<string, string> {
  const keys = new Map<string, string>();
  for (const w of weights) {
    const key = keyForInput(w.name, layout, config);
    const t = key === undefined ? undefined : layout.tensors.get(key);
    if (!t) {
      throw new PipelineError(
        `${configFile}: the prepared checkpoint would have no tensor "${w.name}" (the graph needs it; does config.json match the checkpoint?)`,
      );
    }
    if (t.shape.length !== w.shape.length || t.shape.some((d, i) => d !== w.shape[i])) {
      throw new PipelineError(
        `${configFile}: "${key}" is [${t.shape.join(', ')}] in the prepared checkpoint but the config implies [${w.shape.join(', ')}]`,
      );
    }
    keys.set(w.name, key!);
  }
  return keys;
}

/**
 * The spec's `model_name`: the architecture class (`LlamaForCausalLM`), as QEfficient writes
 * `self.model.__class__.__name__` — config.json's `architectures[0]`, else the Hugging Face
 * class of its family (the registry row's `hfClass`), else `fallback`.
 */
export function modelClassName(config: unknown, fallback: string): string {
  const c = (config ?? {}) as { architectures?: unknown };
  const first = Array.isArray(c.architectures) ? c.architectures[0] : undefined;
  if (typeof first === 'string' && first.length > 0) return first;
  return familyOfConfig(config)?.hfClass ?? fallback;
}
