/**
 * `weight-spec <command>`: argument parsing and dispatch. Exit codes are the CLI contract:
 * 0 ok, 1 failure (one line `weight-spec: <message>` on stderr, never a stack trace),
 * 2 usage error (unknown command or flag, missing argument) with a short usage text.
 */
import { closestWord } from '../foundation/closest-word';
import { FormatError, oneLine, PipelineError, UsageError } from '../errors';
import { describeFlags, parseArgs } from './args';
import { errnoSentence } from './input-paths';
import { abandonWork, setWorkNotices } from '../paths';
import { println, type CliIO, type CommandSpec } from './command';
import { checkCommand } from './commands/check';
import { compileCommand } from './commands/compile';
import { demoCommandWith } from './commands/demo';
import { exportCommand } from './commands/export';
import { inspectCommand } from './commands/inspect';
import { prepareCommand } from './commands/prepare';
import { runCommand } from './commands/run';
import { escapeControls } from '../display';

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  exportCommand,
  prepareCommand,
  compileCommand,
  runCommand,
  checkCommand,
  inspectCommand,
  demoCommandWith(main),
] as unknown as CommandSpec[];

const VERSION = '0.1.0';

/** The top-level usage text. */
export function usage(): string {
  const w = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'usage: weight-spec <command> [options]',
    '',
    'Weight-free ONNX export for LLMs: the graph holds no weights, weight_spec.json says which',
    'safetensors tensor feeds each weight input.',
    '',
    'commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(w)}  ${c.summary}`),
    '',
    "Run 'weight-spec <command> --help' for a command's options.",
  ].join('\n');
}

/** Usage text of one command. */
export function commandUsage(c: CommandSpec): string {
  const flags = describeFlags({ ...c.flags, help: { type: 'boolean', description: 'show this help' } });
  return [
    ...c.synopsis.map((s, i) => `${i === 0 ? 'usage:' : '      '} weight-spec ${s}`),
    '',
    c.summary,
    '',
    'options:',
    ...flags,
    ...(c.details?.length ? ['', ...c.details] : []),
  ].join('\n');
}

/** Runs the CLI with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const [name, ...rest] = argv;
  setWorkNotices((line) => println(io.stderr, `weight-spec: ${line}`));
  if (name === undefined) {
    println(io.stderr, usage());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const c = rest[0] !== undefined ? COMMANDS.find((x) => x.name === rest[0]) : undefined;
    if (rest[0] !== undefined && !c) return usageError(io, unknownCommand(rest[0]), usage());
    println(io.stdout, c ? commandUsage(c) : usage());
    return 0;
  }
  if (name === '--version' || name === '-V') {
    println(io.stdout, VERSION);
    return 0;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) return usageError(io, unknownCommand(name), usage());
  if (rest.includes('--help') || rest.includes('-h')) {
    const dd = rest.indexOf('--');
    const idx = Math.max(rest.indexOf('--help'), rest.indexOf('-h'));
    if (dd < 0 || idx < dd) {
      println(io.stdout, commandUsage(cmd));
      return 0;
    }
  }
  try {
    const args = parseArgs(rest, cmd.flags, cmd.name);
    const { min, max, names } = cmd.positionals;
    if (args.positionals.length < min) {
      throw new UsageError(`${cmd.name}: missing argument <${names[args.positionals.length] ?? 'argument'}>`);
    }
    if (args.positionals.length > max) {
      throw new UsageError(`${cmd.name}: unexpected argument "${args.positionals[max]}"`);
    }
    return await cmd.run(args, io);
  } catch (err) {
    if (err instanceof UsageError && err.exitCode === 2) return usageError(io, err.message, commandUsage(cmd));
    println(io.stderr, `weight-spec: ${failureMessage(err)}`);
    if (io.env.WEIGHT_SPEC_DEBUG && err instanceof Error && err.stack) println(io.stderr, err.stack);
    return 1;
  }
}

function unknownCommand(name: string): string {
  const hit = closestWord(
    name,
    COMMANDS.map((c) => c.name),
  );
  return `unknown command "${name}"${hit ? ` (did you mean "${hit}"?)` : ''}`;
}

function failureMessage(err: unknown): string {
  if (err instanceof FormatError || err instanceof PipelineError || err instanceof UsageError) return oneLine(err);
  const e = err as NodeJS.ErrnoException;
  if (e && typeof e === 'object' && typeof e.code === 'string' && typeof e.path === 'string') {
    return `${e.path}: ${errnoSentence(e.code) ?? oneLine(err)}`;
  }
  return oneLine(err);
}

function usageError(io: CliIO, message: string, text: string): number {
  println(io.stderr, `weight-spec: ${message}`);
  println(io.stderr, '');
  println(io.stderr, text);
  return 2;
}

/** The process entry point (the bundle's `dist/cli.js`). */
export function runCli(): void {
  const io: CliIO = { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env: process.env };
  // Closed pipes (`weight-spec inspect … | head`) are not a failure.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  });
  // Ctrl-C / kill: remove this run's temporaries and lock, say what state the output is in,
  // exit 128 + signal number (130 SIGINT, 143 SIGTERM). Worker threads end with the process.
  for (const [sig, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    process.once(sig, () => {
      const lines = abandonWork();
      process.stderr.write(
        `${process.stderr.isTTY ? '\n' : ''}weight-spec: interrupted (${sig})${lines.length ? `: ${lines.join('; ')}` : ''}\n`,
      );
      process.exit(code);
    });
  }
  // Until main settles the process stays: an await on something that holds no event-loop
  // handle (a native callback) must not let Node exit early with the default code 0, a
  // success nothing was done for.
  const alive = setInterval(() => undefined, 2 ** 30);
  main(process.argv.slice(2), io).then(
    (code) => {
      clearInterval(alive);
      process.exitCode = code;
    },
    (err: unknown) => {
      clearInterval(alive);
      process.stderr.write(`weight-spec: ${escapeControls(oneLine(err), true)}\n`);
      process.exitCode = 1;
    },
  );
}

if (typeof require !== 'undefined' && typeof module !== 'undefined' && require.main === module) runCli();
