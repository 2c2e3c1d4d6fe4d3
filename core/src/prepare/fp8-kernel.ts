/**
 * The FP8 dequantization kernel: `W[…, i, j] = f32(q[…, i, j]) · scale[…, ⌊i/bR⌋, ⌊j/bC⌋]`,
 * computed in f32 (as DeepSeek-V3's `weight_dequant_kernel` and HF's `Fp8Dequantize` do; the
 * double-precision product of two f32 values is exact, so storing it into a Float32Array is
 * one f32 rounding, the f32 multiply). Works on any run of elements of the flattened tensor,
 * so dense tensors stream in chunks and fused experts dequantize only the rows they take.
 * Edge blocks may be partial (the grid is ceil(R/bR) × ceil(C/bC)).
 */
import { PipelineError } from '../errors';
import { type DType } from '../formats/dtype';
import { toFloat32 } from '../formats/float-convert';
import { narrowingTally } from './overflow';
import type { ScaleRef } from './types';

const tables = new Map<DType, Float32Array>();
/** The 256 values of an 8-bit float dtype (NaN codes included). */
export function fp8Values(dtype: DType): Float32Array {
  let t = tables.get(dtype);
  if (!t) {
    const codes = new Uint8Array(256);
    for (let b = 0; b < 256; b++) codes[b] = b;
    tables.set(dtype, (t = toFloat32(codes, dtype)));
  }
  return t;
}

/** Refuses a scale tensor of `scales` values that does not cover elements `first … first + n − 1` of `shape`. */
export function checkScaleCover(scales: number, first: number, n: number, shape: readonly number[], ref: ScaleRef): void {
  const C = shape[shape.length - 1]!;
  const R = shape[shape.length - 2]!;
  const [nR, nC] = ref.grid;
  if (scales < Math.ceil((first + n) / (R * C)) * nR * nC) {
    throw new PipelineError(
      `FP8 dequantization: ${scales} scales do not cover elements ${first}…${first + n} of ${JSON.stringify(shape)} in ${ref.block[0]}×${ref.block[1]} blocks`,
    );
  }
}

/**
 * Dequantizes `q` (elements `first … first + q.length − 1` of a `shape` tensor of FP8
 * `dtype`) with `scale` (the whole scale tensor in f32, laid out as `ref.grid` per matrix).
 * `to` is the dtype the result is written as: into F32 nothing narrows it afterwards, so the
 * non-finite results that are not NaN codes (a finite code times a huge or non-finite scale,
 * E5M2's Inf codes) are counted here; a 16-bit target's narrowing counts them itself.
 */
export function dequantFp8(
  q: Uint8Array,
  dtype: DType,
  first: number,
  shape: readonly number[],
  scale: Float32Array,
  ref: ScaleRef,
  to?: DType,
): Float32Array {
  const values = fp8Values(dtype);
  const C = shape[shape.length - 1]!;
  const R = shape[shape.length - 2]!;
  const [bR, bC] = ref.block;
  const [nR, nC] = ref.grid;
  checkScaleCover(scale.length, first, q.length, shape, ref);
  const out = new Float32Array(q.length);
  let nan = 0;
  let i = 0;
  while (i < q.length) {
    const f = first + i;
    const col = f % C;
    const row = (f - col) / C;
    const r = row % R;
    const matrix = (row - r) / R;
    const scaleRow = (matrix * nR + Math.floor(r / bR)) * nC;
    const rowEnd = i + Math.min(C - col, q.length - i);
    // One scale per run of bC columns.
    for (let c = col; i < rowEnd;) {
      const s = scale[scaleRow + Math.floor(c / bC)]!;
      const runEnd = Math.min(rowEnd, i + (bC - (c % bC)));
      for (; i < runEnd; i++, c++) {
        const v = values[q[i]!]!;
        if (v !== v) nan++; // counted in this pass: no second look at the weights
        out[i] = v * s;
      }
    }
  }
  // A NaN code (E4M3's 0x7f / 0xff) dequantizes to NaN whatever the scale: prepare refuses the
  // tensor unless --allow-overflow (overflow.ts).
  narrowingTally.fp8Nan += nan;
  if (to === 'F32') {
    let bad = 0;
    for (let j = 0; j < out.length; j++) bad += Number.isFinite(out[j]!) ? 0 : 1;
    narrowingTally.nonFinite += bad - nan;
  }
  return out;
}
