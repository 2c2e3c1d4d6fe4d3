/**
 * Write side of the path policy. Every output of export, prepare, compile and the `.bin`
 * converter goes through an {@link OutputGuard} for its output directory: a target must
 * stay below that directory, must not reach out of it through a symlink, and must not
 * replace a file this run did not create (previous artifacts of the same tool are marked
 * owned by the caller, which recognizes them from its manifest).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { atomicWriteFile } from './atomic';
import { assertWritableDir } from './file-kind';
import { PathPolicyError, printable } from './policy-error';
import { isInside, realPathOf, validatePathText } from './read-policy';

/** A checked view of one output directory. */
export interface OutputGuard {
  /** The output directory, absolute, as given. */
  readonly outDir: string;
  /** Its real path (the guard checks containment against this). */
  readonly realOutDir: string;
  /**
   * Checks that `rel` (relative to `outDir`, or absolute inside it) may be written and
   * returns its absolute path; the path then counts as created by this run.
   * @throws PathPolicyError `write-outside-output`, `write-through-symlink`,
   *   `overwrite-refused`, `path-invalid`, `symlink-loop`
   */
  target(rel: string): string;
  /** `target(rel)` then creates its parent directories (each checked the same way). */
  prepare(rel: string): Promise<string>;
  /** Atomically writes `data` at `rel` (after {@link OutputGuard.target}). Returns the path. */
  writeFile(rel: string, data: Uint8Array | string): Promise<string>;
  /** Marks a file, or a directory and everything below it, as this run's to replace. */
  markOwned(p: string): void;
  /** True when `p` was created by this run or marked owned. */
  owns(p: string): boolean;
  /** Absolute paths handed out by `target`, in order. */
  created(): string[];
}

/** Options of {@link createOutputGuard}. */
export interface OutputGuardOptions {
  /** Create `outDir` (recursively) when missing. Default true. */
  create?: boolean;
  /** Paths (files or directories, relative to `outDir` or absolute) this run may replace. */
  owned?: string[];
}

function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw e;
  }
}

/**
 * Creates the guard for `outDir`. The directory itself may be a symlink (the user chose
 * it); links *inside* it are what the guard polices.
 */
export function createOutputGuard(outDir: string, opts: OutputGuardOptions = {}): OutputGuard {
  validatePathText(outDir);
  const out = path.resolve(outDir);
  assertWritableDir(out);
  if (opts.create !== false) fs.mkdirSync(out, { recursive: true });
  const realOut = realPathOf(out).real;
  const created: string[] = [];
  const createdSet = new Set<string>();
  const ownedFiles = new Set<string>();
  const ownedDirs: string[] = [];

  const owns = (p: string): boolean => {
    const abs = path.resolve(out, p);
    return createdSet.has(abs) || ownedFiles.has(abs) || ownedDirs.some((d) => isInside(d, abs));
  };

  const markOwned = (p: string): void => {
    const abs = path.resolve(out, p);
    const st = lstatOrUndefined(abs);
    if (st?.isDirectory()) ownedDirs.push(abs);
    else ownedFiles.add(abs);
  };

  const target = (rel: string): string => {
    validatePathText(rel);
    const abs = path.resolve(out, rel);
    if (abs === out || !isInside(out, abs)) {
      throw new PathPolicyError('write-outside-output', rel, `write target leaves the output directory ${printable(out)}`);
    }
    // Every existing ancestor must really lie inside the real output directory; a link
    // among them that leads elsewhere would redirect the write.
    const parent = realPathOf(path.dirname(abs), rel).real;
    if (!isInside(realOut, parent)) {
      throw new PathPolicyError(
        'write-through-symlink',
        rel,
        `a symlink redirects this write to ${printable(parent)}, outside the output directory ${printable(realOut)}`,
      );
    }
    const st = lstatOrUndefined(abs);
    if (st && !owns(abs)) {
      if (st.isSymbolicLink()) {
        throw new PathPolicyError('write-through-symlink', rel, 'target is a symlink this run did not create; refusing to replace it');
      }
      throw new PathPolicyError(
        'overwrite-refused',
        rel,
        'file exists and was not created by this run; remove it or choose another output directory',
      );
    }
    if (st?.isDirectory()) {
      throw new PathPolicyError('overwrite-refused', rel, 'target is a directory');
    }
    if (!createdSet.has(abs)) {
      createdSet.add(abs);
      created.push(abs);
    }
    return abs;
  };

  const prepare = async (rel: string): Promise<string> => {
    const abs = target(rel);
    await fsp.mkdir(path.dirname(abs), { recursive: true });
    // Re-check after mkdir: a directory swapped for a link meanwhile is caught here.
    const parent = realPathOf(path.dirname(abs), rel).real;
    if (!isInside(realOut, parent)) {
      throw new PathPolicyError('write-through-symlink', rel, `a symlink redirects this write to ${printable(parent)}`);
    }
    return abs;
  };

  for (const p of opts.owned ?? []) markOwned(p);

  return {
    outDir: out,
    realOutDir: realOut,
    target,
    prepare,
    async writeFile(rel, data) {
      const abs = await prepare(rel);
      await atomicWriteFile(abs, data);
      return abs;
    },
    markOwned,
    owns,
    created: () => [...created],
  };
}

/**
 * Writes one file the user named (`run --dump-logits F`) under the same policy as an output
 * folder: nothing on `/dev`, `/proc` or `/sys` (as root, renaming over `/dev/null` would
 * replace the device with a regular file), no special file replaced, no symlink replaced
 * (rename would swap the link, never write its target — refused, as a symlinked `--out` is).
 * Then an atomic write. Returns the absolute path.
 */
export async function writeOutputFile(cwd: string, given: string, data: Uint8Array | string): Promise<string> {
  const abs = checkOutputFile(cwd, given);
  await atomicWriteFile(abs, data);
  return abs;
}

/** The checks of {@link writeOutputFile}, without writing (run checks before it computes anything). */
export function checkOutputFile(cwd: string, given: string): string {
  validatePathText(given);
  const abs = path.resolve(cwd, given);
  const real = realPathOf(abs).real;
  if (real === '/dev' || real.startsWith('/dev/') || abs.startsWith('/dev/')) {
    throw new PathPolicyError('overwrite-refused', given, 'is under /dev, not a file on disk; write to a file (or "-" for stdout)');
  }
  assertWritableDir(path.dirname(abs));
  const st = lstatOrUndefined(abs);
  if (st?.isSymbolicLink()) {
    throw new PathPolicyError('write-through-symlink', given, 'is a symlink; refusing to replace it (name its target instead)');
  }
  if (st && !st.isFile()) {
    const kind = st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a FIFO' : st.isSocket() ? 'a socket' : 'a device or special file';
    throw new PathPolicyError('overwrite-refused', given, `is ${kind}, not a regular file; refusing to replace it`);
  }
  return abs;
}
