/**
 * Packed 4-bit tensors for the viewer's statistics and `.npy` export (issue 50 item 5): a GPTQ /
 * AWQ-GEMM `<m>.qweight` (read with its `qzeros`, `scales` and GPTQ's `g_idx`) or an MXFP4
 * `<p>_blocks` (read with `<p>_scales`, as gpt-oss stores its experts) is shown as the float
 * weight prepare would make of it. Nothing is dequantized here: the module is planned by
 * prepare's own planner (`planInt4`, `checkPacked`) and decoded by prepare's kernels
 * (`decodeZeros`, `groupsOf`, `dequantRows`, `dequantMxfp4`), so the viewer and prepare cannot
 * disagree about a layout (GPTQ v1's zero − 1, AWQ's nibble order, E8M0 scales).
 *
 * Memory stays bounded: an int4 weight is read in slabs of whole packed rows (range reads of
 * `qweight`; its small siblings are read whole, as prepare does), each dequantized to the
 * `[out, rows]` block of columns it holds; MXFP4 bytes and scales are range-read together and
 * come out in storage order.
 */
import path from 'node:path';
import { toFloat32 } from '../formats/float-convert';
import { Checkpoint, SafetensorsReader, type TensorInfo } from '../formats/safetensors';
import { checkInt4Scales, decodeZeros, dequantRows, groupsOf, type Int4Data } from '../prepare/int4-kernel';
import { dequantMxfp4 } from '../prepare/kernels';
import { isInt4, quantSchemeOf } from '../prepare/quant-config';
import { planInt4 } from '../prepare/transforms/int4';
import { checkPacked } from '../prepare/transforms/mxfp4';
import type { Int4Module, SourceTensor } from '../prepare/types';

/** A packed tensor's decoding: int4 with its decoded siblings, or MXFP4 with its scales' reader. */
export type Packed =
  | { format: 'gptq' | 'awq'; shape: number[]; with: string[]; data: Omit<Int4Data, 'qweight'> }
  | { format: 'mxfp4'; shape: number[]; with: string[]; scales: { reader: SafetensorsReader; info: TensorInfo } };

/** The checkpoint around `file` as prepare's planners take it, with its config; undefined when it cannot be opened. */
export async function checkpointSources(dir: string): Promise<
  | {
      ckpt: Checkpoint;
      config: Record<string, unknown> | undefined;
      configFile: string;
      sources: Map<string, SourceTensor>;
    }
  | undefined
> {
  const ckpt = await Checkpoint.open(dir).catch(() => undefined);
  if (!ckpt) return undefined;
  const config = await ckpt.config().catch(() => undefined);
  const sources = new Map(
    ckpt
      .tensors()
      .map((t) => [t.key, { key: t.key, file: t.file, dtype: t.dtype, shape: t.shape, offset: t.dataOffset, byteLength: t.byteLength }]),
  );
  return { ckpt, config, configFile: path.join(dir, 'config.json'), sources };
}

async function readWhole(ck: Checkpoint, key: string): Promise<{ bytes: Uint8Array; file: string; dtype: TensorInfo['dtype'] }> {
  const t = ck.get(key)!;
  return { bytes: await ck.read(key), file: t.file, dtype: t.dtype };
}

const asI32 = (b: Uint8Array) => {
  const a = b.byteOffset % 4 === 0 ? b : b.slice();
  return new Int32Array(a.buffer, a.byteOffset, a.byteLength >> 2);
};

/** `key`'s int4 module, planned by prepare for the module alone, with its siblings decoded. */
async function openInt4(file: string, key: string): Promise<Packed | undefined> {
  const m = /^(.+)\.qweight$/.exec(key)?.[1];
  const cs = m === undefined ? undefined : await checkpointSources(path.dirname(file));
  if (!cs || m === undefined) return undefined;
  const scheme = quantSchemeOf(cs.config, cs.configFile);
  // without a GPTQ/AWQ config the I32 words are shown as stored (they are only integers then)
  if (!isInt4(scheme)) return undefined;
  // only this module's tensors: another module's defect must not hide this one
  const mine = new Map([...cs.sources].filter(([k]) => k.startsWith(`${m}.`)));
  const out = planInt4(mine, scheme, 'F32', file, false).outputs.get(key)?.[0];
  if (out?.recipe.kind !== 'int4') return undefined;
  const mod: Int4Module = out.recipe.module;
  const qz = await readWhole(cs.ckpt, mod.qzeros);
  const sc = await readWhole(cs.ckpt, mod.scales);
  const scales = toFloat32(sc.bytes, sc.dtype);
  checkInt4Scales(sc.file, mod.scales, scales);
  const gi = mod.gIdx ? await readWhole(cs.ckpt, mod.gIdx) : undefined;
  return {
    format: mod.format,
    shape: [mod.out, mod.in],
    with: [mod.scales, mod.qzeros, ...(mod.gIdx ? [mod.gIdx] : [])],
    data: {
      mod,
      zeros: decodeZeros(mod, asI32(qz.bytes), qz.file),
      scales,
      groupOf: groupsOf(mod, gi && asI32(gi.bytes), gi?.file ?? file, false),
    },
  };
}

/** `key`'s MXFP4 scales, when `key` is a U8 `<p>_blocks` beside a `<p>_scales` of the same groups. */
async function openMxfp4(file: string, key: string, info: TensorInfo): Promise<Packed | undefined> {
  const p = /^(.+)_blocks$/.exec(key)?.[1];
  if (p === undefined || info.dtype !== 'U8') return undefined;
  const cs = await checkpointSources(path.dirname(file));
  const sk = `${p}_scales`;
  const st = cs?.ckpt.get(sk);
  if (!cs || !st) return undefined;
  const { E, R, G } = checkPacked(cs.sources.get(key)!, cs.sources.get(sk)!);
  const reader = await SafetensorsReader.open(st.file);
  return { format: 'mxfp4', shape: [E, R, G * 32], with: [sk], scales: { reader, info: reader.info(sk)! } };
}

/** The packed decoding of `key` of `file` (stored as `info`), or undefined for a plain tensor. */
export async function openPacked(file: string, key: string, info: TensorInfo): Promise<Packed | undefined> {
  if (info.dtype === 'I32') return openInt4(file, key);
  if (info.dtype === 'U8') return openMxfp4(file, key, info);
  return undefined;
}

/** Releases what {@link openPacked} opened. */
export async function closePacked(p: Packed | undefined): Promise<void> {
  if (p?.format === 'mxfp4') await p.scales.reader.close();
}

/** A column slab of an int4 weight: `[out, cols]` values of input columns `i0 …`. */
export type Slab = (values: Float32Array, i0: number, cols: number) => void;

/** Fills `head` with the first `h` values of an `[out, in]` int4 weight from its column slabs. */
export function int4Head([out, inF]: number[], h: number, head: number[]): Slab {
  const K = inF!;
  const n = Math.min(h, out! * K);
  head.push(...new Array<number>(n).fill(NaN));
  return (v, i0, cols) => {
    for (let o = 0; o * K < n; o++) for (let i = i0; i < i0 + cols && o * K + i < n; i++) head[o * K + i] = v[o * cols + (i - i0)]!;
  };
}

type Pass = { chunkBytes: number; signal?: AbortSignal | undefined };

/**
 * Calls `each(values, i0, cols)` for consecutive slabs of an int4 weight `[out, in]`: `values`
 * is `W[:, i0 … i0 + cols]` as an `[out, cols]` row-major block (reused: copy what must outlive
 * the call). A slab is whole packed rows of `qweight` (8 input rows a word row for GPTQ, one for
 * AWQ), sized so its dequantized block is about `chunkBytes`.
 */
export async function forEachInt4Slab(
  reader: SafetensorsReader,
  info: TensorInfo,
  p: Extract<Packed, { format: 'gptq' | 'awq' }>,
  each: (values: Float32Array, i0: number, cols: number) => void | Promise<void>,
  pass: Pass,
): Promise<void> {
  const { mod } = p.data;
  const rowsPerWordRow = mod.format === 'gptq' ? 8 : 1;
  const wordRows = mod.in / rowsPerWordRow;
  const wordRowBytes = info.byteLength / wordRows;
  const perSlab = Math.max(1, Math.min(wordRows, Math.floor(pass.chunkBytes / 4 / (mod.out * rowsPerWordRow))));
  const packed = new Uint8Array(perSlab * wordRowBytes);
  const values = new Float32Array(perSlab * rowsPerWordRow * mod.out);
  for (let r = 0; r < wordRows; r += perSlab) {
    pass.signal?.throwIfAborted();
    const n = Math.min(perSlab, wordRows - r);
    const bytes = await reader.read(info, { start: r * wordRowBytes, length: n * wordRowBytes, into: packed });
    const i0 = r * rowsPerWordRow;
    const cols = n * rowsPerWordRow;
    // the slab as a module of `cols` input rows: prepare's kernel indexes groups through groupOf
    const d: Int4Data = {
      ...p.data,
      mod: { ...mod, in: cols },
      qweight: new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2),
      groupOf: p.data.groupOf.subarray(i0, i0 + cols),
    };
    await each(dequantRows(d, 0, mod.out, values).subarray(0, cols * mod.out), i0, cols);
  }
}

/**
 * Calls `each(values, first)` for consecutive chunks of an MXFP4 tensor's dequantized values
 * (elements `first …`, in storage order: a byte's low nibble first), reading a run of 16-byte
 * blocks and their scales at a time.
 */
export async function forEachMxfp4Chunk(
  reader: SafetensorsReader,
  info: TensorInfo,
  p: Extract<Packed, { format: 'mxfp4' }>,
  each: (values: Float32Array, first: number) => void | Promise<void>,
  pass: Pass & { limit?: number | undefined },
): Promise<void> {
  const groups = info.byteLength / 16;
  const want = Math.min(groups, Math.ceil((pass.limit ?? Infinity) / 32));
  const perChunk = Math.max(1, Math.floor(pass.chunkBytes / 16));
  for (let g = 0; g < want; g += perChunk) {
    pass.signal?.throwIfAborted();
    const n = Math.min(perChunk, want - g);
    const blocks = await reader.read(info, { start: g * 16, length: n * 16 });
    const scales = await p.scales.reader.read(p.scales.info, { start: g, length: n });
    const v = dequantMxfp4(blocks, scales, 1, n);
    const keep = Math.min(v.length, (pass.limit ?? Infinity) - g * 32);
    await each(keep < v.length ? v.subarray(0, keep) : v, g * 32);
  }
}
