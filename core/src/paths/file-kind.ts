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

/** Reads a whole regular file (spec, config, manifest, a small ONNX graph). */
export async function readRegularFile(file: string): Promise<Buffer>;
export async function readRegularFile(file: string, encoding: 'utf8'): Promise<string>;
export async function readRegularFile(file: string, encoding?: 'utf8'): Promise<Buffer | string> {
  const fh = await openRegularFile(file);
  try {
    const buf = await fh.readFile();
    return encoding ? buf.toString(encoding) : buf;
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/**
 * Reads a whole input file (spec, ONNX graph): any failure is one {@link FormatError} naming
 * `name` (default `file`), so every reader says "cannot read" the same way.
 */
export async function readInputFile(file: string, name = file): Promise<Buffer> {
  try {
    return await readRegularFile(file);
  } catch (err) {
    throw err instanceof FormatError ? err : new FormatError(name, `cannot read: ${oneLine(err)}`);
  }
}

/** Synchronous {@link readRegularFile}. */
export function readRegularFileSync(file: string): Buffer;
export function readRegularFileSync(file: string, encoding: 'utf8'): string;
export function readRegularFileSync(file: string, encoding?: 'utf8'): Buffer | string {
  const fd = openRegularFileSync(file);
  try {
    const buf = fs.readFileSync(fd);
    return encoding ? buf.toString(encoding) : buf;
  } finally {
    fs.closeSync(fd);
  }
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
