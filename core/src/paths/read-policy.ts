/**
 * Read side of the path policy. A path written in a spec (or an ONNX external-data
 * `location`) is relative to the directory holding that file. The path *text* is what an
 * untrusted spec controls, so it is judged lexically: absolute paths and `..` segments are
 * accepted only when the normalized result stays inside a root. Symlinks already on disk
 * were made by the user (QEfficient links the prepared directory beside the ONNX), so they
 * are followed, and the target is reported so hover can show where a link leads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PathPolicyError, printable } from './policy-error';

/** Longest path accepted (Linux PATH_MAX minus the terminator), in UTF-8 bytes. */
export const MAX_PATH_BYTES = 4095;
/** Longest single path segment accepted (NAME_MAX), in UTF-8 bytes. */
export const MAX_SEGMENT_BYTES = 255;

/** Result of {@link resolveReadPath}. */
export interface ReadPath {
  /** Absolute, lexically normalized path (what the tool opens). */
  abs: string;
  /** Where the path really leads once every symlink is followed (= `abs` when none). */
  real: string;
  /** True when some component of the path (below its root) is a symlink. */
  viaSymlink: boolean;
  /** False when nothing exists at the path (the caller reports `file-missing`). */
  exists: boolean;
  /** The root that allowed the path. */
  root: string;
}

/**
 * Refuses path text no file system call should see: non-strings, empty, NUL bytes (which
 * C APIs would silently truncate), paths beyond PATH_MAX and segments beyond NAME_MAX.
 */
export function validatePathText(p: unknown): asserts p is string {
  if (typeof p !== 'string') throw new PathPolicyError('path-invalid', String(p), 'path is not a string');
  if (p.length === 0) throw new PathPolicyError('path-invalid', p, 'path is empty');
  if (p.includes('\0')) throw new PathPolicyError('path-invalid', p, 'path contains a NUL byte');
  const bytes = Buffer.byteLength(p, 'utf8');
  if (bytes > MAX_PATH_BYTES) {
    throw new PathPolicyError('path-invalid', p, `path is ${bytes} bytes long (limit ${MAX_PATH_BYTES})`);
  }
  for (const seg of p.split(/[\\/]/)) {
    if (Buffer.byteLength(seg, 'utf8') > MAX_SEGMENT_BYTES) {
      throw new PathPolicyError('path-invalid', p, `a path segment is longer than ${MAX_SEGMENT_BYTES} bytes`);
    }
  }
}

/** True when `child` is `parent` or lies below it (both absolute; lexical comparison). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!path.isAbsolute(rel) && rel !== '..' && !rel.startsWith(`..${path.sep}`));
}

/** `realpath`, or `undefined` when the path does not exist; ELOOP becomes `symlink-loop`. */
function realOrUndefined(p: string, shown: string): string | undefined {
  try {
    return fs.realpathSync.native(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new PathPolicyError('symlink-loop', shown, 'symlinks form a loop');
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ENAMETOOLONG') throw new PathPolicyError('path-invalid', shown, 'path is too long once links are followed');
    // EACCES and the like: the reader will fail with its own message; report "not there".
    return undefined;
  }
}

/**
 * Where a (possibly missing) path leads: realpath of the deepest existing ancestor joined
 * with the remaining components.
 */
export function realPathOf(abs: string, shown = abs): { real: string; exists: boolean } {
  const whole = realOrUndefined(abs, shown);
  if (whole !== undefined) return { real: whole, exists: true };
  let dir = abs;
  const rest: string[] = [];
  for (;;) {
    const parent = path.dirname(dir);
    rest.unshift(path.basename(dir));
    if (parent === dir) return { real: abs, exists: false };
    dir = parent;
    const r = realOrUndefined(dir, shown);
    if (r !== undefined) return { real: path.join(r, ...rest), exists: false };
  }
}

/** Absolute roots, `baseDir` first (a spec may always name files below its own directory). */
export function effectiveRoots(baseDir: string, roots: readonly string[] = []): string[] {
  const out = [path.resolve(baseDir)];
  for (const r of roots) {
    const a = path.resolve(baseDir, r);
    if (!out.includes(a)) out.push(a);
  }
  return out;
}

/**
 * The root that lexically contains `abs`, comparing against each root as written and as
 * its real path (a root given through a symlink still admits paths spelled with its target).
 */
function containingRoot(abs: string, roots: string[]): string | undefined {
  for (const r of roots) if (isInside(r, abs)) return r;
  for (const r of roots) {
    const real = realOrUndefined(r, r);
    if (real !== undefined && isInside(real, abs)) return real;
  }
  return undefined;
}

/**
 * Lexical part of the policy, without touching the disk beyond the roots' real paths:
 * returns the absolute path and the root admitting it, or throws {@link PathPolicyError}.
 */
export function checkReadPathText(baseDir: string, p: string, roots: readonly string[] = []): { abs: string; root: string } {
  validatePathText(p);
  const all = effectiveRoots(baseDir, roots);
  const abs = path.resolve(all[0]!, p);
  const root = containingRoot(abs, all);
  if (root === undefined) {
    const how = path.isAbsolute(p) ? 'absolute path' : 'path with ".."';
    throw new PathPolicyError(
      'path-outside-root',
      p,
      `${how} resolves to ${printable(abs)}, outside the allowed roots (${all.map(printable).join(', ')}); ` +
        'add a root with --root or the weightSpec.roots setting',
    );
  }
  return { abs, root };
}

/**
 * Resolves a path written in a spec (or an ONNX external-data location) for reading.
 *
 * @param baseDir directory of the spec or ONNX file the path was written in
 * @param p the path text as written
 * @param roots extra allowed roots (`--root`, `weightSpec.roots`, workspace folders);
 *   `baseDir` is always allowed
 * @throws PathPolicyError `path-outside-root`, `path-invalid` or `symlink-loop`
 */
export function resolveReadPath(baseDir: string, p: string, roots: readonly string[] = []): ReadPath {
  const { abs, root } = checkReadPathText(baseDir, p, roots);
  const { real, exists } = realPathOf(abs, p);
  const rootReal = realOrUndefined(root, root) ?? root;
  const expected = path.join(rootReal, path.relative(root, abs));
  return { abs, real, viaSymlink: real !== expected, exists, root };
}

/** Non-throwing form of {@link resolveReadPath} for diagnostics code. */
export function tryResolveReadPath(
  baseDir: string,
  p: string,
  roots: readonly string[] = [],
): { ok: true; value: ReadPath } | { ok: false; error: PathPolicyError } {
  try {
    return { ok: true, value: resolveReadPath(baseDir, p, roots) };
  } catch (e) {
    if (e instanceof PathPolicyError) return { ok: false, error: e };
    throw e;
  }
}
