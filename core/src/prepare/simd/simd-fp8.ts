/**
 * FP8 dequantization on the SIMD kernels of convert.wat (`fp8_dequant` and the lookups): E4M3 or E5M2 codes
 * times their block scale, straight into f32, bf16 or f16 — the scale multiply fused into the
 * widening and no f32 buffer for a 16-bit target. Bit for bit the scalar kernel
 * (fp8-kernel.ts + kernels.ts `encodeF32`), counts included (tested); the scalar kernel stays
 * for the rare paths (fused experts split by columns, targets other than these three) and
 * where WebAssembly SIMD is missing or `WEIGHT_SPEC_SIMD=off`.
 *
 * Into bf16 the codes go by table lookup (convert.wat `fp8_tables`, `fp8_bf16_rows`, and
 * `fp8_bf16_t`, which dequantizes a whole expert straight into its batch slot, transposed);
 * exact by construction, with the blocks and codes the tables cannot serve on the exact path.
 * Into f16 and f32 by a table of all 256 results per scale (`fp8_luts`, `fp8_lut`), made by
 * the exact path; blocks where a finite code overflows f16 go through `fp8_dequant`.
 *
 * The module's memory holds, in order: the scales of one tensor (f32), their lookup tables
 * (bf16: 64 bytes each; f16/f32: 256 results each) and flags (a byte each), the codes of a
 * chunk, the dequantized chunk, and (for MoE stacking) a batch of transposed expert slices.
 */
import type { DType } from '../../formats/dtype';
import { checkScaleCover } from '../fp8-kernel';
import { narrowingTally } from '../overflow';
import type { ScaleRef } from '../types';
import { instance, reserve } from './simd-convert';

const FORMATS: Partial<Record<DType, number>> = { F8_E4M3: 0, F8_E5M2: 1 };
const TARGETS: Partial<Record<DType, number>> = { F32: 0, BF16: 1, F16: 2 };
const OUT_SIZE = [4, 2, 2];

type Tables = (scales: number, n: number, fmt: number, dst: number, flags: number) => void;
type Luts = (scales: number, n: number, fmt: number, to: number, dst: number, flags: number) => void;
type RowsLut = (
  src: number,
  dst: number,
  n: number,
  scales: number,
  luts: number,
  flags: number,
  bC: number,
  col: number,
  fmt: number,
  to: number,
) => number;
type RowsBf16 = (
  src: number,
  dst: number,
  n: number,
  scales: number,
  tables: number,
  flags: number,
  bC: number,
  col: number,
  fmt: number,
) => number;
type FusedBf16 = (
  src: number,
  dst: number,
  rows: number,
  cols: number,
  c0: number,
  c1: number,
  scales: number,
  tables: number,
  flags: number,
  nC: number,
  bR: number,
  bC: number,
  fmt: number,
) => number;

/** Bytes of one scale's lookup tables (fp8_tables: V and W, low and high bytes). */
const TABLE_BYTES = 64;

/** A dequantizer of one FP8 tensor's chunks over the module's memory. */
export interface SimdDequant {
  /** The first `elems` codes of the chunk, in the module's memory: fill them, then {@link run}. */
  input(elems: number): Uint8Array;
  /** The first `elems` results' bytes, valid after {@link run}. */
  output(elems: number): Uint8Array;
  /** Puts the tensor's scales (f32, the ref's grid per matrix) in place; at most `maxScales` of them. */
  setScales(scale: Float32Array): void;
  /** Dequantizes the chunk in input: elements `first … first + elems − 1` of the tensor. */
  run(first: number, elems: number): void;
  /** Transposes the last result, `[rows, cols]`, into batch slot `slot` as `[cols, rows]` (with `slots` > 0). */
  transposeInto(rows: number, cols: number, slot: number): void;
  /**
   * Dequantizes the whole `[rows, cols]` matrix in input straight into batch slot `slot` as
   * `[cols, rows]`: {@link run} then {@link transposeInto} in one pass where the target is bf16
   * and the shape and blocks suit the fused kernel (`fp8_bf16_t`), else those two.
   */
  dequantTransposeInto(rows: number, cols: number, slot: number): void;
  /** The first `n` batch slots of `elems` elements each. */
  batch(n: number, elems: number): Uint8Array;
}

const up16 = (n: number) => Math.ceil(n / 16) * 16;

/** The largest finite value of each format (its index in the kernels: E4M3FN, E5M2). */
const FP8_MAX = [448, 57344];

/** Whether `[rows, cols]` FP8 slices dequantize and transpose into `to` (f32, bf16, f16) on the SIMD kernels here. */
export function canDequantTranspose(from: DType, to: DType, rows: number, cols: number): boolean {
  return (
    process.env.WEIGHT_SPEC_SIMD !== 'off' &&
    FORMATS[from] !== undefined &&
    TARGETS[to] !== undefined &&
    rows % 8 === 0 &&
    cols % 8 === 0 &&
    instance() !== null
  );
}

/**
 * A SIMD dequantizer of FP8 `from` (`shape`, scaled by `ref`) into `to`, for chunks of up to
 * `maxElems` elements and up to `maxScales` scales, with room for `slots` transposed slices of
 * `maxElems` elements; undefined for other dtypes or without WebAssembly SIMD.
 */
export function simdDequant(
  from: DType,
  to: DType,
  shape: readonly number[],
  ref: ScaleRef,
  maxElems: number,
  maxScales: number,
  slots = 0,
): SimdDequant | undefined {
  const fmt = FORMATS[from];
  const target = TARGETS[to];
  if (process.env.WEIGHT_SPEC_SIMD === 'off' || fmt === undefined || target === undefined || shape.length < 2) return undefined;
  const k = instance();
  if (!k) return undefined;
  const nanCount = k.fp8_nan as { value: number };
  const rowsBf16 = k.fp8_bf16_rows as RowsBf16;
  const outSize = OUT_SIZE[target]!;
  const C = shape[shape.length - 1]!;
  const R = shape[shape.length - 2]!;
  const [bR, bC] = ref.block;
  const [nR, nC] = ref.grid;
  // Every target goes through lookup kernels (convert.wat), with tables per scale and a flag
  // byte: bf16 through exponent-shift tables of 64 bytes, f16 and f32 through all 256 results.
  const bf16 = target === 1;
  const rowsLut = k.fp8_lut as RowsLut;
  const tableBytes = bf16 ? TABLE_BYTES : 256 * outSize;
  const tabAt = up16(maxScales * 4);
  const flagAt = tabAt + maxScales * tableBytes;
  const inAt = up16(flagAt + maxScales);
  const outAt = inAt + up16(maxElems);
  const batchAt = outAt + up16(maxElems * outSize);
  reserve(k, batchAt + slots * maxElems * outSize);
  // f32 results are moved by transpose32, 16-bit ones by transpose16
  const transpose = (outSize === 4 ? k.transpose32 : k.transpose16) as (src: number, dst: number, rows: number, cols: number) => void;
  let scales = 0;
  // Into f32 the kernels count only NaN codes: a finite code times a huge (or non-finite) scale
  // is ±Inf or NaN too, and E5M2's Inf codes stay Inf. When the scales allow either, the
  // results are scanned after the kernel (issue #43 case 5: such values were written silently).
  const f32 = outSize === 4;
  let scanF32 = false;
  const view = (at: number, bytes: number) => new Uint8Array(k.memory.buffer, at, bytes);
  /** Non-finite f32 results of the last run that are not NaN codes (those the kernel counted). */
  const overflowedF32 = (elems: number, nanCodes: number): number => {
    const out = new Float32Array(k.memory.buffer, outAt, elems);
    let bad = 0;
    for (let i = 0; i < elems; i++) bad += Number.isFinite(out[i]!) ? 0 : 1;
    return bad - nanCodes;
  };
  return {
    input: (elems) => view(inAt, elems),
    output: (elems) => view(outAt, elems * outSize),
    setScales(scale) {
      if (scale.length > maxScales) throw new RangeError(`simd dequant: ${scale.length} scales, room for ${maxScales}`);
      new Float32Array(k.memory.buffer, 0, scale.length).set(scale);
      scales = scale.length;
      scanF32 = f32 && (fmt !== 0 || scale.some((s) => !Number.isFinite(Math.fround(Math.abs(s) * FP8_MAX[fmt]!))));
      if (bf16) (k.fp8_tables as Tables)(0, scale.length, fmt, tabAt, flagAt);
      else (k.fp8_luts as Luts)(0, scale.length, fmt, target, tabAt, flagAt);
    },
    run(first, elems) {
      if (elems > maxElems) throw new RangeError(`simd dequant: ${elems} elements, room for ${maxElems}`);
      checkScaleCover(scales, first, elems, shape, ref);
      const nan0 = nanCount.value;
      let bad = 0;
      // one kernel call per row segment: the row picks the scale row, the kernel walks its blocks
      for (let i = 0; i < elems;) {
        const f = first + i;
        const col = f % C;
        const row = (f - col) / C;
        const r = row % R;
        const scaleRow = (((row - r) / R) * nR + Math.floor(r / bR)) * nC;
        const n = Math.min(C - col, elems - i);
        bad += bf16
          ? rowsBf16(inAt + i, outAt + i * outSize, n, scaleRow * 4, tabAt + scaleRow * TABLE_BYTES, flagAt + scaleRow, bC, col, fmt)
          : rowsLut(inAt + i, outAt + i * outSize, n, scaleRow * 4, tabAt + scaleRow * tableBytes, flagAt + scaleRow, bC, col, fmt, target);
        i += n;
      }
      const nanCodes = nanCount.value - nan0;
      narrowingTally.nonFinite += scanF32 ? overflowedF32(elems, nanCodes) : bad;
      narrowingTally.fp8Nan += nanCodes;
    },
    transposeInto(rows, cols, slot) {
      if (slot >= slots || rows * cols > maxElems || rows % 8 !== 0 || cols % 8 !== 0)
        throw new RangeError(`simd dequant: [${rows}, ${cols}] slot ${slot} does not fit`);
      transpose(outAt, batchAt + slot * rows * cols * outSize, rows, cols);
    },
    dequantTransposeInto(rows, cols, slot) {
      // one matrix: its blocks tile it, and each 8 × 16 tile of the kernel lies in one block
      if (!bf16 || rows !== R || cols !== C || rows % 8 !== 0 || cols % 16 !== 0 || bR % 8 !== 0 || bC % 16 !== 0) {
        this.run(0, rows * cols);
        this.transposeInto(rows, cols, slot);
        return;
      }
      if (slot >= slots || rows * cols > maxElems) throw new RangeError(`simd dequant: [${rows}, ${cols}] slot ${slot} does not fit`);
      checkScaleCover(scales, 0, rows * cols, shape, ref);
      const nan0 = nanCount.value;
      const dst = batchAt + slot * rows * cols * 2;
      const bad = (k.fp8_bf16_t as FusedBf16)(inAt, dst, rows, cols, 0, cols, 0, tabAt, flagAt, nC, bR, bC, fmt);
      narrowingTally.nonFinite += bad;
      narrowingTally.fp8Nan += nanCount.value - nan0;
    },
    batch: (n, elems) => view(batchAt, n * elems * outSize),
  };
}
