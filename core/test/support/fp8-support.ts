/**
 * FP8 checkpoints made in code for the quantization tests, with the expected dequantized
 * tensors computed here, independently of prepare's kernels:
 *
 * - E4M3 (torch.float8_e4m3fn, OCP FP8): sign, 4 exponent bits (bias 7), 3 mantissa bits,
 *   subnormals at exponent 0, no Inf, S.1111.111 is NaN; max 448.
 * - HF fine-grained FP8 quantization (transformers `integrations/finegrained_fp8.py`
 *   `Fp8Quantize.convert` at 0095b97): per [bR, bC] block, `scale = 448 / amax` (1 for an
 *   all-zero block), `q = e4m3(clamp(w · scale, ±448))`, stored `weight_scale_inv = 1/scale`
 *   in f32. Dequantization (`Fp8Dequantize.convert`, DeepSeek-V3 `inference/kernel.py`
 *   `weight_dequant_kernel` at 0623163): `f32(q) · scale_inv[⌊i/bR⌋, ⌊j/bC⌋]` in f32, masked
 *   (partial) edge blocks in DeepSeek's kernel.
 * - compressed-tensors float8 (`quantization/lifecycle/forward.py` `_dequantize` at 00e56c6:
 *   `(x_q − zero_point) · scale`, symmetric float8 has no zero point); per-channel scales
 *   `[R, 1]` = amax_row / 448.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type DType } from '../../src/formats/dtype';
import { fromFloat32, toFloat32 } from '../../src/formats/float-convert';
import { Checkpoint, writeSafetensors, type TensorData } from '../../src/formats/safetensors';

/** float8_e4m3fn code → value, from the format's definition. */
export function e4m3(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 3) & 15;
  const m = b & 7;
  if (e === 15 && m === 7) return NaN;
  return e === 0 ? sign * (m / 8) * 2 ** -6 : sign * (1 + m / 8) * 2 ** (e - 7);
}

/** float8_e5m2 code → value (IEEE-style: bias 15, Inf and NaN at exponent 31). */
export function e5m2(b: number): number {
  const sign = b & 0x80 ? -1 : 1;
  const e = (b >> 2) & 31;
  const m = b & 3;
  if (e === 31) return m === 0 ? sign * Infinity : NaN;
  return e === 0 ? sign * (m / 4) * 2 ** -14 : sign * (1 + m / 4) * 2 ** (e - 15);
}

/** f32 → bf16 bits, round to nearest even (NaN stays NaN). */
export function bf16Bits(x: number): number {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0]!;
  if (Number.isNaN(x)) return (u >>> 16) | 0x40;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** An f32 value rounded to bf16 (for bf16-stored scales). */
export function roundBf16(x: number): number {
  return new Float32Array(new Uint32Array([bf16Bits(x) << 16]).buffer)[0]!;
}

/** A quantized matrix: FP8 codes, the scales as stored, and the expected dequantized values. */
export interface Quantized {
  q: Uint8Array;
  scale: Float32Array;
  scaleShape: number[];
  expected: Float32Array;
}

/**
 * Quantizes `[lead…, R, C]` values in [bR, bC] blocks the way HF's Fp8Quantize does (edge
 * blocks partial), with scales stored as `scaleDtype`; `expected` = f32(e4m3(q) · scale_inv).
 */
export function quantizeBlocks(w: Float32Array, shape: number[], block: [number, number], scaleDtype: DType = 'F32'): Quantized {
  const R = shape[shape.length - 2]!;
  const C = shape[shape.length - 1]!;
  const lead = w.length / (R * C);
  const [bR, bC] = block;
  const nR = Math.ceil(R / bR);
  const nC = Math.ceil(C / bC);
  const scale = new Float32Array(lead * nR * nC);
  const scaled = new Float32Array(w.length);
  for (let m = 0; m < lead; m++) {
    for (let br = 0; br < nR; br++) {
      for (let bc = 0; bc < nC; bc++) {
        const cells: number[] = [];
        for (let i = br * bR; i < Math.min(R, (br + 1) * bR); i++)
          for (let j = bc * bC; j < Math.min(C, (bc + 1) * bC); j++) cells.push(m * R * C + i * C + j);
        const amax = Math.max(0, ...cells.map((c) => Math.abs(w[c]!)));
        const s = amax > 0 ? Math.fround(448 / amax) : 1;
        for (const c of cells) scaled[c] = Math.max(-448, Math.min(448, Math.fround(w[c]! * s)));
        const inv = Math.fround(1 / s);
        scale[(m * nR + br) * nC + bc] = scaleDtype === 'BF16' ? roundBf16(inv) : inv;
      }
    }
  }
  const q = fromFloat32(scaled, 'F8_E4M3');
  const expected = new Float32Array(w.length);
  for (let f = 0; f < w.length; f++) {
    const j = f % C;
    const i = Math.floor(f / C) % R;
    const m = Math.floor(f / (R * C));
    expected[f] = Math.fround(e4m3(q[f]!) * scale[(m * nR + Math.floor(i / bR)) * nC + Math.floor(j / bC)]!);
  }
  return { q, scale, scaleShape: [...shape.slice(0, -2), nR, nC], expected };
}

/** compressed-tensors float8 per-channel: scale[i] = amax(row i) / 448, q = e4m3(w / scale). */
export function quantizeChannels(w: Float32Array, R: number, C: number, scaleDtype: DType = 'BF16'): Quantized {
  const scale = new Float32Array(R);
  const scaled = new Float32Array(w.length);
  for (let i = 0; i < R; i++) {
    let amax = 0;
    for (let j = 0; j < C; j++) amax = Math.max(amax, Math.abs(w[i * C + j]!));
    const s0 = amax > 0 ? Math.fround(amax / 448) : 1;
    const s = scaleDtype === 'BF16' ? roundBf16(s0) : s0;
    scale[i] = s;
    for (let j = 0; j < C; j++) scaled[i * C + j] = Math.max(-448, Math.min(448, Math.fround(w[i * C + j]! / s)));
  }
  const q = fromFloat32(scaled, 'F8_E4M3');
  const expected = new Float32Array(w.length);
  for (let f = 0; f < w.length; f++) expected[f] = Math.fround(e4m3(q[f]!) * scale[Math.floor(f / C)]!);
  return { q, scale, scaleShape: [R, 1], expected };
}

/** The linear weights HF's FP8 integrations quantize (lm_head and embeddings stay). */
export const LINEAR = /\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)\.weight$/;

/** Options of {@link quantizeCheckpoint}. */
export interface QuantizeOptions {
  method: 'fp8' | 'compressed-tensors-channel';
  block?: [number, number];
  scaleDtype?: DType;
  /** Also write compressed-tensors `input_scale` tensors (to be dropped). */
  inputScales?: boolean;
}

/**
 * Copies the checkpoint at `src` to `dst` (same shards and index) with every {@link LINEAR}
 * weight quantized; config.json gets the matching quantization_config. Returns the expected
 * dequantized f32 values by key.
 */
export async function quantizeCheckpoint(src: string, dst: string, o: QuantizeOptions): Promise<Map<string, Float32Array>> {
  const ckpt = await Checkpoint.open(src);
  fs.mkdirSync(dst, { recursive: true });
  const expected = new Map<string, Float32Array>();
  const weightMap: Record<string, string> = {};
  const scaleDtype = o.scaleDtype ?? (o.method === 'fp8' ? 'F32' : 'BF16');
  for (const file of ckpt.files) {
    const name = path.basename(file);
    const out: TensorData[] = [];
    for (const key of ckpt.headers.get(file)!.tensors.keys()) {
      const info = ckpt.get(key)!;
      const bytes = await ckpt.read(key);
      if (!LINEAR.test(key)) {
        out.push({ key, dtype: info.dtype, shape: info.shape, data: bytes });
        continue;
      }
      const w = toFloat32(bytes, info.dtype);
      const [R, C] = info.shape as [number, number];
      const z = o.method === 'fp8' ? quantizeBlocks(w, info.shape, o.block ?? [32, 32], scaleDtype) : quantizeChannels(w, R, C, scaleDtype);
      expected.set(key, z.expected);
      const base = key.replace(/\.weight$/, '');
      out.push({ key, dtype: 'F8_E4M3', shape: info.shape, data: z.q });
      out.push({
        key: o.method === 'fp8' ? `${base}.weight_scale_inv` : `${base}.weight_scale`,
        dtype: scaleDtype,
        shape: z.scaleShape,
        data: fromFloat32(z.scale, scaleDtype),
      });
      if (o.inputScales)
        out.push({ key: `${base}.input_scale`, dtype: 'F32', shape: [1], data: fromFloat32(new Float32Array([0.03125]), 'F32') });
    }
    await writeSafetensors(path.join(dst, name), out, { format: 'pt' });
    for (const t of out) weightMap[t.key] = name;
  }
  if (ckpt.indexFile)
    fs.writeFileSync(path.join(dst, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  const config = (await ckpt.config()) ?? {};
  config.quantization_config =
    o.method === 'fp8'
      ? {
          quant_method: 'fp8',
          activation_scheme: 'dynamic',
          fmt: 'e4m3',
          weight_block_size: o.block ?? [32, 32],
          modules_to_not_convert: ['lm_head'],
        }
      : {
          quant_method: 'compressed-tensors',
          format: 'float-quantized',
          quantization_status: 'compressed',
          ignore: ['lm_head'],
          config_groups: {
            group_0: {
              targets: ['Linear'],
              weights: { type: 'float', num_bits: 8, strategy: 'channel', symmetric: true, dynamic: false },
              input_activations: { type: 'float', num_bits: 8, strategy: 'token', dynamic: true, symmetric: true },
            },
          },
        };
  fs.writeFileSync(path.join(dst, 'config.json'), JSON.stringify(config, null, 2));
  return expected;
}
