/**
 * `workspace/executeCommand` for clients other than the extension (Neovim, Helix, Emacs): the
 * lenses' prepare, compile and inspect run the bundled CLI (`dist/cli.js`, core's command
 * line) as a child process — the same argument lists the extension builds (core/src/editor/cli-args.ts)
 * and the same runner (core/src/editor/cli-process.ts) — with `window/workDoneProgress` when the
 * client supports it, cancel (request cancellation or the progress's Cancel) and a message
 * with the result or the CLI's one-line error. A child process keeps prepare's memory and a
 * crash out of the server, and a cancel is the CLI's own interrupt cleanup.
 */
import path from 'node:path';
import {
  MessageType,
  type CancellationToken,
  type Connection,
  type ExecuteCommandParams,
  type WorkDoneProgressReporter,
} from 'vscode-languageserver/node';
import { compileArgs, prepareArgs, type Backend } from '../../core/src/editor/cli-args';
import { linkPreparedFolder } from '../../core/src/artifacts/prepared-link';
import { isPrepareDtype } from '../../core/src/formats/dtype';
import { cliToolEnv, runCli, type CliResult } from '../../core/src/editor/cli-process';
import { isSpecFile, specInfo } from '../../core/src/editor/spec-state';
import { compileOutside, outsideRefusal, prepareTargets } from '../../core/src/editor/workspace-trust';
import { isInside } from '../../core/src/paths';
import { SERVER_COMMANDS, type ServerCommandResult } from '../../core/src/protocol';
import { uriToPath } from './documents';

/** Settings the commands read (the extension's `weightSpec.*` settings, same names). */
export interface CommandSettings {
  defaultDtype?: string;
  maxRamGb?: number;
  compileBackend?: string;
  qaicCompilePath?: string;
  onnxRuntimePath?: string;
}

/** What the commands need from the server. */
export interface CommandContext {
  connection: Connection;
  /** dist/cli.js. */
  cliPath: string;
  /** The settings for a file (workspace/configuration, else initializationOptions). */
  settings(file: string): Promise<CommandSettings>;
  /**
   * The workspace roots (folders, `weightSpec.roots`): paths read from files in the workspace
   * (export-report.json, compile.json, the spec) must stay inside them or the export folder.
   */
  roots(): readonly string[];
  /** The client shows `window/workDoneProgress` created by the server. */
  progressSupport: boolean;
  /** Called when a command finished (re-check the specs, refresh the lenses); the reply waits for it. */
  finished(): void | Promise<void>;
}

type Planned = {
  title: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  done: (r: CliResult) => string;
  /** Run after the CLI succeeded; its line (when any) is logged. */
  after?: () => Promise<string | undefined>;
};

/** Runs one server command; always resolves (errors become a message and `ok: false`). */
export async function executeCommand(
  ctx: CommandContext,
  params: ExecuteCommandParams,
  token: CancellationToken,
  /** The progress of the client's `workDoneToken`, when the request carried one. */
  attached: WorkDoneProgressReporter | undefined,
): Promise<ServerCommandResult> {
  let result: ServerCommandResult;
  try {
    const plan = await planCommand(ctx, params.command, params.arguments?.[0]);
    result = await runPlanned(ctx, plan, token, attached);
  } catch (err) {
    result = { ok: false, message: `weight-spec: ${err instanceof Error ? err.message : String(err)}` };
  }
  void ctx.connection
    .sendNotification('window/showMessage', {
      type: result.ok ? MessageType.Info : result.cancelled ? MessageType.Warning : MessageType.Error,
      message: result.message,
    })
    .catch(() => undefined);
  await ctx.finished();
  return result;
}

/** The spec file an argument names (a `file:` URI or a path). */
function fileOf(arg: unknown): string {
  if (typeof arg !== 'string' || arg === '') throw new Error('the command needs a file URI as its argument');
  const file = arg.startsWith('file:') ? uriToPath(arg) : path.resolve(arg);
  if (!file) throw new Error(`not a file URI: ${arg}`);
  return file;
}

/** An executeCommand argument (any client may send one) must name a file inside the roots, when there are roots. */
function confinedArgument(file: string, roots: readonly string[]): void {
  if (roots.length === 0 || roots.some((r) => isInside(path.resolve(r), file))) return;
  throw new Error(`${file}: the command's argument is outside the workspace (${roots.join(', ')})`);
}

/** The refusal of a Prepare whose output folder no workspace file names. */
function noPreparedOut(file: string): string {
  return (
    `${file}: its export recorded no prepared folder (export-report.json "prepared.dir") and the spec names no file, ` +
    'so Prepare has no output folder inside the workspace; run weight-spec prepare --checkpoint <dir> --out <dir>'
  );
}

async function planCommand(ctx: CommandContext, command: string, arg: unknown): Promise<Planned> {
  const file = fileOf(arg);
  const roots = ctx.roots();
  confinedArgument(file, roots);
  const s = await ctx.settings(file);
  const env = cliToolEnv({ qaicCompilePath: s.qaicCompilePath || undefined, ortPath: s.onnxRuntimePath || undefined });
  switch (command) {
    case SERVER_COMMANDS.prepare: {
      if (!isSpecFile(file)) throw new Error(`${file}: prepare from the editor needs a weight_spec.json`);
      const info = specInfo(file);
      const targets = prepareTargets(file, roots);
      const refused = outsideRefusal(targets.outside);
      if (refused) throw new Error(refused);
      if (!targets.checkpoint) {
        throw new Error(
          `${file}: its export recorded no source checkpoint (export-report.json); run weight-spec prepare --checkpoint <dir> --out <dir>`,
        );
      }
      const fallback = isPrepareDtype(s.defaultDtype) ? s.defaultDtype : 'float32';
      const dtype = isPrepareDtype(info.dtype) ? info.dtype : fallback;
      const maxRamGb = typeof s.maxRamGb === 'number' && s.maxRamGb > 0 ? s.maxRamGb : undefined;
      // Absolute paths, resolved against the report (never against the CLI's cwd).
      const checkpoint = targets.checkpoint.abs;
      // Never without an --out confined to the workspace: the CLI's default output is named
      // after the checkpoint folder (and for a Hugging Face snapshot lies outside the workspace).
      const out = targets.out?.abs;
      if (!out) throw new Error(noPreparedOut(file));
      const args = prepareArgs({ checkpoint, dtype, out, ...(maxRamGb ? { maxRamGb } : {}) });
      return {
        title: `Preparing ${path.basename(checkpoint)} (${dtype})`,
        args,
        cwd: checkpoint,
        env,
        done: () => `Prepared ${checkpoint} into ${out}`,
        // QEfficient's link from the export to the folder just made: the spec's own paths resolve.
        after: async () => {
          const l = await linkPreparedFolder(path.dirname(file), out);
          return 'linked' in l ? (l.made ? `linked ${l.linked} -> ${out}` : undefined) : `no link to ${out}: ${l.skipped}`;
        },
      };
    }
    case SERVER_COMMANDS.compile:
    case SERVER_COMMANDS.recompile: {
      const force = command === SERVER_COMMANDS.recompile;
      const exportDir = isSpecFile(file) ? path.dirname(file) : file;
      const refused = outsideRefusal(compileOutside(exportDir, roots));
      if (refused) throw new Error(refused);
      const backend: Backend = s.compileBackend === 'qaic' ? 'qaic' : 'ort';
      return {
        title: `${force ? 'Re-compiling' : 'Compiling'} ${path.basename(exportDir)} (${backend})`,
        args: compileArgs({ exportDir, backend, force }),
        cwd: exportDir,
        env,
        done: () => `Compiled ${exportDir} (${backend})`,
      };
    }
    case SERVER_COMMANDS.inspect:
      return {
        title: `Inspecting ${path.basename(file)}`,
        args: ['inspect', file],
        cwd: path.dirname(file),
        env,
        done: (r) => `Inspected ${file}: ${r.stdout.trim().split('\n').length} lines (in the server log)`,
      };
    default:
      throw new Error(`unknown command ${command}`);
  }
}

async function runPlanned(
  ctx: CommandContext,
  plan: Planned,
  token: CancellationToken,
  attached?: WorkDoneProgressReporter,
): Promise<ServerCommandResult> {
  const abort = new AbortController();
  const reporter =
    attached ?? (ctx.progressSupport ? await ctx.connection.window.createWorkDoneProgress().catch(() => undefined) : undefined);
  reporter?.begin(plan.title, 0, undefined, true);
  const cancels = [token.onCancellationRequested(() => abort.abort())];
  if (reporter && 'token' in reporter)
    cancels.push((reporter as { token: CancellationToken }).token.onCancellationRequested(() => abort.abort()));
  // A cancel that came before the handler ran: the token's listener is not called for it.
  if (token.isCancellationRequested) abort.abort();
  try {
    const r = await runCli(
      { node: process.execPath, cli: ctx.cliPath, env: plan.env, cwd: plan.cwd },
      plan.args,
      {
        onProgress: (percent, detail) => reporter?.report(percent, detail),
      },
      abort.signal,
    );
    if (r.cancelled) {
      // The CLI's interrupt line says what it removed or kept ("nothing was written to …").
      const said = r.errorLine?.replace(/^weight-spec: /, '');
      return { ok: false, cancelled: true, message: `${plan.title}: cancelled${said ? ` — ${said}` : ''}` };
    }
    if (r.code !== 0) return { ok: false, message: r.errorLine ?? `${plan.title}: the CLI exited with ${r.code ?? r.signal}` };
    if (r.stdout.trim()) ctx.connection.console.log(r.stdout.trimEnd());
    const line = await plan.after?.().catch((e: unknown) => `${plan.title}: ${e instanceof Error ? e.message : String(e)}`);
    if (line) ctx.connection.console.log(line);
    return { ok: true, message: plan.done(r), ...(r.stdout ? { output: r.stdout } : {}) };
  } finally {
    for (const c of cancels) c.dispose();
    reporter?.done();
  }
}
