/**
 * The language client for the bundled `dist/server.js` (over IPC), for weight-spec documents.
 * Made, not started: the context object (ctx.ts) owns, starts, stops and restarts it. A
 * missing server is shown to the user and logged; the commands and tasks keep working.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import type { ServerInitOptions } from '../../core/src/protocol';

/** Spec files by name (package.json's `languages` and `jsonValidation` name the same two). */
export const SPEC_FILE_PATTERN = '**/{weight_spec.json,*.weight_spec.json}';

/** A client for the bundled server, or undefined (after saying why) when the server is missing. */
export function createLanguageClient(
  context: vscode.ExtensionContext,
  log: vscode.LogOutputChannel,
  watchers: vscode.FileSystemWatcher[],
): LanguageClient | undefined {
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
    // weight-spec documents, and specs a user opens as JSON (files.associations → json/jsonc,
    // to have their JSON formatter and settings apply): the server checks them all the same.
    documentSelector: [
      { scheme: 'file', language: 'weight-spec' },
      ...['json', 'jsonc'].map((language) => ({ scheme: 'file', language, pattern: SPEC_FILE_PATTERN })),
    ],
    synchronize: {
      // The whole `weightSpec` section goes to the server at start and on every change; the
      // server's roots are the workspace folders (kept by the client's workspace-folders
      // feature) plus weightSpec.roots from this section, each replaced when it changes — so
      // a root removed from the settings, or a folder removed from the workspace, stops
      // admitting paths. (Roots are not passed in initializationOptions: those never change.)
      configurationSection: 'weightSpec',
      // The context's watchers (its files, and folders created or deleted); the client only listens
      // to them (the context disposes them).
      fileEvents: watchers,
    },
    // The status bar listens to specStateChanged; the lenses run the extension's own commands.
    // workspaceDiagnostics: closed specs of the workspace are checked too (Problems lists them).
    initializationOptions: { specStateChanged: true, clientCommands: true, workspaceDiagnostics: true } satisfies ServerInitOptions,
    outputChannel: log,
  };
  return new LanguageClient('weightSpec', 'Weight Spec Language Server', serverOptions, clientOptions);
}
