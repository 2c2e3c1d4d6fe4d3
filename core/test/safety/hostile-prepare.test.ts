/**
 * Issue #43, cases 5, 6, 7 and the FP8 half of 8, over real prepares:
 * - 5: FP8 into float32 with a finite but huge scale (3e38, −3e38) wrote ±Inf with exit 0 and no
 *   `non_finite`. Now every non-finite value written is counted — against an independent count
 *   made here (E4M3 decoded by its bit layout, the product rounded to f32) — and refused unless
 *   --allow-overflow, on the SIMD and the scalar kernels; E5M2's Inf codes likewise.
 * - 6: `--shard 0/100000000` ran until killed and `0/4294967296` printed "Invalid array length":
 *   N is bounded before any allocation (spawned, 10 s / 1 GB), and the assignment's memory is
 *   bounded by the plan's task count, not by N.
 * - 7: `--finalize` deleted a user's `my-notes.txt` from the staging folder: it now refuses,
 *   naming it, and deletes only the plan's files and its own dead temporaries.
 * - 8: an FP8 scale of the wrong shape is reported against the safetensors file holding it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliBounded } from '../../../test/support/bounded';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { readSafetensorsHeaderSync, writeSafetensors } from '../../src/formats/safetensors';
import { dequantFp8 } from '../../src/prepare/fp8-kernel';
import { markTally, nonFiniteOf, tallySince } from '../../src/prepare/overflow';
import { planPrepare } from '../../src/prepare';
import { assignShards, MAX_SHARDS } from '../../src/prepare/shards';
import { simdDequant } from '../../src/prepare/simd/simd-fp8';
import type { Task } from '../../src/prepare/types';
import { quantizeCheckpoint } from '../support/fp8-support';

const tmp = tempDirs('ws-hostile-prep-');
const cli = (args: string[]) => cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '', WEIGHT_SPEC_PROGRESS: 'off' } });
const lastLine = (t: string) => t.trim().split('\n').at(-1);

// prepare's workers run dist/prepare-worker.js, and the shard runs spawn dist/cli.js: build them from these sources
beforeAll(() => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO_ROOT, stdio: 'pipe' });
}, 120_000);

const saved = process.env.WEIGHT_SPEC_SIMD;
afterEach(() => {
  if (saved === undefined) delete process.env.WEIGHT_SPEC_SIMD;
  else process.env.WEIGHT_SPEC_SIMD = saved;
});

/** E4M3FN by its bits (OCP FP8: bias 7, no Inf, S.1111.111 NaN): independent of the kernels' tables. */
function e4m3(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 0xf;
  const m = b & 7;
  if (e === 15 && m === 7) return NaN;
  return sign * (e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7));
}

/** The tensor's entry and bytes in whichever shard of `dir` holds it. */
function tensorIn(dir: string, key: string): { file: string; bytes: Buffer; shape: number[] } {
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.safetensors'))) {
    const file = path.join(dir, f);
    const t = readSafetensorsHeaderSync(file).tensors.get(key);
    if (t) return { file, bytes: fs.readFileSync(file).subarray(t.dataOffset, t.dataOffset + t.byteLength), shape: t.shape };
  }
  throw new Error(`${key} not found in ${dir}`);
}

function pokeF32(file: string, key: string, i: number, v: number): void {
  const t = readSafetensorsHeaderSync(file).tensors.get(key)!;
  const buf = fs.readFileSync(file);
  buf.writeFloatLE(v, t.dataOffset + i * 4);
  fs.writeFileSync(file, buf);
}

describeFixtures('FP8 into float32 with a huge scale (case 5)', () => {
  const W = 'model.layers.0.self_attn.q_proj';
  /** An FP8 copy of llama with scale elements 1 and 2 of W set to 3e38 and −3e38; the expected count. */
  async function hostileFp8(): Promise<{ src: string; file: string; expected: number }> {
    const src = path.join(tmp(), 'fp8');
    await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, { method: 'fp8', block: [32, 32] });
    const { file, shape } = tensorIn(src, `${W}.weight`);
    const [, C] = shape as [number, number];
    const nC = Math.ceil(C / 32);
    const scales = new Map([
      [1, 3e38],
      [2, -3e38],
    ]);
    for (const [i, v] of scales) pokeF32(file, `${W}.weight_scale_inv`, i, v);
    // independent count: every element of a poked block whose f32 product is not finite
    const q = tensorIn(src, `${W}.weight`).bytes;
    let expected = 0;
    q.forEach((b, idx) => {
      const r = Math.floor(idx / C);
      const c = idx % C;
      const s = scales.get(Math.floor(r / 32) * nC + Math.floor(c / 32));
      if (s !== undefined && !Number.isFinite(Math.fround(e4m3(b) * Math.fround(s)))) expected++;
    });
    return { src, file, expected };
  }

  for (const simd of ['on', 'off'] as const) {
    it(`is refused, then counted with --allow-overflow, exactly as written (${simd === 'on' ? 'SIMD' : 'scalar'} kernels)`, async () => {
      process.env.WEIGHT_SPEC_SIMD = simd;
      const { src, file, expected } = await hostileFp8();
      expect(expected).toBeGreaterThan(10);
      const out = path.join(path.dirname(src), 'out');
      const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out]);
      expect(r.code).toBe(1);
      expect(lastLine(r.stderr)).toBe(
        `weight-spec: ${file}: "${W}.weight" would hold ${expected} non-finite values (${expected} ±Inf or NaN in float32); ` +
          'refusing to prepare them (--allow-overflow keeps them and records the count)',
      );
      expect(fs.existsSync(out)).toBe(false);
      const kept = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out, '--allow-overflow']);
      expect(kept.code, kept.stderr).toBe(0);
      const manifest = JSON.parse(fs.readFileSync(path.join(out, '.checkpoint_prepared.json'), 'utf8')) as { non_finite?: unknown };
      expect(manifest.non_finite).toEqual({ [`${W}.weight`]: expected });
      const written = tensorIn(out, `${W}.weight`).bytes;
      const f = new Float32Array(written.buffer.slice(written.byteOffset, written.byteOffset + written.byteLength));
      expect(f.filter((v) => !Number.isFinite(v)).length).toBe(expected);
    });
  }
});

describe('E5M2 Inf codes and non-finite scales into float32 (case 5, other values)', () => {
  const E5M2_ONE = 0x3c;
  // 16 codes: +Inf, −Inf, a NaN code, the largest finite (57344) and ones
  const codes = Uint8Array.from({ length: 8 * 16 }, (_, i) => [0x7c, 0xfc, 0x7e, 0x7b][i] ?? E5M2_ONE);
  const ref = { key: 's', block: [8, 16] as [number, number], grid: [1, 1] as [number, number] };
  for (const [scale, what, want] of [
    [1, 'scale 1: the two Inf codes (and the NaN code)', 3],
    [1e35, 'scale 1e35: 57344 · 1e35 overflows too (1 · 1e35 does not)', 4],
    [-6e34, 'scale −6e34: 57344 · −6e34 overflows to −Inf', 4],
  ] as const) {
    it(`${what}: scalar and SIMD count ${want}`, () => {
      const scalar = markTally();
      dequantFp8(codes, 'F8_E5M2', 0, [8, 16], Float32Array.of(scale), ref, 'F32');
      expect(nonFiniteOf(tallySince(scalar), 'F32').n).toBe(want);
      const k = simdDequant('F8_E5M2', 'F32', [8, 16], ref, codes.length, 1);
      expect(k, 'WebAssembly SIMD kernels (Node 20+)').toBeDefined();
      k!.setScales(Float32Array.of(scale));
      k!.input(codes.length).set(codes);
      const m = markTally();
      k!.run(0, codes.length);
      expect(nonFiniteOf(tallySince(m), 'F32').n).toBe(want);
    });
  }
});

describe('--shard N bounded before any allocation (case 6)', () => {
  for (const [given, message] of [
    ['0/100000000', `N must be at most ${MAX_SHARDS}`],
    ['0/4294967296', `N must be at most ${MAX_SHARDS}`],
    ['3/99999999999999999999', 'must be i/N'],
  ] as const) {
    it(`--shard ${given} is refused in one line, at once`, async () => {
      const r = await cliBounded([
        'prepare',
        '--checkpoint',
        path.join(fixturesDir(), 'llama'),
        '--dtype',
        'float16',
        '--out',
        path.join(tmp(), 'o'),
        '--shard',
        given,
      ]);
      expect(r.hung, 'hung').toBe(false);
      expect(r.rssExceeded, `RSS passed 1 GB (peak ${r.peakRssMb} MB)`).toBe(false);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toContain(message);
      expect(r.stderr).not.toContain('Invalid array length');
    });
  }

  it('the assignment allocates by the task count: N = MAX_SHARDS gives what N = tasks gives, and matches the linear scan', () => {
    const task = (id: string, outBytes: number) => ({ id, outBytes }) as Task;
    let s = 7;
    const rnd = () => (s = (s * 1103515245 + 12345) >>> 0) % 1000;
    const tasks = Array.from({ length: 200 }, (_, i) => task(`t${i}`, rnd()));
    // the reference: LPT by a linear scan for the least loaded shard (lowest index on a tie)
    const reference = (n: number) => {
      const load = new Array<number>(n).fill(0);
      const out = new Map<string, number>();
      for (const t of [...tasks].sort((a, b) => b.outBytes - a.outBytes || (a.id < b.id ? -1 : 1))) {
        let best = 0;
        for (let k = 1; k < n; k++) if (load[k]! < load[best]!) best = k;
        load[best]! += t.outBytes;
        out.set(t.id, best);
      }
      return out;
    };
    for (const n of [1, 2, 3, 7, 64, 199, 200, 201, 1000]) expect(assignShards(tasks, n), `N = ${n}`).toEqual(reference(n));
    const t0 = performance.now();
    expect(assignShards(tasks, MAX_SHARDS)).toEqual(reference(tasks.length));
    expect(performance.now() - t0).toBeLessThan(10_000);
  });
});

describeFixtures('--finalize deletes only what the plan or its own temporaries name (case 7)', () => {
  it("a user's my-notes.txt in the staging folder survives: finalize refuses naming it; dead temporaries go", async () => {
    const dir = tmp();
    const out = path.join(dir, 'o');
    const base = ['prepare', '--checkpoint', path.join(fixturesDir(), 'llama'), '--dtype', 'float16', '--out', out];
    for (const i of [0, 1]) expect((await cli([...base, '--shard', `${i}/2`])).code).toBe(0);
    const staging = path.join(
      dir,
      fs.readdirSync(dir).find((n) => n.startsWith('o.shards-') && !n.endsWith('.records'))!,
    );
    const planFile = fs.readdirSync(staging).find((n) => n.endsWith('.safetensors'))!;
    fs.writeFileSync(path.join(staging, 'my-notes.txt'), 'mine');
    fs.mkdirSync(path.join(staging, 'my-dir'));
    fs.writeFileSync(path.join(staging, 'my-dir', 'keep.txt'), 'mine too');
    const deadTemp = path.join(staging, `${planFile}.tmp-99999999-deadbeef`);
    fs.writeFileSync(deadTemp, 'a killed shard run');
    const r = await cli([...base, '--finalize']);
    expect(r.code).toBe(1);
    expect(lastLine(r.stderr)).toBe(
      `weight-spec: ${staging}: cannot finalize, it holds my-dir, my-notes.txt, which no shard of this plan wrote ` +
        '(or a shard still writing); move it out of the staging folder and run --finalize again',
    );
    expect(fs.readFileSync(path.join(staging, 'my-notes.txt'), 'utf8')).toBe('mine');
    expect(fs.readFileSync(path.join(staging, 'my-dir', 'keep.txt'), 'utf8')).toBe('mine too');
    expect(fs.existsSync(deadTemp)).toBe(true);
    expect(fs.existsSync(out)).toBe(false);
    // moved out: finalize commits, and drops the dead temporary
    fs.renameSync(path.join(staging, 'my-notes.txt'), path.join(dir, 'my-notes.txt'));
    fs.rmSync(path.join(staging, 'my-dir'), { recursive: true });
    const ok = await cli([...base, '--finalize']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(fs.existsSync(path.join(out, '.checkpoint_prepared'))).toBe(true);
    expect(fs.readdirSync(out).some((n) => n.includes('.tmp-'))).toBe(false);
    // up to date: a leftover staging folder loses the plan's files only
    fs.mkdirSync(staging);
    fs.copyFileSync(path.join(out, planFile), path.join(staging, planFile));
    fs.writeFileSync(path.join(staging, 'my-notes.txt'), 'mine again');
    const again = await cli([...base, '--finalize']);
    expect(again.code, again.stderr).toBe(0);
    expect(fs.readdirSync(staging)).toEqual(['my-notes.txt']);
  });
});

describe('FP8 tensor errors name the safetensors file (case 8)', () => {
  it('a scale of the wrong shape, or of the wrong dtype, names the file holding it (not config.json)', async () => {
    for (const [scale, msg] of [
      [{ key: 'a.weight_scale_inv', dtype: 'F32' as const, shape: [1, 1], data: new Uint8Array(4) }, /is \[1,1\], but "a.weight" \[2,2\]/],
      [{ key: 'a.weight_scale_inv', dtype: 'I32' as const, shape: [2, 2], data: new Uint8Array(16) }, /is I32; expected F32, BF16 or F16/],
    ] as const) {
      const d = path.join(tmp(), 'model');
      fs.mkdirSync(d);
      const file = path.join(d, 'model.safetensors');
      await writeSafetensors(file, [
        { key: 'a.weight', dtype: 'F8_E4M3', shape: [2, 2], data: new Uint8Array(4) },
        { ...scale, shape: [...scale.shape] },
      ]);
      fs.writeFileSync(
        path.join(d, 'config.json'),
        JSON.stringify({ model_type: 'llama', quantization_config: { quant_method: 'fp8', weight_block_size: [1, 1] } }),
      );
      const err = await planPrepare({ checkpoint: d, dtype: 'float32' }).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message.startsWith(`${file}: scale "a.weight_scale_inv" `), err?.message).toBe(true);
      expect(err!.message).toMatch(msg);
    }
  });
});

describeFixtures('MXFP4 into float32 with scale 255 (2^128: ±Inf in f32) (case 5, every dtype)', () => {
  it('the 32 values of the group are counted and refused, then recorded with --allow-overflow', async () => {
    const src = path.join(tmp(), 'gpt_oss');
    fs.cpSync(path.join(fixturesDir(), 'gpt_oss'), src, { recursive: true });
    const key = 'model.layers.0.mlp.experts.down_proj_scales';
    const { file } = tensorIn(src, key);
    fs.chmodSync(file, 0o644);
    const t = readSafetensorsHeaderSync(file).tensors.get(key)!;
    const buf = fs.readFileSync(file);
    buf[t.dataOffset] = 255; // expert 0, row 0, group 0: each FP4 value times 2^128 (0 · Inf is NaN)
    fs.writeFileSync(file, buf);
    const out = path.join(path.dirname(src), 'out');
    const r = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out]);
    expect(r.code).toBe(1);
    expect(lastLine(r.stderr)).toMatch(/"([^"]+)" would hold 32 non-finite values \(32 ±Inf or NaN in float32\); refusing/);
    expect(fs.existsSync(out)).toBe(false);
    const kept = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', out, '--allow-overflow']);
    expect(kept.code, kept.stderr).toBe(0);
    const manifest = JSON.parse(fs.readFileSync(path.join(out, '.checkpoint_prepared.json'), 'utf8')) as {
      non_finite?: Record<string, number>;
    };
    expect(Object.values(manifest.non_finite ?? {})).toEqual([32]);
  });
});
