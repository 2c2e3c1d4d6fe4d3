/**
 * Inspect's output as a read-only document of its own scheme (`weight-spec-inspect:`), not an
 * Untitled buffer that asks to be saved: a TextDocumentContentProvider serves the text of
 * `weight-spec inspect <file>`. The URI is the inspected file's path with `.inspect.txt`
 * appended (so the tab says `model.onnx.inspect.txt`); the text the Inspect command just got
 * from the CLI is served from memory, and a URI opened another way (a restored tab) runs the
 * CLI itself.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { runCli } from '../../core/src/editor/cli-process';
import type { CliRunner } from './runner';
import { cliEnvFor } from './settings';

export const INSPECT_SCHEME = 'weight-spec-inspect';
const SUFFIX = '.inspect.txt';

/** The read-only document URI showing the inspection of `file`. */
export function inspectUri(file: string): vscode.Uri {
  return vscode.Uri.from({ scheme: INSPECT_SCHEME, path: vscode.Uri.file(file).path + SUFFIX });
}

/** The inspected file of an inspect URI. */
export function inspectedFile(uri: vscode.Uri): string {
  return vscode.Uri.file(uri.path.endsWith(SUFFIX) ? uri.path.slice(0, -SUFFIX.length) : uri.path).fsPath;
}

/** The text shown for `file`, given the CLI's output. */
export function inspectText(file: string, stdout: string): string {
  return `# weight-spec inspect ${file}\n\n${stdout}`;
}

export class InspectDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly texts = new Map<string, string>();
  private readonly subs: vscode.Disposable[];

  constructor(private readonly runner: CliRunner) {
    this.subs = [
      this.changed,
      vscode.workspace.registerTextDocumentContentProvider(INSPECT_SCHEME, this),
      // Forget a document's text once its tab is gone.
      vscode.workspace.onDidCloseTextDocument((d) => {
        if (d.uri.scheme === INSPECT_SCHEME) this.texts.delete(d.uri.toString());
      }),
    ];
  }

  /** Shows `text` (the CLI's output for `file`) as the read-only document of `file`, refreshing an open one. */
  async show(file: string, stdout: string): Promise<vscode.TextDocument> {
    const uri = inspectUri(file);
    const had = this.texts.has(uri.toString());
    this.texts.set(uri.toString(), inspectText(file, stdout));
    if (had) this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
    return doc;
  }

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const known = this.texts.get(uri.toString());
    if (known !== undefined) return known;
    const file = inspectedFile(uri);
    const ac = new AbortController();
    const sub = token.onCancellationRequested(() => ac.abort());
    try {
      const r = await runCli(
        { node: this.runner.node, cli: this.runner.cliPath, env: cliEnvFor(vscode.Uri.file(file)), cwd: path.dirname(file) },
        ['inspect', file],
        {},
        ac.signal,
      );
      const text = r.code === 0 ? inspectText(file, r.stdout) : `# weight-spec inspect ${file}\n\n${r.errorLine ?? r.stderr}`;
      this.texts.set(uri.toString(), text);
      return text;
    } finally {
      sub.dispose();
    }
  }

  dispose(): void {
    for (const s of this.subs.splice(0)) s.dispose();
  }
}
