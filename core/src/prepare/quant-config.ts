/**
 * What a checkpoint's `config.json` `quantization_config` says, and whether prepare can undo
 * it. Prepare dequantizes two FP8 layouts into plain float weights (and GPT-OSS's MXFP4
 * experts, see transforms/mxfp4.ts); every other method is refused here, before anything is
 * written, with one line naming `quant_method` and what is supported. `prepare`, `export`,
 * `check` and the language server all call {@link quantSchemeOf}, so they say the same.
 *
 * Facts (sources cited in core/test/prepare/prepare-fp8.test.ts):
 * - HF fine-grained FP8 (`quant_method: "fp8"`, `weight_block_size: [bR, bC]`, DeepSeek-V3,
 *   Qwen3-*-FP8): `W = float32(q) · weight_scale_inv[⌊i/bR⌋, ⌊j/bC⌋]`; without a block size
 *   HF's Fp8Dequantize uses one block per matrix.
 * - compressed-tensors (`quant_method: "compressed-tensors"`, a `config_groups` scheme whose
 *   `weights` are `{type: "float", num_bits: 8}`): `W = (q − zero_point) · weight_scale`,
 *   symmetric (no zero point) for float8; the scale is per tensor, per channel (`[R, 1]`),
 *   per group (`[R, C/g]`) or per block (`block_structure`). `input_scale` belongs to the
 *   activations, which the exported graph computes in float: it is dropped.
 * - GPTQ and AutoAWQ GEMM int4 (`quant_method: "gptq" | "awq"`): packed int32 weights, fp16
 *   scales, int4 zero points (transforms/int4.ts holds the layouts, cited there). Prepare
 *   dequantizes them, or with `--keep-quantized` repacks them for MatMulNBits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, oneLine } from '../errors';
import { readRegularFile } from '../paths';

/** One quantization prepare knows how to undo. */
export type QuantScheme =
  | { method: 'fp8'; block?: [number, number] }
  | { method: 'compressed-tensors'; strategies: string[]; groupSizes: number[]; blocks: [number, number][] }
  | { method: 'mxfp4' }
  | Int4Scheme;

/**
 * A GPTQ or AutoAWQ-GEMM int4 checkpoint, as prepare reads it (only what changes the bytes).
 * `groupSize` -1 is one group over the whole input (HF's convention).
 */
export interface Int4Scheme {
  method: 'gptq' | 'awq';
  groupSize: number;
  /** GPTQ act-order (`desc_act`): `g_idx` permutes the groups, so a kept graph takes it as an input. */
  descAct: boolean;
  /** Added to each stored zero point: GPTQ v1 (`checkpoint_format: "gptq"`) stores zero − 1. */
  zeroOffset: 0 | 1;
  /** GPTQ `lm_head: true`: the head is quantized too. */
  lmHead: boolean;
}

/** What prepare can undo, for refusal messages. */
export const SUPPORTED_QUANTIZATION =
  'fp8 (block-scaled, *_scale_inv tensors), compressed-tensors (float8 weights with weight_scale), mxfp4 (GPT-OSS experts), gptq (4-bit, checkpoint_format gptq or gptq_v2), awq (4-bit GEMM)';

/** A refusal naming the config file, `quant_method` and what is supported. */
export function refuseQuantization(file: string, method: string, why: string): never {
  throw new FormatError(file, `quantization_config.quant_method "${method}" ${why}; prepare dequantizes only ${SUPPORTED_QUANTIZATION}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pair(v: unknown): [number, number] | undefined {
  return Array.isArray(v) && v.length === 2 && v.every((x) => Number.isInteger(x) && (x as number) > 0)
    ? [v[0] as number, v[1] as number]
    : undefined;
}

/** The method name of a quantization_config (bitsandbytes' legacy `load_in_*bit` configs have none). */
export function quantMethodOf(q: Record<string, unknown>): string {
  if (typeof q.quant_method === 'string') return q.quant_method;
  if (q.load_in_4bit === true || q.load_in_8bit === true) return 'bitsandbytes';
  return String(q.quant_method ?? 'unknown');
}

function compressedTensors(q: Record<string, unknown>, file: string): QuantScheme {
  const method = 'compressed-tensors';
  const format = q.format;
  if (format !== undefined && format !== 'float-quantized' && format !== 'naive-quantized') {
    refuseQuantization(file, method, `with format "${String(format)}" is not float8 weights`);
  }
  const groups = isRecord(q.config_groups) ? Object.entries(q.config_groups) : [];
  if (groups.length === 0) refuseQuantization(file, method, 'has no config_groups');
  const strategies: string[] = [];
  const groupSizes: number[] = [];
  const blocks: [number, number][] = [];
  for (const [name, g] of groups) {
    const w = isRecord(g) ? g.weights : undefined;
    if (!isRecord(w)) refuseQuantization(file, method, `group "${name}" has no weights scheme`);
    if (w.type !== 'float' || w.num_bits !== 8) {
      refuseQuantization(file, method, `group "${name}" quantizes weights to ${String(w.type)}${String(w.num_bits)}, not float8`);
    }
    if (w.symmetric === false) refuseQuantization(file, method, `group "${name}" is asymmetric (a float8 zero point)`);
    if (w.dynamic === true) refuseQuantization(file, method, `group "${name}" has dynamic weight scales (none stored)`);
    const strategy = String(w.strategy ?? 'tensor');
    if (!['tensor', 'channel', 'group', 'block'].includes(strategy)) {
      refuseQuantization(file, method, `group "${name}" uses weight strategy "${strategy}"`);
    }
    strategies.push(strategy);
    if (strategy === 'group') {
      if (!Number.isInteger(w.group_size) || (w.group_size as number) < 1)
        refuseQuantization(file, method, `group "${name}" has no group_size`);
      groupSizes.push(w.group_size as number);
    }
    if (strategy === 'block') {
      const b = pair(w.block_structure);
      if (!b) refuseQuantization(file, method, `group "${name}" has no block_structure [rows, cols]`);
      blocks.push(b);
    }
  }
  return { method, strategies, groupSizes, blocks };
}

/** A refusal naming one field of an int4 config (and its quant_method). */
function refuseField(file: string, method: string, field: string, value: unknown, why: string): never {
  throw new FormatError(
    file,
    `quantization_config.${field} ${JSON.stringify(value)} (quant_method "${method}") ${why}; prepare dequantizes only ${SUPPORTED_QUANTIZATION}`,
  );
}

/**
 * GPTQ (HF GPTQConfig / GPTQModel's quantize_config: bits, group_size, desc_act, sym,
 * checkpoint_format, pack_dtype, lm_head) and AutoAWQ (HF AwqConfig: bits, group_size,
 * zero_point, version/format, backend). Storage layouts other than plain GPTQ v1/v2 and AWQ GEMM
 * (marlin, bitblas, exllama's EXL2 — its own quant_method —, AWQ GEMV) are refused by field.
 * `use_exllama` / `exllama_config` choose a load-time kernel, not a layout: ignored.
 */
function int4Scheme(q: Record<string, unknown>, method: 'gptq' | 'awq', file: string): Int4Scheme {
  if (q.bits !== 4) refuseField(file, method, 'bits', q.bits ?? null, 'is not 4: prepare reads 4-bit GPTQ/AWQ only');
  // the layout fields first (a GEMV or marlin checkpoint is refused as such), then the group size
  const groupSize = (): number => {
    const g = q.group_size ?? (method === 'gptq' ? 128 : undefined);
    if (!(g === -1 || (Number.isInteger(g) && (g as number) > 0)))
      refuseField(file, method, 'group_size', g ?? null, 'must be a positive integer or -1');
    return g as number;
  };
  if (method === 'awq') {
    const version = String(q.version ?? q.format ?? 'gemm').toLowerCase();
    if (version !== 'gemm')
      refuseField(file, method, q.version !== undefined ? 'version' : 'format', q.version ?? q.format, 'is not the GEMM layout');
    if (q.zero_point === false) refuseField(file, method, 'zero_point', false, 'has no zero points (not the GEMM layout)');
    const backend = q.backend === undefined ? 'autoawq' : String(q.backend).toLowerCase();
    if (backend !== 'autoawq' && backend !== 'auto') refuseField(file, method, 'backend', q.backend, 'is not AutoAWQ');
    return { method, groupSize: groupSize(), descAct: false, zeroOffset: 0, lmHead: false };
  }
  const fmt = q.checkpoint_format ?? q.format ?? 'gptq';
  if (q.checkpoint_format !== undefined && q.format !== undefined && q.checkpoint_format !== q.format)
    refuseField(file, method, 'format', q.format, `disagrees with checkpoint_format ${JSON.stringify(q.checkpoint_format)}`);
  const field = q.checkpoint_format !== undefined ? 'checkpoint_format' : 'format';
  if (fmt !== 'gptq' && fmt !== 'gptq_v2') refuseField(file, method, field, fmt, 'is not a layout prepare reads (gptq, gptq_v2)');
  if (q.pack_dtype !== undefined && q.pack_dtype !== 'int32') refuseField(file, method, 'pack_dtype', q.pack_dtype, 'is not int32');
  // v1 stores zero − 1, so an asymmetric zero point 0 wraps (AutoGPTQ and GPTQModel read it differently)
  if (fmt === 'gptq' && q.sym === false)
    refuseField(file, method, 'sym', false, 'with checkpoint_format "gptq" (v1) stores zero − 1, which cannot hold a zero point 0 exactly');
  return { method, groupSize: groupSize(), descAct: q.desc_act === true, zeroOffset: fmt === 'gptq' ? 1 : 0, lmHead: q.lm_head === true };
}

/**
 * The quantization scheme `config` declares (undefined when none), or a FormatError naming
 * `file` for any quantization prepare cannot undo.
 */
export function quantSchemeOf(config: Record<string, unknown> | undefined, file: string): QuantScheme | undefined {
  const q = config?.quantization_config;
  if (q === undefined || q === null) return undefined;
  if (!isRecord(q)) throw new FormatError(file, `"quantization_config" is not an object`);
  const method = quantMethodOf(q);
  switch (method) {
    case 'fp8': {
      if (q.fmt !== undefined && q.fmt !== 'e4m3' && q.fmt !== 'e5m2')
        refuseQuantization(file, method, `with fmt "${String(q.fmt)}" is not an FP8 format`);
      if (q.weight_block_size === undefined || q.weight_block_size === null) return { method };
      const block = pair(q.weight_block_size);
      if (!block)
        throw new FormatError(
          file,
          `quantization_config.weight_block_size must be [rows, cols] of positive integers (got ${JSON.stringify(q.weight_block_size)})`,
        );
      return { method, block };
    }
    case 'compressed-tensors':
      return compressedTensors(q, file);
    case 'mxfp4':
      return { method };
    case 'gptq':
    case 'awq':
      return int4Scheme(q, method, file);
    default:
      return refuseQuantization(file, method, 'cannot be undone by prepare');
  }
}

/** A short description for messages and hover: `fp8, blocks 128×128`, `compressed-tensors (channel)`. */
export function describeScheme(s: QuantScheme): string {
  if (s.method === 'fp8') return `fp8, ${s.block ? `blocks ${s.block[0]}×${s.block[1]}` : 'one block per matrix'}`;
  if (s.method === 'compressed-tensors') return `compressed-tensors float8 (${[...new Set(s.strategies)].join(', ')})`;
  if (s.method === 'mxfp4') return 'mxfp4';
  return `${s.method} int4, group ${s.groupSize}${s.descAct ? ', act-order' : ''}`;
}

/** True for the int4 schemes (GPTQ, AWQ). */
export function isInt4(s: QuantScheme | undefined): s is Int4Scheme {
  return s?.method === 'gptq' || s?.method === 'awq';
}

/**
 * `config` with the quantization of an AutoGPTQ / GPTQModel `quantize_config.json` beside it when
 * config.json has none (older GPTQ checkpoints keep it only there; its `quant_method` is gptq).
 */
export async function withQuantizeConfig(
  dir: string,
  config: Record<string, unknown> | undefined,
): Promise<Record<string, unknown> | undefined> {
  const file = path.join(dir, 'quantize_config.json');
  if (config?.quantization_config != null || !fs.existsSync(file)) return config;
  let q: unknown;
  try {
    q = JSON.parse(await readRegularFile(file, 'utf8'));
  } catch (e) {
    throw e instanceof FormatError ? e : new FormatError(file, `not valid JSON: ${oneLine(e)}`);
  }
  if (!isRecord(q)) throw new FormatError(file, 'not a JSON object');
  return { ...config, quantization_config: { quant_method: 'gptq', ...q } };
}
