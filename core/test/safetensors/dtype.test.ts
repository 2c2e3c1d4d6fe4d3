/**
 * dtype table and float conversions. Expected bit patterns are worked out by hand from the
 * IEEE-754 layouts (comments show the arithmetic); bulk checks compare against an
 * independent oracle (nearest representable value by binary search over all halves).
 */
import { describe, expect, it } from 'vitest';
import {
  DTYPE_SIZE,
  DTYPES,
  dtypeFromName,
  prepareDtypeOf,
  dtypeOfName,
  dtypeOfOnnx,
  isDType,
  isFloat,
  nameOfDtype,
  onnxTypeOf,
  type DType,
} from '../../src/formats/dtype';
import { convertFloat, fromFloat32, toFloat32 } from '../../src/formats/float-convert';

const f32FromBits = (u: number) => new Float32Array(new Uint32Array([u]).buffer)[0]!;
const bitsOfF32 = (a: Float32Array) => [...new Uint32Array(a.buffer, a.byteOffset, a.length)];
const u16 = (bytes: Uint8Array) => [...new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2)];
const bytesOfU16 = (bits: number[]) => new Uint8Array(new Uint16Array(bits).buffer);
const f32Bytes = (vals: number[]) => new Uint8Array(new Float32Array(vals).buffer);
const f32BitsBytes = (bits: number[]) => new Uint8Array(new Uint32Array(bits).buffer);
const f64Bytes = (vals: number[]) => new Uint8Array(new Float64Array(vals).buffer);

describe('dtype table', () => {
  it('has the 16 safetensors dtypes with their sizes (F8_E8M0: the MX scale type)', () => {
    expect(DTYPE_SIZE).toEqual({
      F64: 8,
      F32: 4,
      F16: 2,
      BF16: 2,
      F8_E4M3: 1,
      F8_E5M2: 1,
      F8_E8M0: 1,
      I64: 8,
      I32: 4,
      I16: 2,
      I8: 1,
      U8: 1,
      U16: 2,
      U32: 4,
      U64: 8,
      BOOL: 1,
    });
    expect(DTYPES).toHaveLength(16);
    expect(isFloat('F8_E8M0')).toBe(false); // scales only: decoded, never a conversion target
    expect(isDType('BF16')).toBe(true);
    expect(isDType('bf16')).toBe(false);
    expect(isDType('toString')).toBe(false);
    expect(isDType(4)).toBe(false);
    expect(isFloat('F8_E5M2')).toBe(true);
    expect(isFloat('I64')).toBe(false);
    expect(isFloat('BOOL')).toBe(false);
  });

  it('maps CLI names', () => {
    expect(dtypeOfName('float32')).toBe('F32');
    expect(dtypeOfName('float16')).toBe('F16');
    expect(dtypeOfName('bfloat16')).toBe('BF16');
    expect(nameOfDtype('BF16')).toBe('bfloat16');
    expect(nameOfDtype('I64')).toBe('int64');
    expect(nameOfDtype('F8_E4M3')).toBe('float8_e4m3fn');
    expect(prepareDtypeOf('BF16')).toBe('bfloat16');
    expect(prepareDtypeOf('I64')).toBeUndefined();
    expect(prepareDtypeOf('F64')).toBeUndefined();
    // every name maps back to its dtype (one table, no second spelling)
    for (const d of DTYPES) expect(dtypeOfName(nameOfDtype(d))).toBe(d);
    // spec/config spellings
    expect(['torch.bfloat16', 'BF16', 'fp16', 'float', 'np.int64', 'boolean', 'F8_E4M3'].map(dtypeFromName)).toEqual([
      'BF16',
      'BF16',
      'F16',
      'F32',
      'I64',
      'BOOL',
      'F8_E4M3',
    ]);
    expect(dtypeFromName('complex64')).toBeUndefined();
  });

  it('maps ONNX TensorProto.DataType both ways', () => {
    const onnx: Record<string, number> = {
      F32: 1,
      U8: 2,
      I8: 3,
      U16: 4,
      I16: 5,
      I32: 6,
      I64: 7,
      BOOL: 9,
      F16: 10,
      F64: 11,
      U32: 12,
      U64: 13,
      BF16: 16,
      F8_E4M3: 17,
      F8_E5M2: 19,
      F8_E8M0: 24 /* FLOAT8E8M0 */,
    };
    for (const [d, t] of Object.entries(onnx)) {
      expect(onnxTypeOf(d as DType)).toBe(t);
      expect(dtypeOfOnnx(t)).toBe(d);
    }
    for (const t of [0, 8, 14, 15, 18, 20, 21, 99]) expect(dtypeOfOnnx(t)).toBeUndefined();
  });
});

describe('bf16', () => {
  it('rounds f32 → bf16 to nearest, ties to even', () => {
    const cases: [number, number][] = [
      [0x3f800000, 0x3f80], // 1.0
      [0x3f807fff, 0x3f80], // just below half an ulp
      [0x3f808000, 0x3f80], // tie, 0x3f80 is even
      [0x3f808001, 0x3f81], // just above the tie
      [0x3f818000, 0x3f82], // tie, 0x3f81 is odd → up
      [0xbf818000, 0xbf82], // same, negative
      [0x80000000, 0x8000], // -0
      [0x00000001, 0x0000], // smallest f32 subnormal → 0
      [0x00018000, 0x0002], // subnormal tie with odd low part → up
      [0x00010000, 0x0001], // bf16 subnormal, exact
      [0x7f7f7fff, 0x7f7f], // stays finite
      [0x7f7fffff, 0x7f80], // f32 max rounds to +Inf
      [0xff7fffff, 0xff80], // → -Inf
      [0x7f800000, 0x7f80], // +Inf
      [0xff800000, 0xff80], // -Inf
      [0x7fc00000, 0x7fc0], // quiet NaN
    ];
    const out = u16(fromFloat32(new Float32Array(new Uint32Array(cases.map((c) => c[0])).buffer), 'BF16'));
    expect(out.map((b) => b.toString(16))).toEqual(cases.map((c) => c[1].toString(16)));
  });

  it('keeps signalling NaNs NaN (a naive round would carry them into Inf)', () => {
    const out = u16(fromFloat32(new Float32Array(new Uint32Array([0x7f800001, 0xff800001, 0x7fffffff]).buffer), 'BF16'));
    for (const b of out) {
      expect(b & 0x7f80).toBe(0x7f80);
      expect(b & 0x7f).not.toBe(0);
    }
    expect(out[1]! & 0x8000).toBe(0x8000);
  });

  it('widens bf16 → f32 exactly', () => {
    const bits = [0x3f80, 0xc000, 0x0001, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0x4049];
    expect(bitsOfF32(toFloat32(bytesOfU16(bits), 'BF16'))).toEqual([
      0x3f800000, 0xc0000000, 0x00010000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc10000, 0x40490000,
    ]);
    expect(toFloat32(bytesOfU16([0x4049]), 'BF16')[0]).toBe(3.140625);
  });

  it('every bf16 survives bf16 → f32 → bf16', () => {
    const all = new Uint16Array(65536).map((_, i) => i);
    const back = new Uint16Array(fromFloat32(toFloat32(new Uint8Array(all.buffer), 'BF16'), 'BF16').buffer);
    for (let i = 0; i < 65536; i++) {
      const isNaN = (i & 0x7f80) === 0x7f80 && (i & 0x7f) !== 0;
      if (isNaN) expect((back[i]! & 0x7f80) === 0x7f80 && (back[i]! & 0x7f) !== 0).toBe(true);
      else if (back[i] !== i) throw new Error(`bf16 0x${i.toString(16)} came back as 0x${back[i]!.toString(16)}`);
    }
  });
});

describe('f16', () => {
  it('rounds f32 → f16 to nearest, ties to even, overflow to Inf, subnormals', () => {
    const cases: [number, number][] = [
      [1, 0x3c00],
      [-2, 0xc000],
      [65504, 0x7bff], // max half
      [65519, 0x7bff], // below the midpoint 65520
      [65520, 0x7c00], // midpoint; 0x7bff is odd → up, i.e. Inf
      [1e9, 0x7c00],
      [-1e9, 0xfc00],
      [Infinity, 0x7c00],
      [-Infinity, 0xfc00],
      [1 + 2 ** -11, 0x3c00], // tie between 0x3c00 (even) and 0x3c01
      [1 + 3 * 2 ** -11, 0x3c02], // tie between 0x3c01 and 0x3c02 (even)
      [1 + 2 ** -11 + 2 ** -20, 0x3c01], // above the tie
      [2 ** -24, 0x0001], // smallest subnormal
      [2 ** -25, 0x0000], // half of it: tie → 0
      [2 ** -25 + 2 ** -35, 0x0001],
      [3 * 2 ** -25, 0x0002], // 1.5 · 2^-24: tie → 2
      [5 * 2 ** -26, 0x0001], // 1.25 · 2^-24
      [1023 * 2 ** -24, 0x03ff], // largest subnormal
      [2 ** -14 - 2 ** -26, 0x0400], // 1023.75 · 2^-24 rounds up into the smallest normal
      [2 ** -14, 0x0400],
      [-(2 ** -24), 0x8001],
      [-0, 0x8000],
      [0, 0x0000],
      [2 ** -30, 0x0000],
      [0.333251953125, 0x3555], // 1/3 in half, exact: 2^-2 · (1 + 341/1024)
    ];
    const out = u16(fromFloat32(Float32Array.from(cases.map((c) => c[0])), 'F16'));
    expect(out.map((b) => b.toString(16))).toEqual(cases.map((c) => c[1].toString(16)));
    // 0.1f = 0x3dcccccd → 0x2e66; π f = 0x40490fdb → 0x4248 (standard half values).
    expect(u16(fromFloat32(new Float32Array(new Uint32Array([0x3dcccccd, 0x40490fdb]).buffer), 'F16'))).toEqual([0x2e66, 0x4248]);
  });

  it('keeps NaN NaN, including signalling payloads below the half mantissa', () => {
    const out = u16(fromFloat32(new Float32Array(new Uint32Array([0x7fc00000, 0x7f800001, 0xff800001]).buffer), 'F16'));
    for (const b of out) {
      expect(b & 0x7c00).toBe(0x7c00);
      expect(b & 0x3ff).not.toBe(0);
    }
  });

  it('widens f16 → f32 exactly', () => {
    const f = toFloat32(bytesOfU16([0x0001, 0x03ff, 0x0400, 0x7bff, 0x7c00, 0xfc00, 0x8000, 0x3555, 0xc000]), 'F16');
    expect([...f]).toEqual([2 ** -24, 1023 * 2 ** -24, 2 ** -14, 65504, Infinity, -Infinity, -0, 0.333251953125, -2]);
    expect(Object.is(f[6], -0)).toBe(true);
    expect(Number.isNaN(toFloat32(bytesOfU16([0x7e00]), 'F16')[0])).toBe(true);
  });

  it('matches a nearest-value oracle on 200k random and boundary f32 values', () => {
    const oracle = nearestOracle('F16');
    const bits = randomF32Bits(200_000, 100, 50);
    for (let i = 0; i < 4000; i++) bits[i] = (0x477fe000 + i) >>> 0; // around 65504..65520
    checkAgainst(oracle, new Float32Array(bits.buffer), new Uint16Array(fromFloat32(new Float32Array(bits.buffer), 'F16').buffer));
  });

  it('F64 → F16 matches the oracle on 100k random doubles', () => {
    const oracle = nearestOracle('F16');
    const vals = withTies(randomDoubles(100_000, -26, 17), 'F16');
    checkAgainst(oracle, vals, new Uint16Array(convertFloat(new Uint8Array(vals.buffer), 'F64', 'F16').buffer));
  });
});

describe('bf16 against the oracle', () => {
  it('F32 → BF16 on 200k random f32 values', () => {
    const bits = randomF32Bits(200_000, 0, 255);
    checkAgainst(
      nearestOracle('BF16'),
      new Float32Array(bits.buffer),
      new Uint16Array(fromFloat32(new Float32Array(bits.buffer), 'BF16').buffer),
    );
  });
  it('F64 → BF16 on 100k random doubles', () => {
    const vals = withTies(randomDoubles(100_000, -135, 129), 'BF16');
    checkAgainst(nearestOracle('BF16'), vals, new Uint16Array(convertFloat(new Uint8Array(vals.buffer), 'F64', 'BF16').buffer));
  });
});

/**
 * Independent RNE oracle: the finite non-negative values of a 16-bit format, in bit order
 * (which is value order), searched for the nearest; ties go to the even bit pattern;
 * beyond max + half an ulp → Inf.
 */
function nearestOracle(d: 'F16' | 'BF16'): (x: number) => number {
  const maxBits = d === 'F16' ? 0x7bff : 0x7f7f;
  const inf = d === 'F16' ? 0x7c00 : 0x7f80;
  // Half an ulp above max: f16 max 65504 + 16; bf16 max (2 − 2^-7)·2^127 + 2^119.
  const overflowAt = d === 'F16' ? 65520 : (2 - 2 ** -7) * 2 ** 127 + 2 ** 119;
  const table = toFloat32(new Uint8Array(new Uint16Array(maxBits + 1).map((_, i) => i).buffer), d);
  return (x: number) => {
    const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
    const a = Math.abs(x);
    if (a >= overflowAt) return sign | inf;
    let lo = 0;
    let hi = maxBits;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (table[mid]! <= a) lo = mid;
      else hi = mid - 1;
    }
    if (table[lo] === a || lo === maxBits) return sign | lo;
    const dLo = a - table[lo]!;
    const dHi = table[lo + 1]! - a;
    return sign | (dLo < dHi ? lo : dHi < dLo ? lo + 1 : lo % 2 === 0 ? lo : lo + 1);
  };
}

function checkAgainst(oracle: (x: number) => number, vals: ArrayLike<number>, got: Uint16Array): void {
  for (let i = 0; i < vals.length; i++) {
    const v = vals[i]!;
    if (Number.isNaN(v)) continue;
    const want = oracle(v);
    if (got[i] !== want) throw new Error(`${v} → 0x${got[i]!.toString(16)}, expected 0x${want.toString(16)}`);
  }
}

let seed = 12345;
const rand = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);

/** Random f32 bit patterns; 3 in 4 get an exponent in [e0, e0 + span) to hit the rounding paths. */
function randomF32Bits(n: number, e0: number, span: number): Uint32Array {
  const bits = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const r = rand();
    bits[i] = i % 4 === 0 ? r : ((r & 0x807fffff) | ((e0 + (rand() % span)) << 23)) >>> 0;
  }
  return bits;
}

/** Overwrites 3 in 4 of `vals` with exact midpoints of neighbours of `d`, and just above/below them. */
function withTies(vals: Float64Array, d: 'F16' | 'BF16'): Float64Array {
  const maxBits = d === 'F16' ? 0x7bff : 0x7f7f;
  const table = toFloat32(new Uint8Array(new Uint16Array(maxBits + 1).map((_, i) => i).buffer), d);
  for (let i = 0; i < vals.length; i += 4) {
    const b = rand() % maxBits;
    const mid = (table[b]! + table[b + 1]!) / 2;
    const nudge = mid * 2 ** -40;
    vals[i] = mid;
    vals[i + 1] = -mid;
    vals[i + 2] = mid + nudge;
    vals[i + 3] = mid - nudge;
  }
  return vals;
}

/** Random doubles with binary exponents in [lo, hi), random signs and 52-bit mantissas. */
function randomDoubles(n: number, lo: number, hi: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const m = 1 + (rand() * 2 ** 20 + (rand() >>> 12)) / 2 ** 52;
    out[i] = (rand() & 1 ? -1 : 1) * m * 2 ** (lo + (rand() % (hi - lo)));
  }
  return out;
}

describe('convertFloat', () => {
  it('rounds F64 once (no double rounding through f32)', () => {
    // 1 + 2^-11 + 2^-40: via f32 it becomes the tie 1 + 2^-11 and then 1.0; direct → 0x3c01.
    expect(u16(convertFloat(f64Bytes([1 + 2 ** -11 + 2 ** -40]), 'F64', 'F16'))).toEqual([0x3c01]);
    // Same for bf16: 1 + 2^-8 + 2^-40 → 0x3f81 (via f32: 0x3f80).
    expect(u16(convertFloat(f64Bytes([1 + 2 ** -8 + 2 ** -40]), 'F64', 'BF16'))).toEqual([0x3f81]);
    expect(u16(convertFloat(f64Bytes([65520, 2 ** -25, -(2 ** -24), 1e300, NaN]), 'F64', 'F16')).slice(0, 4)).toEqual([
      0x7c00, 0, 0x8001, 0x7c00,
    ]);
    expect(u16(convertFloat(f64Bytes([3.4e38, 3.5e38, 2 ** -133]), 'F64', 'BF16'))).toEqual([0x7f80, 0x7f80, 0x0001]);
    const nan = u16(convertFloat(f64Bytes([NaN]), 'F64', 'F16'))[0]!;
    expect(nan & 0x7c00).toBe(0x7c00);
    expect(nan & 0x3ff).not.toBe(0);
  });

  it('F64 → F32 rounds to nearest even and F32 → F64 is exact', () => {
    // 1 + 2^-24 is the tie between 1 and 1 + 2^-23: → 1.0; 1 + 3·2^-24 → 1 + 2^-22.
    const f = new Float32Array(convertFloat(f64Bytes([1 + 2 ** -24, 1 + 3 * 2 ** -24]), 'F64', 'F32').buffer);
    expect([...f]).toEqual([1, 1 + 2 ** -22]);
    const d = new Float64Array(convertFloat(f32BitsBytes([0x3dcccccd]), 'F32', 'F64').buffer);
    expect(d[0]).toBe(0.10000000149011612);
  });

  it('BF16 ↔ F16', () => {
    // bf16 65536 (0x4780) overflows half; 65280 (0x477f) = 2^15 · 1.9921875 → half 0x7bf8;
    // bf16 2^-24 (0x3380) → half 0x0001; 2^-25 (0x3300) → 0 (tie to even).
    expect(u16(convertFloat(bytesOfU16([0x3f80, 0x4780, 0x477f, 0x3380, 0x3300, 0xbf80]), 'BF16', 'F16'))).toEqual([
      0x3c00, 0x7c00, 0x7bf8, 0x0001, 0x0000, 0xbc00,
    ]);
    // A bf16 ulp at 1 is 2^-7. Half 1 + 2^-10 (0x3c01) → 1.0; 1 + 4·2^-10 = 1 + 2^-8 (0x3c04)
    // is the tie → even 0x3f80; 1 + 5·2^-10 (0x3c05) → 1 + 2^-7 = 0x3f81; 1 + 12·2^-10
    // (0x3c0c) = 1 + 1.5·2^-7, tie between 0x3f81 (odd) and 0x3f82 → 0x3f82;
    // half 2^-24 → bf16 0x3380; half Inf → bf16 Inf.
    expect(u16(convertFloat(bytesOfU16([0x3c00, 0x3c01, 0x3c04, 0x3c05, 0x3c0c, 0x0001, 0x7c00]), 'F16', 'BF16'))).toEqual([
      0x3f80, 0x3f80, 0x3f80, 0x3f81, 0x3f82, 0x3380, 0x7f80,
    ]);
  });

  it('widening to F32/F64 is exact and same-dtype returns a copy', () => {
    const src = bytesOfU16([0x3555, 0x0001]);
    expect([...new Float64Array(convertFloat(src, 'F16', 'F64').buffer)]).toEqual([0.333251953125, 2 ** -24]);
    expect([...new Float32Array(convertFloat(src, 'F16', 'F32').buffer)]).toEqual([0.333251953125, 2 ** -24]);
    const copy = convertFloat(src, 'F16', 'F16');
    expect(copy).toEqual(src);
    expect(copy.buffer).not.toBe(src.buffer);
  });

  it('accepts unaligned input', () => {
    const buf = new Uint8Array(9);
    buf.set(f32Bytes([1, -2]), 1);
    expect(u16(convertFloat(buf.subarray(1), 'F32', 'BF16'))).toEqual([0x3f80, 0xc000]);
  });

  it('rejects non-float dtypes and ragged byte counts', () => {
    expect(() => convertFloat(new Uint8Array(4), 'I32', 'F32')).toThrow(/not a floating-point/);
    expect(() => convertFloat(new Uint8Array(3), 'F16', 'F32')).toThrow(/whole number of F16/);
  });
});

describe('float8', () => {
  it('decodes E4M3FN and E5M2', () => {
    // E4M3: bias 7. 0x38 = 2^0; 0x7e = 2^8 · 1.75 = 448 (max); 0x7f NaN; 0x01 = 2^-6 · 1/8.
    const a = toFloat32(new Uint8Array([0x38, 0x7e, 0x01, 0x80, 0xb8]), 'F8_E4M3');
    expect([...a]).toEqual([1, 448, 2 ** -9, -0, -1]);
    expect(Number.isNaN(toFloat32(new Uint8Array([0x7f]), 'F8_E4M3')[0])).toBe(true);
    // E5M2: top byte of a half. 0x3c = 1; 0x7b = 57344 (max); 0x7c = Inf; 0x01 = 2^-16.
    const b = toFloat32(new Uint8Array([0x3c, 0x7b, 0x7c, 0x01]), 'F8_E5M2');
    expect([...b]).toEqual([1, 57344, Infinity, 2 ** -16]);
  });

  it('encodes E4M3FN and E5M2 with RNE', () => {
    // 1.0625 ties 1.0 (m=0) / 1.125 (m=1) → 0x38; 1.1875 ties m=1 / m=2 → 0x3a; ≥ 464 → NaN.
    expect([...fromFloat32(Float32Array.from([1, 448, 500, 2 ** -9, 2 ** -10, 1.0625, 1.1875, -1]), 'F8_E4M3')]).toEqual([
      0x38, 0x7e, 0x7f, 0x01, 0x00, 0x38, 0x3a, 0xb8,
    ]);
    // E5M2: 61440 = 57344 + half ulp (4096) ties to 65536 → Inf; 61439 stays 57344.
    expect([...fromFloat32(Float32Array.from([1, 1e6, 61440, 61439, 2 ** -16]), 'F8_E5M2')]).toEqual([0x3c, 0x7c, 0x7c, 0x7b, 0x01]);
  });
});

describe('toFloat32 on integers', () => {
  it('converts by value', () => {
    expect([...toFloat32(new Uint8Array(new BigInt64Array([-3n, 7n]).buffer), 'I64')]).toEqual([-3, 7]);
    expect([...toFloat32(new Uint8Array([0, 1, 255]), 'U8')]).toEqual([0, 1, 255]);
    expect([...toFloat32(new Uint8Array([0, 2]), 'BOOL')]).toEqual([0, 1]);
    expect([...toFloat32(new Uint8Array(new Int16Array([-5]).buffer), 'I16')]).toEqual([-5]);
  });
  it('reads F32 bits unchanged', () => {
    expect(bitsOfF32(toFloat32(f32BitsBytes([0x3dcccccd, 0x00000001]), 'F32'))).toEqual([0x3dcccccd, 0x00000001]);
    expect(f32FromBits(0x3f800000)).toBe(1);
  });
});
