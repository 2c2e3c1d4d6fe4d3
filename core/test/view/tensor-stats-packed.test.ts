// Statistics and .npy export of packed 4-bit tensors (issue 50 item 5), dequantized as prepare
// does. Expected values never come from our code: the GPTQ fixture's expected_dequant.safetensors
// holds the exact float weights (made by the fixture generator, tools/fixtures/gen_quant_lora.py),
// which NumPy reads on its own; AWQ and MXFP4 data are made here and NumPy dequantizes them with
// its own unpacking (AutoAWQ's AWQ_ORDER, an e2m1 table and 2^(s − 127) written in the snippet).
// Chunks are made small so every statistic and the .npy rows cross slab boundaries.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../src/formats/safetensors';
import { exportNpy } from '../../src/view/tensor-npy';
import { statsLines, tensorStats, type TensorStats } from '../../src/view/tensor-stats';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-stats-packed-');

/**
 * argv: mode (`f32` key of a file | `awq` prefix | `mxfp4` prefix), file, key/prefix, bins,
 * and an optional .npy to compare. Prints NumPy's statistics of the float weight and whether
 * the .npy equals it bit for bit.
 */
const NUMPY = String.raw`
import json, struct, sys, warnings
import numpy as np
warnings.simplefilter('ignore')
mode, file, key, bins = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
npy = sys.argv[5] if len(sys.argv) > 5 else ''
raw = open(file, 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
def load(k, dt):
    h = hdr[k]
    return np.frombuffer(raw[8 + n + h['data_offsets'][0]:8 + n + h['data_offsets'][1]], dt).reshape(h['shape'])
if mode == 'f32':
    w = load(key, '<f4')
elif mode == 'awq':
    order = [0, 2, 4, 6, 1, 3, 5, 7]  # AutoAWQ: nibble k of a word holds column order[k]
    def unpack(q):
        nib = (q.astype(np.uint32)[:, :, None] >> (4 * np.arange(8, dtype=np.uint32))) & 15
        out = np.zeros((q.shape[0], q.shape[1] * 8), np.int64)
        for k in range(8): out[:, order[k]::8] = nib[:, :, k]
        return out
    q = unpack(load(key + '.qweight', '<i4'))           # [in, out]
    z = unpack(load(key + '.qzeros', '<i4'))            # [groups, out]
    s = load(key + '.scales', '<f2').astype(np.float32)  # [groups, out]
    g = np.arange(q.shape[0]) // (q.shape[0] // s.shape[0])
    w = (s[g] * (q - z[g]).astype(np.float32)).T        # [out, in]
elif mode == 'mxfp4':
    e2m1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)
    b = load(key + '_blocks', np.uint8)
    s = load(key + '_scales', np.uint8)
    vals = np.stack([e2m1[b & 15], e2m1[b >> 4]], -1).reshape(*b.shape[:-1], 32)
    f = np.array([2.0 ** (c - 127) for c in range(256)]).astype(np.float32)
    w = (vals * f[s][..., None]).reshape(*s.shape[:-1], s.shape[-1] * 32)
f = w.astype(np.float64).ravel()
fin = f[np.isfinite(f)]
res = {'shape': list(w.shape), 'count': int(f.size), 'min': float(fin.min()), 'max': float(fin.max()),
  'mean': float(fin.mean()), 'std': float(fin.std()), 'nan': int(np.isnan(f).sum()),
  'posInf': int(np.isposinf(f).sum()), 'negInf': int(np.isneginf(f).sum()),
  'hist': [int(c) for c in np.histogram(fin, bins=bins, range=(fin.min(), fin.max()))[0]],
  'head': [None if np.isnan(x) else float(x) for x in f[:16]]}
if npy:
    a = np.load(npy)
    res['npy'] = {'dtype': str(a.dtype), 'shape': list(a.shape), 'same': bool(np.array_equal(a, w.astype(np.float32), equal_nan=True))}
print(json.dumps(res))
`;

interface Ref {
  shape: number[];
  count: number;
  min: number;
  max: number;
  mean: number;
  std: number;
  nan: number;
  posInf: number;
  negInf: number;
  hist: number[];
  head: (number | null)[];
  npy?: { dtype: string; shape: number[]; same: boolean };
}

function numpy(mode: 'f32' | 'awq' | 'mxfp4', file: string, key: string, bins: number, npy = ''): Ref {
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', NUMPY, mode, file, key, String(bins), npy]).toString()) as Ref;
}

function expectMatches(s: TensorStats, r: Ref, bins: number): void {
  expect(s.shape).toEqual(r.shape);
  expect(s.count).toBe(r.count);
  expect([s.nan, s.posInf, s.negInf]).toEqual([r.nan, r.posInf, r.negInf]);
  expect(s.min).toBe(r.min);
  expect(s.max).toBe(r.max);
  expect(Math.abs(s.mean! - r.mean)).toBeLessThanOrEqual(1e-12 * Math.max(Math.abs(r.mean), r.std));
  expect(Math.abs(s.std! - r.std) / r.std).toBeLessThan(1e-9);
  expect(s.histogram.counts).toHaveLength(bins);
  expect(s.histogram.counts).toEqual(r.hist);
  expect(s.head.map((x) => (Number.isNaN(x) ? null : x))).toEqual(r.head);
}

/** Seeded pseudo-random 32-bit words (a small LCG: varied, not random). */
function words(n: number, seed: number): Int32Array {
  const out = new Int32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) out[i] = x = (Math.imul(x, 1664525) + 1013904223) | 0;
  return out;
}
const u8 = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

describeFixtures('statistics of a GPTQ qweight equal NumPy on the fixture’s exact dequantized weight', () => {
  const dir = path.join(fixturesDir(), 'llama_gptq');
  const expected = path.join(dir, 'expected_dequant.safetensors');
  const shard = path.join(dir, 'model-00001-of-00002.safetensors');

  it.each([
    ['model.layers.0.self_attn.q_proj', 1024],
    ['model.layers.0.self_attn.k_proj', 300],
    ['model.layers.0.mlp.down_proj', 4096],
  ])('%s (GPTQ v1, g_idx, chunks of %i bytes)', async (m, chunkBytes) => {
    const s = await tensorStats(shard, `${m}.qweight`, { bins: 12, chunkBytes });
    const r = numpy('f32', expected, `${m}.weight`, 12);
    expectMatches(s, r, 12);
    expect(s.dtype).toBe('I32');
    expect(s.packed).toEqual({ format: 'gptq', stored: [s.shape[1]! / 8, s.shape[0]], with: [`${m}.scales`, `${m}.qzeros`, `${m}.g_idx`] });
    expect(statsLines(s)[0]).toBe(
      `${m}.qweight: GPTQ int4 (I32 [${s.shape[1]! / 8}, ${s.shape[0]}]) → [${s.shape.join(', ')}], ${s.count.toLocaleString('en-US')} values, dequantized with ${m}.scales, ${m}.qzeros, ${m}.g_idx`,
    );
  });

  it('.npy export of a qweight writes the dequantized float32 [out, in] weight', async () => {
    const out = path.join(tmp(), 'down.npy');
    const m = 'model.layers.0.mlp.down_proj';
    const w = await exportNpy(shard, `${m}.qweight`, out, { chunkBytes: 2048 });
    expect(w.bytes).toBe(fs.statSync(out).size);
    expect(numpy('f32', expected, `${m}.weight`, 4, out).npy).toEqual({ dtype: 'float32', shape: [64, 128], same: true });
  });
});

describe('statistics of packed tensors made here, against NumPy’s own unpacking', () => {
  it('AWQ GEMM: interleaved nibble order, zero points as stored, .npy in [out, in]', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    const [inF, out, group] = [64, 24, 16];
    const scales = new Uint16Array((inF / group) * out).map((_, i) => 0x2c00 + ((i * 37) % 900)); // fp16 ≈ 0.06 … 0.3
    await writeSafetensors(file, [
      { key: 'l.qweight', dtype: 'I32', shape: [inF, out / 8], data: u8(words((inF * out) / 8, 7)) },
      { key: 'l.qzeros', dtype: 'I32', shape: [inF / group, out / 8], data: u8(words((inF / group) * (out / 8), 8)) },
      { key: 'l.scales', dtype: 'F16', shape: [inF / group, out], data: u8(scales) },
    ]);
    fs.writeFileSync(
      path.join(dir, 'config.json'),
      JSON.stringify({
        model_type: 'llama',
        quantization_config: { quant_method: 'awq', bits: 4, group_size: group, version: 'gemm', zero_point: true },
      }),
    );
    const s = await tensorStats(file, 'l.qweight', { bins: 9, chunkBytes: 700 });
    const npy = path.join(dir, 'l.npy');
    await exportNpy(file, 'l.qweight', npy, { chunkBytes: 500 });
    const r = numpy('awq', file, 'l', 9, npy);
    expectMatches(s, r, 9);
    expect(s.packed?.format).toBe('awq');
    expect(r.npy).toEqual({ dtype: 'float32', shape: [out, inF], same: true });
  });

  it('a qweight without a GPTQ/AWQ config is shown as its stored integers', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    await writeSafetensors(file, [{ key: 'l.qweight', dtype: 'I32', shape: [2, 4], data: u8(new Int32Array([1, 2, 3, 4, 5, 6, 7, 8])) }]);
    const s = await tensorStats(file, 'l.qweight');
    expect(s.packed).toBeUndefined();
    expect([s.min, s.max, s.head]).toEqual([1, 8, [1, 2, 3, 4, 5, 6, 7, 8]]);
  });

  it('MXFP4 blocks with their E8M0 scales (gpt-oss layout), including a scale of 255 (±inf, NaN for 0)', async () => {
    const dir = tmp();
    const file = path.join(dir, 'model.safetensors');
    const [E, R, G] = [2, 6, 3];
    const blocks = u8(words((E * R * G * 16) / 4, 9));
    const scales = new Uint8Array(E * R * G).map((_, i) => 118 + ((i * 7) % 17));
    scales[5] = 255;
    await writeSafetensors(file, [
      { key: 'model.layers.0.mlp.experts.down_proj_blocks', dtype: 'U8', shape: [E, R, G, 16], data: blocks },
      { key: 'model.layers.0.mlp.experts.down_proj_scales', dtype: 'U8', shape: [E, R, G], data: scales },
    ]);
    const key = 'model.layers.0.mlp.experts.down_proj';
    const s = await tensorStats(file, `${key}_blocks`, { bins: 7, chunkBytes: 80 });
    const npy = path.join(dir, 'b.npy');
    await exportNpy(file, `${key}_blocks`, npy, { chunkBytes: 48 });
    const r = numpy('mxfp4', file, key, 7, npy);
    expect(r.posInf + r.negInf).toBeGreaterThan(0);
    expectMatches(s, r, 7);
    expect(s.packed).toEqual({ format: 'mxfp4', stored: [E, R, G, 16], with: [`${key}_scales`] });
    expect(r.npy).toEqual({ dtype: 'float32', shape: [E, R, G * 32], same: true });
    expect(statsLines(s)[0]).toContain(`MXFP4 (U8 [${E}, ${R}, ${G}, 16]) → [${E}, ${R}, ${G * 32}]`);
  });
});
