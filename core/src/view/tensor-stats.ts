/**
 * A tensor's values on demand (issue 50 item 5, what Netron shows): min, max, mean, std,
 * NaN/±Inf counts, a histogram and the first values, computed from the safetensors file by
 * range reads in fixed-size chunks, so memory stays bounded whatever the tensor's size. Values
 * are decoded by the one decoder of the formats floor (`toFloat32`: F32, F16, BF16, FP8 and
 * the integer dtypes); an FP8 weight whose checkpoint names a block scale (prepare's own
 * pairing, `planDequant`) is dequantized with prepare's kernel (`dequantFp8`) first, so the
 * statistics are those of the weight the graph sees. A tensor of at most 16-bit codes (BF16,
 * F16, unscaled FP8) is summarized in one pass that only counts codes, the rest in two passes
 * over decoded values. A packed 4-bit weight (a GPTQ/AWQ `qweight`, an MXFP4 `_blocks`) is
 * summarized as the float weight prepare dequantizes it to (tensor-packed.ts).
 */
import { endianness } from 'node:os';
import path from 'node:path';
import { DTYPE_SIZE } from '../formats/dtype';
import { toFloat32 } from '../formats/float-convert';
import { SafetensorsReader, elementCount, type TensorInfo } from '../formats/safetensors';
import { dequantFp8 } from '../prepare/fp8-kernel';
import { planDequant } from '../prepare/transforms/fp8';
import { quantSchemeOf } from '../prepare/quant-config';
import type { ScaleRef } from '../prepare/types';
import {
  checkpointSources,
  closePacked,
  forEachInt4Slab,
  forEachMxfp4Chunk,
  int4Head,
  openPacked,
  type Packed,
  type Slab,
} from './tensor-packed';

/** Bytes read per chunk: a few MB keeps the decoded f32 chunk in cache-friendly bounds. */
export const STATS_CHUNK_BYTES = 4 << 20;

/** What {@link tensorStats} computed. Counts are element counts; `std` is the population std. */
export interface TensorStats {
  key: string;
  dtype: string;
  /** The values' shape: a packed tensor's dequantized one (`[out, in]`, `[E, rows, G·32]`). */
  shape: number[];
  count: number;
  /** Over the finite values; undefined when there is none. */
  min?: number;
  max?: number;
  mean?: number;
  std?: number;
  nan: number;
  posInf: number;
  negInf: number;
  /** `bins` equal-width bins over [min, max] (the last one closed); empty without finite values. */
  histogram: { lo: number; hi: number; counts: number[] };
  /** The first values, in storage order. */
  head: number[];
  /** Set when an FP8 weight was dequantized with its block scale. */
  scale?: { key: string; block: [number, number] };
  /** Set when a packed 4-bit tensor was dequantized: its format, stored shape and the tensors read with it. */
  packed?: { format: Packed['format']; stored: number[]; with: string[] };
}

/** Options of {@link tensorStats}. */
export interface TensorStatsOptions {
  bins?: number;
  head?: number;
  chunkBytes?: number;
  signal?: AbortSignal;
}

/** A tensor opened for decoding: its reader, info and (for scaled FP8) its scale in f32. */
export interface OpenTensor {
  reader: SafetensorsReader;
  info: TensorInfo;
  scale?: { ref: ScaleRef; values: Float32Array };
  packed?: Packed;
}

/** The shape of the values {@link forEachChunk} yields (a packed tensor's dequantized shape). */
export const valuesShape = (t: OpenTensor): number[] => t.packed?.shape ?? t.info.shape;

/** Closes what {@link openTensor} opened. */
export async function closeTensor(t: OpenTensor): Promise<void> {
  await closePacked(t.packed);
  await t.reader.close();
}

/**
 * Opens `key` of `file`; an FP8 tensor gets its block scale when the checkpoint folder of
 * `file` pairs one with it (config.json's quantization_config and a `*_scale_inv` /
 * `weight_scale` tensor, possibly in another shard), a packed 4-bit one its siblings
 * (tensor-packed.ts). Close it with {@link closeTensor}.
 */
export async function openTensor(file: string, key: string): Promise<OpenTensor> {
  const reader = await SafetensorsReader.open(file);
  try {
    const info = reader.info(key);
    if (!info) throw new Error(`${file}: has no tensor ${JSON.stringify(key)}`);
    if (info.dtype === 'I32' || info.dtype === 'U8') {
      const packed = await openPacked(file, key, info);
      return packed ? { reader, info, packed } : { reader, info };
    }
    if (info.dtype !== 'F8_E4M3' && info.dtype !== 'F8_E5M2') return { reader, info };
    return { reader, info, ...(await fp8Scale(path.dirname(file), key)) };
  } catch (e) {
    await reader.close();
    throw e;
  }
}

/** The scale prepare would dequantize `key` with, read whole (scales are small), or nothing. */
async function fp8Scale(dir: string, key: string): Promise<Pick<OpenTensor, 'scale'>> {
  const cs = await checkpointSources(dir);
  if (!cs?.config) return {};
  const { ckpt, config, configFile, sources } = cs;
  const ref = planDequant(sources, quantSchemeOf(config, configFile), configFile).scales.get(key);
  const t = ref && ckpt.get(ref.key);
  if (!ref || !t) return {};
  const r = await SafetensorsReader.open(t.file);
  try {
    return { scale: { ref, values: toFloat32(await r.read(ref.key), t.dtype) } };
  } finally {
    await r.close();
  }
}

/**
 * Calls `each(values, first)` for consecutive chunks of the decoded tensor (elements `first …`),
 * reading at most `chunkBytes` at a time into one reused buffer (`values` is reused too: copy
 * what must outlive the call). An async `each` is awaited before the next read. A packed int4
 * weight is read by column slabs instead ({@link forEachInt4Slab}): callers that need storage
 * order take that path themselves.
 */
export async function forEachChunk(
  t: OpenTensor,
  each: (values: Float32Array, first: number) => void | Promise<void>,
  opts: { chunkBytes?: number; limit?: number; signal?: AbortSignal } = {},
): Promise<void> {
  const p = t.packed;
  if (p?.format === 'mxfp4')
    return forEachMxfp4Chunk(t.reader, t.info, p, each, {
      chunkBytes: opts.chunkBytes ?? STATS_CHUNK_BYTES,
      signal: opts.signal,
      limit: opts.limit,
    });
  if (p) throw new Error(`${t.info.key}: packed ${p.format} is read by column slabs (forEachInt4Slab)`);
  const size = DTYPE_SIZE[t.info.dtype];
  const count = Math.min(elementCount(t.info.shape), opts.limit ?? Infinity);
  const perChunk = Math.max(1, Math.floor((opts.chunkBytes ?? STATS_CHUNK_BYTES) / size));
  const buf = new Uint8Array(Math.min(count, perChunk) * size);
  for (let first = 0; first < count; first += perChunk) {
    opts.signal?.throwIfAborted();
    const n = Math.min(perChunk, count - first);
    const bytes = await t.reader.read(t.info, { start: first * size, length: n * size, into: buf });
    const values = t.scale
      ? dequantFp8(bytes, t.info.dtype, first, t.info.shape, t.scale.values, t.scale.ref)
      : toFloat32(bytes, t.info.dtype);
    await each(values, first);
  }
}

/** What both ways of summarizing compute: finite count, mean, M2, range, non-finite counts, histogram. */
interface Moments {
  n: number;
  mean: number;
  m2: number;
  min: number;
  max: number;
  nan: number;
  posInf: number;
  negInf: number;
  hist: number[];
}

type Pass = { chunkBytes?: number; signal?: AbortSignal };

/** The histogram bin of finite `x` (the last bin closed; one bin when all values are equal). */
const binOf = (x: number, min: number, width: number, bins: number) => (width > 0 ? Math.min(bins - 1, Math.floor((x - min) / width)) : 0);

/**
 * Summary of a tensor of at most 16-bit codes (BF16, F16, unscaled FP8): one pass that only
 * counts each code (no decoding), then every distinct code decoded once and weighted by its
 * count, in f64. Exact, and about as fast as the file can be read.
 */
async function byCodes(t: OpenTensor, bins: number, pass: Pass): Promise<Moments> {
  const size = DTYPE_SIZE[t.info.dtype];
  const codeCount = size === 2 ? 65536 : 256;
  const tally = new Float64Array(codeCount);
  // Four interleaved 32-bit tallies: a run of equal codes (a zero-filled tensor) would otherwise
  // make every increment wait for the one before; folded into f64 before any can overflow.
  const lanes = [0, 1, 2, 3].map(() => new Uint32Array(codeCount));
  let sinceFold = 0;
  const fold = () => {
    for (const lane of lanes) {
      for (let c = 0; c < codeCount; c++) tally[c]! += lane[c]!;
      lane.fill(0);
    }
    sinceFold = 0;
  };
  const [l0, l1, l2, l3] = lanes as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  const count = elementCount(t.info.shape);
  const perChunk = Math.max(1, Math.floor((pass.chunkBytes ?? STATS_CHUNK_BYTES) / size));
  const buf = new Uint8Array(Math.min(count, perChunk) * size);
  for (let first = 0; first < count; first += perChunk) {
    pass.signal?.throwIfAborted();
    const n = Math.min(perChunk, count - first);
    const bytes = await t.reader.read(t.info, { start: first * size, length: n * size, into: buf });
    const u = size === 2 ? new Uint16Array(bytes.buffer, bytes.byteOffset, n) : bytes;
    let i = 0;
    for (; i + 3 < n; i += 4) {
      l0[u[i]!]!++;
      l1[u[i + 1]!]!++;
      l2[u[i + 2]!]!++;
      l3[u[i + 3]!]!++;
    }
    for (; i < n; i++) l0[u[i]!]!++;
    sinceFold += n;
    if (sinceFold > 2 ** 30) fold();
  }
  fold();
  const codes = size === 2 ? new Uint16Array(65536).map((_, i) => i) : new Uint8Array(256).map((_, i) => i);
  const values = toFloat32(new Uint8Array(codes.buffer), t.info.dtype);
  const m: Moments = { n: 0, mean: 0, m2: 0, min: Infinity, max: -Infinity, nan: 0, posInf: 0, negInf: 0, hist: [] };
  let sum = 0;
  for (let c = 0; c < tally.length; c++) {
    const k = tally[c]!;
    if (!k) continue;
    const x = values[c]!;
    if (x !== x) m.nan += k;
    else if (x === Infinity) m.posInf += k;
    else if (x === -Infinity) m.negInf += k;
    else {
      m.n += k;
      sum += k * x;
      if (x < m.min) m.min = x;
      if (x > m.max) m.max = x;
    }
  }
  if (m.n === 0) return m;
  m.mean = sum / m.n;
  m.hist = new Array<number>(bins).fill(0);
  const width = (m.max - m.min) / bins;
  for (let c = 0; c < tally.length; c++) {
    const k = tally[c]!;
    const x = values[c]!;
    if (!k || x - x !== 0) continue;
    m.m2 += k * (x - m.mean) * (x - m.mean);
    m.hist[binOf(x, m.min, width, bins)]! += k;
  }
  return m;
}

/** Every decoded value once, in no promised order (an int4 weight by column slabs, which `slab` sees too). */
function forEachValue(t: OpenTensor, each: (values: Float32Array) => void, pass: Pass, slab?: Slab): Promise<void> {
  const p = t.packed;
  if (!p || p.format === 'mxfp4') return forEachChunk(t, each, pass);
  const chunkBytes = pass.chunkBytes ?? STATS_CHUNK_BYTES;
  return forEachInt4Slab(
    t.reader,
    t.info,
    p,
    (v, i0, cols) => {
      slab?.(v, i0, cols);
      each(v);
    },
    { chunkBytes, signal: pass.signal },
  );
}

/**
 * Summary of any tensor from its decoded values: pass 1 combines count, range and mean/M2
 * chunk by chunk (Chan et al.), in f64; pass 2 fills the histogram over [min, max].
 */
async function byValues(t: OpenTensor, bins: number, pass: Pass, slab?: Slab): Promise<Moments> {
  const m: Moments = { n: 0, mean: 0, m2: 0, min: Infinity, max: -Infinity, nan: 0, posInf: 0, negInf: 0, hist: [] };
  await forEachValue(
    t,
    (v) => {
      let cn = 0;
      let sum = 0;
      for (let i = 0; i < v.length; i++) {
        const x = v[i]!;
        if (x - x !== 0) {
          // NaN or ±Inf (x − x is NaN for both)
          if (x !== x) m.nan++;
          else if (x > 0) m.posInf++;
          else m.negInf++;
          continue;
        }
        cn++;
        sum += x;
        if (x < m.min) m.min = x;
        if (x > m.max) m.max = x;
      }
      if (cn === 0) return;
      const cmean = sum / cn;
      let cm2 = 0;
      for (let i = 0; i < v.length; i++) {
        const x = v[i]!;
        if (x - x === 0) cm2 += (x - cmean) * (x - cmean);
      }
      const total = m.n + cn;
      const d = cmean - m.mean;
      m.mean += (d * cn) / total;
      m.m2 += cm2 + (d * d * m.n * cn) / total;
      m.n = total;
    },
    pass,
    slab,
  );
  if (m.n === 0) return m;
  const hist = (m.hist = new Array<number>(bins).fill(0));
  const width = (m.max - m.min) / bins;
  await forEachValue(
    t,
    (v) => {
      for (let i = 0; i < v.length; i++) {
        const x = v[i]!;
        if (x - x === 0) hist[binOf(x, m.min, width, bins)]!++;
      }
    },
    pass,
  );
  return m;
}

/** Counting codes needs ≤ 16-bit codes read as they are stored (no scale) on a little-endian machine (safetensors is LE). */
function codeCountable(t: OpenTensor): boolean {
  return !t.scale && !t.packed && endianness() === 'LE' && ['BF16', 'F16', 'F8_E4M3', 'F8_E5M2'].includes(t.info.dtype);
}

/** Statistics of tensor `key` of safetensors `file` (see the module comment), streamed in chunks. */
export async function tensorStats(file: string, key: string, opts: TensorStatsOptions = {}): Promise<TensorStats> {
  const bins = opts.bins ?? 32;
  const t = await openTensor(file, key);
  try {
    const head: number[] = [];
    const shape = valuesShape(t);
    const int4 = t.packed && t.packed.format !== 'mxfp4';
    // an int4 weight's head comes from the first pass's slabs (its rows are not stored in order)
    if (!int4)
      await forEachChunk(t, (v) => void head.push(...v), { limit: opts.head ?? 16, ...(opts.signal ? { signal: opts.signal } : {}) });
    const pass: Pass = { ...(opts.chunkBytes ? { chunkBytes: opts.chunkBytes } : {}), ...(opts.signal ? { signal: opts.signal } : {}) };
    const m = codeCountable(t)
      ? await byCodes(t, bins, pass)
      : await byValues(t, bins, pass, int4 ? int4Head(shape, opts.head ?? 16, head) : undefined);
    return {
      key,
      dtype: t.info.dtype,
      shape,
      count: elementCount(shape),
      ...(m.n > 0 ? { min: m.min, max: m.max, mean: m.mean, std: Math.sqrt(m.m2 / m.n) } : {}),
      nan: m.nan,
      posInf: m.posInf,
      negInf: m.negInf,
      histogram: m.n > 0 ? { lo: m.min, hi: m.max, counts: m.hist } : { lo: 0, hi: 0, counts: [] },
      head,
      ...(t.scale ? { scale: { key: t.scale.ref.key, block: t.scale.ref.block } } : {}),
      ...(t.packed ? { packed: { format: t.packed.format, stored: t.info.shape, with: t.packed.with } } : {}),
    };
  } finally {
    await closeTensor(t);
  }
}

/**
 * The shard file holding `key` on a checkpoint page, from the page the extension built (a
 * webview names only the key), or undefined when the page has no such tensor.
 */
export function tensorFileOf(
  page: { dir: string; files: { name: string }[]; tensors: { key: string; shard: number }[] },
  key: string,
): string | undefined {
  const t = page.tensors.find((x) => x.key === key);
  const f = t && page.files[t.shard];
  return f ? path.join(page.dir, f.name) : undefined;
}

/** Six significant digits, as a viewer shows a value (`NaN`, `inf`, `-inf` for the rest). */
export function formatValue(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  return Number(x.toPrecision(6)).toString();
}

/** The lines the checkpoint viewer shows for {@link TensorStats} (the histogram is drawn apart). */
export function statsLines(s: TensorStats): string[] {
  const f = formatValue;
  const nonFinite = s.nan + s.posInf + s.negInf;
  const p = s.packed;
  const stored = p
    ? `${p.format === 'mxfp4' ? 'MXFP4' : `${p.format.toUpperCase()} int4`} (${s.dtype} [${p.stored.join(', ')}]) →`
    : s.dtype;
  return [
    `${s.key}: ${stored} [${s.shape.join(', ')}], ${s.count.toLocaleString('en-US')} values` +
      (s.scale ? `, dequantized with ${s.scale.key} (${s.scale.block[0]}×${s.scale.block[1]} blocks)` : '') +
      (p ? `, dequantized with ${p.with.join(', ')}` : ''),
    s.min === undefined ? 'no finite value' : `min ${f(s.min)} · max ${f(s.max!)} · mean ${f(s.mean!)} · std ${f(s.std!)}`,
    nonFinite ? `NaN ${s.nan} · +inf ${s.posInf} · -inf ${s.negInf}` : 'no NaN or inf',
    `first values: ${s.head.map(f).join(', ')}${s.count > s.head.length ? ', …' : ''}`,
  ];
}
