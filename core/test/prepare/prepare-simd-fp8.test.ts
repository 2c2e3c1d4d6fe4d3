/**
 * The SIMD FP8 dequantization kernel (convert.wat `fp8_dequant`, simd/simd-fp8.ts) bit for bit
 * against an independent reference written here from the formats' definitions (fp8-support.ts
 * `e4m3`/`e5m2`: sign, exponent, mantissa, subnormals, NaN/Inf codes), times the block scale
 * in f32 (one rounding, as DeepSeek-V3's `weight_dequant_kernel`), then rounded to the target
 * by value (bf16: RNE; f16: refHalf). Every one of the 256 codes meets every scale of a set
 * that gives f32 subnormal results, f16 subnormal results, f16/bf16/f32 overflow and negative
 * scales, for E4M3 and E5M2 into f32, bf16 and f16; then a matrix with partial edge blocks
 * (both ways) in chunks that start mid-row and end mid-block. The counts the prepare refusal
 * reads (overflow.ts: FP8 NaN codes, non-finite 16-bit results) must match the reference's too,
 * and the scalar kernel (fp8-kernel.ts + encodeF32) must give the same bytes.
 */
import { describe, expect, it } from 'vitest';
import type { DType } from '../../src/formats/dtype';
import { dequantFp8 } from '../../src/prepare/fp8-kernel';
import { encodeF32 } from '../../src/prepare/kernels';
import { markTally, tallySince } from '../../src/prepare/overflow';
import { simdDequant } from '../../src/prepare/simd/simd-fp8';
import type { ScaleRef } from '../../src/prepare/types';
import { bf16Bits, e4m3, e5m2 } from '../support/fp8-support';
import { refHalf, rng } from '../support/prepare-support';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const bitsOf = (x: number) => ((f32[0] = x), u32[0]!);

/** The reference: the target's bits of code `b` times scale `s`, and whether it is non-finite in a 16-bit target. */
function reference(fmt: 'F8_E4M3' | 'F8_E5M2', to: 'F32' | 'BF16' | 'F16', b: number, s: number): number {
  const v = (fmt === 'F8_E4M3' ? e4m3 : e5m2)(b);
  // A NaN code is NaN whatever the scale (prepare refuses it unless --allow-overflow): E4M3's is the
  // quiet NaN; E5M2, an IEEE half's top byte, widens to f32 as a half does (sign and payload
  // kept, quieted) and the product keeps that NaN (IEEE 754 §6.2.3); narrowing keeps it quiet
  // with its top payload bits (formats/dtype.ts).
  if (Number.isNaN(v)) {
    const u = fmt === 'F8_E4M3' ? 0x7fc00000 : ((b & 0x80) << 24) | 0x7fc00000 | ((b & 3) << 21);
    return to === 'F32' ? u >>> 0 : to === 'BF16' ? (u >>> 16) | 0x40 : ((u >>> 16) & 0x8000) | 0x7e00 | ((u >>> 13) & 0x3ff);
  }
  const x = Math.fround(v * s); // the exact product rounded once to f32
  return to === 'F32' ? bitsOf(x) : to === 'BF16' ? bf16Bits(x) : refHalf(x);
}

/** A written value that is ±Inf or NaN in the target dtype (issue #43: into float32 too, where a huge scale overflows). */
const nonFiniteOut = (to: DType, h: number) =>
  to === 'BF16' ? (h & 0x7f80) === 0x7f80 : to === 'F16' ? (h & 0x7c00) === 0x7c00 : (h & 0x7f800000) === 0x7f800000;

/** Dequantizes `codes` ([R, C], `ref`) through the SIMD kernel in chunks of `chunk` from element `from`; bytes and tally. */
function viaSimd(fmt: DType, to: DType, codes: Uint8Array, shape: number[], scale: Float32Array, ref: ScaleRef, chunk: number, from = 0) {
  const k = simdDequant(fmt, to, shape, ref, chunk, scale.length);
  expect(k, 'WebAssembly SIMD is available in Node 20').toBeDefined();
  k!.setScales(scale);
  const size = to === 'F32' ? 4 : 2;
  const out = new Uint8Array((codes.length - from) * size);
  const mark = markTally();
  for (let first = from; first < codes.length; first += chunk) {
    const n = Math.min(chunk, codes.length - first);
    k!.input(n).set(codes.subarray(first, first + n));
    k!.run(first, n);
    out.set(k!.output(n), (first - from) * size);
  }
  return { out, tally: tallySince(mark) };
}

/** The scalar kernel's bytes and tally for the same elements. */
function viaScalar(fmt: DType, to: DType, codes: Uint8Array, shape: number[], scale: Float32Array, ref: ScaleRef, from = 0) {
  const mark = markTally();
  // the target dtype, as prepare passes it: the dequant then counts what it writes into float32
  const out = encodeF32(dequantFp8(codes.subarray(from), fmt, from, shape, scale, ref, to), to).slice();
  return { out, tally: tallySince(mark) };
}

/** Scales: plain, negative, giving f32 subnormals, f16 subnormals, and overflow of f16, bf16 and f32. */
const SCALES = [1, 0.5, -0.75, 3.7e-5, 1 / 448, 2 ** -10, 2 ** -24, 1e-30, 2 ** -140, 300, 1e4, 1e35, 3.4e38, -3.4e38];

describe('SIMD FP8 dequantization', () => {
  for (const fmt of ['F8_E4M3', 'F8_E5M2'] as const) {
    for (const to of ['F32', 'BF16', 'F16'] as const) {
      it(`${fmt} → ${to}: all 256 codes × ${SCALES.length} scales equal the reference, counts included`, () => {
        // one row per scale, the 256 codes twice with a 5-code tail (vector body and scalar tail);
        // the second time permuted, so every code also meets every lane of the kernels that take
        // codes four or sixteen at a time (in order, lane k of four only ever saw codes ≡ k mod 4)
        const C = 256 * 2 + 5;
        const R = SCALES.length;
        const order = (j: number) => (j >= 256 && j < 512 ? ((j - 256) * 37 + 11) % 256 : j % 256);
        const codes = new Uint8Array(R * C).map((_, i) => order(i % C));
        const scale = Float32Array.from(SCALES);
        const ref: ScaleRef = { key: 's', block: [1, C], grid: [1, 1] };
        // the scales are f32s: the reference multiplies by the stored value
        const want = new Uint32Array(R * C);
        let nan = 0;
        let bad = 0;
        for (let i = 0; i < R * C; i++) {
          want[i] = reference(fmt, to, codes[i]!, scale[Math.floor(i / C)]!);
          if (Number.isNaN((fmt === 'F8_E4M3' ? e4m3 : e5m2)(codes[i]!))) nan++;
          if (nonFiniteOut(to, want[i]!)) bad++;
        }
        const { out, tally } = viaSimd(fmt, to, codes, [R, C], scale, ref, 3 * C);
        const got = to === 'F32' ? new Uint32Array(out.buffer) : new Uint16Array(out.buffer);
        const wrong: string[] = [];
        for (let i = 0; i < R * C && wrong.length < 5; i++)
          if (got[i] !== want[i])
            wrong.push(
              `code 0x${codes[i]!.toString(16)} × ${scale[Math.floor(i / C)]}: ${got[i]!.toString(16)} ≠ ${want[i]!.toString(16)}`,
            );
        expect(wrong).toEqual([]);
        // into f16/bf16 the narrowing counts every non-finite result, NaN codes included; into f32 the
        // kernel counts the overflows and the NaN codes stay in fp8Nan (overflow.ts nonFiniteOf adds them)
        expect(tally).toEqual({ fp8Nan: nan, nonFinite: to === 'F32' ? bad - nan : bad });
        expect(nan).toBe(fmt === 'F8_E4M3' ? 2 * 2 * R : 6 * 2 * R);
        const scalar = viaScalar(fmt, to, codes, [R, C], scale, ref);
        expect(Buffer.from(scalar.out).equals(Buffer.from(out))).toBe(true);
        expect(scalar.tally).toEqual(tally);
      });
    }
  }

  it('partial edge blocks both ways, chunks starting mid-row and mid-block, 3-D (stacked) tensors: equal the reference and the scalar kernel', () => {
    const next = rng(35);
    for (const [shape, block] of [
      [
        [37, 300],
        [16, 128],
      ],
      [
        [2, 45, 130],
        [32, 32],
      ],
      [
        [64, 4096],
        [128, 128],
      ],
    ] as [number[], [number, number]][]) {
      const [R, C] = shape.slice(-2) as [number, number];
      const lead = shape.length > 2 ? shape[0]! : 1;
      const grid: [number, number] = [Math.ceil(R / block[0]), Math.ceil(C / block[1])];
      const scale = Float32Array.from({ length: lead * grid[0] * grid[1] }, () => SCALES[Math.floor(next() * SCALES.length)]!);
      const codes = Uint8Array.from({ length: lead * R * C }, () => Math.floor(next() * 256));
      const ref: ScaleRef = { key: 's', block, grid };
      for (const fmt of ['F8_E4M3', 'F8_E5M2'] as const) {
        for (const to of ['F32', 'BF16', 'F16'] as const) {
          const from = 7; // the first chunk starts mid-row
          const { out, tally } = viaSimd(fmt, to, codes, shape, scale, ref, 1000 + 3, from);
          const got = to === 'F32' ? new Uint32Array(out.buffer) : new Uint16Array(out.buffer);
          let wrong = 0;
          for (let i = from; i < codes.length; i++) {
            const row = Math.floor(i / C);
            const s = scale[(Math.floor(row / R) * grid[0] + Math.floor((row % R) / block[0])) * grid[1] + Math.floor((i % C) / block[1])]!;
            if (got[i - from] !== reference(fmt, to, codes[i]!, s)) wrong++;
          }
          expect(wrong, `${fmt} → ${to} ${JSON.stringify(shape)} in ${block.join('×')} blocks`).toBe(0);
          const scalar = viaScalar(fmt, to, codes, shape, scale, ref, from);
          expect(Buffer.from(scalar.out).equals(Buffer.from(out))).toBe(true);
          expect(scalar.tally).toEqual(tally);
        }
      }
    }
  });

  it('refuses scales that do not cover the elements, like the scalar kernel', () => {
    const ref: ScaleRef = { key: 's', block: [128, 128], grid: [2, 2] };
    const k = simdDequant('F8_E4M3', 'BF16', [256, 256], ref, 65536, 4)!;
    k.setScales(new Float32Array(3));
    expect(() => k.run(0, 65536)).toThrow(/3 scales do not cover elements 0…65536 of \[256,256\] in 128×128 blocks/);
  });

  it('WEIGHT_SPEC_SIMD=off leaves FP8 to the scalar kernel', () => {
    process.env.WEIGHT_SPEC_SIMD = 'off';
    try {
      expect(simdDequant('F8_E4M3', 'BF16', [8, 8], { key: 's', block: [8, 8], grid: [1, 1] }, 64, 1)).toBeUndefined();
    } finally {
      delete process.env.WEIGHT_SPEC_SIMD;
    }
  });
});
