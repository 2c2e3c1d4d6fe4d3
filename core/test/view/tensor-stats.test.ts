// A tensor's statistics and .npy export (issue 50 item 5) on real safetensors files written
// here: bf16, f16, f32 with NaN/±Inf, raw FP8 E4M3/E5M2, and a block-scaled FP8 weight of a
// checkpoint whose config.json declares it (dequantized with its weight_scale_inv). The
// expected values come from NumPy (/usr/bin/python3) reading the same file on its own: it
// parses the safetensors header, decodes bf16 by bit shift and FP8 by its own formula, and
// computes min/max/mean/std/histogram in float64. The chunk size is made small so every
// statistic crosses chunk boundaries.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../src/formats/safetensors';
import { exportNpy, npyHeader } from '../../src/view/tensor-npy';
import { formatValue, statsLines, tensorFileOf, tensorStats, type TensorStats } from '../../src/view/tensor-stats';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-stats-');

/** NumPy's view of tensor `key` of `file`, decoded independently of the code under test. */
const NUMPY = String.raw`
import json, struct, sys
import numpy as np
file, key, bins, scale_key, block = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
def load(k):
    raw = open(file, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n])[k]
    b = raw[8 + n + h['data_offsets'][0]:8 + n + h['data_offsets'][1]]
    d = h['dtype']
    if d == 'F32': v = np.frombuffer(b, '<f4').astype(np.float64)
    elif d == 'F16': v = np.frombuffer(b, '<f2').astype(np.float64)
    elif d == 'BF16': v = (np.frombuffer(b, '<u2').astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    elif d in ('F8_E4M3', 'F8_E5M2'):
        e, m, bias = (4, 3, 7) if d == 'F8_E4M3' else (5, 2, 15)
        def dec(c):
            s = -1.0 if c & 0x80 else 1.0
            ex = (c >> m) & ((1 << e) - 1)
            ma = c & ((1 << m) - 1)
            if d == 'F8_E4M3' and ex == 15 and ma == 7: return float('nan')
            if d == 'F8_E5M2' and ex == 31: return float('nan') if ma else s * float('inf')
            if ex == 0: return s * ma / (1 << m) * 2.0 ** (1 - bias)
            return s * (1 + ma / (1 << m)) * 2.0 ** (ex - bias)
        table = np.array([dec(c) for c in range(256)])
        v = table[np.frombuffer(b, np.uint8)]
    return v.reshape(h['shape'])
v = load(key)
if scale_key:
    s = load(scale_key).astype(np.float32)
    full = np.repeat(np.repeat(s, block, 0), block, 1)[:v.shape[0], :v.shape[1]]
    v = (v.astype(np.float32) * full).astype(np.float64)
f = v.ravel()
fin = f[np.isfinite(f)]
hist = np.histogram(fin, bins=bins, range=(fin.min(), fin.max()))[0] if fin.size else []
print(json.dumps({'min': float(fin.min()), 'max': float(fin.max()), 'mean': float(fin.mean()), 'std': float(fin.std()),
  'nan': int(np.isnan(f).sum()), 'posInf': int(np.isposinf(f).sum()), 'negInf': int(np.isneginf(f).sum()),
  'hist': [int(c) for c in hist], 'head': [None if np.isnan(x) else float(x) for x in f[:16]], 'count': int(f.size)}))
`;

interface Ref {
  min: number;
  max: number;
  mean: number;
  std: number;
  nan: number;
  posInf: number;
  negInf: number;
  hist: number[];
  head: (number | null)[];
  count: number;
}

function numpy(file: string, key: string, bins: number, scale?: { key: string; block: number }): Ref {
  const out = execFileSync('/usr/bin/python3', ['-c', NUMPY, file, key, String(bins), scale?.key ?? '', String(scale?.block ?? 0)]);
  return JSON.parse(out.toString()) as Ref;
}

/** Seeded pseudo-random bytes (a small LCG: the values only need to be varied, not random). */
function bytes(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

function expectMatches(s: TensorStats, r: Ref, bins: number): void {
  expect(s.count).toBe(r.count);
  expect([s.nan, s.posInf, s.negInf]).toEqual([r.nan, r.posInf, r.negInf]);
  expect(s.min).toBe(r.min);
  expect(s.max).toBe(r.max);
  // Relative to the spread: random bf16/f16 bit patterns reach 1e38, where f64 sums in another
  // order differ in the 14th digit.
  expect(Math.abs(s.mean! - r.mean)).toBeLessThanOrEqual(1e-12 * Math.max(Math.abs(r.mean), r.std, 1e-30));
  expect(Math.abs(s.std! - r.std) / r.std).toBeLessThan(1e-9);
  expect(s.histogram.counts).toHaveLength(bins);
  expect(s.histogram.counts).toEqual(r.hist);
  expect(s.head.map((x) => (Number.isNaN(x) ? null : x))).toEqual(r.head);
}

describe('tensorStats against NumPy on the same file', () => {
  it('bf16 and f16 (random bit patterns, NaN and ±Inf among them), streamed in small chunks', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    const n = 50_000;
    // Random 16-bit patterns: every exponent, so NaN, Inf and subnormals occur.
    await writeSafetensors(file, [
      { key: 'w.bf16', dtype: 'BF16', shape: [250, 200], data: bytes(2 * n, 1) },
      { key: 'w.f16', dtype: 'F16', shape: [n], data: bytes(2 * n, 2) },
    ]);
    for (const key of ['w.bf16', 'w.f16']) {
      const s = await tensorStats(file, key, { bins: 20, chunkBytes: 4096 + 6 });
      const r = numpy(file, key, 20);
      expect(r.nan + r.posInf + r.negInf).toBeGreaterThan(0);
      expectMatches(s, r, 20);
    }
  });

  it('f32 with NaN and ±Inf placed at chunk edges', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    const v = new Float32Array(10_000).map((_, i) => Math.sin(i * 0.37) * (1 + (i % 13)));
    v[0] = NaN;
    v[1023] = Infinity;
    v[1024] = -Infinity;
    v[9999] = NaN;
    await writeSafetensors(file, [{ key: 'x', dtype: 'F32', shape: [100, 100], data: new Uint8Array(v.buffer) }]);
    const s = await tensorStats(file, 'x', { bins: 16, chunkBytes: 4096 });
    expectMatches(s, numpy(file, 'x', 16), 16);
    expect([s.nan, s.posInf, s.negInf]).toEqual([2, 1, 1]);
  });

  it('raw FP8 E4M3 and E5M2 (no quantization_config: the stored values)', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    await writeSafetensors(file, [
      { key: 'a', dtype: 'F8_E4M3', shape: [64, 64], data: bytes(4096, 3) },
      { key: 'b', dtype: 'F8_E5M2', shape: [4096], data: bytes(4096, 4) },
    ]);
    for (const key of ['a', 'b']) {
      const s = await tensorStats(file, key, { bins: 8, chunkBytes: 1000 });
      expect(s.scale).toBeUndefined();
      expectMatches(s, numpy(file, key, 8), 8);
    }
  });

  it("a block-scaled FP8 weight is dequantized with the checkpoint's weight_scale_inv (partial edge blocks)", async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    // 40 × 24 in 16 × 16 blocks: a 3 × 2 scale grid whose last row and column are partial.
    // Codes without E4M3's NaN (0x7f / 0xff), so every value is finite.
    const q = bytes(40 * 24, 5).map((b) => ((b & 0x7f) === 0x7f ? b - 1 : b));
    const scale = new Float32Array([0.5, 2, 0.125, 3, 1.5, 0.01]);
    await writeSafetensors(file, [
      { key: 'model.layers.0.mlp.up_proj.weight', dtype: 'F8_E4M3', shape: [40, 24], data: q },
      { key: 'model.layers.0.mlp.up_proj.weight_scale_inv', dtype: 'F32', shape: [3, 2], data: new Uint8Array(scale.buffer) },
    ]);
    fs.writeFileSync(
      path.join(dir, 'config.json'),
      JSON.stringify({
        model_type: 'llama',
        quantization_config: { quant_method: 'fp8', fmt: 'e4m3', activation_scheme: 'dynamic', weight_block_size: [16, 16] },
      }),
    );
    const key = 'model.layers.0.mlp.up_proj.weight';
    const s = await tensorStats(file, key, { bins: 10, chunkBytes: 100 });
    expect(s.scale).toEqual({ key: `${key}_scale_inv`, block: [16, 16] });
    const r = numpy(file, key, 10, { key: `${key}_scale_inv`, block: 16 });
    expectMatches(s, r, 10);
    // The stored codes' own statistics differ: the scale was applied.
    expect(numpy(file, key, 10).max).not.toBe(s.max);
  });
});

describe('exportNpy', () => {
  it('writes a .npy NumPy loads with the decoded values and shape; refuses to replace a file unasked; leaves no temporaries', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    await writeSafetensors(file, [{ key: 'w', dtype: 'BF16', shape: [3, 50, 7], data: bytes(2 * 3 * 50 * 7, 6) }]);
    const out = path.join(dir, 'w.npy');
    const r = await exportNpy(file, 'w', out, { chunkBytes: 64 });
    expect(r.bytes).toBe(fs.statSync(out).size);
    const check = String.raw`
import json, struct, sys
import numpy as np
a = np.load(sys.argv[1])
raw = open(sys.argv[2], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8 + n])['w']
b = raw[8 + n + h['data_offsets'][0]:8 + n + h['data_offsets'][1]]
ref = (np.frombuffer(b, '<u2').astype(np.uint32) << 16).view(np.float32).reshape(h['shape'])
print(json.dumps({'dtype': str(a.dtype), 'shape': list(a.shape), 'same': bool(np.array_equal(a, ref, equal_nan=True))}))
`;
    const got = JSON.parse(execFileSync('/usr/bin/python3', ['-c', check, out, file]).toString()) as unknown;
    expect(got).toEqual({ dtype: 'float32', shape: [3, 50, 7], same: true });
    await expect(exportNpy(file, 'w', out)).rejects.toThrow(`${out}: exists; choose another name (nothing was written)`);
    await exportNpy(file, 'w', out, { replace: true });
    await expect(exportNpy(file, 'nope', path.join(dir, 'nope.npy'))).rejects.toThrow(/has no tensor "nope"/);
    expect(fs.readdirSync(dir).sort()).toEqual(['model.safetensors', 'w.npy']);
  });

  it('pads the header to 64 bytes and writes a 1-D shape with its trailing comma', () => {
    for (const shape of [[5], [2, 3], [1, 2, 3, 4]]) {
      const h = npyHeader(shape);
      expect(h.length % 64).toBe(0);
      expect(Buffer.from(h.subarray(0, 8)).toString('latin1')).toBe('\x93NUMPY\x01\x00');
      expect(Buffer.from(h.subarray(10)).toString('latin1')).toContain(
        shape.length === 1 ? "'shape': (5,)" : `'shape': (${shape.join(', ')})`,
      );
      expect(h[h.length - 1]).toBe(0x0a);
    }
  });
});

describe("the checkpoint viewer's text of a tensor's values", () => {
  it('finds the shard of a key from the page the extension built, never from the webview', () => {
    const page = { dir: '/ck', files: [{ name: 'a.safetensors' }, { name: 'sub/b.safetensors' }], tensors: [{ key: 'x', shard: 1 }] };
    expect(tensorFileOf(page, 'x')).toBe(path.join('/ck', 'sub/b.safetensors'));
    expect(tensorFileOf(page, 'y')).toBeUndefined();
  });

  it('shows six significant digits, NaN and ±inf, the scale and a cut head', () => {
    expect([0.1 + 0.2, -1234567, 1e-9, NaN, Infinity, -Infinity].map(formatValue)).toEqual([
      '0.3',
      '-1234570',
      '1e-9',
      'NaN',
      'inf',
      '-inf',
    ]);
    const s: TensorStats = {
      key: 'w',
      dtype: 'F8_E4M3',
      shape: [40, 24],
      count: 960,
      min: -1.5,
      max: 2.25,
      mean: 0.125,
      std: 0.5,
      nan: 1,
      posInf: 0,
      negInf: 2,
      histogram: { lo: -1.5, hi: 2.25, counts: [1, 2] },
      head: [1, NaN],
      scale: { key: 'w_scale_inv', block: [16, 16] },
    };
    expect(statsLines(s)).toEqual([
      'w: F8_E4M3 [40, 24], 960 values, dequantized with w_scale_inv (16×16 blocks)',
      'min -1.5 · max 2.25 · mean 0.125 · std 0.5',
      'NaN 1 · +inf 0 · -inf 2',
      'first values: 1, NaN, …',
    ]);
    const empty = { ...s, count: 2, min: undefined, nan: 2, negInf: 0, scale: undefined };
    expect(statsLines(empty)[0]).toBe('w: F8_E4M3 [40, 24], 2 values');
    expect(statsLines(empty)[1]).toBe('no finite value');
    expect(statsLines(empty)[3]).toBe('first values: 1, NaN');
  });
});
