/**
 * dtype/shape facts a spec states about a tensor (v1's `shape`/`dtype`), compared with the
 * checkpoint header — and the dtype-name vocabulary shared with the ONNX checks.
 */
import { nameOfDtype, type DType } from '../formats/dtype';
import type { TensorInfo } from '../formats/safetensors';
import { report, type CheckContext } from './context';

const NAMES: Record<string, DType> = {
  float64: 'F64', double: 'F64', f64: 'F64', fp64: 'F64',
  float32: 'F32', float: 'F32', f32: 'F32', fp32: 'F32',
  float16: 'F16', half: 'F16', f16: 'F16', fp16: 'F16',
  bfloat16: 'BF16', bf16: 'BF16',
  float8_e4m3fn: 'F8_E4M3', float8_e4m3: 'F8_E4M3', f8_e4m3: 'F8_E4M3',
  float8_e5m2: 'F8_E5M2', f8_e5m2: 'F8_E5M2',
  float8_e8m0fnu: 'F8_E8M0', float8_e8m0: 'F8_E8M0', f8_e8m0: 'F8_E8M0', e8m0: 'F8_E8M0',
  int64: 'I64', long: 'I64', i64: 'I64', int32: 'I32', int: 'I32', i32: 'I32',
  int16: 'I16', short: 'I16', i16: 'I16', int8: 'I8', i8: 'I8',
  uint8: 'U8', u8: 'U8', uint16: 'U16', u16: 'U16', uint32: 'U32', u32: 'U32', uint64: 'U64', u64: 'U64',
  bool: 'BOOL', boolean: 'BOOL',
};

/** The dtype a spec names (`float32`, `torch.bfloat16`, `F16`, `fp16`, …), if recognized. */
export function dtypeFromName(name: string): DType | undefined {
  const n = name.trim().toLowerCase().replace(/^(torch|np|numpy)\./, '');
  return NAMES[n];
}

/** `prepare --dtype` spelling of a float dtype, for hints. */
export function prepareDtypeName(d: DType): string | undefined {
  return nameOfDtype(d);
}

/** `[2, 3]` */
export function shapeText(shape: readonly (number | string)[]): string {
  return `[${shape.join(', ')}]`;
}

/** Compares a v1 input's declared `shape`/`dtype` (when present) with the tensor's header. */
export function checkInputFacts(ctx: CheckContext, i: number, info: TensorInfo): void {
  const input = ctx.spec.inputs[i]!;
  const node = ctx.sources.inputs[i]!.node;
  if (input.quantization) return; // packed storage: declared facts are logical, not stored
  if (Array.isArray(input.shape) && !sameShape(input.shape, info.shape)) {
    report(ctx, 'shape-mismatch', [...node, 'shape'],
      `inputs[${i}] declares shape ${shapeText(input.shape)} but "${info.key}" has shape ${shapeText(info.shape)}`);
  }
  if (typeof input.dtype === 'string') {
    const d = dtypeFromName(input.dtype);
    if (d === undefined) {
      report(ctx, 'dtype-unknown', [...node, 'dtype'], `inputs[${i}]: unknown dtype "${input.dtype}"`);
    } else if (d !== info.dtype) {
      const want = prepareDtypeName(d);
      report(ctx, 'declared-dtype-mismatch', [...node, 'dtype'],
        `inputs[${i}] declares dtype ${input.dtype} but "${info.key}" is ${info.dtype}` +
          (want ? `; run \`weight-spec prepare --dtype ${want}\` and point the spec at the prepared checkpoint` : ''));
    }
  }
}

/** Element-wise equality of two shapes. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, k) => x === b[k]);
}
