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
 */
import { FormatError } from '../errors';

/** One quantization prepare knows how to undo. */
export type QuantScheme =
  | { method: 'fp8'; block?: [number, number] }
  | { method: 'compressed-tensors'; strategies: string[]; groupSizes: number[]; blocks: [number, number][] }
  | { method: 'mxfp4' };

/** What prepare can undo, for refusal messages. */
export const SUPPORTED_QUANTIZATION =
  'fp8 (block-scaled, *_scale_inv tensors), compressed-tensors (float8 weights with weight_scale), mxfp4 (GPT-OSS experts)';

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
    default:
      return refuseQuantization(file, method, 'cannot be undone by prepare');
  }
}

/** A short description for messages and hover: `fp8, blocks 128×128`, `compressed-tensors (channel)`. */
export function describeScheme(s: QuantScheme): string {
  if (s.method === 'fp8') return `fp8, ${s.block ? `blocks ${s.block[0]}×${s.block[1]}` : 'one block per matrix'}`;
  if (s.method === 'compressed-tensors') return `compressed-tensors float8 (${[...new Set(s.strategies)].join(', ')})`;
  return 'mxfp4';
}
