/**
 * What a CLI command is: its flags, positionals, usage text and a `run` that returns the exit
 * code. One file per command under `commands/` exports one of these; main.ts dispatches.
 */
import type { FlagDefs, ParsedArgs } from './args';
import { escapeControls } from '../display';

/** Streams and environment a command runs with (tests pass their own). */
export interface CliIO {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** A command of `weight-spec`. */
export interface CommandSpec<F extends FlagDefs = FlagDefs> {
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Synopsis lines, without the `weight-spec ` prefix, e.g. `check <weight_spec.json> [--json]`. */
  synopsis: string[];
  /** Extra help text after the flag list. */
  details?: string[];
  flags: F;
  /** How many positional arguments are accepted, and their names for messages. */
  positionals: { min: number; max: number; names: string[] };
  /**
   * Does the work. Return the exit code (0 ok, 1 failure); throw `UsageError` for exit 2 and
   * `FormatError`/`PipelineError` for a one-line failure (exit 1).
   */
  run(args: ParsedArgs<F>, io: CliIO): Promise<number>;
}

/** Identity helper that keeps the flag types of a command literal. */
export function defineCommand<const F extends FlagDefs>(spec: CommandSpec<F>): CommandSpec<F> {
  return spec;
}

/** Writes a line to a stream. */
export function println(stream: NodeJS.WritableStream, line = ''): void {
  stream.write(escapeControls(line) + '\n');
}
