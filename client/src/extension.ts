/**
 * The extension's entry point: log channel "Weight Spec", commands, `weight-spec` task
 * provider, status bar, and the language client for dist/server.js. Activation errors are
 * shown and logged, then rethrown so VS Code records the failed activation too.
 */
import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { registerCommands } from './commands';
import { startLanguageClient } from './language-client';
import { CliRunner } from './runner';
import type { SpecInfo } from '../../core/src/editor/spec-state';
import { SpecStatusBar } from './status-bar';
import { TASK_TYPE, WeightSpecTaskProvider } from './tasks';
import { registerViewers } from './viewers';

/** What activate() returns (used by the e2e tests and other extensions). */
export interface WeightSpecApi {
  /** The CLI the commands and tasks run. */
  cliPath: string;
  /** The state the status bar shows for the active spec. */
  status(): { text: string; info?: SpecInfo; visibleCommand?: string };
  /** The language client, once started (undefined when the server is missing). */
  client(): LanguageClient | undefined;
}

let client: LanguageClient | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<WeightSpecApi> {
  const log = vscode.window.createOutputChannel('Weight Spec', { log: true });
  context.subscriptions.push(log);
  try {
    const runner = new CliRunner(context, log);
    const status = new SpecStatusBar(log);
    context.subscriptions.push(status);
    registerCommands(context, runner, () => status.refresh());
    registerViewers(context);
    context.subscriptions.push(vscode.tasks.registerTaskProvider(TASK_TYPE, new WeightSpecTaskProvider(context, log)));
    log.info(`activated (${context.extension.packageJSON.version as string}, CLI ${runner.cliPath})`);
    client = await startLanguageClient(context, log);
    if (client) status.attach(client);
    return {
      cliPath: runner.cliPath,
      status: () => ({
        text: status.item.text,
        ...(status.info ? { info: status.info } : {}),
        ...(status.item.command && typeof status.item.command === 'object' ? { visibleCommand: status.item.command.command } : {}),
      }),
      client: () => client,
    };
  } catch (e) {
    const msg = `Weight Spec failed to activate: ${e instanceof Error ? e.message : String(e)}`;
    log.error(msg);
    void vscode.window.showErrorMessage(msg);
    throw e;
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
