/**
 * Reading safetensors files by offset: the header (8 + N bytes, never the whole file) and
 * single tensors (one positioned read of exactly their bytes).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { FormatError } from '../../errors';
import { headerLengthOf, parseSafetensorsHeader, type SafetensorsHeader, type TensorInfo } from './header';
import { assertRegularFile } from '../../paths/file-kind';

/** Wraps an fs error (ENOENT, EACCES, EISDIR …) as a FormatError naming the file. */
export function fsError(file: string, e: unknown): FormatError {
  if (e instanceof FormatError) return e;
  const err = e as NodeJS.ErrnoException;
  const why =
    err.code === 'ENOENT'
      ? 'file does not exist'
      : err.code === 'EACCES'
        ? 'permission denied'
        : err.code === 'EISDIR'
          ? 'is a directory, not a safetensors file'
          : `cannot read (${err.code ?? err.message})`;
  return new FormatError(file, why);
}

/** Refuses anything that is not a regular file (a FIFO would block the open forever). */
function checkRegular(file: string, st: fs.Stats): void {
  if (st.isDirectory()) throw new FormatError(file, 'is a directory, not a safetensors file');
  assertRegularFile(file, st);
}

/** Largest single read/write call (Node refuses lengths above 2 GiB − 1 per call). */
export const IO_CHUNK = 1 << 30;

/** The error of a read that found the file shorter than its header said (`done` of `length` bytes read at `position`). */
function endedEarly(file: string, length: number, position: number, done: number): FormatError {
  const at = position + done;
  return new FormatError(
    file,
    `file ended at byte ${at} while reading ${length} bytes at byte ${position} (truncated or changed while reading?)`,
    at,
  );
}

/**
 * fs's callback form as a promise: one libuv round trip per call. The header reads use it with
 * a plain descriptor rather than a FileHandle, whose promise machinery, objects and tracked
 * close cost a cold language-server open about 4 ms over 8 shards.
 */
function fsCall<T>(call: (done: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => call((err, value) => (err ? reject(err) : resolve(value))));
}

/**
 * Fills `buf` from `position` through a plain descriptor (header reads, where nothing else uses
 * the descriptor meanwhile). Tensor reads go through their FileHandle ({@link readFully}), whose
 * close waits for reads still in flight.
 */
async function readFullyFd(fd: number, buf: Uint8Array, position: number, file: string): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const bytesRead = await fsCall<number>((cb) => fs.read(fd, buf, done, Math.min(buf.length - done, IO_CHUNK), position + done, cb));
    if (bytesRead === 0) throw endedEarly(file, buf.length, position, done);
    done += bytesRead;
  }
}

async function readFully(fh: fsp.FileHandle, buf: Uint8Array, position: number, file: string): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, Math.min(buf.length - done, IO_CHUNK), position + done);
    if (bytesRead === 0) throw endedEarly(file, buf.length, position, done);
    done += bytesRead;
  }
}

function readFullySync(fd: number, buf: Uint8Array, position: number, file: string): void {
  let done = 0;
  while (done < buf.length) {
    const n = fs.readSync(fd, buf, done, Math.min(buf.length - done, IO_CHUNK), position + done);
    if (n === 0) throw endedEarly(file, buf.length, position, done);
    done += n;
  }
}

/**
 * The first read of a header: its length and, for most shards (a header of up to 64 KiB less 8
 * bytes), the whole header in the same call.
 */
const FIRST_READ = 1 << 16;

/** Reads and validates `file`'s header from an open descriptor. */
async function headerFromFd(fd: number, file: string): Promise<SafetensorsHeader> {
  const st = await fsCall<fs.Stats>((cb) => fs.fstat(fd, cb));
  checkRegular(file, st);
  const first = new Uint8Array(Math.min(st.size, FIRST_READ));
  await readFullyFd(fd, first, 0, file);
  const n = headerLengthOf(first, st.size, file);
  if (8 + n <= first.length) return parseSafetensorsHeader(first, st.size, file);
  const buf = new Uint8Array(8 + n);
  buf.set(first);
  await readFullyFd(fd, buf.subarray(first.length), first.length, file);
  return parseSafetensorsHeader(buf, st.size, file);
}

/**
 * Reads and validates the header of `file` (reads 8 + N bytes, or the first 64 KiB when that is
 * more). `stats`: the caller's own `stat` of `file` (the header cache has one), so that the kind
 * check before the open needs no second call; the descriptor's are checked again once open.
 */
export async function readSafetensorsHeader(file: string, stats?: fs.Stats): Promise<SafetensorsHeader> {
  let fd: number | undefined;
  try {
    checkRegular(file, stats ?? (await fsCall<fs.Stats>((cb) => fs.stat(file, cb))));
    fd = await fsCall<number>((cb) => fs.open(file, 'r', cb));
    return await headerFromFd(fd, file);
  } catch (e) {
    throw fsError(file, e);
  } finally {
    // Not awaited: the header does not wait for the descriptor's close (nothing else uses it).
    if (fd !== undefined) fs.close(fd, () => undefined);
  }
}

/** Synchronous {@link readSafetensorsHeader}. */
export function readSafetensorsHeaderSync(file: string): SafetensorsHeader {
  let fd: number | undefined;
  try {
    checkRegular(file, fs.statSync(file));
    fd = fs.openSync(file, 'r');
    const st = fs.fstatSync(fd);
    checkRegular(file, st);
    const prefix = new Uint8Array(Math.min(8, st.size));
    readFullySync(fd, prefix, 0, file);
    const n = headerLengthOf(prefix, st.size, file);
    const buf = new Uint8Array(8 + n);
    buf.set(prefix);
    readFullySync(fd, buf.subarray(8), 8, file);
    return parseSafetensorsHeader(buf, st.size, file);
  } catch (e) {
    throw fsError(file, e);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Reads one tensor's bytes (`info.byteLength` bytes at `info.dataOffset`) without loading the file. */
export async function readTensorBytes(file: string, info: TensorInfo): Promise<Uint8Array> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(file, 'r');
    const out = new Uint8Array(info.byteLength);
    await readFully(fh, out, info.dataOffset, file);
    return out;
  } catch (e) {
    throw fsError(file, e);
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

/** Synchronous {@link readTensorBytes}. */
export function readTensorBytesSync(file: string, info: TensorInfo): Uint8Array {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const out = new Uint8Array(info.byteLength);
    readFullySync(fd, out, info.dataOffset, file);
    return out;
  } catch (e) {
    throw fsError(file, e);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Bytes `start .. start + length` of a tensor, read into `into` when given. */
export interface TensorRange {
  start: number;
  length: number;
  into?: Uint8Array;
}

/**
 * An open safetensors file for many reads through one descriptor (prepare reads hundreds
 * of tensors per shard). Close it when done.
 */
export class SafetensorsReader {
  private constructor(
    readonly file: string,
    readonly header: SafetensorsHeader,
    private readonly fh: fsp.FileHandle,
  ) {}

  /** Opens `file` and validates its header. */
  static async open(file: string): Promise<SafetensorsReader> {
    let fh: fsp.FileHandle | undefined;
    try {
      checkRegular(file, await fsp.stat(file));
      fh = await fsp.open(file, 'r');
      return new SafetensorsReader(file, await headerFromFd(fh.fd, file), fh);
    } catch (e) {
      await fh?.close().catch(() => undefined);
      throw fsError(file, e);
    }
  }

  /** Info of `key`, or undefined. */
  info(key: string): TensorInfo | undefined {
    return this.header.tensors.get(key);
  }

  /**
   * Reads a tensor (by key or info), or `length` bytes of it from byte `start` (relative
   * to the tensor) into `into` when given — for chunked streaming of large tensors.
   */
  async read(keyOrInfo: string | TensorInfo, range?: TensorRange): Promise<Uint8Array> {
    const [info, out, start] = this.target(keyOrInfo, range);
    await readFully(this.fh, out, info.dataOffset + start, this.file);
    return out;
  }

  /**
   * {@link read} on the calling thread. Prepare's worker threads read this way: a read
   * through libuv's pool costs a round trip of two thread switches, more than the copy of
   * a cache-sized chunk itself on a busy machine.
   */
  readSync(keyOrInfo: string | TensorInfo, range?: TensorRange): Uint8Array {
    const [info, out, start] = this.target(keyOrInfo, range);
    readFullySync(this.fh.fd, out, info.dataOffset + start, this.file);
    return out;
  }

  private target(keyOrInfo: string | TensorInfo, range: TensorRange | undefined): [TensorInfo, Uint8Array, number] {
    const info = typeof keyOrInfo === 'string' ? this.info(keyOrInfo) : keyOrInfo;
    if (!info) throw new FormatError(this.file, `has no tensor ${JSON.stringify(keyOrInfo)}`);
    const start = range?.start ?? 0;
    const length = range?.length ?? info.byteLength - start;
    if (start < 0 || length < 0 || start + length > info.byteLength) {
      throw new RangeError(`bytes ${start}..${start + length} are outside tensor ${info.key} (${info.byteLength} bytes)`);
    }
    const out = range?.into ? range.into.subarray(0, length) : new Uint8Array(length);
    if (out.length < length) throw new RangeError(`target buffer of ${out.length} bytes is smaller than ${length}`);
    return [info, out, start];
  }

  /** Closes the descriptor (idempotent). */
  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}
