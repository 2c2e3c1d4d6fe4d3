/**
 * Runs CLI commands for the extension: a progress notification with the CLI's percentage and
 * a Cancel that kills the process, every line recorded in the "Weight Spec" log channel, and a
 * one-line error message (with "Show Log") when the run fails. Also finds ONNX Runtime.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { runCli, type CliResult } from '../../core/src/editor/cli-process';
import { installOrt, locateOrt, ORT_PACKAGE, ORT_PROMPT, ORT_VERSION, ortPromptNote } from './ort-locator';
import { cliEnvFor, ortSearch } from './settings';

/** Options of one run. */
export interface RunOptions {
  /** The run needs ONNX Runtime (compile --backend ort, run). */
  needOrt?: boolean;
  cwd?: string;
  resource?: vscode.Uri;
  /** Show the success message (default true). */
  announce?: boolean;
  /** Each stdout chunk as it arrives (Run Prompt streams the answer's text). */
  onStdout?: (chunk: string) => void;
}

/** A finished run, `ok` when the CLI exited 0. */
export type RunResult = CliResult & { ok: boolean };

export class CliRunner {
  readonly cliPath: string;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
  ) {
    this.cliPath = context.asAbsolutePath(path.join('dist', 'cli.js'));
  }

  /** The Node runtime for the CLI: the extension host's own executable, run as plain Node. */
  get node(): string {
    return process.execPath;
  }

  /** Environment for a CLI run: ORT location and qaic-compile path from the settings. */
  async env(opts: { needOrt?: boolean; resource?: vscode.Uri }): Promise<Record<string, string> | undefined> {
    let ortPath: string | undefined;
    if (opts.needOrt) {
      ortPath = await this.ensureOrt(opts.resource);
      if (!ortPath) return undefined;
    }
    return cliEnvFor(opts.resource, ortPath);
  }

  /**
   * The onnxruntime-node package directory, asking once to install it into the extension's
   * storage when none is found. Undefined (after telling the user why) when there is none.
   */
  async ensureOrt(resource?: vscode.Uri): Promise<string | undefined> {
    const found = locateOrt(ortSearch(this.context, resource));
    if (found && 'error' in found) {
      this.log.error(found.error);
      void vscode.window.showErrorMessage(found.error);
      return undefined;
    }
    if (found) {
      this.log.info(`ONNX Runtime: ${found.dir} (${found.source}${found.version ? `, ${found.version}` : ''})`);
      return found.dir;
    }
    const pick = await vscode.window.showWarningMessage(
      `ONNX Runtime (${ORT_PACKAGE}) was not found in the weightSpec.onnxRuntimePath setting or the workspace's node_modules. ` +
        `Install ${ORT_PACKAGE}@${ORT_VERSION} (about 290 MB) once into the extension's storage?`,
      { modal: false },
      ORT_PROMPT.install,
      ORT_PROMPT.settings,
    );
    if (pick !== ORT_PROMPT.install) {
      this.log.warn(ortPromptNote(pick));
      if (pick === ORT_PROMPT.settings) void vscode.commands.executeCommand('workbench.action.openSettings', 'weightSpec.onnxRuntimePath');
      return undefined;
    }
    try {
      return await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Installing ${ORT_PACKAGE}@${ORT_VERSION}`, cancellable: true },
        async (progress, token) => {
          const ac = new AbortController();
          const sub = token.onCancellationRequested(() => ac.abort());
          try {
            return await installOrt(this.context.globalStorageUri.fsPath, {
              signal: ac.signal,
              onLine: (l) => {
                this.log.info(`npm: ${l}`);
                progress.report({ message: l.slice(0, 80) });
              },
            });
          } finally {
            sub.dispose();
          }
        },
      );
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.log.error(msg);
      void vscode.window.showErrorMessage(msg);
      return undefined;
    }
  }

  /** Runs `weight-spec ...args` with a cancellable progress notification titled `title`. */
  async run(title: string, args: string[], opts: RunOptions = {}): Promise<RunResult | undefined> {
    const env = await this.env(opts);
    if (!env) return undefined;
    const shown = ['weight-spec', ...args.map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a))].join(' ');
    this.log.info(`run: ${shown}`);
    const started = Date.now();
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        const ac = new AbortController();
        const sub = token.onCancellationRequested(() => ac.abort());
        let last = 0;
        try {
          return await runCli(
            { node: this.node, cli: this.cliPath, env, ...(opts.cwd ? { cwd: opts.cwd } : {}) },
            args,
            {
              onLine: (line) => this.log.info(`  ${line}`),
              ...(opts.onStdout ? { onChunk: (c: string, s: 'stdout' | 'stderr') => s === 'stdout' && opts.onStdout!(c) } : {}),
              onProgress: (percent, detail) => {
                const inc = Math.max(0, percent - last);
                last = Math.max(last, percent);
                progress.report({ increment: inc, message: `${percent}% ${detail}` });
              },
            },
            ac.signal,
          );
        } finally {
          sub.dispose();
        }
      },
    );
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    const ok = result.code === 0 && !result.cancelled;
    if (result.cancelled) {
      this.log.warn(`cancelled after ${secs} s: ${shown}`);
      void vscode.window.showWarningMessage(`${title}: cancelled (nothing was left half-written).`);
    } else if (!ok) {
      const reason = result.errorLine ?? `exit code ${result.code ?? result.signal}`;
      this.log.error(`failed after ${secs} s: ${reason}`);
      void vscode.window.showErrorMessage(`${title} failed: ${reason.replace(/^weight-spec: /, '')}`, 'Show Log').then((b) => {
        if (b) this.log.show(true);
      });
    } else {
      this.log.info(`done in ${secs} s: ${shown}`);
      if (opts.announce !== false) void vscode.window.showInformationMessage(`${title}: done in ${secs} s.`);
    }
    return { ...result, ok };
  }
}
