/**
 * The arithmetic of prepare, on raw little-endian bytes: dtype conversion with lookup
 * tables for the 16-bit ↔ 16-bit cases (a bf16 → f16 checkpoint is one table load per
 * element, exact RNE), MXFP4 dequantization, and row/column selection (the transposes: transpose-kernels.ts). Pure functions, used
 * by the worker threads.
 */
import { PipelineError } from '../errors';
import { DTYPE_SIZE, type DType } from '../formats/dtype';
import { convertFloat, floatBitsToBf16Bits, floatBitsToHalfBits, fromFloat32, halfBitsToFloatBits } from '../formats/float-convert';
import { narrowingTally, narrows } from './overflow';

/** Elements per chunk of a streamed dense conversion (512 KiB of bf16: read, convert and write stay in cache; measured best here). */
export const CHUNK_ELEMS = 256 * 1024;

/**
 * Output bytes of expert slices gathered before one write when stacking (a second batch fills
 * meanwhile). Small, so the kernel copies the batch into the page cache while it is still in
 * the CPU's cache: 8 MiB batches measured twice the system time.
 */
export const SLOT_BATCH_BYTES = 1024 * 1024;

/** The exponent mask of a 16-bit float target: a result with all of it set is ±Inf or NaN. */
function expMask(to: DType): number {
  return to === 'F16' ? 0x7c00 : 0x7f80;
}

/** Counts the ±Inf/NaN among 16-bit results of dtype `to` (for the rare sources without a counting kernel). */
function countNonFinite16(out: Uint8Array, to: DType): number {
  const m = expMask(to);
  let n = 0;
  for (let i = 0; i + 1 < out.byteLength; i += 2) if (((out[i]! | (out[i + 1]! << 8)) & m) === m) n++;
  return n;
}

/**
 * f32 bits → 16-bit `to` (RNE, as fromFloat32) into `d`, returning how many results are ±Inf
 * or NaN. Branch-free count: adding the exponent's lowest bit to an all-ones exponent carries
 * into bit 15.
 */
function narrowF32(s: Int32Array, d: Uint16Array, to: DType): number {
  let bad = 0;
  if (to === 'F16') {
    for (let i = 0; i < s.length; i++) {
      const h = floatBitsToHalfBits(s[i]!);
      d[i] = h;
      bad += ((h & 0x7c00) + 0x400) >>> 15;
    }
  } else {
    for (let i = 0; i < s.length; i++) {
      const h = floatBitsToBf16Bits(s[i]!);
      d[i] = h;
      bad += ((h & 0x7f80) + 0x80) >>> 15;
    }
  }
  return bad;
}

/** Converts `src` (dtype from) into `dst` (dtype to, exactly the right size) or returns new bytes. */
export type Converter = (src: Uint8Array, dst?: Uint8Array) => Uint8Array;

let bf16ToF16: Uint16Array | undefined;
let f16ToBf16: Uint16Array | undefined;

/** The 65536-entry lookup table of a 16-bit → 16-bit conversion (bf16 ↔ f16), built on first use; undefined for other pairs. */
export function table16(from: DType, to: DType): Uint16Array | undefined {
  if (from === 'BF16' && to === 'F16') {
    if (!bf16ToF16) {
      bf16ToF16 = new Uint16Array(65536);
      for (let b = 0; b < 65536; b++) bf16ToF16[b] = floatBitsToHalfBits(b << 16);
    }
    return bf16ToF16;
  }
  if (from === 'F16' && to === 'BF16') {
    if (!f16ToBf16) {
      f16ToBf16 = new Uint16Array(65536);
      for (let h = 0; h < 65536; h++) f16ToBf16[h] = floatBitsToBf16Bits(halfBitsToFloatBits(h) | 0);
    }
    return f16ToBf16;
  }
  return undefined;
}

function u16(b: Uint8Array): Uint16Array {
  return new Uint16Array(b.buffer, b.byteOffset, b.byteLength >> 1);
}

/**
 * `dst[i] = table[src[i]]` over 16-bit elements, two at a time through 32-bit views (half
 * the loads and stores of the 16-bit loop; this loop is the whole cost of bf16 → f16).
 */
function lookupPairs(src: Uint8Array, dst: Uint8Array, table: Uint16Array, count: boolean): void {
  const pairs = src.byteLength >> 2;
  const s32 = new Uint32Array(src.buffer, src.byteOffset, pairs);
  if (dst.byteOffset % 4 === 0) {
    const d32 = new Uint32Array(dst.buffer, dst.byteOffset, pairs);
    if (count) {
      // bf16 → f16: both halves' exponents at once; an all-ones one carries into bit 15 / 31
      let bad = 0;
      for (let i = 0; i < pairs; i++) {
        const v = s32[i]!;
        const w = table[v & 0xffff]! | (table[v >>> 16]! << 16);
        d32[i] = w;
        const t = (w & 0x7c007c00) + 0x04000400;
        bad += ((t >>> 15) & 1) + (t >>> 31);
      }
      narrowingTally.nonFinite += bad;
    } else {
      for (let i = 0; i < pairs; i++) {
        const v = s32[i]!;
        d32[i] = table[v & 0xffff]! | (table[v >>> 16]! << 16);
      }
    }
  } else {
    const d = u16(dst.byteOffset % 2 === 0 ? dst : new Uint8Array(dst.byteLength));
    for (let i = 0; i < pairs; i++) {
      const v = s32[i]!;
      d[2 * i] = table[v & 0xffff]!;
      d[2 * i + 1] = table[v >>> 16]!;
    }
    if (d.buffer !== dst.buffer) dst.set(new Uint8Array(d.buffer, 0, pairs * 4));
    if (count) narrowingTally.nonFinite += countNonFinite16(dst.subarray(0, pairs * 4), 'F16'); // unaligned output: rare
  }
  if (src.byteLength & 2) {
    const last = (src.byteLength >> 1) - 1;
    const v = src[last * 2]! | (src[last * 2 + 1]! << 8);
    const r = table[v]!;
    dst[last * 2] = r & 0xff;
    dst[last * 2 + 1] = r >>> 8;
    if (count && (r & 0x7c00) === 0x7c00) narrowingTally.nonFinite++;
  }
}

/** A converter from one dtype to another (identity copy when equal; non-floats must be equal). */
export function makeConverter(from: DType, to: DType): Converter {
  const outSize = DTYPE_SIZE[to];
  const inSize = DTYPE_SIZE[from];
  const sized = (src: Uint8Array, dst?: Uint8Array) => {
    const want = (src.byteLength / inSize) * outSize;
    if (dst && dst.byteLength !== want) throw new PipelineError(`converter: output buffer of ${dst.byteLength} bytes, need ${want}`);
    return dst ?? new Uint8Array(want);
  };
  if (from === to) {
    return (src, dst) => {
      const out = sized(src, dst);
      out.set(src);
      return out;
    };
  }
  const table = table16(from, to);
  const aligned = (b: Uint8Array) => (b.byteOffset % 2 === 0 ? b : b.slice());
  if (table) {
    return (src, dst) => {
      const out = sized(src, dst);
      const a = src.byteOffset % 4 === 0 ? src : src.slice();
      lookupPairs(a, out, table, to === 'F16');
      return out;
    };
  }
  if (from === 'BF16' && to === 'F32') {
    return (src, dst) => {
      const out = sized(src, dst);
      if (src.byteOffset % 4 === 0 && src.byteLength % 4 === 0 && out.byteOffset % 4 === 0) {
        // Two elements per 32-bit load (the f32 is the bf16 in the high half).
        const s = new Uint32Array(src.buffer, src.byteOffset, src.byteLength >> 2);
        const d = new Uint32Array(out.buffer, out.byteOffset, s.length * 2);
        for (let i = 0, o = 0; i < s.length; i++, o += 2) {
          const v = s[i]!;
          d[o] = v << 16;
          d[o + 1] = v & 0xffff0000;
        }
        return out;
      }
      const s = u16(aligned(src));
      const d = new Int32Array(out.buffer, out.byteOffset, s.length);
      for (let i = 0; i < s.length; i++) d[i] = s[i]! << 16;
      return out;
    };
  }
  if (from === 'F32' && (to === 'F16' || to === 'BF16')) {
    return (src, dst) => {
      const out = sized(src, dst);
      const a = src.byteOffset % 4 === 0 ? src : src.slice();
      const s = new Int32Array(a.buffer, a.byteOffset, a.byteLength >> 2);
      const d = out.byteOffset % 2 === 0 ? u16(out) : new Uint16Array(s.length);
      narrowingTally.nonFinite += narrowF32(s, d, to);
      if (d.buffer !== out.buffer) out.set(new Uint8Array(d.buffer));
      return out;
    };
  }
  const count = narrows(from, to);
  return (src, dst) => {
    const bytes = convertFloat(src, from, to);
    // rare sources (f64, plain fp8): their results are counted as they leave, still in cache
    if (count) narrowingTally.nonFinite += countNonFinite16(bytes, to);
    if (!dst) return bytes;
    sized(src, dst).set(bytes);
    return dst;
  };
}

/** HF's FP4 (e2m1) value table. */
export const FP4_VALUES = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/**
 * Dequantizes `rows` MXFP4 rows: `blocks` `[rows, G, 16]` bytes, `scales` `[rows, G]` →
 * f32 `[rows, G·32]`. As torch.ldexp in f32 does, the scale is `float32(2^(s−127))`
 * multiplied in (so s = 255 gives ±Inf, and NaN for a zero).
 */
export function dequantMxfp4(blocks: Uint8Array, scales: Uint8Array, rows: number, groups: number): Float32Array {
  if (blocks.length !== rows * groups * 16 || scales.length !== rows * groups) {
    throw new PipelineError(`MXFP4: ${blocks.length} block bytes / ${scales.length} scales do not fit ${rows}×${groups} groups`);
  }
  const factor = new Float32Array(256);
  for (let s = 0; s < 256; s++) factor[s] = Math.fround(2 ** (s - 127));
  // Every (nibble, scale) product in f32, so the inner loop is two table loads.
  const lut = new Float32Array(16 * 256);
  for (let s = 0; s < 256; s++) for (let v = 0; v < 16; v++) lut[s * 16 + v] = FP4_VALUES[v]! * factor[s]!;
  const out = new Float32Array(rows * groups * 32);
  const n = rows * groups;
  for (let g = 0; g < n; g++) {
    const base = scales[g]! * 16;
    const bo = g * 16;
    const oo = g * 32;
    for (let j = 0; j < 16; j++) {
      const b = blocks[bo + j]!;
      out[oo + 2 * j] = lut[base + (b & 15)]!;
      out[oo + 2 * j + 1] = lut[base + (b >>> 4)]!;
    }
  }
  return out;
}

/** Rows `parity::2` of a `[rows, cols]` f32 matrix. */
export function everyOtherRow(m: Float32Array, rows: number, cols: number, parity: 0 | 1): Float32Array {
  const out = new Float32Array((rows >> 1) * cols);
  for (let r = parity, o = 0; r < rows; r += 2, o += cols) out.set(m.subarray(r * cols, (r + 1) * cols), o);
  return out;
}

/** Elements `parity::2` of `bytes` (elements of `size` bytes). */
export function everyOtherElement(bytes: Uint8Array, size: number, parity: 0 | 1): Uint8Array {
  const n = bytes.byteLength / size;
  const out = new Uint8Array((n >> 1) * size);
  for (let i = parity, o = 0; i < n; i += 2, o += size) out.set(bytes.subarray(i * size, (i + 1) * size), o);
  return out;
}

/** The first (`half` 0) or last (1) half of every row of a `[rows, 2·half-width]` matrix of `size`-byte elements. */
export function halfColumns(bytes: Uint8Array, rows: number, _size: number, half: 0 | 1): Uint8Array {
  const rowBytes = bytes.byteLength / rows;
  const keep = rowBytes / 2;
  const out = new Uint8Array(rows * keep);
  for (let r = 0; r < rows; r++) out.set(bytes.subarray(r * rowBytes + half * keep, r * rowBytes + (half + 1) * keep), r * keep);
  return out;
}

/**
 * f32 values → bytes of `to` (RNE). Into 16-bit targets the non-finite results are counted by
 * the narrowing; into F32 only with `countF32` (a dequantization whose own kernel counted
 * nothing: MXFP4's scale 255 is 2^128, ±Inf in f32).
 */
export function encodeF32(values: Float32Array, to: DType, countF32 = false): Uint8Array {
  if (to === 'F32') {
    if (countF32) {
      let bad = 0;
      for (let i = 0; i < values.length; i++) bad += Number.isFinite(values[i]!) ? 0 : 1;
      narrowingTally.nonFinite += bad;
    }
    return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  }
  if (to !== 'F16' && to !== 'BF16') return fromFloat32(values, to);
  const d = new Uint16Array(values.length);
  narrowingTally.nonFinite += narrowF32(new Int32Array(values.buffer, values.byteOffset, values.length), d, to);
  return new Uint8Array(d.buffer);
}
