/**
 * The SIMD conversion kernels (core/src/prepare/simd/convert.wat) against independent
 * references: every one of the 65,536 bf16 inputs, and a million f32 inputs weighted toward
 * the edges (f16's subnormal range, the overflow threshold, Inf and NaN), bit for bit. The
 * references are value arithmetic (refHalf) or the f32 bits of the value, not the kernels'
 * bit tricks. Also: the committed module is the assembly of the committed .wat.
 */
import { describe, expect, it } from 'vitest';
import { floatBitsToHalfBits } from '../../src/formats/float-convert';
import { makeConverter } from '../../src/prepare/kernels';
import { CONVERT_WASM_BASE64 } from '../../src/prepare/simd/convert-wasm';
import { instance, reserve, simdConverter, simdTransposer } from '../../src/prepare/simd/simd-convert';
import { bf16ToNumber, refHalf, rng } from '../support/prepare-support';

// @ts-expect-error -- a plain .mjs script without types
import { assembleConvertWat } from '../../../scripts/build-wasm.mjs';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** f16 bits of f32 bits `u`: refHalf of the value; NaN keeps the quiet bit and the top payload (as formats/dtype.ts documents). */
function wantHalf(u: number): number {
  u32[0] = u;
  const x = f32[0]!;
  if (Number.isNaN(x)) return ((u >>> 16) & 0x8000) | 0x7e00 | ((u >>> 13) & 0x3ff);
  return refHalf(x);
}

/** Runs `n` elements of `input` through a SIMD converter in chunks of `chunk`. */
function viaSimd(from: 'BF16' | 'F32', to: 'F16' | 'F32', input: Uint8Array, n: number, chunk: number): Uint8Array {
  const inSize = from === 'BF16' ? 2 : 4;
  const outSize = to === 'F16' ? 2 : 4;
  const k = simdConverter(from, to, chunk, makeConverter(from, to));
  expect(k, 'WebAssembly SIMD is available in Node 20').toBeDefined();
  const out = new Uint8Array(n * outSize);
  for (let first = 0; first < n; first += chunk) {
    const elems = Math.min(chunk, n - first);
    k!.input(elems).set(input.subarray(first * inSize, (first + elems) * inSize));
    k!.run(elems);
    out.set(k!.output(elems), first * outSize);
  }
  return out;
}

describe('SIMD conversion kernels', () => {
  it('the committed module is the assembly of convert.wat', async () => {
    const bytes = (await assembleConvertWat()) as Buffer;
    expect(Buffer.from(CONVERT_WASM_BASE64, 'base64').equals(bytes)).toBe(true);
  });

  const allBf16 = new Uint16Array(65536).map((_, i) => i);
  const allBytes = new Uint8Array(allBf16.buffer);

  it('bf16 → f16: all 65,536 inputs, in chunks with a tail (8k + 5 elements), equal the value reference', () => {
    const got = new Uint16Array(viaSimd('BF16', 'F16', allBytes, 65536, 8 * 1000 + 5).buffer);
    let bad = 0;
    for (let b = 0; b < 65536; b++) if (got[b] !== wantHalf(b << 16)) bad++;
    expect(bad).toBe(0);
    // spot values: 1.0, −2.0, 65280 (largest finite bf16 below 2^16), 2^16 → Inf, 2^-24 (smallest f16), 2^-25 → 0 (tie to even)
    const bf = (x: number) => (f32.set([x]), u32[0]! >>> 16);
    const at = (x: number) => got[bf(x)];
    expect([at(1), at(-2), at(65280), at(65536), at(2 ** -24), at(2 ** -25)]).toEqual([0x3c00, 0xc000, 0x7bf8, 0x7c00, 0x0001, 0x0000]);
    expect(bf16ToNumber(bf(3 * 2 ** -26))).toBe(3 * 2 ** -26);
    expect(at(3 * 2 ** -26)).toBe(0x0001); // 0.75 units rounds up
  });

  it('bf16 → f32: all 65,536 inputs are the same value (bits in the high half)', () => {
    const got = new Uint32Array(viaSimd('BF16', 'F32', allBytes, 65536, 4096 + 3).buffer);
    let bad = 0;
    for (let b = 0; b < 65536; b++) {
      const v = bf16ToNumber(b);
      f32[0] = v;
      if (got[b] !== (Number.isNaN(v) ? b << 16 : u32[0]) >>> 0) bad++;
    }
    expect(bad).toBe(0);
  });

  it('f32 → f16: a million inputs weighted toward the edges equal the value reference', () => {
    const n = 1 << 20;
    const r = rng(22);
    const u = new Uint32Array(n);
    const edges = [
      0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffffffff, 0x477fefff, 0x477ff000, 0x38800000, 0x387fffff,
    ];
    edges.push(0x33000000, 0x33000001, 0x32ffffff, 0x33800000, 0x33c00000, 0x00000001, 0x007fffff);
    for (let i = 0; i < n; i++) {
      const zone = i % 4;
      const rand = Math.floor(r() * 2 ** 32) >>> 0;
      // every bit pattern; f16's subnormal range; around the overflow threshold; round-half cases
      u[i] =
        zone === 0
          ? rand
          : zone === 1
            ? (0x33000000 + (rand % 0x05800000)) | (rand & 0x80000000)
            : zone === 2
              ? 0x47700000 + (rand % 0x00200000)
              : ((rand & 0xffffe000) | 0x1000) >>> 0;
    }
    edges.forEach((e, i) => (u[i] = e));
    const got = new Uint16Array(viaSimd('F32', 'F16', new Uint8Array(u.buffer), n, 65536 + 7).buffer);
    let bad = 0;
    for (let i = 0; i < n; i++) if (got[i] !== wantHalf(u[i]!)) bad++;
    expect(bad).toBe(0);
    // and the scalar kernel agrees (the two paths prepare may take)
    for (let i = 0; i < 4096; i++) expect(got[i]).toBe(floatBitsToHalfBits(u[i]!));
  });

  it('transposes [rows, cols] 16-bit slices into batch slots as [cols, rows], converting bf16 → f16 or not at all', () => {
    const r = rng(7);
    for (const [rows, cols] of [
      [8, 8],
      [16, 24],
      [512, 64],
      [40, 1024],
    ] as const) {
      const n = rows * cols;
      const bits = new Uint16Array(n).map(() => Math.floor(r() * 65536));
      for (const to of ['F16', 'BF16'] as const) {
        const k = simdTransposer('BF16', to, rows, cols, 3)!;
        expect(k, `[${rows}, ${cols}] → ${to}`).toBeDefined();
        // three slices: the second is the first reversed, the third all ones — each in its own slot
        const slices = [bits, bits.slice().reverse(), new Uint16Array(n).fill(0x3f80)];
        slices.forEach((sl, slot) => {
          k.input(n).set(new Uint8Array(sl.buffer));
          k.run(rows, cols, slot);
        });
        const out = new Uint16Array(k.output(3, n).slice().buffer);
        slices.forEach((sl, slot) => {
          let bad = 0;
          for (let i = 0; i < rows; i++)
            for (let j = 0; j < cols; j++) {
              const b = sl[i * cols + j]!;
              if (out[slot * n + j * rows + i] !== (to === 'F16' ? wantHalf(b << 16) : b)) bad++;
            }
          expect(bad, `[${rows}, ${cols}] slot ${slot} → ${to}`).toBe(0);
        });
      }
    }
  });

  it('transpose32 moves [rows, cols] 32-bit elements to [cols, rows] (FP8 experts dequantized to f32), every bit pattern kept', () => {
    const r = rng(11);
    const k = instance()!;
    const transpose32 = k.transpose32 as (src: number, dst: number, rows: number, cols: number) => void;
    for (const [rows, cols] of [
      [4, 4],
      [8, 12],
      [64, 40],
      [1024, 8],
    ] as const) {
      const n = rows * cols;
      // random bits: NaN payloads, subnormals and negative zeros must come through as they are
      const src = new Uint32Array(n).map(() => Math.floor(r() * 2 ** 32));
      reserve(k, 2 * n * 4);
      new Uint32Array(k.memory.buffer, 0, n).set(src);
      transpose32(0, n * 4, rows, cols);
      const got = new Uint32Array(k.memory.buffer, n * 4, n);
      let bad = 0;
      for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) if (got[j * rows + i] !== src[i * cols + j]) bad++;
      expect(bad, `[${rows}, ${cols}]`).toBe(0);
    }
  });

  it('has no transposer for sides that are not multiples of 8, nor for 32-bit outputs (the scalar kernels serve them)', () => {
    expect(simdTransposer('BF16', 'F16', 601, 64, 1)).toBeUndefined();
    expect(simdTransposer('BF16', 'F16', 64, 12, 1)).toBeUndefined();
    expect(simdTransposer('BF16', 'F32', 64, 64, 1)).toBeUndefined();
    expect(simdTransposer('F16', 'BF16', 64, 64, 1)).toBeUndefined();
  });

  it('has no kernel for other pairs, and none when WEIGHT_SPEC_SIMD=off', () => {
    expect(simdConverter('F16', 'BF16', 1024, makeConverter('F16', 'BF16'))).toBeUndefined();
    process.env.WEIGHT_SPEC_SIMD = 'off';
    try {
      expect(simdConverter('BF16', 'F16', 1024, makeConverter('BF16', 'F16'))).toBeUndefined();
    } finally {
      delete process.env.WEIGHT_SPEC_SIMD;
    }
  });
});
