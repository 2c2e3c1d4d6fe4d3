/**
 * Executes one task: validates that every source tensor is still where the plan says (so a
 * missing or changed key fails before anything is written), then produces the output
 * tensors in file order into one streaming safetensors writer. Dense tensors stream in
 * chunks with the next read and the previous write in flight while a chunk converts; MoE
 * tensors are built one expert slice at a time. Every source byte is read once and every
 * output byte written once; the stats prove it.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../errors';
import { DTYPE_SIZE, toFloat32, type DType } from '../formats/dtype';
import { SafetensorsReader, SafetensorsWriter, elementCount } from '../formats/safetensors';
import {
  CHUNK_ELEMS,
  SLOT_BATCH_BYTES,
  SLOT_READ_AHEAD,
  dequantMxfp4,
  encodeF32,
  everyOtherElement,
  everyOtherRow,
  halfColumns,
  makeConverter,
  makeTransposeConverter,
  transposeMatrix,
  type Converter,
} from './kernels';
import { dequantFp8 } from './fp8-kernel';
import type { OutputTensor, ScaleRef, SlicePlan, SourceTensor, Task } from './types';
import { linkTask } from './links';

/** What a task did: bytes read per source key, written per output key, each output's stages. */
export interface TaskStats {
  readBytes: Record<string, number>;
  writtenBytes: Record<string, number>;
  stages: Record<string, string[]>;
  ms: number;
  /** Set when the task linked its source file instead of writing (links.ts). */
  linked?: 'hardlink' | 'symlink';
}

class Sources {
  readonly readBytes: Record<string, number> = Object.create(null) as Record<string, number>;
  private constructor(
    private readonly task: Task,
    private readonly readers: Map<string, SafetensorsReader>,
  ) {}

  /** Opens every source file and checks each planned tensor against its header. */
  static async open(task: Task): Promise<Sources> {
    const readers = new Map<string, SafetensorsReader>();
    const s = new Sources(task, readers);
    try {
      for (const f of task.sourceFiles) readers.set(f, await SafetensorsReader.open(f));
      const all = Object.values(task.sources);
      const missing = all.find((t) => !readers.get(t.file)?.info(t.key));
      if (missing)
        throw new PipelineError(
          `${missing.file}: tensor "${missing.key}" (needed by task ${task.id}) is missing; nothing was written — re-run prepare`,
        );
      for (const t of all) {
        const info = readers.get(t.file)!.info(t.key)!;
        if (
          info.dtype !== t.dtype ||
          info.dataOffset !== t.offset ||
          info.byteLength !== t.byteLength ||
          info.shape.join() !== t.shape.join()
        ) {
          throw new PipelineError(`${t.file}: tensor "${t.key}" changed since planning; nothing was written — re-run prepare`);
        }
      }
    } catch (e) {
      await s.close();
      throw e;
    }
    return s;
  }

  src(key: string): SourceTensor {
    return this.task.sources[key]!;
  }

  async read(key: string, start: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const t = this.src(key);
    const r = this.readers.get(t.file)!;
    const out = await r.read(r.info(key)!, { start, length, ...(into ? { into } : {}) });
    this.readBytes[key] = (this.readBytes[key] ?? 0) + length;
    return out;
  }

  private readonly scales = new Map<string, Promise<Float32Array>>();
  /** A whole scale tensor in f32, read once per task however many slices use it. */
  scale(ref: ScaleRef): Promise<Float32Array> {
    let p = this.scales.get(ref.key);
    if (!p) {
      const s = this.src(ref.key);
      this.scales.set(ref.key, (p = this.read(ref.key, 0, s.byteLength).then((b) => toFloat32(b, s.dtype))));
    }
    return p;
  }

  async close(): Promise<void> {
    for (const r of this.readers.values()) await r.close();
  }
}

/** Runs `task`, writing `<outDir>/<task.file>`; `onBytes` is told about every write. */
export async function executeTask(task: Task, outDir: string, onBytes: (n: number) => void = () => undefined): Promise<TaskStats> {
  if (task.link) {
    const stats = await linkTask(task, outDir);
    onBytes(task.outBytes); // its bytes are in place: progress counts them as done
    return stats;
  }
  const started = Date.now();
  const src = await Sources.open(task);
  let writer: SafetensorsWriter | undefined;
  let flusher: Flusher | undefined;
  const writtenBytes: Record<string, number> = Object.create(null) as Record<string, number>;
  const stages: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  try {
    writer = await SafetensorsWriter.open(
      path.join(outDir, task.file),
      task.tensors.map((t) => ({ key: t.key, dtype: t.dtype, shape: t.shape })),
    );
    const w = writer;
    flusher = await Flusher.open(w.tempFile);
    const f = flusher;
    const write = async (key: string, bytes: Uint8Array) => {
      await w.writePart(key, bytes);
      writtenBytes[key] = (writtenBytes[key] ?? 0) + bytes.byteLength;
      onBytes(bytes.byteLength);
      f.wrote(bytes.byteLength);
    };
    const stash = new Map<string, Uint8Array[]>();
    const byKey = new Map(task.tensors.map((t) => [t.key, t]));
    for (const t of task.tensors) {
      stages[t.key] = t.stages;
      const kept = stash.get(t.key);
      if (kept) {
        stash.delete(t.key);
        for (const part of kept) await write(t.key, part);
      } else if (t.recipe.kind === 'convert') {
        await streamConvert(t, t.recipe.src, src, write);
      } else if (!t.pairedWith && streamableSlots(t, src)) {
        await streamSlots(t, src, write);
      } else {
        const sib = t.pairedWith ? byKey.get(t.pairedWith) : undefined;
        const parts: Uint8Array[] = [];
        if (sib) stash.set(sib.key, parts);
        for (const slot of t.recipe.slots) {
          const r = await produceSlot(slot, t, sib, src);
          await write(t.key, oriented(t, r.main));
          if (r.sibling) parts.push(oriented(sib!, r.sibling));
        }
      }
      if (elementCount(t.shape) * DTYPE_SIZE[t.dtype] === 0) writtenBytes[t.key] ??= 0;
    }
    await flusher.close();
    await writer.finish();
    return { readBytes: src.readBytes, writtenBytes, stages, ms: Date.now() - started };
  } catch (e) {
    await flusher?.close();
    await writer?.abort();
    throw e;
  } finally {
    await src.close();
  }
}

/** Bytes written between background flushes. */
const FLUSH_EVERY = 64 * 1024 * 1024;

/**
 * Starts writeback of the output while the task goes on: every {@link FLUSH_EVERY} bytes an
 * fdatasync on a second descriptor of the temp file runs in the background (one at a time),
 * so the writer's final fsync finds little left to flush instead of the whole file.
 */
class Flusher {
  private pending = 0;
  private inflight: Promise<void> | undefined;
  private constructor(private readonly fh: fsp.FileHandle | undefined) {}

  static async open(file: string): Promise<Flusher> {
    return new Flusher(await fsp.open(file, 'r').catch(() => undefined));
  }

  wrote(n: number): void {
    this.pending += n;
    if (!this.fh || this.inflight || this.pending < FLUSH_EVERY) return;
    this.pending = 0;
    this.inflight = this.fh
      .datasync()
      .catch(() => undefined)
      .finally(() => {
        this.inflight = undefined;
      });
  }

  async close(): Promise<void> {
    await this.inflight;
    await this.fh?.close().catch(() => undefined);
  }
}

/**
 * Chunk buffers, kept for the worker's lifetime: fresh 32 MiB allocations cost page faults
 * (and zeroing) on every tensor, which is a large share of a conversion's time.
 */
const pool: Uint8Array[] = [];
function buffer(slot: number, size: number): Uint8Array {
  let b = pool[slot];
  if (!b || b.byteLength < size) pool[slot] = b = new Uint8Array(Math.max(size, Math.min(CHUNK_ELEMS * 4, size * 2)));
  return b.subarray(0, size);
}

/** Streams one dense tensor through its converter, with one read and one write in flight. */
async function streamConvert(
  t: OutputTensor,
  key: string,
  src: Sources,
  write: (k: string, b: Uint8Array) => Promise<void>,
): Promise<void> {
  const s = src.src(key);
  const inSize = DTYPE_SIZE[s.dtype];
  const outSize = DTYPE_SIZE[t.dtype];
  const n = elementCount(s.shape);
  if (n === 0) return;
  const scaleRef = t.recipe.kind === 'convert' ? t.recipe.scale : undefined;
  const scale = scaleRef ? await src.scale(scaleRef) : undefined;
  const plain = makeConverter(s.dtype, t.dtype);
  const conv = (inb: Uint8Array, out: Uint8Array, first: number): Uint8Array =>
    scale ? writeInto(encodeF32(dequantFp8(inb, s.dtype, first, s.shape, scale, scaleRef!), t.dtype), out) : plain(inb, out);
  const chunk = Math.min(n, CHUNK_ELEMS);
  const ins = [buffer(0, chunk * inSize), buffer(1, chunk * inSize)];
  const outs = [buffer(2, chunk * outSize), buffer(3, chunk * outSize)];
  const chunks = Math.ceil(n / chunk);
  const readChunk = (i: number) => {
    const elems = Math.min(chunk, n - i * chunk);
    return src.read(key, i * chunk * inSize, elems * inSize, ins[i % 2]!.subarray(0, elems * inSize));
  };
  let next = readChunk(0);
  let pending: Promise<void> = Promise.resolve();
  try {
    for (let i = 0; i < chunks; i++) {
      const inb = await next;
      if (i + 1 < chunks) next = readChunk(i + 1);
      const out = conv(inb, outs[i % 2]!.subarray(0, (inb.byteLength / inSize) * outSize), i * chunk);
      await pending;
      pending = write(t.key, out);
    }
  } finally {
    await pending.catch(() => undefined);
    await next.catch(() => undefined);
  }
  await pending;
}

/** Whether `t` is whole, unscaled slices of one dtype with a fused kernel: {@link streamSlots} can make it. */
function streamableSlots(t: OutputTensor, src: Sources): boolean {
  if (t.recipe.kind !== 'slots' || t.recipe.slots.length === 0) return false;
  const slots = t.recipe.slots;
  if (!slots.every((s) => s.kind === 'whole' && !s.scale)) return false;
  const first = src.src((slots[0] as { src: string }).src);
  const same = (k: string) => {
    const x = src.src(k);
    return x.dtype === first.dtype && x.byteLength === first.byteLength && x.shape.join() === first.shape.join();
  };
  if (first.shape.length !== 2 || !slots.every((s) => same((s as { src: string }).src))) return false;
  return !t.transposeSlots || makeTransposeConverter(first.dtype, t.dtype) !== undefined;
}

/**
 * Makes a stacked tensor of whole expert slices as a pipeline: the next slices' reads are in
 * flight while this one is converted (and transposed, in one pass) straight into a batch
 * buffer, and a full batch is written while the other fills. No per-slice allocation.
 */
async function streamSlots(t: OutputTensor, src: Sources, write: (k: string, b: Uint8Array) => Promise<void>): Promise<void> {
  const keys = (t.recipe as { slots: { src: string }[] }).slots.map((s) => s.src);
  const s0 = src.src(keys[0]!);
  const [rows, cols] = s0.shape as [number, number];
  const inBytes = s0.byteLength;
  const outBytes = rows * cols * DTYPE_SIZE[t.dtype];
  const fused = t.transposeSlots ? makeTransposeConverter(s0.dtype, t.dtype)! : undefined;
  const plain = fused ? undefined : converter(s0.dtype, t.dtype);
  const per = Math.min(keys.length, Math.max(1, Math.floor(SLOT_BATCH_BYTES / Math.max(1, outBytes))));
  const ins = Array.from({ length: SLOT_READ_AHEAD }, (_, k) => buffer(8 + k, inBytes));
  const batches = [buffer(6, per * outBytes), buffer(7, per * outBytes)];
  // Several reads in flight: each is a round trip through libuv's thread pool, whose latency on
  // a busy machine is larger than converting one expert.
  const reads: Promise<Uint8Array>[] = [];
  const startRead = (i: number) => {
    if (i < keys.length) reads[i % SLOT_READ_AHEAD] = src.read(keys[i]!, 0, inBytes, ins[i % SLOT_READ_AHEAD]);
  };
  for (let i = 0; i < SLOT_READ_AHEAD; i++) startRead(i);
  let pending: Promise<void> = Promise.resolve();
  let b = 0;
  let filled = 0;
  try {
    for (let i = 0; i < keys.length; i++) {
      const inb = await reads[i % SLOT_READ_AHEAD]!;
      const out = batches[b]!.subarray(filled * outBytes, (filled + 1) * outBytes);
      if (fused) fused(inb, out, rows, cols);
      else plain!(inb, out);
      startRead(i + SLOT_READ_AHEAD); // its buffer was this slice's, now converted
      filled++;
      if (filled === per || i + 1 === keys.length) {
        await pending;
        pending = write(t.key, batches[b]!.subarray(0, filled * outBytes));
        b ^= 1;
        filled = 0;
      }
    }
  } finally {
    await pending.catch(() => undefined);
    await Promise.all(reads.map((r) => r.catch(() => undefined)));
  }
  await pending;
}

const converters = new Map<string, Converter>();
function converter(from: DType, to: DType): Converter {
  const k = `${from}>${to}`;
  let c = converters.get(k);
  if (!c) converters.set(k, (c = makeConverter(from, to)));
  return c;
}

/** A produced slot in the output's orientation: transposed from the source `[b, a]` when the tensor asks. */
function oriented(t: OutputTensor, slot: Uint8Array): Uint8Array {
  if (!t.transposeSlots) return slot;
  const [a, b] = t.shape.slice(-2) as [number, number];
  return transposeMatrix(slot, b, a, DTYPE_SIZE[t.dtype]);
}

function writeInto(bytes: Uint8Array, out: Uint8Array): Uint8Array {
  out.set(bytes);
  return out;
}

/** Source bytes of a whole/range slot as `to`: converted, or dequantized first when scaled. */
async function readSlice(src: Sources, key: string, start: number, length: number, to: DType, scale?: ScaleRef): Promise<Uint8Array> {
  const s = src.src(key);
  const bytes = await src.read(key, start, length);
  if (!scale) return converter(s.dtype, to)(bytes);
  return encodeF32(dequantFp8(bytes, s.dtype, start / DTYPE_SIZE[s.dtype], s.shape, await src.scale(scale), scale), to);
}

/** Produces one expert slice of `t` (and of its paired sibling, from the same reads). */
async function produceSlot(
  slot: SlicePlan,
  t: OutputTensor,
  sib: OutputTensor | undefined,
  src: Sources,
): Promise<{ main: Uint8Array; sibling?: Uint8Array }> {
  switch (slot.kind) {
    case 'whole':
      return { main: await readSlice(src, slot.src, 0, src.src(slot.src).byteLength, t.dtype, slot.scale) };
    case 'range':
      return { main: await readSlice(src, slot.src, slot.start, slot.length, t.dtype, slot.scale) };
    case 'columns': {
      const s = src.src(slot.src);
      const rowBytes = s.byteLength / s.shape[0]!;
      const row = await src.read(slot.src, slot.row * rowBytes, rowBytes);
      const size = DTYPE_SIZE[s.dtype];
      const main = converter(s.dtype, t.dtype)(everyOtherElement(row, size, slot.parity));
      if (!sib) return { main };
      return { main, sibling: converter(s.dtype, sib.dtype)(everyOtherElement(row, size, slot.parity === 0 ? 1 : 0)) };
    }
    case 'half-columns': {
      const s = src.src(slot.src);
      const [, rows] = s.shape as [number, number, number];
      const per = s.byteLength / s.shape[0]!;
      let m = await src.read(slot.src, slot.expert * per, per);
      let from = s.dtype;
      if (slot.scale) {
        // FP8 experts: dequantize the expert's whole [H, 2I] matrix first, then split it.
        const f = dequantFp8(m, s.dtype, (slot.expert * per) / DTYPE_SIZE[s.dtype], s.shape, await src.scale(slot.scale), slot.scale);
        m = new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
        from = 'F32';
      }
      const size = DTYPE_SIZE[from];
      const main = converter(from, t.dtype)(halfColumns(m, rows, size, slot.half));
      if (!sib) return { main };
      return { main, sibling: converter(from, sib.dtype)(halfColumns(m, rows, size, slot.half === 0 ? 1 : 0)) };
    }
    case 'mxfp4': {
      const b = src.src(slot.blocks);
      const [, R, G] = b.shape as [number, number, number];
      const blocks = await src.read(slot.blocks, slot.expert * R * G * 16, R * G * 16);
      const scales = await src.read(slot.scales, slot.expert * R * G, R * G);
      const f32 = dequantMxfp4(blocks, scales, R, G);
      if (slot.parity === undefined) return { main: encodeF32(f32, t.dtype) };
      const cols = G * 32;
      const main = encodeF32(everyOtherRow(f32, R, cols, slot.parity), t.dtype);
      if (!sib) return { main };
      return { main, sibling: encodeF32(everyOtherRow(f32, R, cols, slot.parity === 0 ? 1 : 0), sib.dtype) };
    }
  }
}
