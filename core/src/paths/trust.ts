/**
 * Paths that come from files in a workspace. A repository is untrusted input: its
 * `export-report.json`, `compile.json` and `weight_spec.json` were written by whoever wrote
 * the repository, so a path in them may only name something inside the user's roots (the
 * workspace folders, `--root`, `weightSpec.roots`) or inside the folder holding that file.
 * A path the user gave (a flag, a picker, a setting) is not judged here.
 *
 * The path text is resolved against the folder of the file it was read from (never against
 * a process's cwd), and judged twice: lexically, and by where it really leads once the links
 * already on disk are followed (a repository can ship a symlink as easily as a JSON value).
 */
import path from 'node:path';
import { PathPolicyError, printable } from './policy-error';
import { isInside, realPathOf } from './read-policy';

/** The verdict on one path read from a file. */
export interface FilePathVerdict {
  /** The file the path was read from. */
  file: string;
  /** The field holding it (`prepared.dir`, `artifacts.model`, …). */
  field: string;
  /** The text as written. */
  value: string;
  /** Absolute, resolved against the file's folder. */
  abs: string;
  /** True when it lies inside the file's folder or a root, lexically and once links are followed. */
  inside: boolean;
  /** When outside: one line naming the file, the field and where the path leads. */
  message?: string;
}

function realOf(p: string): string {
  try {
    return realPathOf(p).real;
  } catch {
    return p;
  }
}

/** The folders a path read from `file` may name: its own folder, then `roots` (absolute). */
export function trustedFolders(file: string, roots: readonly string[]): string[] {
  const out = [path.dirname(path.resolve(file))];
  for (const r of roots) if (!out.includes(path.resolve(r))) out.push(path.resolve(r));
  return out;
}

/**
 * Judges `value`, read from field `field` of `file`, against `file`'s folder and `roots`.
 * Never throws (a non-string or empty value is "outside", with a message).
 */
export function judgeFilePath(file: string, field: string, value: unknown, roots: readonly string[]): FilePathVerdict {
  const folders = trustedFolders(file, roots);
  const shownFile = printable(file);
  if (typeof value !== 'string' || value === '' || value.includes('\0')) {
    const v = typeof value === 'string' ? value : String(value);
    return { file, field, value: v, abs: '', inside: false, message: `${shownFile}: "${field}" is not a usable path` };
  }
  const abs = path.resolve(folders[0]!, value);
  const real = realOf(abs);
  const realFolders = folders.map(realOf);
  const lexical = folders.some((f) => isInside(f, abs)) || realFolders.some((f) => isInside(f, abs));
  const really = realFolders.some((f) => isInside(f, real));
  if (lexical && really) return { file, field, value, abs, inside: true };
  const leads = real !== abs && lexical ? ` (a symlink leads it to ${printable(real)})` : '';
  return {
    file,
    field,
    value,
    abs,
    inside: false,
    message:
      `${shownFile}: "${field}" names ${printable(abs)}${leads}, outside the workspace (${realFolders.map(printable).join(', ')}); ` +
      'a path read from a file in the workspace may only name something inside it',
  };
}

/** {@link judgeFilePath}, throwing its one-line message as a {@link PathPolicyError} (`path-outside-root`). */
export function confineFilePath(file: string, field: string, value: unknown, roots: readonly string[]): string {
  const v = judgeFilePath(file, field, value, roots);
  if (!v.inside) throw new PathPolicyError('path-outside-root', file, v.message!.slice(printable(file).length + 2));
  return v.abs;
}
