/**
 * Status-bar item for the active spec: "Weight Spec: not prepared / prepared / compiled /
 * stale"; clicking it opens the matching action (prepare, compile, run, re-run compile) on
 * that spec. Re-read when the editor changes, a spec is saved, a command finished, or one of
 * the files the state comes from changes on disk.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { isSpecFile, specInfo, stateAction, type SpecInfo } from './spec-state';

export class SpecStatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private readonly subs: vscode.Disposable[] = [];
  private current?: SpecInfo;

  constructor() {
    this.item = vscode.window.createStatusBarItem('weightSpec.state', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Weight Spec';
    const w = vscode.workspace.createFileSystemWatcher('**/{compile.json,.checkpoint_prepared,export-report.json}');
    this.subs.push(
      w,
      w.onDidChange(() => this.refresh()),
      w.onDidCreate(() => this.refresh()),
      w.onDidDelete(() => this.refresh()),
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      vscode.workspace.onDidSaveTextDocument((d) => {
        if (isSpecFile(d.uri.fsPath)) this.refresh();
      }),
    );
    this.refresh();
  }

  /** The state shown now (undefined when no spec is active). */
  get info(): SpecInfo | undefined {
    return this.current;
  }

  refresh(): void {
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || doc.uri.scheme !== 'file' || !isSpecFile(doc.uri.fsPath)) {
      // Keep showing the last spec while another kind of editor (the log, a settings page) is active.
      if (this.current && !doc) return;
      this.current = undefined;
      this.item.hide();
      return;
    }
    const info = specInfo(doc.uri.fsPath);
    this.current = info;
    const a = stateAction(info.state);
    const icon = { 'not-prepared': '$(circle-outline)', prepared: '$(pass)', compiled: '$(check-all)', stale: '$(warning)' }[info.state];
    this.item.text = `${icon} Weight Spec: ${a.label}`;
    this.item.tooltip = `${path.basename(info.spec)}: ${a.tooltip}${info.preparedDir ? `\nprepared checkpoint: ${info.preparedDir}` : ''}`;
    this.item.command = { title: a.label, command: a.command, arguments: [doc.uri] };
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
    for (const s of this.subs) s.dispose();
  }
}
