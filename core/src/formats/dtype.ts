/**
 * Tensor element types: the safetensors dtype table, the names prepare and export take, and the
 * ONNX TensorProto.DataType mapping. The float conversions between them are float-convert.ts's.
 */
import { endianness } from 'node:os';
import { TensorDataType as ONNX } from './onnx/types';

/** Element types a safetensors header may name. */
export type DType =
  'F64' | 'F32' | 'F16' | 'BF16' | 'F8_E4M3' | 'F8_E5M2' | 'F8_E8M0' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'U16' | 'U32' | 'U64' | 'BOOL';

/**
 * The one dtype table: for each safetensors dtype its bytes per element, its ONNX
 * `TensorProto.DataType` and its name (torch's spelling, which the CLI's `--dtype`, the
 * extension's settings, prepare manifests and the graph builder use).
 */
const TABLE = {
  F64: { size: 8, onnx: ONNX.DOUBLE, name: 'float64' },
  F32: { size: 4, onnx: ONNX.FLOAT, name: 'float32' },
  F16: { size: 2, onnx: ONNX.FLOAT16, name: 'float16' },
  BF16: { size: 2, onnx: ONNX.BFLOAT16, name: 'bfloat16' },
  F8_E4M3: { size: 1, onnx: ONNX.FLOAT8E4M3FN, name: 'float8_e4m3fn' },
  F8_E5M2: { size: 1, onnx: ONNX.FLOAT8E5M2, name: 'float8_e5m2' },
  F8_E8M0: { size: 1, onnx: ONNX.FLOAT8E8M0, name: 'float8_e8m0fnu' },
  I64: { size: 8, onnx: ONNX.INT64, name: 'int64' },
  I32: { size: 4, onnx: ONNX.INT32, name: 'int32' },
  I16: { size: 2, onnx: ONNX.INT16, name: 'int16' },
  I8: { size: 1, onnx: ONNX.INT8, name: 'int8' },
  U8: { size: 1, onnx: ONNX.UINT8, name: 'uint8' },
  U16: { size: 2, onnx: ONNX.UINT16, name: 'uint16' },
  U32: { size: 4, onnx: ONNX.UINT32, name: 'uint32' },
  U64: { size: 8, onnx: ONNX.UINT64, name: 'uint64' },
  BOOL: { size: 1, onnx: ONNX.BOOL, name: 'bool' },
} as const satisfies Record<DType, { size: number; onnx: number; name: string }>;

/** Every dtype, in the table's order. */
export const DTYPES = Object.keys(TABLE) as DType[];

/** Bytes per element of each dtype. */
export const DTYPE_SIZE = Object.fromEntries(DTYPES.map((d) => [d, TABLE[d].size])) as Record<DType, number>;

/** True when `s` is one of the dtype codes of the table (`F32`, `BF16`, …). */
export function isDType(s: unknown): s is DType {
  return typeof s === 'string' && Object.prototype.hasOwnProperty.call(TABLE, s);
}

/** A dtype's name: `float32`, `bfloat16`, `int64`, `bool`, … */
export type DtypeName = (typeof TABLE)[DType]['name'];

/** The dtypes prepare converts a checkpoint to (`prepare --dtype`, `weightSpec.defaultDtype`). */
export const PREPARE_DTYPES = ['float32', 'float16', 'bfloat16'] as const satisfies readonly DtypeName[];
/** One of {@link PREPARE_DTYPES}. */
export type PrepareDtype = (typeof PREPARE_DTYPES)[number];

/** The dtypes an exported graph computes in (`export --dtype`). */
export const EXPORT_DTYPES = ['float32', 'float16', 'bfloat16'] as const satisfies readonly PrepareDtype[];
/** One of {@link EXPORT_DTYPES}. */
export type ExportDtype = (typeof EXPORT_DTYPES)[number];

const NAME_TO_DTYPE = new Map<string, DType>(DTYPES.map((d) => [TABLE[d].name, d]));

/** True when `s` is a {@link PrepareDtype}. */
export function isPrepareDtype(s: unknown): s is PrepareDtype {
  return (PREPARE_DTYPES as readonly unknown[]).includes(s);
}

/** `float32` → `F32`, `bfloat16` → `BF16`, `int64` → `I64`, … */
export function dtypeOfName(n: DtypeName): DType {
  return NAME_TO_DTYPE.get(n)!;
}

/** The name of a dtype: `F32` → `float32`. */
export function nameOfDtype(d: DType): DtypeName {
  return TABLE[d].name;
}

/** The prepare dtype a checkpoint dtype is, if it is one (`BF16` → `bfloat16`, `I64` → undefined). */
export function prepareDtypeOf(d: DType): PrepareDtype | undefined {
  const n = TABLE[d].name;
  return isPrepareDtype(n) ? n : undefined;
}

/** Other spellings of dtypes that specs and configs use, beside the table's codes and names. */
const ALIASES: Record<string, DType> = {
  double: 'F64',
  f64: 'F64',
  fp64: 'F64',
  float: 'F32',
  f32: 'F32',
  fp32: 'F32',
  half: 'F16',
  f16: 'F16',
  fp16: 'F16',
  bf16: 'BF16',
  float8_e4m3: 'F8_E4M3',
  f8_e4m3: 'F8_E4M3',
  f8_e5m2: 'F8_E5M2',
  float8_e8m0: 'F8_E8M0',
  f8_e8m0: 'F8_E8M0',
  e8m0: 'F8_E8M0',
  long: 'I64',
  i64: 'I64',
  int: 'I32',
  i32: 'I32',
  short: 'I16',
  i16: 'I16',
  i8: 'I8',
  u8: 'U8',
  u16: 'U16',
  u32: 'U32',
  u64: 'U64',
  boolean: 'BOOL',
};

/** The dtype a spec or config names (`float32`, `torch.bfloat16`, `F16`, `fp16`, …), if recognized. */
export function dtypeFromName(name: string): DType | undefined {
  const n = name
    .trim()
    .toLowerCase()
    .replace(/^(torch|np|numpy)\./, '');
  return NAME_TO_DTYPE.get(n) ?? ALIASES[n];
}

/**
 * True for the floating-point dtypes (F64, F32, F16, BF16, F8_E4M3, F8_E5M2). F8_E8M0 (the
 * OCP MX scale type: 2^(e−127), no sign, no mantissa) decodes but is not a float one converts
 * to: it only ever holds scales, which prepare keeps as stored.
 */
export function isFloat(d: DType): boolean {
  return d === 'F64' || d === 'F32' || d === 'F16' || d === 'BF16' || d === 'F8_E4M3' || d === 'F8_E5M2';
}

const ONNX_TO_DTYPE = new Map<number, DType>(DTYPES.map((d) => [TABLE[d].onnx, d]));

/** ONNX `TensorProto.DataType` of a dtype (F8_E4M3 → FLOAT8E4M3FN = 17). */
export function onnxTypeOf(d: DType): number {
  return TABLE[d].onnx;
}

/** ONNX `TensorProto.DataType` of a dtype name (`float32` → FLOAT = 1), as the graph builder writes it. */
export function onnxTypeOfName(n: DtypeName): number {
  return TABLE[dtypeOfName(n)].onnx;
}

/** The dtype of an ONNX `TensorProto.DataType`, or undefined (STRING, complex, FNUZ, …). */
export function dtypeOfOnnx(t: number): DType | undefined {
  return ONNX_TO_DTYPE.get(t);
}

if (endianness() !== 'LE') {
  // Typed-array views use host byte order; safetensors and ONNX raw_data are little-endian.
  throw new Error('weight-spec requires a little-endian host');
}
