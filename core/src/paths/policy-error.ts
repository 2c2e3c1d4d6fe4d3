/**
 * The one error type of the path policy. It is a {@link UsageError} (the user, or a spec the
 * user opened, asked for a path the tool will not touch), carrying a stable `code` so the
 * checker and the language server can turn it into a {@link Problem} with the same code.
 */
import { UsageError } from '../errors';

/**
 * Stable codes of refused paths.
 * - `path-outside-root`: a read path (absolute or with `..`) leaves every configured root.
 * - `path-invalid`: empty, NUL byte, over-long path or path segment.
 * - `symlink-loop`: following links never reaches a file (ELOOP).
 * - `write-outside-output`: a write target leaves the output directory.
 * - `write-through-symlink`: a write would go through (or replace) a symlink, or a link
 *   inside the output directory leads out of it.
 * - `overwrite-refused`: the target exists and was not created (or marked owned) by this run.
 */
export type PathPolicyCode =
  'path-outside-root' | 'path-invalid' | 'symlink-loop' | 'write-outside-output' | 'write-through-symlink' | 'overwrite-refused';

/**
 * A path refused by the policy. `message` is one line naming the path and the reason. The
 * command line was fine, the path was not: the CLI exits 1 without printing the usage.
 */
export class PathPolicyError extends UsageError {
  override readonly name = 'PathPolicyError';
  override readonly exitCode = 1;
  constructor(
    /** Stable machine-readable reason (also used as the Problem code). */
    readonly code: PathPolicyCode,
    /** The path as the user or the spec wrote it. */
    readonly path: string,
    /** Why, without the path. */
    readonly detail: string,
  ) {
    super(`${printable(path)}: ${detail}`);
  }
}

/** Paths can hold NUL and control characters; messages must stay one readable line. */
export function printable(p: string): string {
  const shown = p.length > 200 ? `${p.slice(0, 120)}…(${p.length} chars)` : p;
  return JSON.stringify(shown).slice(1, -1).replace(/\\"/g, '"');
}
