/**
 * The table-lookup FP8 → bf16 kernels of convert.wat (`fp8_tables`, `fp8_bf16_rows`, and the
 * fused dequantize + transpose `fp8_bf16_t` that stacks DeepSeek-style experts) bit for bit
 * against an independent reference written here from the formats' definitions (fp8-support.ts
 * `e4m3`/`e5m2`), times the block scale rounded once to f32, then to bf16 (RNE). The lookup is
 * exact only while every product is a normal f32 and finite in bf16, so the scales here sit on
 * both sides of each of those limits (f32 neighbours of 2^-119, 2^-111 and of bf16's overflow
 * threshold divided by the format's largest value), beside plain, negative and subnormal-result
 * ones. Every one of the 256 codes meets every scale; the transposed layout is checked on
 * matrices with partial edge blocks both ways, in a batch slot past the first, and on shapes
 * the fused kernel does not take (which go through dequantize-then-transpose). The counts the
 * prepare refusal reads (FP8 NaN codes, non-finite results) must match the reference's.
 */
import { describe, expect, it } from 'vitest';
import { markTally, tallySince } from '../../src/prepare/overflow';
import { simdDequant } from '../../src/prepare/simd/simd-fp8';
import type { ScaleRef } from '../../src/prepare/types';
import { bf16Bits, e4m3, e5m2 } from '../support/fp8-support';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const fromBits = (u: number) => ((u32[0] = u), f32[0]!);
const bitsOf = (x: number) => ((f32[0] = x), u32[0]!);
/** The f32 next to `x` (`dir` +1 away from zero, −1 towards it; x > 0). */
const nextF32 = (x: number, dir: 1 | -1) => fromBits(bitsOf(x) + dir);

type Fmt = 'F8_E4M3' | 'F8_E5M2';
const value = (fmt: Fmt, b: number) => (fmt === 'F8_E4M3' ? e4m3 : e5m2)(b);

/** bf16 bits of code `b` times scale `s`: the exact product rounded once to f32, then to bf16. */
function reference(fmt: Fmt, b: number, s: number): number {
  const v = value(fmt, b);
  if (Number.isNaN(v)) {
    // NaN codes stay NaN whatever the scale: E4M3's quiet NaN; E5M2's keeps its sign and payload
    const u = fmt === 'F8_E4M3' ? 0x7fc00000 : ((b & 0x80) << 24) | 0x7fc00000 | ((b & 3) << 21);
    return (u >>> 16) | 0x40;
  }
  return bf16Bits(Math.fround(v * s));
}
const nonFinite = (h: number) => (h & 0x7f80) === 0x7f80;

/** bf16's overflow threshold (the smallest f32 that rounds to ±Inf). */
const BF16_LIMIT = fromBits(0x7f7f8000);
/** Scales on both sides of the lookup's limits, for both formats, and ordinary ones. */
const SCALES = [
  1,
  -0.75,
  3.7e-5,
  -2.1e-4,
  2 ** -24,
  1e-30,
  2 ** -140,
  1e35,
  -3.4e38,
  ...[2 ** -119, 2 ** -111].flatMap((x) => [x, nextF32(x, -1), nextF32(x, 1)]),
  ...[448, 57344].flatMap((max) => {
    const s = Math.fround(BF16_LIMIT / max);
    return [s, nextF32(s, -1), nextF32(s, 1), -s];
  }),
].map((x) => Math.fround(x));

describe('FP8 → bf16 by table lookup', () => {
  for (const fmt of ['F8_E4M3', 'F8_E5M2'] as const) {
    it(`${fmt}: all 256 codes × ${SCALES.length} scales at the lookup's limits equal the reference (rows), counts included`, () => {
      const C = 256 * 2 + 16 + 9; // pairs of groups of 16, one group, a tail
      const R = SCALES.length;
      const codes = new Uint8Array(R * C).map((_, i) => ((i % C) * 7) % 256);
      const scale = Float32Array.from(SCALES);
      const ref: ScaleRef = { key: 's', block: [1, C], grid: [1, 1] };
      const k = simdDequant(fmt, 'BF16', [R, C], { ...ref, grid: [R, 1] }, R * C, R)!;
      expect(k, 'WebAssembly SIMD is available in Node 20').toBeDefined();
      k.setScales(scale);
      k.input(R * C).set(codes);
      const mark = markTally();
      k.run(0, R * C);
      const tally = tallySince(mark);
      const got = new Uint16Array(k.output(R * C).slice().buffer);
      const wrong: string[] = [];
      let nan = 0;
      let bad = 0;
      for (let i = 0; i < R * C; i++) {
        const want = reference(fmt, codes[i]!, scale[Math.floor(i / C)]!);
        if (Number.isNaN(value(fmt, codes[i]!))) nan++;
        if (nonFinite(want)) bad++;
        if (got[i] !== want && wrong.length < 5)
          wrong.push(`code 0x${codes[i]!.toString(16)} × ${scale[Math.floor(i / C)]}: ${got[i]!.toString(16)} ≠ ${want.toString(16)}`);
      }
      expect(wrong).toEqual([]);
      expect(tally).toEqual({ fp8Nan: nan, nonFinite: bad });
      expect(bad).toBeGreaterThan(0); // the overflowing scales are there
    });

    it(`${fmt}: dequantized and transposed into a batch slot, partial edge blocks, every code × every scale`, () => {
      for (const [R, C, bR, bC, fused] of [
        [40, 48, 16, 32, true], // partial edge blocks both ways
        [256, 256, 128, 128, true],
        [24, 64, 8, 16, true],
        [16, 24, 8, 8, false], // columns not a multiple of 16: dequantize, then transpose
        [24, 32, 12, 16, false], // blocks not a multiple of 8 rows
      ] as [number, number, number, number, boolean][]) {
        const grid: [number, number] = [Math.ceil(R / bR), Math.ceil(C / bC)];
        const ref: ScaleRef = { key: 's', block: [bR, bC], grid };
        const nS = grid[0] * grid[1];
        const k = simdDequant(fmt, 'BF16', [R, C], ref, R * C, nS, 2)!;
        // every code meets every scale: a pass gives each block one scale and its elements a run
        // of consecutive codes from `off`; the passes rotate the scales and step `off` by the
        // smallest block's size, so each block sees all 256 codes under each scale
        const smallest = (R - (grid[0] - 1) * bR) * (C - (grid[1] - 1) * bC);
        for (let pass = 0; pass < SCALES.length * Math.ceil(256 / Math.min(256, smallest)); pass++) {
          const off = Math.floor(pass / SCALES.length) * smallest;
          const scale = Float32Array.from({ length: nS }, (_, b) => SCALES[(pass + b) % SCALES.length]!);
          const placed = new Uint8Array(R * C);
          for (let r = 0; r < R; r++) {
            for (let c = 0; c < C; c++) {
              const w = Math.min(bC, C - Math.floor(c / bC) * bC);
              placed[r * C + c] = (off + (r % bR) * w + (c % bC)) % 256;
            }
          }
          k.setScales(scale);
          k.input(R * C).set(placed);
          const mark = markTally();
          k.dequantTransposeInto(R, C, 1);
          const tally = tallySince(mark);
          const got = new Uint16Array(k.batch(2, R * C).slice(R * C * 2).buffer);
          let wrong = 0;
          let nan = 0;
          let bad = 0;
          for (let r = 0; r < R; r++) {
            for (let c = 0; c < C; c++) {
              const code = placed[r * C + c]!;
              const want = reference(fmt, code, scale[Math.floor(r / bR) * grid[1] + Math.floor(c / bC)]!);
              if (Number.isNaN(value(fmt, code))) nan++;
              if (nonFinite(want)) bad++;
              if (got[c * R + r] !== want) wrong++;
            }
          }
          expect(wrong, `[${R}, ${C}] in ${bR}×${bC} blocks (${fused ? 'fused' : 'two steps'}), pass ${pass}`).toBe(0);
          expect(tally).toEqual({ fp8Nan: nan, nonFinite: bad });
        }
      }
    });
  }
});
