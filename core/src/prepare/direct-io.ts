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
 * The file is the task's temp file: header and data go through one staging buffer (the header
 * first, so every direct write starts on a block boundary), the last partial block is padded
 * and the file truncated to its exact size. Where the file system refuses O_DIRECT (at open or
 * at a write), the same writes go through an ordinary descriptor: the bytes are the same.
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
const STAGE = 4 * 1024 * 1024;
/** Tasks of fewer output bytes are written through the page cache (a few writes: nothing to gain). */
export const DIRECT_MIN_BYTES = 64 * 1024 * 1024;

// WebAssembly memory is page-aligned (the project's `lib` has no DOM, and @types/node 20 no WebAssembly)
declare const WebAssembly: { Memory: new (d: { initial: number }) => { buffer: ArrayBuffer } };

/** Whether a task writing `outBytes` bytes should write them directly. */
export function wantsDirect(outBytes: number): boolean {
  const mode = process.env.WEIGHT_SPEC_DIRECT_IO;
  if (mode === 'off' || fs.constants.O_DIRECT === undefined) return false;
  return mode === 'on' || outBytes >= DIRECT_MIN_BYTES;
}

let staging: Uint8Array | undefined;
/** The thread's staging buffer (one task at a time per thread), block-aligned. */
function stagingBuffer(): Uint8Array {
  return (staging ??= new Uint8Array(new WebAssembly.Memory({ initial: Math.ceil((STAGE + ALIGN) / 65536) }).buffer, 0, STAGE + ALIGN));
}

/** A safetensors file written sequentially through O_DIRECT into its temp file. */
export class DirectFile {
  /** File offset of staging byte 0 (block-aligned). */
  private pos = 0;
  private fill = 0;
  private readonly buf = stagingBuffer();

  private constructor(
    /** The final path. */
    readonly file: string,
    /** The temp file (committed by commitSealedFile). */
    readonly tempFile: string,
    private fd: number,
    private direct: boolean,
    /** The file's size once complete. */
    readonly size: number,
  ) {}

  /**
   * Creates `file`'s temp file for `entries` and stages the header; undefined (nothing left
   * behind) where the file system does not take O_DIRECT.
   */
  static create(file: string, entries: TensorEntry[]): DirectFile | undefined {
    const plan = buildSafetensorsHeader(entries, undefined, file);
    const tmp = tempPathFor(file);
    let fd: number;
    try {
      fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_DIRECT, 0o644);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EINVAL') {
        fs.rmSync(tmp, { force: true });
        return undefined;
      }
      throw new PipelineError(`${file}: cannot create (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
    }
    const d = new DirectFile(file, tmp, fd, true, plan.bytes.length + plan.dataSize);
    d.write(plan.bytes);
    return d;
  }

  /** Appends `bytes` (the next bytes of the file). */
  write(bytes: Uint8Array): void {
    for (let done = 0; done < bytes.byteLength;) {
      const n = Math.min(bytes.byteLength - done, STAGE - this.fill);
      this.buf.set(bytes.subarray(done, done + n), this.fill);
      this.fill += n;
      done += n;
      if (this.fill === STAGE) this.flush(STAGE);
    }
  }

  /** Bytes appended so far (header included). */
  get written(): number {
    return this.pos + this.fill;
  }

  /** Writes the staged whole blocks up to `n` (a multiple of ALIGN) and keeps the rest. */
  private flush(n: number): void {
    for (let done = 0; done < n;) {
      let w: number;
      try {
        w = fs.writeSync(this.fd, this.buf, done, n - done, this.pos + done);
      } catch (e) {
        if (!this.direct || (e as NodeJS.ErrnoException).code !== 'EINVAL') throw e;
        // the file system took the flag but not the write: the rest goes through the page cache
        fs.closeSync(this.fd);
        this.fd = fs.openSync(this.tempFile, 'r+');
        this.direct = false;
        continue;
      }
      if (w <= 0) throw new PipelineError(`${this.file}: write returned ${w} at byte ${this.pos + done}`);
      done += w;
    }
    this.pos += n;
    this.buf.copyWithin(0, n, this.fill);
    this.fill -= n;
  }

  /** Writes the last bytes (the partial block padded, then cut off) and closes; the file must be complete. */
  seal(): { tempFile: string; file: string } {
    if (this.written !== this.size) throw new PipelineError(`${this.file}: ${this.written} of ${this.size} bytes written`);
    const whole = Math.ceil(this.fill / ALIGN) * ALIGN;
    this.buf.fill(0, this.fill, whole);
    this.fill = whole;
    this.flush(whole);
    fs.ftruncateSync(this.fd, this.size);
    fs.closeSync(this.fd);
    this.fd = -1;
    return { tempFile: this.tempFile, file: this.file };
  }

  /** Closes and removes the temp file (after a failure). */
  async abort(): Promise<void> {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    await fsp.rm(this.tempFile, { force: true }).catch(() => undefined);
  }
}
