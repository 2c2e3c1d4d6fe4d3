/**
 * The extension's entry point: the context object (ctx.ts: log channel "Weight Spec", CLI
 * runner, file watcher, status bar, workspace index, language client), the commands, the
 * `weight-spec` task provider, the "Weight Spec" tree (own activity-bar container) and the read-only Inspect
 * documents. Everything is in `context.subscriptions`. Activation errors are shown and
 * logged, then rethrown so VS Code records the failed activation too.
 */
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { registerCommands } from './commands';
import { Ctx } from './ctx';
import { createDemoModel } from './demo-model';
import { InspectDocuments } from './inspect-document';
import type { SpecInfo } from '../../core/src/editor/spec-state';
import { TASK_TYPE, WeightSpecTaskProvider } from './tasks';
import { registerViewers } from './viewers';
import { ExportTree, TREE_VIEW_ID, type TreeNode } from './tree-view';

/** What activate() returns (used by the e2e tests and other extensions). */
export interface WeightSpecApi {
  /** The CLI the commands and tasks run. */
  cliPath: string;
  /** The state the status bar shows for the active spec. */
  status(): { text: string; info?: SpecInfo; visibleCommand?: string };
  /** The language client, while it runs (undefined when the server is missing or stopped). */
  client(): LanguageClient | undefined;
  /** The "Weight Spec" tree: children of `node` (the export folders without one) and each one's TreeItem. */
  tree(node?: TreeNode): Promise<{ node: TreeNode; item: vscode.TreeItem }[]>;
  /** Resolves after the workspace index has rescanned (the tree's source). */
  rescan(): Promise<void>;
  /** True when the workspace index saw `file` as a weight-free graph (the Export menu hides there). */
  isWeightFree(file: string): boolean;
}

let ctx: Ctx | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<WeightSpecApi> {
  const c = new Ctx(context);
  ctx = c;
  context.subscriptions.push(c);
  try {
    const inspectDocs = new InspectDocuments(c.runner);
    context.subscriptions.push(inspectDocs);
    registerCommands(context, c.runner, inspectDocs, () => {
      c.status.refresh();
      void c.index.refresh();
    });
    registerViewers(context);
    context.subscriptions.push(
      vscode.commands.registerCommand('weightSpec.restartServer', () => c.restart()),
      vscode.commands.registerCommand('weightSpec.refreshTree', () => c.index.refresh()),
      vscode.commands.registerCommand('weightSpec.createDemoModel', (arg?: unknown) => createDemoModel(arg)),
      vscode.tasks.registerTaskProvider(TASK_TYPE, new WeightSpecTaskProvider(context, c.log)),
    );
    const tree = new ExportTree(c.index);
    context.subscriptions.push(tree, vscode.window.createTreeView(TREE_VIEW_ID, { treeDataProvider: tree, showCollapseAll: true }));
    c.log.info(`activated (${context.extension.packageJSON.version as string}, CLI ${c.runner.cliPath})`);
    await c.start();
    return {
      cliPath: c.runner.cliPath,
      status: () => ({
        text: c.status.item.text,
        ...(c.status.info ? { info: c.status.info } : {}),
        ...(c.status.item.command && typeof c.status.item.command === 'object' ? { visibleCommand: c.status.item.command.command } : {}),
      }),
      client: () => c.client,
      tree: async (node) => (await tree.getChildren(node)).map((n) => ({ node: n, item: tree.getTreeItem(n) })),
      rescan: () => c.index.refresh(),
      isWeightFree: (file) => c.index.isWeightFree(file),
    };
  } catch (e) {
    const msg = `Weight Spec failed to activate: ${e instanceof Error ? e.message : String(e)}`;
    c.log.error(msg);
    void vscode.window.showErrorMessage(msg);
    throw e;
  }
}

/** Stops the language server and waits for it (VS Code disposes the subscriptions after this). */
export async function deactivate(): Promise<void> {
  await ctx?.stop();
  ctx = undefined;
}
