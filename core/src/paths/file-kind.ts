/**
 * What kind of file a path names, checked before any reader opens it. Opening a FIFO for
 * reading blocks until a writer appears (forever, in the CLI and the language server); a
 * device or socket is no model file either, and a /proc or /sys file reports a size of 0
 * and yields endless or changing bytes. Readers go through {@link openRegularFile} (or the
 * read helpers below): `stat` first (no side effects), then a non-blocking open whose
 * descriptor is `fstat`ed again, so a file swapped for a FIFO in between is still caught.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { FormatError, oneLine } from '../errors';
import { printable } from './policy-error';

/** File systems whose files are not data on disk (statfs magic numbers, linux/magic.h). */
const PSEUDO_FS = new Map<number, string>([
  [0x9fa0, '/proc'],
  [0x62656572, '/sys'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x27e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
]);

/** "a FIFO", "a socket", … for anything that is not a regular file; undefined for a regular file. */
export function specialKind(st: fs.Stats): string | undefined {
  if (st.isFile()) return undefined;
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/** The pseudo file system (`/proc`, `/sys`, …) holding `p`, or undefined for a real one. */
export function pseudoFsOf(p: string): string | undefined {
  let type: number;
  try {
    type = Number(fs.statfsSync(p).type);
  } catch {
    return undefined;
  }
  return PSEUDO_FS.get(type);
}

function kindError(file: string, st: fs.Stats): FormatError | undefined {
  const kind = specialKind(st);
  if (kind === undefined) return undefined;
  return new FormatError(printable(file), kind.startsWith('a ') ? `is ${kind}, expected a file` : `is ${kind}`);
}

/**
 * Throws a one-line {@link FormatError} ("is a FIFO, expected a file", "is a /proc file, …")
 * unless `st` (of `file`) is a regular file on a real file system.
 */
export function assertRegularFile(file: string, st: fs.Stats): void {
  const err = kindError(file, st);
  if (err) throw err;
  // /proc and /sys files claim size 0 or 4096 whatever they yield; statfs tells them apart.
  const fsName = pseudoFsOf(file);
  if (fsName) throw new FormatError(printable(file), `is a ${fsName} file, expected a file on disk`);
}

const READ_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK;

function notFound(file: string, e: unknown): never {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') throw new FormatError(printable(file), 'file does not exist');
  if (code === 'EACCES' || code === 'EPERM') throw new FormatError(printable(file), 'permission denied');
  if (code === 'ENOTDIR') throw new FormatError(printable(file), `a parent of it is not a directory`);
  if (code === 'ELOOP') throw new FormatError(printable(file), 'symlinks form a loop');
  throw new FormatError(printable(file), `cannot read (${code ?? (e as Error).message})`);
}

/** Opens `file` for reading after checking its kind (see the module comment). Close the handle. */
export async function openRegularFile(file: string): Promise<fsp.FileHandle> {
  let fh: fsp.FileHandle;
  try {
    assertRegularFile(file, await fsp.stat(file));
    fh = await fsp.open(file, READ_FLAGS);
  } catch (e) {
    if (e instanceof FormatError) throw e;
    notFound(file, e);
  }
  try {
    const err = kindError(file, await fh.stat());
    if (err) throw err;
    return fh;
  } catch (e) {
    await fh.close().catch(() => undefined);
    throw e;
  }
}

/** Synchronous {@link openRegularFile}; returns a descriptor. */
export function openRegularFileSync(file: string): number {
  let fd: number;
  try {
    assertRegularFile(file, fs.statSync(file));
    fd = fs.openSync(file, READ_FLAGS);
  } catch (e) {
    if (e instanceof FormatError) throw e;
    notFound(file, e);
  }
  try {
    const err = kindError(file, fs.fstatSync(fd));
    if (err) throw err;
    return fd;
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
}

/**
 * Size caps for whole-file reads, checked on the open descriptor before the first byte is
 * read (a sparse file claims any size for free; a file that grows while read is cut at the
 * cap and refused). {@link MAX_INPUT_BYTES}: protobuf's 2 GiB limit, the largest ONNX graph
 * a reader takes whole. {@link MAX_JSON_BYTES}: any JSON the tool reads (spec, config,
 * report, record, manifest, index, tokenizer): a weight_spec.json of 100,000 tensors is
 * about 30 MB. {@link MAX_REF_BYTES}: a Hugging Face ref or a sentinel (one line).
 */
export const MAX_INPUT_BYTES = 2 ** 31 - 1;
/** See {@link MAX_INPUT_BYTES}. */
export const MAX_JSON_BYTES = 256 * 1024 * 1024;
/** See {@link MAX_INPUT_BYTES}. */
export const MAX_REF_BYTES = 4096;

function tooLarge(file: string, size: number, max: number): FormatError {
  return new FormatError(printable(file), `is ${size} bytes, over the ${max}-byte limit for this file`);
}

/** One read call at most (the kernel and Node cap a single read below 2 GiB). */
const READ_CHUNK = 1 << 30;

/** The buffer (fstat's size plus one byte) filled up: the file grew while it was read. */
function grew(file: string, got: number, max: number): FormatError {
  return got > max ? tooLarge(file, got, max) : new FormatError(printable(file), 'grew while it was read (is something writing it?)');
}

/** Reads at most `max` bytes of an open regular file whose size fstat gave (refusing beyond). */
async function readCapped(fh: fsp.FileHandle, file: string, size: number, max: number): Promise<Buffer> {
  if (size > max) throw tooLarge(file, size, max);
  const buf = Buffer.allocUnsafe(Math.min(max + 1, size + 1));
  let got = 0;
  for (;;) {
    const { bytesRead } = await fh.read(buf, got, Math.min(buf.length - got, READ_CHUNK), got);
    if (bytesRead === 0) break;
    got += bytesRead;
    if (got === buf.length) throw grew(file, got, max);
  }
  return buf.subarray(0, got);
}

/** Synchronous {@link readCapped}. */
function readCappedSync(fd: number, file: string, size: number, max: number): Buffer {
  if (size > max) throw tooLarge(file, size, max);
  const buf = Buffer.allocUnsafe(Math.min(max + 1, size + 1));
  let got = 0;
  for (;;) {
    const n = fs.readSync(fd, buf, got, Math.min(buf.length - got, READ_CHUNK), got);
    if (n === 0) break;
    got += n;
    if (got === buf.length) throw grew(file, got, max);
  }
  return buf.subarray(0, got);
}

/**
 * Reads a whole regular file the tool did not write (spec, config, manifest, a small ONNX
 * graph): kind checked before it is opened, size capped (`max`, default
 * {@link MAX_INPUT_BYTES}) before the first byte is read.
 */
export async function readRegularFile(file: string, encoding?: undefined, max?: number): Promise<Buffer>;
export async function readRegularFile(file: string, encoding: 'utf8', max?: number): Promise<string>;
export async function readRegularFile(file: string, encoding?: 'utf8', max = MAX_INPUT_BYTES): Promise<Buffer | string> {
  const fh = await openRegularFile(file);
  try {
    const buf = await readCapped(fh, file, (await fh.stat()).size, max);
    return encoding ? buf.toString(encoding) : buf;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * Reads a whole input file (spec, ONNX graph): any failure is one {@link FormatError} naming
 * `name` (default `file`), so every reader says "cannot read" the same way. `max` caps its size.
 */
export async function readInputFile(file: string, name = file, max = MAX_INPUT_BYTES): Promise<Buffer> {
  try {
    return await readRegularFile(file, undefined, max);
  } catch (err) {
    throw err instanceof FormatError ? err : new FormatError(name, `cannot read: ${oneLine(err)}`);
  }
}

/** Synchronous {@link readRegularFile}. */
export function readRegularFileSync(file: string, encoding?: undefined, max?: number): Buffer;
export function readRegularFileSync(file: string, encoding: 'utf8', max?: number): string;
export function readRegularFileSync(file: string, encoding?: 'utf8', max = MAX_INPUT_BYTES): Buffer | string {
  const fd = openRegularFileSync(file);
  try {
    const buf = readCappedSync(fd, file, fs.fstatSync(fd).size, max);
    return encoding ? buf.toString(encoding) : buf;
  } finally {
    fs.closeSync(fd);
  }
}

/** A JSON file the tool did not write, as text: {@link readRegularFileSync} capped at {@link MAX_JSON_BYTES}. */
export function readJsonTextSync(file: string): string {
  return readRegularFileSync(file, 'utf8', MAX_JSON_BYTES);
}

/** Asynchronous {@link readJsonTextSync}. */
export function readJsonText(file: string): Promise<string> {
  return readRegularFile(file, 'utf8', MAX_JSON_BYTES);
}

/**
 * Refuses an output directory on a pseudo file system (`/proc`, `/sys`) or under `/dev`:
 * writes there never make a file and can spin. `dir` need not exist (its nearest existing
 * ancestor is checked).
 */
export function assertWritableDir(dir: string): void {
  let p = path.resolve(dir);
  for (;;) {
    if (fs.existsSync(p)) break;
    const parent = path.dirname(p);
    if (parent === p) break;
    p = parent;
  }
  let real = p;
  try {
    real = fs.realpathSync.native(p);
  } catch {
    // keep the lexical path
  }
  const fsName = pseudoFsOf(p) ?? (real === '/dev' || (real.startsWith('/dev/') && !real.startsWith('/dev/shm')) ? '/dev' : undefined);
  if (fsName) throw new FormatError(printable(dir), `is on ${fsName}, not a folder on disk; choose another output directory`);
}
