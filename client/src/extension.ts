import * as vscode from 'vscode';

/** Placeholder activation (replaced by the full extension). */
export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Weight Spec', { log: true });
  context.subscriptions.push(log);
  log.info('activated');
}

export function deactivate(): void {}
