/**
 * The language client for the bundled `dist/server.js` (over IPC), for weight-spec documents.
 * Made, not started: the context object (ctx.ts) owns, starts, stops and restarts it. A
 * missing server is shown to the user and logged; the commands and tasks keep working.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import { CLIENT_COMMANDS, TENSOR_FRAGMENT, type ServerInitOptions } from '../../core/src/protocol';
import { revealTensorOnOpen } from './viewers/provider';

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
    // tensorLinks: F12 on a key answers its shard at `#tensor=<key>`; the hover links run openTensor.
    initializationOptions: {
      specStateChanged: true,
      clientCommands: true,
      workspaceDiagnostics: true,
      tensorLinks: true,
    } satisfies ServerInitOptions,
    markdown: { isTrusted: { enabledCommands: [CLIENT_COMMANDS.openTensor] } },
    middleware: {
      // A shard at a tensor: the plain file opens (the checkpoint viewer is its default
      // editor), told beforehand to scroll to the key.
      provideDefinition: async (document, position, token, next) => atTensor(await next(document, position, token)),
    },
    outputChannel: log,
  };
  return new LanguageClient('weightSpec', 'Weight Spec Language Server', serverOptions, clientOptions);
}

type Definitions = vscode.Definition | vscode.DefinitionLink[] | null | undefined;

/** The definition with each tensor link (core's tensorLinkUri) made a plain file location whose viewer scrolls to the key. */
function atTensor(d: Definitions): Definitions {
  const plain = (uri: vscode.Uri): vscode.Uri => {
    // vscode.Uri has decoded the fragment already
    if (!uri.fragment.startsWith(TENSOR_FRAGMENT)) return uri;
    const file = uri.with({ fragment: '' });
    revealTensorOnOpen(file.fsPath, uri.fragment.slice(TENSOR_FRAGMENT.length));
    return file;
  };
  if (!d) return d;
  if (d instanceof vscode.Location) return new vscode.Location(plain(d.uri), d.range);
  return (d as (vscode.Location | vscode.LocationLink)[]).map((l) =>
    l instanceof vscode.Location ? new vscode.Location(plain(l.uri), l.range) : { ...l, targetUri: plain(l.targetUri) },
  ) as vscode.Definition | vscode.DefinitionLink[];
}
