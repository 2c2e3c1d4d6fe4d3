/**
 * The CLI's contract for paths a user names (issue 15.4): a mistake in the command line
 * (unknown flag, missing argument) is a usage error, exit 2; a path that does not exist, is
 * of the wrong kind or cannot be read is a failure of the run, exit 1, in one sentence in the
 * user's words — "no such file or directory", "is a file, expected a folder", "is a folder,
 * expected a file", "permission denied" — checked before any work starts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, UsageError } from '../errors';
import { badRevisionOf, parseModelId, resolveModelId, type HubOrigin } from '../hub/hf-cache';
import { specialKind } from '../paths';
import { printable } from '../paths/policy-error';

/** Files that name a checkpoint by themselves: one safetensors file, an index, a torch .bin. */
export const CHECKPOINT_FILES: readonly string[] = ['.safetensors', '.json', '.bin'];

/** What a path must be: a folder, a file, or either (a checkpoint folder or one safetensors file). */
export type PathKind = 'dir' | 'file' | 'file-or-dir';

/** One sentence for a failed fs call on a path the user gave (ENOENT → "no such file or directory", …). */
export function errnoSentence(code: string | undefined): string | undefined {
  switch (code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'a part of the path is a file, not a folder';
    case 'EISDIR':
      return 'is a folder, expected a file';
    case 'EEXIST':
      return 'already exists';
    case 'ELOOP':
      return 'symlinks form a loop';
    case 'ENAMETOOLONG':
      return 'the path is too long';
    case 'ENOSPC':
      return 'no space left on the device';
    case 'EROFS':
      return 'is on a read-only file system';
    default:
      return undefined;
  }
}

/**
 * Checks a path given on the command line and returns it absolute (resolved against `cwd`).
 * `hint` is added to the message when the path is of the wrong kind (e.g. where `--onnx` fits).
 * `exts`, for `file-or-dir`: the file endings a file may have (else "is a file, expected a folder").
 * @throws FormatError naming the path, with one sentence
 */
export function requirePath(cwd: string, given: string, kind: PathKind, hint = '', exts?: readonly string[]): string {
  const abs = path.resolve(cwd, given);
  const fail = (what: string): never => {
    throw new FormatError(printable(given), `${what}${hint ? ` — ${hint}` : ''}`);
  };
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new FormatError(printable(given), errnoSentence(code) ?? `cannot be read (${code ?? (e as Error).message})`);
  }
  if (st.isDirectory()) {
    if (kind === 'file') fail('is a folder, expected a file');
    try {
      fs.accessSync(abs, fs.constants.R_OK | fs.constants.X_OK);
    } catch {
      throw new FormatError(printable(given), 'permission denied (the folder cannot be listed)');
    }
    return abs;
  }
  const special = specialKind(st);
  if (special !== undefined) throw new FormatError(printable(given), `is ${special}, expected a ${kind === 'dir' ? 'folder' : 'file'}`);
  if (kind === 'dir') fail('is a file, expected a folder');
  if (exts && !exts.some((e) => abs.endsWith(e))) fail(`is a file, expected a folder (or a ${exts.join(' / ')} file)`);
  try {
    fs.accessSync(abs, fs.constants.R_OK);
  } catch {
    throw new FormatError(printable(given), 'permission denied');
  }
  return abs;
}

/** An output folder: may not exist yet; when it exists it must be a folder. Returns it absolute. */
export function requireOutDir(cwd: string, given: string): string {
  if (given.trim() === '') throw new FormatError('--out', 'is empty; name the output folder');
  const abs = path.resolve(cwd, given);
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(abs);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new FormatError(printable(given), errnoSentence(code) ?? `cannot be used (${code})`);
  }
  if (st && !st.isDirectory())
    throw new FormatError(
      printable(given),
      `is ${specialKind(st) === undefined ? 'a file' : specialKind(st)}, expected a folder for the output`,
    );
  return abs;
}

/**
 * A model folder as the user named it: a path (a local folder of that name wins), or a Hub id
 * `org/name[@revision]` (or `revision` from `--revision`) resolved in the local Hugging Face cache
 * (core/src/hub/hf-cache.ts). Returns the absolute folder and, for an id, where it came from.
 * @throws FormatError naming what was looked at, as {@link requirePath} and `resolveModelId` do
 */
export function requireModelPath(
  cwd: string,
  given: string,
  o: { env: NodeJS.ProcessEnv; revision?: string | undefined; hint?: string; exts?: readonly string[] },
): { path: string; hub?: HubOrigin } {
  const bad = badRevisionOf(given);
  if (bad !== undefined)
    throw new FormatError(
      printable(given),
      `"${printable(bad)}" is not a revision of a model id (a branch, tag or commit name, without "." or ".." parts)`,
    );
  const abs = path.resolve(cwd, given);
  const id = parseModelId(given);
  if (fs.existsSync(abs) || !id) {
    if (o.revision !== undefined)
      throw new UsageError(`--revision goes with a model id (org/name), not with the folder ${printable(given)}`);
    return { path: requirePath(cwd, given, 'file-or-dir', o.hint, o.exts) };
  }
  if (id.revision && o.revision !== undefined && id.revision !== o.revision)
    throw new UsageError(`${given} names revision ${id.revision} and --revision says ${o.revision}: give one`);
  const hub = resolveModelId(id.id, id.revision ?? o.revision, o.env, abs);
  return { path: hub.dir, hub };
}
