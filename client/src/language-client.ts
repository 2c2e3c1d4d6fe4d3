/**
 * Starts the language server (the bundled `dist/server.js`, over IPC) for weight-spec
 * documents. A missing or failing server is shown to the user and logged; the commands and
 * tasks keep working without it.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import type { ServerInitOptions } from '../../core/src/protocol';
import { settings } from './settings';

export async function startLanguageClient(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): Promise<LanguageClient | undefined> {
  const module = context.asAbsolutePath(path.join('dist', 'server.js'));
  if (!fs.existsSync(module)) {
    const msg = `Weight Spec: the language server ${module} is missing (build with npm run build); diagnostics are off.`;
    log.error(msg);
    void vscode.window.showErrorMessage(msg);
    return undefined;
  }
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.ipc },
    debug: { module, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file', language: 'weight-spec' }],
    synchronize: {
      configurationSection: 'weightSpec',
      fileEvents: vscode.workspace.createFileSystemWatcher('**/{*.safetensors,*.onnx,*.json,.checkpoint_prepared}'),
    },
    // The status bar listens to specStateChanged; the lenses run the extension's own commands.
    initializationOptions: { roots: settings().roots, specStateChanged: true, clientCommands: true } satisfies ServerInitOptions,
  };
  const client = new LanguageClient('weightSpec', 'Weight Spec Language Server', serverOptions, clientOptions);
  try {
    await client.start();
    log.info(`language server started (${module})`);
  } catch (e) {
    const msg = `Weight Spec: the language server failed to start: ${e instanceof Error ? e.message : String(e)}`;
    log.error(msg);
    void vscode.window.showErrorMessage(msg);
    return undefined;
  }
  return client;
}
