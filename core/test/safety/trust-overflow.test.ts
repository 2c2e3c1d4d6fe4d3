/**
 * Issue #28 point 4 (the narrowing half): `prepare --dtype float16` turned values above 65504
 * (and NaN/±Inf inputs) into ±Inf/NaN without a word. The kernels now count the non-finite
 * results in their own pass; prepare refuses the tensor unless --allow-overflow, which records
 * the count per tensor in the manifest and the summary. Counts are checked against an
 * independent count made here by value arithmetic (|x| ≥ 65520 or not finite: f16's
 * round-to-nearest-even overflow threshold), on the SIMD and on the scalar kernels.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { readSafetensorsHeaderSync, writeSafetensors } from '../../src/formats/safetensors';
import { makeConverter } from '../../src/prepare/kernels';
import { makeTransposeConverter } from '../../src/prepare/transpose-kernels';
import { narrowingTally } from '../../src/prepare/overflow';
import { runPrepare } from '../../src/prepare';
import { simdConverter, simdTransposer } from '../../src/prepare/simd/simd-convert';

const tmp = tempDirs('ws-trust-o-');
const cli = (args: string[]) => cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '', WEIGHT_SPEC_PROGRESS: 'off' } });
const lastLine = (t: string) => t.trim().split('\n').at(-1);

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** Whether the value `x` (exact in f32) is ±Inf or NaN in f16: value arithmetic, not the kernels' bits. */
const badInHalf = (x: number) => !Number.isFinite(x) || Math.abs(x) >= 65520;
const bf16Of = (x: number) => (f32.set([x]), u32[0]! >>> 16);
const valueOfBf16 = (b: number) => (u32.set([b << 16]), f32[0]!);

/** Weights ~N(0, 0.02) with specials at fixed places. */
function values(n: number, specials: [number, number][]): number[] {
  let s = 12345;
  const v = Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32 - 0.5) * 0.04);
  for (const [i, x] of specials) v[i] = x;
  return v;
}

// a: bf16 [64, 48] (even: the paired kernels); b: f32 [37, 5] (odd: the tails); c: clean
const A = values(64 * 48, [
  [0, 70000],
  [3, -1e5],
  [8, 65504],
  [9, 65519],
  [17, 65536],
  [100, NaN],
  [101, -Infinity],
  [2000, 3e38],
  [3071, -65520],
]);
const B = values(37 * 5, [
  [0, 65519.99],
  [1, 65520],
  [2, -1e6],
  [40, NaN],
  [41, Infinity],
  [184, 70000],
  [90, -65504],
]);
const C = values(32 * 16, []);
const aBits = Uint16Array.from(A, bf16Of);
const expected = {
  // the bf16 value actually stored decides
  'a.weight': Array.from(aBits, valueOfBf16).filter(badInHalf).length,
  'b.weight': B.map((x) => Math.fround(x)).filter(badInHalf).length,
};

async function checkpoint(): Promise<string> {
  const dir = path.join(tmp(), 'ckpt');
  fs.mkdirSync(dir, { recursive: true });
  await writeSafetensors(path.join(dir, 'model.safetensors'), [
    { key: 'a.weight', dtype: 'BF16', shape: [64, 48], data: new Uint8Array(aBits.buffer) },
    { key: 'b.weight', dtype: 'F32', shape: [37, 5], data: new Uint8Array(Float32Array.from(B).buffer) },
    { key: 'c.weight', dtype: 'BF16', shape: [32, 16], data: new Uint8Array(Uint16Array.from(C, bf16Of).buffer) },
  ]);
  return dir;
}

/** Non-finite f16 elements of `key` in the prepared folder (read back from disk). */
function countInOutput(dir: string, key: string): number {
  const index = JSON.parse(fs.readFileSync(path.join(dir, 'model.safetensors.index.json'), 'utf8')) as {
    weight_map: Record<string, string>;
  };
  const file = path.join(dir, index.weight_map[key]!);
  const t = readSafetensorsHeaderSync(file).tensors.get(key)!;
  const bytes = fs.readFileSync(file).subarray(t.dataOffset, t.dataOffset + t.byteLength);
  let n = 0;
  for (let i = 0; i < bytes.length; i += 2) if ((bytes.readUInt16LE(i) & 0x7c00) === 0x7c00) n++;
  return n;
}

const saved = process.env.WEIGHT_SPEC_SIMD;
afterEach(() => {
  if (saved === undefined) delete process.env.WEIGHT_SPEC_SIMD;
  else process.env.WEIGHT_SPEC_SIMD = saved;
});

it('the test data has overflow in both sources (the independent counts are not zero)', () => {
  // bf16Of truncates: 65519 and −65520 become ±65280 (finite); 70000, −1e5, 65536, NaN, −Inf, 3e38 remain
  expect(expected['a.weight']).toBe(6);
  expect(expected['b.weight']).toBe(5); // 65520, −1e6, NaN, Inf, 70000 (65519.99 and −65504 stay finite)
});

for (const simd of ['on', 'off'] as const) {
  describe(`prepare --dtype float16 over bf16 and f32 sources above 65504 (SIMD ${simd})`, () => {
    it('is refused naming the tensor, the count and the flag, leaving no prepared folder', async () => {
      process.env.WEIGHT_SPEC_SIMD = simd;
      const src = await checkpoint();
      const out = path.join(path.dirname(src), 'out');
      const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float16', '--out', out]);
      expect(r.code).toBe(1);
      const file = path.join(src, 'model.safetensors');
      // the first tensor of the task with any is refused
      expect(lastLine(r.stderr)).toBe(
        `weight-spec: ${file}: "a.weight" would hold ${expected['a.weight']} non-finite values (${expected['a.weight']} ±Inf or NaN in float16); ` +
          'refusing to prepare them (--allow-overflow keeps them and records the count)',
      );
      expect(fs.existsSync(out)).toBe(false);
      expect(fs.readdirSync(path.dirname(src)).sort()).toEqual(['ckpt']); // no temp folder left
    });

    it('--allow-overflow keeps them: counts per tensor in the manifest, the summary and the written bytes', async () => {
      process.env.WEIGHT_SPEC_SIMD = simd;
      const src = await checkpoint();
      const out = path.join(path.dirname(src), 'out');
      const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float16', '--out', out, '--allow-overflow']);
      expect(r.code, r.stderr).toBe(0);
      const manifest = JSON.parse(fs.readFileSync(path.join(out, '.checkpoint_prepared.json'), 'utf8')) as { non_finite?: unknown };
      expect(manifest.non_finite).toEqual(expected);
      expect(r.stdout).toContain(
        `prepare: kept ±Inf/NaN values (--allow-overflow) in 2 tensor(s): a.weight (${expected['a.weight']}), b.weight (${expected['b.weight']})`,
      );
      expect(countInOutput(out, 'a.weight')).toBe(expected['a.weight']);
      expect(countInOutput(out, 'b.weight')).toBe(expected['b.weight']);
      expect(countInOutput(out, 'c.weight')).toBe(0);
      // the flag is not in the fingerprint (same bytes): up to date with it, refused without it
      const again = await cli(['prepare', '--checkpoint', src, '--dtype', 'float16', '--out', out, '--allow-overflow']);
      expect(again.stdout).toContain('prepare: up to date');
      const refused = await cli(['prepare', '--checkpoint', src, '--dtype', 'float16', '--out', out]);
      expect(refused.code).toBe(1);
      expect(lastLine(refused.stderr)).toBe(
        `weight-spec: ${out}: "a.weight" holds ${expected['a.weight']} non-finite values (prepared with --allow-overflow); pass --allow-overflow to use it`,
      );
      expect(fs.existsSync(path.join(out, '.checkpoint_prepared'))).toBe(true); // refused, not removed
    });

    it('pieces of a dense task filled by two workers sum to the same counts', async () => {
      process.env.WEIGHT_SPEC_SIMD = simd;
      const src = await checkpoint();
      const out = path.join(path.dirname(src), 'out');
      const opts = { checkpoint: src, dtype: 'float16' as const, out, workers: 2, pieceBytes: 1024 };
      await expect(runPrepare(opts)).rejects.toThrow(/would hold \d+ non-finite values .*--allow-overflow/);
      expect(fs.existsSync(out)).toBe(false);
      const res = await runPrepare({ ...opts, allowOverflow: true });
      expect(res.executor!.pieces).toBeGreaterThan(2);
      expect(res.nonFinite).toEqual(expected);
    });

    it('float32 does not narrow: nothing counted, nothing refused', async () => {
      process.env.WEIGHT_SPEC_SIMD = simd;
      const src = await checkpoint();
      const out = path.join(path.dirname(src), 'out');
      const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain('kept ±Inf/NaN');
    });
  });
}

describe('the counting kernels, over every bf16 input', () => {
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
  const want = Array.from(all, valueOfBf16).filter(badInHalf).length;
  const counted = (run: () => void) => {
    const before = narrowingTally.nonFinite;
    run();
    return narrowingTally.nonFinite - before;
  };

  it('bf16 → f16: scalar table, SIMD (tail included), fused transpose and SIMD transpose count alike', () => {
    expect(want).toBe(2 * (0x8000 - 0x4780)); // |x| ≥ 65536 (0x4780): Inf, NaN and overflow, both signs
    const bytes = new Uint8Array(all.buffer);
    expect(counted(() => makeConverter('BF16', 'F16')(bytes))).toBe(want);
    const simd = simdConverter('BF16', 'F16', 65531, makeConverter('BF16', 'F16'));
    expect(simd).toBeDefined();
    expect(
      counted(() => {
        simd!.input(65531).set(bytes.subarray(0, 65531 * 2));
        simd!.run(65531);
        simd!.input(5).set(bytes.subarray(65531 * 2));
        simd!.run(5);
      }),
    ).toBe(want);
    const dst = new Uint8Array(65536 * 2);
    expect(counted(() => makeTransposeConverter('BF16', 'F16')!(bytes, dst, 256, 256))).toBe(want);
    expect(
      counted(() => makeTransposeConverter('BF16', 'F16')!(bytes.subarray(0, 255 * 257 * 2), new Uint8Array(255 * 257 * 2), 255, 257)),
    ).toBe(Array.from(all.subarray(0, 255 * 257), valueOfBf16).filter(badInHalf).length);
    const tr = simdTransposer('BF16', 'F16', 256, 256, 1);
    expect(tr).toBeDefined();
    expect(
      counted(() => {
        tr!.input(65536).set(bytes);
        tr!.run(256, 256, 0);
      }),
    ).toBe(want);
  });

  it('f32 → f16: scalar and SIMD count alike around the threshold', () => {
    const xs = Float32Array.from({ length: 4099 }, (_, i) => (i % 2 ? -1 : 1) * (65500 + i * 0.01 * (i % 7)) * (i % 97 === 0 ? 1e30 : 1));
    xs[7] = NaN;
    xs[8] = -Infinity;
    const wantF = Array.from(xs).filter(badInHalf).length;
    expect(wantF).toBeGreaterThan(100);
    const bytes = new Uint8Array(xs.buffer);
    expect(counted(() => makeConverter('F32', 'F16')(bytes))).toBe(wantF);
    const simd = simdConverter('F32', 'F16', 4099, makeConverter('F32', 'F16'));
    expect(
      counted(() => {
        simd!.input(4099).set(bytes);
        simd!.run(4099);
      }),
    ).toBe(wantF);
  });
});
