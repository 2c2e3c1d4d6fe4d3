/**
 * Errors and problems shared by every part of weight-spec.
 *
 * Two kinds of failure exist: a corrupt or unreadable *file* (raised as {@link FormatError},
 * always naming the file and, where known, the byte) and a *finding* about a spec that is
 * still readable (reported as a {@link Problem} value so the CLI, the language server and
 * tests can all consume the same data).
 */

/** A file is malformed. The message is one line: `<file>: <what> (at byte N)`. */
export class FormatError extends Error {
  override readonly name = 'FormatError';
  constructor(
    /** The file the problem was found in. */
    readonly file: string,
    /** What is wrong, without the file name. */
    readonly detail: string,
    /** Byte offset of the problem in the file, when known. */
    readonly byte?: number,
  ) {
    super(`${file}: ${detail}${byte !== undefined ? ` (at byte ${byte})` : ''}`);
  }
}

/**
 * The user asked for something that cannot be done (bad flag, missing input, refused path).
 * `exitCode` is what the CLI exits with: 2 (a mistake in the command line, usage printed)
 * unless a subclass says otherwise.
 */
export class UsageError extends Error {
  override readonly name: string = 'UsageError';
  readonly exitCode: 1 | 2 = 2;
}

/** A failure of a pipeline step with a one-line reason (exit code 1 in the CLI). */
export class PipelineError extends Error {
  override readonly name = 'PipelineError';
}

// Severity, OffsetRange and Problem live beside the codes (problem-codes.ts), so the two files form no import cycle.
export type { OffsetRange, Problem, Severity } from './problem-codes';

/** Turns any thrown value into a one-line message fit for stderr or a diagnostic. */
export function oneLine(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  return msg.split('\n')[0]!.trim();
}
