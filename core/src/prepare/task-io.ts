/**
 * The I/O side of a prepare task, shared by whole tasks (run-task.ts) and the byte ranges of
 * dense tasks that workers fill in parallel (run-piece.ts): the task's source files checked
 * against the plan, the reusable chunk buffers, background writeback, and the dense
 * conversion stream.
 *
 * Reads and writes are synchronous on purpose. They run on worker threads, where blocking is
 * free, and a chunk-sized copy through libuv's thread pool costs two thread switches per
 * call — measured here as most of prepare's time on a busy 2-core machine. Sinks yield to
 * the event loop every {@link YIELD_EVERY} bytes so progress messages, background flushes
 * and a Ctrl-C (when a task runs on the main thread) still get their turn.
 */
import fsp from 'node:fs/promises';
import { PipelineError } from '../errors';
import { DTYPE_SIZE } from '../formats/dtype';
import { toFloat32 } from '../formats/float-convert';
import { SafetensorsReader, backgroundDatasync, elementCount } from '../formats/safetensors';
import { CHUNK_ELEMS, encodeF32, makeConverter, type Converter } from './kernels';
import { dequantFp8 } from './fp8-kernel';
import { simdConverter } from './simd/simd-convert';
import { simdDequant } from './simd/simd-fp8';
import type { OutputTensor, ScaleRef, SourceTensor, Task } from './types';

/** A task's source files, opened once, with the plan's tensors checked against their headers. */
export class Sources {
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

  /** `length` bytes of source `key` from byte `start`, into `into` when given (a synchronous read). */
  read(key: string, start: number, length: number, into?: Uint8Array): Uint8Array {
    const t = this.src(key);
    const r = this.readers.get(t.file)!;
    const out = r.readSync(r.info(t.key)!, { start, length, ...(into ? { into } : {}) });
    this.readBytes[key] = (this.readBytes[key] ?? 0) + length;
    return out;
  }

  private readonly scales = new Map<string, Float32Array>();
  /** A whole scale tensor in f32, read once per task however many slices use it. */
  scale(ref: ScaleRef): Float32Array {
    let f = this.scales.get(ref.key);
    if (!f) {
      const s = this.src(ref.key);
      f = toFloat32(this.read(ref.key, 0, s.byteLength), s.dtype);
      checkScales(s.file, ref.key, f);
      this.scales.set(ref.key, f);
    }
    return f;
  }

  async close(): Promise<void> {
    for (const r of this.readers.values()) await r.close();
  }
}

/**
 * Refuses a scale tensor holding NaN, ±Inf or 0: every weight of its block would come out NaN,
 * ±Inf or zero with exit 0 (issue #28). Scales are a few thousand values per matrix, checked
 * once as they are read — no pass over the weights.
 */
export function checkScales(file: string, key: string, f: Float32Array): void {
  for (let i = 0; i < f.length; i++) {
    const v = f[i]!;
    if (v === 0 || !Number.isFinite(v)) {
      throw new PipelineError(
        `${file}: FP8 scale tensor "${key}" holds ${Object.is(v, -0) ? '-0' : String(v)} at element ${i}; ` +
          'refusing to dequantize its weights with it (they would come out NaN, infinite or zero)',
      );
    }
  }
}

/** Bytes written between background flushes. */
const FLUSH_EVERY = 64 * 1024 * 1024;

/**
 * Starts writeback of the output while the task goes on: every {@link FLUSH_EVERY} bytes an
 * fdatasync on a second descriptor of the file runs in the background (one at a time), so
 * the final fsync finds little left to flush instead of the whole file. Without it the
 * kernel starts writing only at its dirty threshold (gigabytes on a large machine).
 */
export class Flusher {
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
    this.inflight = backgroundDatasync(this.fh, () => (this.inflight = undefined));
  }

  async close(): Promise<void> {
    await this.inflight;
    await this.fh?.close().catch(() => undefined);
  }

  /** Closes once the flush in flight (if any) is done, without waiting for it. */
  detach(): void {
    void this.close();
  }
}

/** Bytes a stream processes between turns of the event loop. */
export const YIELD_EVERY = 16 * 1024 * 1024;

/** One turn of the event loop (I/O callbacks included, unlike a resolved promise). */
export const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Chunk buffers, kept for the worker's lifetime: fresh allocations cost page faults (and
 * zeroing) on every tensor, which is a large share of a conversion's time.
 */
const pool: Uint8Array[] = [];
/** Buffer `slot` of the pool, at least `size` bytes (a view of exactly `size`). */
export function buffer(slot: number, size: number): Uint8Array {
  let b = pool[slot];
  if (!b || b.byteLength < size) pool[slot] = b = new Uint8Array(Math.max(size, Math.min(CHUNK_ELEMS * 4, size * 2)));
  return b.subarray(0, size);
}

/**
 * Largest input or output chunk of a dense stream: both stay in a core's L2 cache between
 * the read, the kernel and the write (1 MiB chunks measured half again the system time).
 */
export const CHUNK_BYTES = 512 * 1024;

/** Where a stream's output goes: `write(key, bytes)` appends the next bytes of output `key`. */
export type Sink = (key: string, bytes: Uint8Array) => void | Promise<void>;

/**
 * Streams elements `from .. to` of dense output `t` (default: all of it) through its
 * converter in cache-sized chunks: read, convert, write, one buffer each, so the chunk is
 * still in the CPU's cache when the kernel copies it into the page cache. The SIMD kernels
 * serve the pairs they have (reading into and writing from their own memory), FP8
 * dequantization included (simd-fp8.ts).
 */
export async function streamConvert(t: OutputTensor, src: Sources, write: Sink, from = 0, to?: number): Promise<void> {
  if (t.recipe.kind !== 'convert') throw new PipelineError(`task tensor ${t.key}: not a dense conversion`);
  const key = t.recipe.src;
  const s = src.src(key);
  const inSize = DTYPE_SIZE[s.dtype];
  const outSize = DTYPE_SIZE[t.dtype];
  const end = to ?? elementCount(s.shape);
  if (end <= from) return;
  const scaleRef = t.recipe.scale;
  const scale = scaleRef ? src.scale(scaleRef) : undefined;
  const chunk = Math.min(end - from, CHUNK_ELEMS, Math.floor(CHUNK_BYTES / Math.max(inSize, outSize)));
  // the scalar converter is made only when needed (bf16 → f16 builds a 64K-entry table)
  let scalar: Converter | undefined;
  const plain: Converter = (a, b) => (scalar ??= makeConverter(s.dtype, t.dtype))(a, b);
  const deq = scale ? simdDequant(s.dtype, t.dtype, s.shape, scaleRef!, chunk, scale.length) : undefined;
  if (deq) {
    deq.setScales(scale!);
    for (let first = from; first < end; first += chunk) {
      const elems = Math.min(chunk, end - first);
      src.read(key, first * inSize, elems * inSize, deq.input(elems));
      deq.run(first, elems);
      await write(t.key, deq.output(elems));
    }
    return;
  }
  const simd = scale ? undefined : simdConverter(s.dtype, t.dtype, chunk, plain);
  if (simd) {
    for (let first = from; first < end; first += chunk) {
      const elems = Math.min(chunk, end - first);
      src.read(key, first * inSize, elems * inSize, simd.input(elems));
      simd.run(elems);
      await write(t.key, simd.output(elems));
    }
    return;
  }
  const inb = buffer(0, chunk * inSize);
  const outb = buffer(1, chunk * outSize);
  for (let first = from; first < end; first += chunk) {
    const elems = Math.min(chunk, end - first);
    const bytes = src.read(key, first * inSize, elems * inSize, inb.subarray(0, elems * inSize));
    const out = outb.subarray(0, elems * outSize);
    if (scale) out.set(encodeF32(dequantFp8(bytes, s.dtype, first, s.shape, scale, scaleRef!, t.dtype), t.dtype));
    else plain(bytes, out);
    await write(t.key, out);
  }
}

/**
 * A {@link Sink} over a synchronous `put` that yields to the event loop every
 * {@link YIELD_EVERY} bytes.
 */
export function yieldingSink(put: (key: string, bytes: Uint8Array) => void): Sink {
  let since = 0;
  return async (key, bytes) => {
    put(key, bytes);
    since += bytes.byteLength;
    if (since >= YIELD_EVERY) {
      since = 0;
      await yieldToLoop();
    }
  };
}

/**
 * The sink of a task or a piece of one: every write goes through `direct` (direct-io.ts) when
 * there is one, else through `put` on a {@link yieldingSink}; `count` is told of each write
 * once it is done.
 */
export function countingSink(
  direct: { write(bytes: Uint8Array): Promise<void> } | undefined,
  put: (key: string, bytes: Uint8Array) => void,
  count: (key: string, n: number) => void,
): Sink {
  return direct
    ? async (key, bytes) => {
        await direct.write(bytes);
        count(key, bytes.byteLength);
      }
    : yieldingSink((key, bytes) => {
        put(key, bytes);
        count(key, bytes.byteLength);
      });
}
