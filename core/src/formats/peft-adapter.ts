/**
 * A PEFT LoRA adapter folder as `PeftModel.save_pretrained` writes it: `adapter_config.json`
 * and `adapter_model.safetensors`, whose keys are `base_model.model.<module>.lora_A.weight`
 * (`[r, in]`) and `…lora_B.weight` (`[out, r]`) for each targeted `nn.Linear` `<module>`.
 *
 * What PEFT's `LoraLayer` computes (peft/tuners/lora/layer.py `Linear.forward`, unmerged):
 * `y = x·Wᵀ + (x·Aᵀ)·Bᵀ · scaling`, with `scaling = lora_alpha / r`, or `lora_alpha / √r` when
 * `use_rslora` (`LoraLayer.update_layer`). The modules an adapter targets are read from its
 * keys (what PEFT saved), not re-derived from `target_modules` patterns.
 *
 * Everything else PEFT can save changes that math (DoRA's magnitude vectors, LoRA biases,
 * `fan_in_fan_out` Conv1D layouts, per-module `rank_pattern` / `alpha_pattern`, layers given by
 * `layers_to_transform`, `modules_to_save` copies, embedding LoRA, initialisations that rewrite
 * the base weights): each is refused with one line naming the file and the field or key.
 */
import path from 'node:path';
import { FormatError, oneLine } from '../errors';
import { readRegularFile } from '../paths';
import { isFloat } from './dtype';
import { readSafetensorsHeader, type TensorInfo } from './safetensors';

/** The adapter's config file name (PEFT's CONFIG_NAME). */
export const ADAPTER_CONFIG = 'adapter_config.json';
/** The adapter's weights file name (PEFT's SAFETENSORS_WEIGHTS_NAME). */
export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

/** One targeted Linear of an adapter. */
export interface LoraModule {
  /** The base model's module path (`model.layers.0.self_attn.q_proj`): its weight is `<module>.weight`. */
  module: string;
  /** `lora_A.weight` `[r, in]` and `lora_B.weight` `[out, r]` as stored. */
  a: TensorInfo;
  b: TensorInfo;
  r: number;
  in: number;
  out: number;
}

/** A read and validated adapter. */
export interface PeftAdapter {
  /** Absolute adapter folder. */
  dir: string;
  configFile: string;
  weightsFile: string;
  r: number;
  alpha: number;
  rslora: boolean;
  /** lora_alpha / r, or lora_alpha / √r with use_rslora. */
  scaling: number;
  /** `base_model_name_or_path`, as written. */
  baseModel?: string;
  /** The targeted Linears, in the file's key order. */
  modules: LoraModule[];
}

/** PEFT's scaling of an adapter (peft/tuners/lora/layer.py `update_layer`). */
export function loraScaling(alpha: number, r: number, rslora: boolean): number {
  return rslora ? alpha / Math.sqrt(r) : alpha / r;
}

const isEmpty = (v: unknown) =>
  v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && Object.keys(v).length === 0);

/** Fields whose non-default value changes the adapter's math, and why each is refused. */
const REFUSED: [field: string, refused: (v: unknown) => boolean, why: string][] = [
  ['use_dora', (v) => v === true, 'DoRA adapters (magnitude vectors) are not supported'],
  ['fan_in_fan_out', (v) => v === true, 'Conv1D-layout (fan_in_fan_out) adapters are not supported'],
  ['bias', (v) => v !== undefined && v !== 'none', 'adapters that train biases are not supported (only "none")'],
  ['lora_bias', (v) => v === true, 'LoRA biases are not supported'],
  ['modules_to_save', (v) => !isEmpty(v), 'modules_to_save (full copies of base modules) are not supported'],
  ['layers_to_transform', (v) => !isEmpty(v), 'layers_to_transform is not supported'],
  ['layer_replication', (v) => !isEmpty(v), 'layer_replication is not supported'],
  ['rank_pattern', (v) => !isEmpty(v), 'per-module ranks (rank_pattern) are not supported'],
  ['alpha_pattern', (v) => !isEmpty(v), 'per-module alphas (alpha_pattern) are not supported'],
  ['megatron_config', (v) => !isEmpty(v), 'Megatron adapters are not supported'],
  ['loftq_config', (v) => !isEmpty(v), 'LoftQ adapters (for a quantized base) are not supported'],
  [
    'init_lora_weights',
    (v) => typeof v === 'string' && /^(pissa|olora|loftq|corda)/i.test(v),
    'this initialisation rewrites the base weights; convert the adapter to plain LoRA first',
  ],
];

const KEY = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/;

async function readConfig(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readRegularFile(file, 'utf8');
  } catch (e) {
    throw e instanceof FormatError ? e : new FormatError(file, `cannot read (${oneLine(e)})`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new FormatError(file, `not valid JSON (${oneLine(e)})`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new FormatError(file, 'is not a JSON object');
  return v as Record<string, unknown>;
}

/** Reads `dir`'s adapter config and weights' header; a FormatError (one line) for anything not plain LoRA. */
export async function readPeftAdapter(dir: string): Promise<PeftAdapter> {
  const abs = path.resolve(dir);
  const configFile = path.join(abs, ADAPTER_CONFIG);
  const weightsFile = path.join(abs, ADAPTER_WEIGHTS);
  const cfg = await readConfig(configFile);
  const type = cfg.peft_type;
  if (type !== 'LORA') throw new FormatError(configFile, `peft_type ${JSON.stringify(type)}: only LORA adapters are supported`);
  for (const [field, refused, why] of REFUSED) if (refused(cfg[field])) throw new FormatError(configFile, `${field}: ${why}`);
  const r = cfg.r;
  const alpha = cfg.lora_alpha;
  if (typeof r !== 'number' || !Number.isInteger(r) || r < 1)
    throw new FormatError(configFile, `r must be a positive integer (got ${JSON.stringify(r)})`);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha))
    throw new FormatError(configFile, `lora_alpha must be a number (got ${JSON.stringify(alpha)})`);
  const rslora = cfg.use_rslora === true;
  const header = await readSafetensorsHeader(weightsFile);
  const parts = new Map<string, { a?: TensorInfo; b?: TensorInfo }>();
  for (const [key, t] of header.tensors) {
    const m = KEY.exec(key);
    if (!m) {
      const what = /lora_embedding_[AB]/.test(key)
        ? 'embedding LoRA is not supported'
        : /lora_magnitude_vector/.test(key)
          ? 'DoRA magnitude vectors are not supported'
          : 'not a LoRA weight of a Linear (base_model.model.<module>.lora_A|lora_B.weight)';
      throw new FormatError(weightsFile, `"${key}": ${what}`);
    }
    if (!isFloat(t.dtype)) throw new FormatError(weightsFile, `"${key}" is ${t.dtype}; LoRA weights must be float`);
    const p = parts.get(m[1]!) ?? {};
    p[m[2] === 'A' ? 'a' : 'b'] = t;
    parts.set(m[1]!, p);
  }
  if (parts.size === 0) throw new FormatError(weightsFile, 'holds no LoRA weights');
  const modules: LoraModule[] = [];
  for (const [module, { a, b }] of parts) {
    if (!a || !b) throw new FormatError(weightsFile, `${module}: lora_${a ? 'B' : 'A'}.weight is missing`);
    const [ra, inF] = a.shape as [number, number];
    const [outF, rb] = b.shape as [number, number];
    if (a.shape.length !== 2 || b.shape.length !== 2 || ra !== r || rb !== r)
      throw new FormatError(
        weightsFile,
        `${module}: lora_A [${a.shape.join(', ')}] and lora_B [${b.shape.join(', ')}] are not [r, in] and [out, r] with r = ${r} (adapter_config.json)`,
      );
    modules.push({ module, a, b, r, in: inF, out: outF });
  }
  const base = cfg.base_model_name_or_path;
  return {
    dir: abs,
    configFile,
    weightsFile,
    r,
    alpha,
    rslora,
    scaling: loraScaling(alpha, r, rslora),
    ...(typeof base === 'string' && base !== '' ? { baseModel: base } : {}),
    modules,
  };
}
