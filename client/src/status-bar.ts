/**
 * Status-bar item for the active editor's export: "Weight Spec: not prepared / prepared /
 * compiled / stale", with its error count once the server has checked it; a spec, or any file
 * of an export folder (its model.onnx in the ONNX viewer) selects it. Clicking it opens the matching action (prepare, compile, run, re-run compile) on
 * that spec. The state is read from disk at once (spec-state.ts) and, while the language server
 * runs, refined by its `weightSpec/specState` answer (compile state by fingerprint, problem
 * counts). Re-read when the editor changes, a spec is saved, a command finished, the server
 * says the state changed, or one of the files the state comes from changes on disk.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { SpecStateChangedNotification, SpecStateRequest, type SpecStateResult } from '../../core/src/protocol';
import { onNotification, sendRequest } from './protocol-client';
import { COMPILE_RECORD } from '../../core/src/artifacts/compile-record';
import { EXPORT_REPORT_FILE } from '../../core/src/artifacts/export-report';
import { SENTINEL_FILE } from '../../core/src/artifacts/prepared-manifest';
import {
  isSpecFile,
  specInfo,
  specOfActiveFile,
  stateAction,
  statusLabel,
  type SpecInfo,
  type SpecState,
} from '../../core/src/editor/spec-state';

/** The files the state is read from (the watcher reports every JSON; only these matter here). */
const STATE_FILES = new Set([COMPILE_RECORD, SENTINEL_FILE, EXPORT_REPORT_FILE]);

const ICONS: Record<SpecState, string> = {
  'not-prepared': '$(circle-outline)',
  prepared: '$(pass)',
  compiled: '$(check-all)',
  stale: '$(warning)',
};

export class SpecStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subs: vscode.Disposable[] = [];
  private current?: SpecInfo;
  private client?: LanguageClient;
  private generation = 0;

  /** `watcher`: the context's one file watcher (compile.json, export-report.json and the sentinel are among its files). */
  constructor(
    watcher: vscode.FileSystemWatcher,
    private readonly log?: vscode.LogOutputChannel,
  ) {
    this.item = vscode.window.createStatusBarItem('weightSpec.state', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Weight Spec';
    const onFile = (u: vscode.Uri) => {
      if (STATE_FILES.has(path.basename(u.fsPath)) || isSpecFile(u.fsPath)) this.refresh();
    };
    this.subs.push(
      watcher.onDidChange(onFile),
      watcher.onDidCreate(onFile),
      watcher.onDidDelete(onFile),
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      // A custom editor (the ONNX viewer) is no text editor: its tab says what is active.
      vscode.window.tabGroups.onDidChangeTabs(() => this.refresh()),
      vscode.workspace.onDidSaveTextDocument((d) => {
        if (isSpecFile(d.uri.fsPath)) this.refresh();
      }),
    );
    this.refresh();
  }

  /** Lets the status bar ask the running server (and follow its change notifications) until the returned listener is disposed. */
  attach(client: LanguageClient): vscode.Disposable {
    this.client = client;
    const sub = onNotification(client, SpecStateChangedNotification, (p) => {
      if (this.current && vscode.Uri.file(this.current.spec).toString() === p.uri) this.refresh();
    });
    this.refresh();
    return sub;
  }

  /** The server stopped: show what the disk says until one is attached again. */
  detach(): void {
    this.client = undefined;
    this.refresh();
  }

  /** The state shown now (undefined when no spec is active). */
  get info(): SpecInfo | undefined {
    return this.current;
  }

  refresh(): void {
    const doc = vscode.window.activeTextEditor?.document;
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const active = doc?.uri ?? (input instanceof vscode.TabInputCustom ? input.uri : undefined);
    const spec = active?.scheme === 'file' ? specOfActiveFile(active.fsPath) : undefined;
    if (!spec) {
      // Keep showing the last spec while a non-text view of no export (a settings page, a
      // checkpoint viewer) is active.
      if (this.current && !doc) return;
      this.current = undefined;
      this.item.hide();
      return;
    }
    const uri = vscode.Uri.file(spec);
    const info = specInfo(spec);
    this.current = info;
    this.show(info, undefined, uri);
    const client = this.client;
    if (!client?.isRunning()) return;
    const gen = ++this.generation;
    sendRequest(client, SpecStateRequest, { uri: uri.toString() }).then(
      (r) => {
        if (gen !== this.generation || !r || this.current?.spec !== info.spec) return;
        this.show(info, r, uri);
      },
      (e: unknown) => this.log?.warn(`${SpecStateRequest.method}: ${e instanceof Error ? e.message : String(e)}`),
    );
  }

  private show(info: SpecInfo, server: SpecStateResult | undefined, uri: vscode.Uri): void {
    const a = stateAction(info.state);
    this.item.text = `${server?.errors ? '$(error)' : ICONS[info.state]} Weight Spec: ${statusLabel(info.state, server)}`;
    const lines = [`${path.basename(info.spec)}: ${a.tooltip}`];
    if (info.preparedDir) lines.push(`prepared checkpoint: ${info.preparedDir}`);
    if (server)
      lines.push(`${server.errors} error(s), ${server.warnings} warning(s)${server.codes.length ? `: ${server.codes.join(', ')}` : ''}`);
    if (info.compile.changed?.length) lines.push(`changed since compile: ${info.compile.changed.join(', ')}`);
    this.item.tooltip = lines.join('\n');
    this.item.command = { title: a.label, command: a.command, arguments: [uri] };
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
    for (const s of this.subs) s.dispose();
  }
}
