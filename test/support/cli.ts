/**
 * The CLI in this process: `main(argv, io)` with captured streams. For tests about what a
 * command does (files, messages, exit codes) rather than about the process (signals, stdio,
 * the bundle) — it skips a Node start-up and the bundle load per call. Tests about the
 * process keep spawning `dist/cli.js`.
 */
import { PassThrough } from 'node:stream';
import { main } from '../../core/src/cli/main';
import { REPO_ROOT } from './fixtures';

/** What a CLI call printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

function sink(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** Runs `weight-spec <args>` in-process (progress off unless `env` says otherwise). */
export async function cliInProcess(args: string[], o: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  const out = sink();
  const err = sink();
  const code = await main(args, {
    stdout: out.stream,
    stderr: err.stream,
    cwd: o.cwd ?? REPO_ROOT,
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', ...o.env },
  });
  await new Promise((r) => setImmediate(r));
  return { code, stdout: out.text(), stderr: err.text() };
}

/**
 * `weight-spec <args>` in-process with `cwd` as its folder (the repository root when
 * undefined): its stdout, throwing with the command and its stderr unless it exits 0.
 */
export async function cliStdout(cwd: string | undefined, ...args: string[]): Promise<string> {
  const r = await cliInProcess(args, cwd === undefined ? {} : { cwd });
  if (r.code !== 0) throw new Error(`weight-spec ${args.join(' ')} → exit ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}
