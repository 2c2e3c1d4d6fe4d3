/**
 * The streaming safetensors writer. The header is computed from the declared entries before
 * any data exists (so tensors can be produced one at a time and never held together), then
 * tensors are appended in declared order into a temp file beside the target, which is
 * fsynced and atomically renamed into place. A crash or abort() leaves no file that looks
 * complete.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { PipelineError } from '../../errors';
import { commitTempFile, tempPathFor } from '../../paths';
import { DTYPE_SIZE, isDType, type DType } from '../dtype';
import { MAX_HEADER_BYTES, elementCount } from './header';
import { IO_CHUNK } from './read';

/** A tensor the writer will receive: its key, dtype and shape. */
export interface TensorEntry {
  key: string;
  dtype: DType;
  shape: number[];
}

/** A tensor with its bytes, for {@link writeSafetensors}. */
export interface TensorData extends TensorEntry {
  data: Uint8Array;
}

/** The header bytes (8-byte length + padded JSON) and each entry's data range. */
export interface PlannedHeader {
  bytes: Uint8Array;
  /** Byte length of each entry, in declared order. */
  sizes: number[];
  /** Total bytes of the data region. */
  dataSize: number;
}

/**
 * Builds the header for `entries` in declared order: `{"__metadata__":…, key: {dtype,
 * shape, data_offsets}}`, padded with spaces so the data starts 8-byte aligned (as the Rust
 * safetensors does). Throws PipelineError on invalid entries (`file` names the output).
 */
export function buildSafetensorsHeader(
  entries: readonly TensorEntry[],
  metadata: Record<string, string> | undefined,
  file = '<memory>',
): PlannedHeader {
  const fail = (what: string) => new PipelineError(`${file}: ${what}`);
  const header: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  if (metadata) {
    const m: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw fail(`metadata value for ${JSON.stringify(k)} is not a string`);
      m[k] = v;
    }
    header.__metadata__ = m;
  }
  const seen = new Set<string>();
  const sizes: number[] = [];
  let offset = 0;
  for (const e of entries) {
    if (typeof e.key !== 'string' || e.key === '' || e.key === '__metadata__') throw fail(`invalid tensor key ${JSON.stringify(e.key)}`);
    if (seen.has(e.key)) throw fail(`tensor ${JSON.stringify(e.key)} declared twice`);
    seen.add(e.key);
    if (!isDType(e.dtype)) throw fail(`tensor ${JSON.stringify(e.key)}: unknown dtype ${JSON.stringify(e.dtype)}`);
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw fail(`tensor ${JSON.stringify(e.key)}: shape ${JSON.stringify(e.shape)} is not a list of non-negative integers`);
    }
    const size = elementCount(e.shape) * DTYPE_SIZE[e.dtype];
    if (!Number.isSafeInteger(size) || !Number.isSafeInteger(offset + size)) throw fail(`tensor ${JSON.stringify(e.key)} is too large`);
    // Defined with defineProperty so a key like "__proto__" becomes a real entry.
    Object.defineProperty(header, e.key, {
      value: { dtype: e.dtype, shape: [...e.shape], data_offsets: [offset, offset + size] },
      enumerable: true,
      writable: true,
      configurable: true,
    });
    sizes.push(size);
    offset += size;
  }
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  const pad = (8 - (json.length % 8)) % 8;
  if (pad) json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  if (json.length > MAX_HEADER_BYTES) throw fail(`header of ${json.length} bytes exceeds the ${MAX_HEADER_BYTES}-byte limit`);
  const bytes = new Uint8Array(8 + json.length);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(json.length), true);
  bytes.set(json, 8);
  return { bytes, sizes, dataSize: offset };
}

/** Streams one safetensors file: header first, tensors appended in declared order. */
export class SafetensorsWriter {
  private index = 0;
  /** Bytes of the current entry already written (for {@link writePart}). */
  private partial = 0;
  private position: number;
  private state: 'open' | 'done' | 'aborted' = 'open';
  private busy = false;
  private flushing: Promise<void> | undefined;

  private constructor(
    /** The final path. */
    readonly file: string,
    /** The temp file being written (renamed to `file` by finish()). */
    readonly tempFile: string,
    private readonly entries: readonly TensorEntry[],
    private readonly plan: PlannedHeader,
    private readonly fh: fsp.FileHandle,
  ) {
    this.position = plan.bytes.length;
  }

  /** Creates the temp file beside `file` and writes the header. */
  static async open(file: string, entries: TensorEntry[], metadata?: Record<string, string>): Promise<SafetensorsWriter> {
    const plan = buildSafetensorsHeader(entries, metadata, file);
    const tmp = tempPathFor(file);
    const fh = await fsp.open(tmp, 'wx', 0o644).catch((e: unknown) => {
      throw ioError(file, 'cannot create', e);
    });
    const w = new SafetensorsWriter(
      file,
      tmp,
      entries.map((e) => ({ key: e.key, dtype: e.dtype, shape: [...e.shape] })),
      plan,
      fh,
    );
    try {
      await w.writeAt(plan.bytes, 0);
    } catch (e) {
      await w.abort();
      throw e;
    }
    return w;
  }

  /** Total file size once finished. */
  get size(): number {
    return this.plan.bytes.length + this.plan.dataSize;
  }

  /** The key the writer expects next, or undefined when all are written. */
  get next(): string | undefined {
    return this.entries[this.index]?.key;
  }

  /** Writes all of `key`'s bytes; `key` must be the next declared entry and `bytes` its exact size. */
  async write(key: string, bytes: Uint8Array): Promise<void> {
    this.expect(key);
    const want = this.plan.sizes[this.index]!;
    if (this.partial !== 0 || bytes.byteLength !== want) {
      throw this.fail(
        `tensor ${JSON.stringify(key)} got ${bytes.byteLength} bytes, declared ${want}${this.partial ? ` (${this.partial} already written)` : ''}`,
      );
    }
    await this.append(bytes, want);
  }

  /** Appends a chunk of `key`'s bytes (for tensors streamed in pieces); must not exceed its size. */
  async writePart(key: string, bytes: Uint8Array): Promise<void> {
    this.expect(key);
    const want = this.plan.sizes[this.index]!;
    if (this.partial + bytes.byteLength > want) {
      throw this.fail(`tensor ${JSON.stringify(key)} got ${this.partial + bytes.byteLength} bytes, declared ${want}`);
    }
    await this.append(bytes, want);
  }

  /** {@link writePart} on the calling thread (prepare's workers: see SafetensorsReader.readSync). */
  writePartSync(key: string, bytes: Uint8Array): void {
    this.expect(key);
    const want = this.plan.sizes[this.index]!;
    if (this.partial + bytes.byteLength > want) {
      throw this.fail(`tensor ${JSON.stringify(key)} got ${this.partial + bytes.byteLength} bytes, declared ${want}`);
    }
    let done = 0;
    try {
      while (done < bytes.byteLength) {
        const n = fs.writeSync(this.fh.fd, bytes, done, Math.min(bytes.byteLength - done, IO_CHUNK), this.position + done);
        if (n <= 0) throw this.fail(`write returned ${n} at byte ${this.position + done}`);
        done += n;
      }
    } catch (e) {
      void this.abort();
      throw ioError(this.file, 'cannot write', e);
    }
    this.advance(bytes.byteLength, want);
  }

  /** Where tensor data starts in the file (the header's size). */
  get dataOffset(): number {
    return this.plan.bytes.length;
  }

  /**
   * Finishes a file whose data other descriptors wrote by position (prepare's workers fill
   * byte ranges of one output in parallel): `written` must be the whole data size, and the
   * file exactly {@link size} bytes, else the temp file is removed and this throws.
   */
  async finishFilled(written: number): Promise<void> {
    if (this.state !== 'open') throw this.fail(`finish() after ${this.state === 'done' ? 'finish()' : 'abort()'}`);
    const st = await this.fh.stat().catch(() => undefined);
    if (written !== this.plan.dataSize || st?.size !== this.size) {
      const err = this.fail(`${written} of ${this.plan.dataSize} data bytes written (file of ${st?.size ?? '?'} bytes, want ${this.size})`);
      await this.abort();
      throw err;
    }
    this.index = this.entries.length;
    await this.finish();
  }

  /**
   * Starts writing the file's dirty pages back (an fdatasync in the background, one at a
   * time) so that {@link finish} finds little left to flush. For files that other
   * descriptors fill (finishFilled): the kernel would otherwise wait for its dirty threshold.
   */
  startFlush(): void {
    if (this.state !== 'open' || this.flushing) return;
    this.flushing = backgroundDatasync(this.fh, () => (this.flushing = undefined));
  }

  /** Checks every tensor was written, fsyncs, and renames the temp file to its final name. */
  async finish(): Promise<void> {
    await this.expectComplete('finish()');
    try {
      await this.flushing;
      await this.fh.sync();
      await this.fh.close();
      await commitTempFile(this.tempFile, this.file);
      this.state = 'done';
    } catch (e) {
      await this.abort();
      throw ioError(this.file, 'cannot finish', e);
    }
  }

  /**
   * Checks every tensor was written and closes the temp file without waiting for the disk:
   * {@link commitSealedFile} then makes it durable and renames it, from any thread. Prepare's
   * workers seal, so a file's last writeback overlaps the next task instead of idling a core.
   */
  async seal(): Promise<{ tempFile: string; file: string }> {
    await this.expectComplete('seal()');
    await this.flushing;
    await this.fh.close().catch(async (e: unknown) => {
      await this.abort();
      throw ioError(this.file, 'cannot close', e);
    });
    this.state = 'done';
    return { tempFile: this.tempFile, file: this.file };
  }

  /** Closes and removes the temp file (idempotent; a no-op after finish()). */
  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    await this.flushing;
    await this.fh.close().catch(() => undefined);
    await fsp.rm(this.tempFile, { force: true }).catch(() => undefined);
  }

  /** Throws (after aborting) unless the writer is open with every declared tensor written. */
  private async expectComplete(call: string): Promise<void> {
    if (this.state !== 'open') throw this.fail(`${call} after ${this.state === 'done' ? 'finish()' : 'abort()'}`);
    if (this.index < this.entries.length) {
      const e = this.entries[this.index]!;
      const err = this.fail(`${call} with ${this.entries.length - this.index} tensor(s) unwritten, first ${JSON.stringify(e.key)}`);
      await this.abort();
      throw err;
    }
  }

  private expect(key: string): void {
    if (this.state !== 'open') throw this.fail(`write after ${this.state === 'done' ? 'finish()' : 'abort()'}`);
    if (this.busy) throw this.fail('concurrent write (await each write before the next)');
    const want = this.entries[this.index];
    if (!want) throw this.fail(`tensor ${JSON.stringify(key)} written but all declared tensors are done`);
    if (want.key !== key) throw this.fail(`tensor ${JSON.stringify(key)} written out of order; expected ${JSON.stringify(want.key)}`);
  }

  private async append(bytes: Uint8Array, want: number): Promise<void> {
    this.busy = true;
    try {
      await this.writeAt(bytes, this.position);
    } catch (e) {
      this.busy = false;
      await this.abort();
      throw e;
    }
    this.busy = false;
    this.advance(bytes.byteLength, want);
  }

  private advance(n: number, want: number): void {
    this.position += n;
    this.partial += n;
    if (this.partial === want) {
      this.index++;
      this.partial = 0;
    }
  }

  private async writeAt(bytes: Uint8Array, position: number): Promise<void> {
    let done = 0;
    while (done < bytes.byteLength) {
      const { bytesWritten } = await this.fh
        .write(bytes, done, Math.min(bytes.byteLength - done, IO_CHUNK), position + done)
        .catch((e: unknown) => {
          throw ioError(this.file, 'cannot write', e);
        });
      if (bytesWritten <= 0) throw this.fail(`write returned ${bytesWritten} at byte ${position + done}`);
      done += bytesWritten;
    }
  }

  private fail(what: string): PipelineError {
    return new PipelineError(`${this.file}: ${what}`);
  }
}

/**
 * An fdatasync of `fh` that runs in the background and never rejects (a failure shows at the
 * final fsync, which waits for the same pages); `done` runs when it settles.
 */
export function backgroundDatasync(fh: fsp.FileHandle, done: () => void): Promise<void> {
  return fh
    .datasync()
    .catch(() => undefined)
    .finally(done);
}

/**
 * Makes a sealed file (SafetensorsWriter.seal) durable and gives it its final name: fsync,
 * rename, fsync of the directory. On failure the temp file is removed and this throws.
 */
export async function commitSealedFile(sealed: { tempFile: string; file: string }): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(sealed.tempFile, 'r+');
    await fh.sync();
    await fh.close();
    fh = undefined;
    await commitTempFile(sealed.tempFile, sealed.file);
  } catch (e) {
    await fh?.close().catch(() => undefined);
    await fsp.rm(sealed.tempFile, { force: true }).catch(() => undefined);
    throw ioError(sealed.file, 'cannot finish', e);
  }
}

/** An fs error (ENOSPC, EACCES …) as a one-line PipelineError naming the output file. */
function ioError(file: string, what: string, e: unknown): Error {
  if (e instanceof PipelineError) return e;
  const err = e as NodeJS.ErrnoException;
  return new PipelineError(`${file}: ${what} (${err.code ?? err.message})`);
}

/** Writes a whole safetensors file atomically (tensors in the given order). */
export async function writeSafetensors(file: string, tensors: TensorData[], metadata?: Record<string, string>): Promise<void> {
  const w = await SafetensorsWriter.open(file, tensors, metadata);
  try {
    for (const t of tensors) await w.write(t.key, t.data);
    await w.finish();
  } catch (e) {
    await w.abort();
    throw e;
  }
}

/** The bytes of a safetensors file in memory (tests, small sidecars). */
export function serializeSafetensors(tensors: TensorData[], metadata?: Record<string, string>): Uint8Array {
  const plan = buildSafetensorsHeader(tensors, metadata);
  const out = new Uint8Array(plan.bytes.length + plan.dataSize);
  out.set(plan.bytes);
  let pos = plan.bytes.length;
  tensors.forEach((t, i) => {
    if (t.data.byteLength !== plan.sizes[i]) {
      throw new PipelineError(`<memory>: tensor ${JSON.stringify(t.key)} has ${t.data.byteLength} bytes, shape needs ${plan.sizes[i]}`);
    }
    out.set(t.data, pos);
    pos += t.data.byteLength;
  });
  return out;
}
