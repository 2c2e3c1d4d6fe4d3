/**
 * Output files written past the page cache (O_DIRECT), for large whole tasks.
 *
 * Measured on this project's machine (a 2-core VM): a buffered write spends most of its system
 * time putting fresh pages into the page cache — 0.3 to 1.4 s per GB for a new file against
 * 0.13 s to overwrite cached pages — and then the kernel writes them back anyway. Prepare's
 * outputs are written once and not read back, so caching them only costs: an FP8 → bf16 MoE
 * task spent three quarters of its CPU time in that copy. Written directly, from a
 * block-aligned staging buffer, the same bytes cost about 0.06 s per GB, and the disk is kept
 * busy by large sequential writes (4 MiB).
 *
 * Whole blocks go through a block-aligned staging buffer and an O_DIRECT descriptor; the partial
 * blocks at the ends of a stream (a dense piece's neighbours write the rest of them) through an
 * ordinary one. Where the file system refuses O_DIRECT (at open or at a write), the same writes
 * go through the ordinary descriptor: the bytes are the same.
 * `WEIGHT_SPEC_DIRECT_IO=off` turns it off, `=on` uses it for tasks of any size (tests).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { PipelineError } from '../errors';
import { buildSafetensorsHeader, type TensorEntry } from '../formats/safetensors';
import { tempPathFor } from '../paths';

/** Direct I/O alignment of file offsets, lengths and memory (the usual logical block size or a multiple of it). */
const ALIGN = 4096;
/** Bytes per write: large enough to keep the disk streaming, small enough to stay a buffer. */
const STAGE = 8 * 1024 * 1024;
/**
 * Staging buffers per thread: while one fills, the others are written. One write in flight per
 * thread left the disk idle between requests: a 2.2 GB FP8 → bf16 prepare took 3.1–3.5 s with
 * two 4 MiB buffers and 2.6–2.9 s with six of 8 MiB (alternating rounds, same run), about the
 * same with four of 16 MiB. libuv's pool (4 threads) bounds the writes in flight per process.
 */
const DEPTH = 6;
/** The staging memory of one thread that writes directly (the executor counts it against the budget). */
export const DIRECT_STAGING_BYTES = STAGE * DEPTH;
/** Streams of fewer bytes are written through the page cache (a few writes: nothing to gain). */
export const DIRECT_MIN_BYTES = 16 * 1024 * 1024;

// WebAssembly memory is page-aligned (the project's `lib` has no DOM, and @types/node 20 no WebAssembly)
declare const WebAssembly: { Memory: new (d: { initial: number }) => { buffer: ArrayBuffer } };

/** Whether a task (or a dense task's piece) writing `outBytes` bytes should write them directly. */
export function wantsDirect(outBytes: number): boolean {
  const mode = process.env.WEIGHT_SPEC_DIRECT_IO;
  if (mode === 'off' || fs.constants.O_DIRECT === undefined) return false;
  return mode === 'on' || outBytes >= DIRECT_MIN_BYTES;
}

let staging: Uint8Array[] | undefined;
/** The thread's staging buffers (one task at a time per thread), block-aligned. */
function stagingBuffers(): Uint8Array[] {
  const make = () => new Uint8Array(new WebAssembly.Memory({ initial: Math.ceil(STAGE / 65536) }).buffer, 0, STAGE);
  return (staging ??= Array.from({ length: DEPTH }, make));
}

/**
 * Bytes `start …` of a file written sequentially: whole aligned blocks through an O_DIRECT
 * descriptor, from block-aligned staging buffers; the partial blocks at either end (shared
 * with a neighbour: the header, another piece) through an ordinary descriptor, so no direct
 * write overlaps bytes someone else writes. Several staging buffers: while the others are
 * written (in libuv's pool, off this thread) the task fills one, so the disk and the kernels
 * work at the same time and the disk always has the next request.
 */
export class DirectStream {
  /** File offset of the current buffer's byte 0 (block-aligned once past the head). */
  private pos: number;
  private fill = 0;
  private readonly bufs = stagingBuffers();
  private cur = 0;
  private direct: number;
  /** The writes in flight (of the other buffers), oldest first. */
  private inflight: Promise<void>[] = [];

  /** Opens `file` (which exists) for direct writes from byte `start`; undefined where the file system refuses O_DIRECT. */
  static open(file: string, start: number, buffered: number): DirectStream | undefined {
    try {
      return new DirectStream(file, start, buffered, fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_DIRECT));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EINVAL') return undefined;
      throw e;
    }
  }

  private constructor(
    readonly file: string,
    start: number,
    /** An ordinary descriptor of the file (the caller's: not closed here). */
    private readonly buffered: number,
    direct: number,
  ) {
    this.pos = start;
    this.direct = direct;
  }

  /** Appends `bytes` (the next bytes of the stream); resolves once they are staged or written. */
  async write(bytes: Uint8Array): Promise<void> {
    let done = 0;
    // up to the first block boundary: through the page cache
    const head = Math.min(bytes.byteLength, (ALIGN - (this.pos % ALIGN)) % ALIGN);
    if (this.fill === 0 && head > 0) {
      writeAll(this.buffered, bytes.subarray(0, head), this.pos, this.file);
      this.pos += head;
      done = head;
    }
    while (done < bytes.byteLength) {
      const n = Math.min(bytes.byteLength - done, STAGE - this.fill);
      this.bufs[this.cur]!.set(bytes.subarray(done, done + n), this.fill);
      this.fill += n;
      done += n;
      if (this.fill === STAGE) await this.flush(STAGE);
    }
  }

  /** Bytes appended so far, as the file offset they reach. */
  get end(): number {
    return this.pos + this.fill;
  }

  /**
   * Starts writing the current buffer's first `n` bytes (a multiple of ALIGN) once the write in
   * flight is done, and moves what is left over to the other buffer.
   */
  private async flush(n: number): Promise<void> {
    const nextIdx = (this.cur + 1) % this.bufs.length;
    // the next buffer is free once the oldest write in flight (its own) is done
    if (this.inflight.length >= this.bufs.length - 1) await this.inflight.shift();
    const buf = this.bufs[this.cur]!;
    const next = this.bufs[nextIdx]!;
    next.set(buf.subarray(n, this.fill));
    const at = this.pos;
    const w = this.writeBlocks(buf, n, at);
    // a failed write is reported by the next flush or by close(); until then it must not go unhandled
    w.catch(() => undefined);
    this.inflight.push(w);
    this.pos += n;
    this.fill -= n;
    this.cur = nextIdx;
  }

  private async writeBlocks(buf: Uint8Array, n: number, at: number): Promise<void> {
    for (let done = 0; done < n;) {
      let w: number;
      try {
        w = await new Promise<number>((resolve, reject) =>
          fs.write(this.direct, buf, done, n - done, at + done, (e, k) => (e ? reject(e) : resolve(k))),
        );
      } catch (e) {
        if (this.direct === this.buffered || (e as NodeJS.ErrnoException).code !== 'EINVAL') throw e;
        // the file system took the flag but not the write: the rest goes through the page cache
        fs.closeSync(this.direct);
        this.direct = this.buffered;
        continue;
      }
      if (w <= 0) throw new PipelineError(`${this.file}: write returned ${w} at byte ${at + done}`);
      done += w;
    }
  }

  /** Writes what is staged (whole blocks directly, the last partial one through the page cache) and closes the direct descriptor. */
  async close(): Promise<void> {
    const whole = this.fill - (this.fill % ALIGN);
    if (whole > 0) await this.flush(whole);
    for (const w of this.inflight.splice(0)) await w;
    if (this.fill > 0) writeAll(this.buffered, this.bufs[this.cur]!.subarray(0, this.fill), this.pos, this.file);
    this.pos += this.fill;
    this.fill = 0;
    await this.abort();
  }

  /** Closes the direct descriptor without writing what is staged (after the write in flight, if any, ends). */
  async abort(): Promise<void> {
    await Promise.allSettled(this.inflight.splice(0));
    if (this.direct !== this.buffered && this.direct >= 0) fs.closeSync(this.direct);
    this.direct = -1;
  }
}

/** `bytes` at `position` of `fd`, whole. */
function writeAll(fd: number, bytes: Uint8Array, position: number, file: string): void {
  for (let done = 0; done < bytes.byteLength;) {
    const n = fs.writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
    if (n <= 0) throw new PipelineError(`${file}: write returned ${n} at byte ${position + done}`);
    done += n;
  }
}

/** A whole safetensors file written sequentially (header first) into its temp file, past the page cache. */
export class DirectFile {
  private constructor(
    /** The final path. */
    readonly file: string,
    /** The temp file (committed by commitSealedFile). */
    readonly tempFile: string,
    private fd: number,
    private readonly stream: DirectStream,
    /** The file's size once complete. */
    readonly size: number,
  ) {}

  /**
   * Creates `file`'s temp file for `entries` and writes the header; undefined (nothing left
   * behind) where the file system does not take O_DIRECT.
   */
  static async create(file: string, entries: TensorEntry[]): Promise<DirectFile | undefined> {
    const plan = buildSafetensorsHeader(entries, undefined, file);
    const tmp = tempPathFor(file);
    let fd: number;
    try {
      fd = fs.openSync(tmp, 'wx', 0o644);
    } catch (e) {
      throw new PipelineError(`${file}: cannot create (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
    let stream: DirectStream | undefined;
    try {
      stream = DirectStream.open(tmp, 0, fd);
    } finally {
      if (!stream) {
        fs.closeSync(fd);
        fs.rmSync(tmp, { force: true });
      }
    }
    if (!stream) return undefined;
    const d = new DirectFile(file, tmp, fd, stream, plan.bytes.length + plan.dataSize);
    await stream.write(plan.bytes);
    return d;
  }

  /** Appends `bytes` (the next bytes of the file). */
  write(bytes: Uint8Array): Promise<void> {
    return this.stream.write(bytes);
  }

  /** Writes the last bytes and closes; the file must be complete. For commitSealedFile. */
  async seal(): Promise<{ tempFile: string; file: string }> {
    if (this.stream.end !== this.size) throw new PipelineError(`${this.file}: ${this.stream.end} of ${this.size} bytes written`);
    await this.stream.close();
    fs.closeSync(this.fd);
    this.fd = -1;
    return { tempFile: this.tempFile, file: this.file };
  }

  /** Closes and removes the temp file (after a failure). */
  async abort(): Promise<void> {
    await this.stream.abort();
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    await fsp.rm(this.tempFile, { force: true }).catch(() => undefined);
  }
}
