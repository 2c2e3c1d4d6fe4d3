/**
 * Fast float conversions between the tensor element types of dtype.ts.
 *
 * Conversions work on raw little-endian bytes through typed-array views (no per-element
 * allocation) because prepare pushes whole checkpoints through them. Widening is exact;
 * narrowing rounds to nearest, ties to even, overflows to ±Inf (F8_E4M3 has no Inf and
 * saturates to NaN like torch's float8_e4m3fn cast), keeps NaN a NaN and produces
 * subnormals where the target has them. (dtype.ts refuses a big-endian host.)
 */
import { PipelineError } from '../errors';
import { DTYPE_SIZE, isFloat, type DType } from './dtype';

// ---------------------------------------------------------------------------------------
// Views

function checkLength(bytes: Uint8Array, from: DType): void {
  const size = DTYPE_SIZE[from];
  if (bytes.byteLength % size !== 0) {
    throw new PipelineError(`${bytes.byteLength} bytes is not a whole number of ${from} elements (${size} bytes each)`);
  }
}

/** A typed view of `bytes`; copies only when the bytes are not aligned for the type. */
function view<T>(bytes: Uint8Array, size: number, Ctor: new (b: ArrayBufferLike, o: number, n: number) => T, from: DType): T {
  checkLength(bytes, from);
  const src = bytes.byteOffset % size === 0 ? bytes : bytes.slice();
  return new Ctor(src.buffer, src.byteOffset, src.byteLength / size);
}

function asBytes(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

// ---------------------------------------------------------------------------------------
// Decoding small floats (exact)

let f16Table: Int32Array | undefined;
/** All 65536 half-precision values as f32 bit patterns (256 KiB, built on first use). */
function halfTable(): Int32Array {
  if (f16Table) return f16Table;
  f16Table = new Int32Array(65536);
  for (let h = 0; h < 65536; h++) f16Table[h] = halfBitsToFloatBits(h);
  return f16Table;
}

/** f16 bit pattern → f32 bit pattern (exact; NaN payload kept). */
export function halfBitsToFloatBits(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) return (sign | 0x7f800000 | (mant << 13)) >>> 0;
  if (exp !== 0) return (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
  if (mant === 0) return sign >>> 0;
  // Subnormal: normalize.
  let e = 113;
  while ((mant & 0x400) === 0) {
    mant <<= 1;
    e--;
  }
  return (sign | (e << 23) | ((mant & 0x3ff) << 13)) >>> 0;
}

const f8Tables: Partial<Record<DType, Float32Array>> = {};
/** The 256 values of an 8-bit float format. */
function f8Table(d: 'F8_E4M3' | 'F8_E5M2' | 'F8_E8M0'): Float32Array {
  const hit = f8Tables[d];
  if (hit) return hit;
  const t = new Float32Array(256);
  for (let b = 0; b < 256; b++) t[b] = d === 'F8_E5M2' ? decodeE5M2(b) : d === 'F8_E8M0' ? decodeE8M0(b) : decodeE4M3(b);
  f8Tables[d] = t;
  return t;
}

function decodeE5M2(b: number): number {
  // E5M2 is the top byte of an IEEE half.
  const f = new Float32Array(new Uint32Array([halfBitsToFloatBits(b << 8)]).buffer);
  return f[0]!;
}

function decodeE8M0(b: number): number {
  // OCP MX E8M0: 2^(b−127); 0xFF is NaN (2^-127 is an f32 subnormal, still exact).
  return b === 0xff ? NaN : 2 ** (b - 127);
}

function decodeE4M3(b: number): number {
  // float8_e4m3fn: bias 7, no Inf, S.1111.111 is NaN.
  const sign = b & 0x80 ? -1 : 1;
  const exp = (b >>> 3) & 0xf;
  const mant = b & 7;
  if (exp === 15 && mant === 7) return NaN;
  if (exp === 0) return sign * mant * 2 ** -9;
  return sign * (1 + mant / 8) * 2 ** (exp - 7);
}

/**
 * Decodes `bytes` of dtype `from` to f32 values. Exact for F16, BF16 and F8; F64 rounds to
 * nearest even; integers and BOOL are converted by value (large I64/U64 lose precision).
 * F32 input returns a copy.
 */
export function toFloat32(bytes: Uint8Array, from: DType): Float32Array {
  const size = DTYPE_SIZE[from];
  switch (from) {
    case 'F32':
      return view(bytes, 4, Float32Array, from).slice();
    case 'BF16': {
      const src = view(bytes, 2, Uint16Array, from);
      // Int32 (not Uint32) output keeps the shifted bits a small integer for V8: 2× faster.
      const out = new Int32Array(src.length);
      for (let i = 0; i < src.length; i++) out[i] = src[i]! << 16;
      return new Float32Array(out.buffer);
    }
    case 'F16': {
      const src = view(bytes, 2, Uint16Array, from);
      const table = halfTable();
      const out = new Int32Array(src.length);
      for (let i = 0; i < src.length; i++) out[i] = table[src[i]!]!;
      return new Float32Array(out.buffer);
    }
    case 'F8_E4M3':
    case 'F8_E5M2':
    case 'F8_E8M0': {
      const table = f8Table(from);
      const out = new Float32Array(bytes.length);
      for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i]!]!;
      return out;
    }
    case 'F64':
      return Float32Array.from(view(bytes, 8, Float64Array, from));
    case 'I64':
      return Float32Array.from(view(bytes, 8, BigInt64Array, from), Number);
    case 'U64':
      return Float32Array.from(view(bytes, 8, BigUint64Array, from), Number);
    case 'I32':
      return Float32Array.from(view(bytes, 4, Int32Array, from));
    case 'U32':
      return Float32Array.from(view(bytes, 4, Uint32Array, from));
    case 'I16':
      return Float32Array.from(view(bytes, 2, Int16Array, from));
    case 'U16':
      return Float32Array.from(view(bytes, 2, Uint16Array, from));
    case 'I8':
      return Float32Array.from(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    case 'U8':
      return Float32Array.from(bytes);
    case 'BOOL':
      return Float32Array.from(bytes, (b) => (b ? 1 : 0));
  }
  throw new PipelineError(`unknown dtype ${String(from)} (element size ${size})`);
}

// ---------------------------------------------------------------------------------------
// Encoding (round to nearest, ties to even)

/** f32 bit pattern → bf16 bit pattern, RNE; NaN stays NaN (quieted), overflow → Inf. */
export function floatBitsToBf16Bits(u: number): number {
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** f32 bit pattern → f16 bit pattern, RNE; NaN stays NaN (quieted), overflow → Inf. */
export function floatBitsToHalfBits(u: number): number {
  const sign = (u >>> 16) & 0x8000;
  const a = u & 0x7fffffff;
  if (a >= 0x7f800000) {
    return a > 0x7f800000 ? sign | 0x7e00 | ((a >>> 13) & 0x3ff) : sign | 0x7c00;
  }
  if (a >= 0x477ff000) return sign | 0x7c00; // ≥ 65520 rounds past 65504
  if (a >= 0x38800000) {
    const r = a - 0x38000000; // rebias exponent 127 → 15
    return sign | ((r + 0xfff + ((r >>> 13) & 1)) >>> 13);
  }
  if (a <= 0x33000000) return sign; // ≤ 2^-25: rounds to zero (2^-25 ties to even 0)
  // Subnormal half: value = k · 2^-24 with k = mant >> (126 − exp), rounded to even.
  const exp = a >>> 23;
  const mant = (a & 0x7fffff) | 0x800000;
  const s = 126 - exp;
  const k = mant >>> s;
  const rem = mant & ((1 << s) - 1);
  const half = 1 << (s - 1);
  return sign | (rem > half || (rem === half && (k & 1) === 1) ? k + 1 : k);
}

const TWO52 = 2 ** 52;
/** Rounds a non-negative double below 2^52 to an integer, ties to even. */
function rintEven(q: number): number {
  return q + TWO52 - TWO52;
}

interface MiniFloat {
  expBits: number;
  mantBits: number;
  bias: number;
  ieeeInf: boolean;
  max: number;
  overflowAt: number;
}
/** A format whose largest finite value is `max` = 2^maxExp · (1 + …); overflowAt = max + ulp/2. */
function mini(expBits: number, mantBits: number, bias: number, ieeeInf: boolean, max: number, maxExp: number): MiniFloat {
  return { expBits, mantBits, bias, ieeeInf, max, overflowAt: max + 2 ** (maxExp - mantBits - 1) };
}
const E4M3 = mini(4, 3, 7, false, 448, 8); // 448 + 16 = 464
const E5M2 = mini(5, 2, 15, true, 57344, 15); // 57344 + 4096
const HALF = mini(5, 10, 15, true, 65504, 15); // 65504 + 16 = 65520
const BF16 = mini(8, 7, 127, true, 3.3895313892515355e38, 127); // + 2^119

/**
 * Encodes one double into a small float format with a single RNE rounding (used where the
 * source is F64, so no double rounding through f32, and for the F8 targets).
 */
function encodeMini(x: number, f: MiniFloat): number {
  const total = 1 + f.expBits + f.mantBits;
  const signBit = 1 << (total - 1);
  const expMask = (1 << f.expBits) - 1;
  const nanBits = f.ieeeInf ? (expMask << f.mantBits) | (1 << (f.mantBits - 1)) : (1 << (total - 1)) - 1;
  if (Number.isNaN(x)) return nanBits;
  const sign = x < 0 || Object.is(x, -0) ? signBit : 0;
  const a = Math.abs(x);
  // Smallest value that rounds past max: max + half an ulp of max. For F16/BF16/E5M2 max's
  // mantissa is odd, so the tie rounds up (to Inf); for E4M3 the tie goes to NaN, as in
  // torch's float8_e4m3fn cast (which maps |x| ≥ 464 to NaN).
  if (a >= f.overflowAt) return f.ieeeInf ? sign | (expMask << f.mantBits) : sign | nanBits;
  const minNormalExp = 1 - f.bias;
  if (a < 2 ** minNormalExp) {
    const k = rintEven(a * 2 ** (f.mantBits - minNormalExp));
    return sign | k; // k = 2^mantBits is the smallest normal's bit pattern
  }
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a)
    e--; // log2 is not exact near powers of two
  else if (2 ** (e + 1) <= a) e++;
  let m = rintEven(a * 2 ** (f.mantBits - e));
  if (m === 2 ** (f.mantBits + 1)) {
    m /= 2;
    e++;
  }
  return sign | ((e + f.bias) << f.mantBits) | (m - 2 ** f.mantBits);
}

/** Encodes one JS number (a double) as f16 bits with a single RNE rounding. */
export function doubleToHalfBits(x: number): number {
  return encodeMini(x, HALF);
}

function requireFloat(d: DType): void {
  if (!isFloat(d)) throw new PipelineError(`dtype ${d} is not a floating-point type; only float tensors convert`);
}

/** Encodes f32 values as dtype `to` (F64, F32, F16, BF16, F8_E4M3, F8_E5M2), RNE. */
export function fromFloat32(values: Float32Array, to: DType): Uint8Array {
  requireFloat(to);
  switch (to) {
    case 'F32':
      return asBytes(values.slice());
    case 'F64':
      return asBytes(Float64Array.from(values));
    case 'BF16':
    case 'F16': {
      // Signed views keep the bit arithmetic in V8's small-integer range (no heap doubles).
      const src = new Int32Array(values.buffer, values.byteOffset, values.length);
      const out = new Uint16Array(src.length);
      if (to === 'BF16') for (let i = 0; i < src.length; i++) out[i] = floatBitsToBf16Bits(src[i]!);
      else for (let i = 0; i < src.length; i++) out[i] = floatBitsToHalfBits(src[i]!);
      return asBytes(out);
    }
    default: {
      const f = to === 'F8_E4M3' ? E4M3 : E5M2;
      const out = new Uint8Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = encodeMini(values[i]!, f);
      return out;
    }
  }
}

/** Encodes f64 values as dtype `to` with one RNE rounding per element (no double rounding). */
export function fromFloat64(values: Float64Array, to: DType): Uint8Array {
  requireFloat(to);
  if (to === 'F64') return asBytes(values.slice());
  if (to === 'F32') return asBytes(Float32Array.from(values));
  if (to === 'F16' || to === 'BF16') {
    const f = to === 'F16' ? HALF : BF16;
    const out = new Uint16Array(values.length);
    for (let i = 0; i < values.length; i++) out[i] = encodeMini(values[i]!, f);
    return asBytes(out);
  }
  const f = to === 'F8_E4M3' ? E4M3 : E5M2;
  const out = new Uint8Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = encodeMini(values[i]!, f);
  return out;
}

/**
 * Converts float bytes from one float dtype to another. Same dtype returns a copy; widening
 * is exact; narrowing rounds once, to nearest even. Fast paths: BF16 → F32 (shift),
 * BF16 ↔ F16 and F32 → F16/BF16 (bit arithmetic on Uint32 views).
 */
export function convertFloat(bytes: Uint8Array, from: DType, to: DType): Uint8Array {
  requireFloat(from);
  requireFloat(to);
  if (from === to) {
    checkLength(bytes, from);
    return bytes.slice();
  }
  if (from === 'F64') return fromFloat64(view(bytes, 8, Float64Array, from), to);
  if (from === 'BF16' && to === 'F16') {
    const src = view(bytes, 2, Uint16Array, from);
    const out = new Uint16Array(src.length);
    for (let i = 0; i < src.length; i++) out[i] = floatBitsToHalfBits(src[i]! << 16);
    return asBytes(out);
  }
  if (from === 'F16' && to === 'BF16') {
    const src = view(bytes, 2, Uint16Array, from);
    const out = new Uint16Array(src.length);
    const table = halfTable();
    for (let i = 0; i < src.length; i++) out[i] = floatBitsToBf16Bits(table[src[i]!]!);
    return asBytes(out);
  }
  if (from === 'F32') return fromFloat32(view(bytes, 4, Float32Array, from), to);
  if (to === 'F32') return asBytes(toFloat32(bytes, from));
  // F16/BF16/F8 sources are exact in f32, so one rounding happens in fromFloat32.
  return fromFloat32(toFloat32(bytes, from), to);
}
