/**
 * Atomic file and directory replacement. A reader (or a crash) must only ever see the old
 * complete file or the new complete file: data goes to a temp name in the same directory
 * (same file system, so rename is atomic), is fsynced, then renamed over the final name,
 * and the directory entry itself is fsynced.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../errors';
import { PathPolicyError } from './policy-error';

/** Matches names made by {@link tempPathFor} / {@link atomicReplaceDir}: `<name>.tmp-<pid>-<hex>`, `.old-…`. */
export const TEMP_NAME_RE = /\.(tmp|old)-(\d+)-([0-9a-f]{8})$/;

const REASONS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file size limit reached',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOENT: 'directory does not exist',
};

/**
 * A write failure as one line naming the file (fs errors name only the syscall, e.g.
 * "EFBIG: file too large, write"). The errno `code` is kept for callers that test it.
 */
export function writeError(file: string, e: unknown): Error {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (!code || e instanceof PipelineError) return e as Error;
  const reason = REASONS[code] ?? String((e as Error).message).split('\n')[0];
  return Object.assign(new PipelineError(`${file}: cannot write: ${reason} (${code})`), { code });
}

/** A fresh temp name beside `file`: `<file>.tmp-<pid>-<random>`. */
export function tempPathFor(file: string): string {
  return `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** fsync a directory so a rename inside it survives a crash (best effort where unsupported). */
export async function fsyncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, 'r');
    await fh.sync();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EBADF') throw e;
  } finally {
    await fh?.close();
  }
}

/** Synchronous {@link fsyncDir}. */
export function fsyncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM' && code !== 'EBADF') throw e;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Renames a finished, fsynced temp file over `final` and fsyncs the directory. `rename`
 * replaces a symlink at `final` rather than writing through it.
 */
export async function commitTempFile(tmp: string, final: string): Promise<void> {
  await fsp.rename(tmp, final);
  await fsyncDir(path.dirname(final));
}

/**
 * Writes `data` to `file` atomically (temp in the same directory, fsync, rename, fsync dir).
 * The temp file is opened exclusively (`wx`), so a planted symlink at the temp name is never
 * followed. On any failure the temp file is removed and the old `file` is untouched.
 */
export async function atomicWriteFile(file: string, data: Uint8Array | string, mode = 0o644): Promise<void> {
  const tmp = tempPathFor(file);
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(tmp, 'wx', mode);
    await fh.writeFile(data);
    await fh.sync();
    await fh.close();
    fh = undefined;
    await commitTempFile(tmp, file);
  } catch (e) {
    await fh?.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw writeError(file, e);
  }
}

/** Synchronous {@link atomicWriteFile} (small files: manifests, sentinels, JSON). */
export function atomicWriteFileSync(file: string, data: Uint8Array | string, mode = 0o644): void {
  const tmp = tempPathFor(file);
  let fd: number | undefined;
  try {
    fd = fs.openSync(tmp, 'wx', mode);
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tmp, file);
    fsyncDirSync(path.dirname(file));
  } catch (e) {
    if (fd !== undefined) fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw writeError(file, e);
  }
}

/** Creates an empty temp directory beside `finalDir` (same parent, so it can be renamed in). */
export async function makeTempSiblingDir(finalDir: string): Promise<string> {
  const tmp = tempPathFor(path.resolve(finalDir));
  await fsp.mkdir(path.dirname(tmp), { recursive: true });
  await fsp.mkdir(tmp);
  return tmp;
}

/**
 * Replaces `finalDir` by the completed directory `tmpDir` (same parent). When `finalDir`
 * exists it is first moved aside to `<final>.old-<pid>-<rand>`, then `tmpDir` is renamed in
 * and the old tree deleted; if the second rename fails the old tree is put back. At no time
 * does `finalDir` name a half-built tree. A symlink at `finalDir` is refused (renaming would
 * replace the link, not the tree it points to, which is never what the caller meant).
 */
export async function atomicReplaceDir(tmpDir: string, finalDir: string): Promise<void> {
  const tmp = path.resolve(tmpDir);
  const final = path.resolve(finalDir);
  if (path.dirname(tmp) !== path.dirname(final)) {
    throw new Error(`atomicReplaceDir: ${tmp} and ${final} must share a parent directory`);
  }
  let st: fs.Stats | undefined;
  try {
    st = await fsp.lstat(final);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (st?.isSymbolicLink()) {
    throw new PathPolicyError('write-through-symlink', final, 'output directory is a symlink; pass its target instead');
  }
  if (st && !st.isDirectory()) {
    throw new PathPolicyError('overwrite-refused', final, 'exists and is not a directory');
  }
  if (!st) {
    await fsp.rename(tmp, final);
    await fsyncDir(path.dirname(final));
    return;
  }
  const old = `${final}.old-${process.pid}-${randomBytes(4).toString('hex')}`;
  await fsp.rename(final, old);
  try {
    await fsp.rename(tmp, final);
  } catch (e) {
    await fsp.rename(old, final).catch(() => undefined);
    throw e;
  }
  await fsyncDir(path.dirname(final));
  await fsp.rm(old, { recursive: true, force: true });
}

/** True when a process with this pid exists (EPERM means it exists but is not ours). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes leftovers of killed runs in `dir`: entries named `*.tmp-<pid>-<hex>` or
 * `*.old-<pid>-<hex>` whose pid is no longer running (or is this process's, when
 * `includeOwn`), and whose name starts with `prefix` when given (e.g. `out.` to clean only
 * the temp siblings of `out` in its parent). Returns the removed paths. A re-run calls this
 * before writing.
 */
export async function removeStaleTemps(dir: string, includeOwn = false, prefix?: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const n of names) {
    const m = TEMP_NAME_RE.exec(n);
    if (!m || (prefix !== undefined && !n.startsWith(prefix))) continue;
    const pid = Number(m[2]);
    if (pid === process.pid ? !includeOwn : processAlive(pid)) continue;
    const p = path.join(dir, n);
    await fsp.rm(p, { recursive: true, force: true });
    removed.push(p);
  }
  return removed;
}
