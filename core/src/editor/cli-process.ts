/**
 * Runs the bundled CLI as a child process: collects stdout, reports progress percentages from
 * its plain progress lines on stderr, and kills it on cancel. Core writes atomically (temp +
 * rename, sentinel last), so a killed run leaves nothing that looks complete. No `vscode`
 * import: unit-tested in client/test with a real child process.
 */
import { spawn } from 'node:child_process';
import { parseCliError, parseProgressLine } from './cli-args';

/** How to start the CLI: the JS runtime, the bundled cli.js and the environment. */
export interface CliLaunch {
  /** The Node executable (the extension host's own, run as plain Node). */
  node: string;
  cli: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
}

/** What a finished run returned. */
export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  cancelled: boolean;
  stdout: string;
  stderr: string;
  /** The last `weight-spec: …` line on stderr (the one-line reason of a failure). */
  errorLine?: string;
  /** That line split into file and message, when it names a file. */
  error?: { file: string; message: string };
}

/** Callbacks while the CLI runs. */
export interface CliHandlers {
  /** Every stderr/stdout line as it arrives. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** A progress percentage (0–100) with the line's detail and label (`prepare`, `export`, …). */
  onProgress?: (percent: number, detail: string, label: string) => void;
  /** Every chunk as it arrives, before it is split into lines (`run --prompt` streams text without line breaks). */
  onChunk?: (chunk: string, stream: 'stdout' | 'stderr') => void;
}

/**
 * What every CLI child gets, however it is started (a command's child process or a task):
 * Electron's binary behaving as Node, plain progress lines, one every 250 ms.
 */
export const CLI_ENV = { ELECTRON_RUN_AS_NODE: '1', WEIGHT_SPEC_PROGRESS: 'plain', WEIGHT_SPEC_PROGRESS_INTERVAL_MS: '250' } as const;

/** {@link CLI_ENV} plus the tools the settings name: qaic-compile and the onnxruntime-node package. */
export function cliToolEnv(tools: { qaicCompilePath?: string; ortPath?: string }): Record<string, string> {
  return {
    ...CLI_ENV,
    ...(tools.qaicCompilePath ? { WEIGHT_SPEC_QAIC_COMPILE: tools.qaicCompilePath } : {}),
    ...(tools.ortPath ? { WEIGHT_SPEC_ORT_PATH: tools.ortPath } : {}),
  };
}

/** `base` (the extension host's environment) with {@link CLI_ENV} and `extra` on top; undefined values dropped. */
export function cliEnv(base: NodeJS.ProcessEnv, extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...base, ...CLI_ENV, ...extra })) {
    if (v !== undefined) env[k] = v;
  }
  return env;
}

/** Starts `node cli.js ...args`; resolves when it exits. `signal` aborting kills it (SIGTERM, then SIGKILL). */
export function runCli(launch: CliLaunch, args: readonly string[], handlers: CliHandlers = {}, signal?: AbortSignal): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(launch.node, [launch.cli, ...args], {
      cwd: launch.cwd,
      env: cliEnv(process.env, launch.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let cancelled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const partial = { stdout: '', stderr: '' };
    const feed = (stream: 'stdout' | 'stderr', chunk: string) => {
      if (stream === 'stdout') stdout += chunk;
      else stderr += chunk;
      handlers.onChunk?.(chunk, stream);
      const text = partial[stream] + chunk;
      const lines = text.split(/\r?\n|\r/);
      partial[stream] = lines.pop() ?? '';
      for (const line of lines) emit(line, stream);
    };
    const emit = (line: string, stream: 'stdout' | 'stderr') => {
      if (line === '') return;
      handlers.onLine?.(line, stream);
      if (stream === 'stderr') {
        const p = parseProgressLine(line);
        if (p) handlers.onProgress?.(p.percent, p.detail, p.label);
      }
    };
    child.stdout.setEncoding('utf8').on('data', (c: string) => feed('stdout', c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => feed('stderr', c));
    const onAbort = () => {
      cancelled = true;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 3000);
    };
    if (signal) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    child.on('error', (e) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new Error(`could not start ${launch.node}: ${e.message}`));
    });
    child.on('close', (code, sig) => {
      if (killTimer) clearTimeout(killTimer);
      signal?.removeEventListener('abort', onAbort);
      for (const s of ['stdout', 'stderr'] as const) if (partial[s]) emit(partial[s], s);
      const errorLine = stderr
        .split(/\r?\n/)
        .filter((l) => l.startsWith('weight-spec: '))
        .pop();
      const error = errorLine ? parseCliError(errorLine) : undefined;
      resolve({ code, signal: sig, cancelled, stdout, stderr, ...(errorLine ? { errorLine } : {}), ...(error ? { error } : {}) });
    });
  });
}
