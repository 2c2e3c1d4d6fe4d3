/**
 * The extension's context, as rust-analyzer's `editors/code/src/ctx.ts` has it: one object
 * that owns the language client and everything that lives as long as the extension (log,
 * CLI runner, the one file watcher, status bar, workspace index), registered in
 * `context.subscriptions` so deactivation disposes all of it. The client can be stopped and
 * started again ("Weight Spec: Restart Language Server") without touching the rest.
 */
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { createLanguageClient } from './language-client';
import { CliRunner } from './runner';
import { SpecStatusBar } from './status-bar';
import { WorkspaceIndex } from './workspace-index';

/**
 * The files whose changes matter to the server's checks, the status bar and the tree: graphs,
 * checkpoints, JSON (specs, configs, index files, compile.json, export-report.json) and the
 * prepared sentinel. One watcher for all of them.
 */
export const WATCH_GLOB = '**/{*.safetensors,*.onnx,*.json,.checkpoint_prepared}';

/**
 * Creations and deletions of anything: VS Code can report a folder created or deleted with its
 * files as one event for the folder, which the glob above does not match, so an export folder
 * removed whole kept its spec's Problems and its tree row until reload (and one written whole
 * could miss the tree).
 */
export const FOLDER_GLOB = '**/*';

export class Ctx implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  readonly runner: CliRunner;
  readonly watcher: vscode.FileSystemWatcher;
  /** Creations and deletions ({@link FOLDER_GLOB}): for the server and the tree. */
  readonly folders: vscode.FileSystemWatcher;
  readonly status: SpecStatusBar;
  readonly index: WorkspaceIndex;
  private _client: LanguageClient | undefined;
  /** Listeners bound to the current client; disposed with it on stop/restart. */
  private clientSubs: vscode.Disposable[] = [];
  private readonly subs: vscode.Disposable[] = [];
  private starting: Promise<void> | undefined;

  constructor(readonly extCtx: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Weight Spec', { log: true });
    this.runner = new CliRunner(extCtx, this.log);
    this.watcher = vscode.workspace.createFileSystemWatcher(WATCH_GLOB);
    this.status = new SpecStatusBar(this.watcher, this.log);
    this.folders = vscode.workspace.createFileSystemWatcher(FOLDER_GLOB, false, true, false);
    this.index = new WorkspaceIndex(this.watcher, this.log, 200, this.folders);
    this.subs.push(this.log, this.watcher, this.folders, this.status, this.index);
  }

  /** The running language client (undefined before start, after a failed start, or while stopped). */
  get client(): LanguageClient | undefined {
    return this._client;
  }

  /** Starts the language server; failures are shown and logged, the rest keeps working. */
  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    if (this._client) return;
    const client = createLanguageClient(this.extCtx, this.log, [this.watcher, this.folders]);
    if (!client) return;
    try {
      await client.start();
      this.log.info('language server started');
    } catch (e) {
      const msg = `Weight Spec: the language server failed to start: ${e instanceof Error ? e.message : String(e)}`;
      this.log.error(msg);
      void vscode.window.showErrorMessage(msg);
      await client.dispose().catch(() => undefined);
      return;
    }
    this._client = client;
    this.clientSubs.push(this.status.attach(client));
  }

  /** Stops the language server and drops everything bound to it. */
  async stop(): Promise<void> {
    await this.starting;
    const client = this._client;
    this._client = undefined;
    for (const s of this.clientSubs.splice(0)) s.dispose();
    this.status.detach();
    if (!client) return;
    try {
      await client.stop();
    } catch (e) {
      this.log.warn(`stopping the language server: ${e instanceof Error ? e.message : String(e)}`);
    }
    await client.dispose().catch(() => undefined);
  }

  /** "Weight Spec: Restart Language Server": a fresh server process with the current settings. */
  async restart(): Promise<void> {
    this.log.info('restarting the language server');
    await this.stop();
    await this.start();
  }

  dispose(): void {
    void this.stop();
    for (const s of this.subs.splice(0).reverse()) s.dispose();
  }
}
