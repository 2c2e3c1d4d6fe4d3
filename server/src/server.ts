/**
 * The weight_spec.json language server: a thin adapter over core. `createServer(connection)`
 * wires every LSP feature onto a connection (stdio/IPC in main.ts, in-memory streams in the
 * tests). Diagnostics are exactly core's problems (the `weight-spec check` output).
 */
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import {
  CodeActionKind,
  CodeLensRefreshRequest,
  DidChangeWorkspaceFoldersNotification,
  ExecuteCommandRequest,
  FileChangeType,
  TextDocumentSyncKind,
  type Connection,
  type InitializeParams,
  type InitializeResult,
  type WorkspaceFoldersChangeEvent,
} from 'vscode-languageserver/node';
import type { CheckRun } from '../../core/src/check';
import {
  SERVER_COMMANDS,
  SpecStateChangedNotification,
  SpecStateRequest,
  type ServerInitOptions,
  type SpecStateResult,
} from '../../core/src/protocol';
import { executeCommand, type CommandSettings } from './commands';
import { registerFeatures } from './features';
import { compileStateOf } from './compile-state';
import { SpecDocuments, uriToPath, type SpecDoc } from './documents';
import { FsWatchers, missedByClient, type FsWatchOptions } from './fs-watch';
import { connectionLog, guarded, guardedNotification } from './guard';
import { affects, dependenciesOf, WatchRegistry, type Dependencies } from './watch';
import { isWithin, WorkspaceDiagnostics } from './workspace-diagnostics';

/** Options of {@link createServer} (tests lower the debounce; initializationOptions override). */
export interface ServerOptions {
  debounceMs?: number;
  /** Debounce of the server's own file watching (default 100 ms). */
  watchDebounceMs?: number;
  /** Options of the server's own file watching (its polling fallback). */
  watchOptions?: FsWatchOptions;
  /** The bundled CLI the server's commands run (main.ts: dist/cli.js beside dist/server.js). */
  cliPath?: string;
}

/** Handle on a running server (for tests). */
export interface WeightSpecServer {
  documents: SpecDocuments;
  /** The workspace scan, when the client asked for it (initializationOptions.workspaceDiagnostics). */
  workspaceDiagnostics(): WorkspaceDiagnostics | undefined;
}

/** Registers all handlers on `connection` (the caller calls `connection.listen()`). */
export function createServer(connection: Connection, options: ServerOptions = {}): WeightSpecServer {
  const log = connectionLog(connection);
  const deps = new Map<string, Dependencies>();
  const watches = new WatchRegistry(connection, log);
  let codeLensRefresh = false;
  // Custom notifications go only to a client that declared it handles them (Neovim drops them).
  let specStateChanged = false;
  // The lenses carry the extension's commands only when it runs them itself.
  let clientCommands = false;
  /** The client opens a shard at a tensor (initializationOptions.tensorLinks): definition.ts. */
  let tensorLinks = false;
  let progressSupport = false;
  /** The client takes a list-wide edit range (CompletionList.itemDefaults, LSP 3.17): items then carry no range each. */
  let completionEditRange = false;
  let configurationSupport = false;
  let initSettings: CommandSettings = {};
  let trustWorkspaceSettings = false;
  /**
   * The server's own watchers (made at initialize): every dependency folder when the client
   * cannot watch, else those outside the workspace folders or behind a symlink, which a
   * client need not report whatever it claims (eglot 1.9 watches only folders of project files).
   */
  let ownWatch: FsWatchers | undefined;
  /** Diagnostics of the closed specs of the workspace (initializationOptions.workspaceDiagnostics). */
  let workspaceDiags: WorkspaceDiagnostics | undefined;
  /** Re-checks the specs `filter` picks; resolves once their diagnostics are published. */
  const filesChanged = (filter: (d: SpecDoc) => boolean): Promise<void> => {
    const checks = documents.recheckAll(filter);
    if (codeLensRefresh) void connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
    if (inlayRefresh) void connection.languages.inlayHint.refresh().catch(() => undefined);
    return Promise.all(checks).then(() => undefined);
  };
  let inlayRefresh = false;
  // Allowed roots by where they came from; each source replaces its own part, so a removed
  // workspace folder or a root dropped from the settings stops admitting paths.
  const rootSources = { init: [] as string[], folders: [] as string[], settings: [] as string[] };
  const applyRoots = (): void => {
    documents.roots = [...new Set([...rootSources.init, ...rootSources.folders, ...rootSources.settings])];
  };
  const documents: SpecDocuments = new SpecDocuments(connection, log, {
    checked(d, run) {
      const dep = dependenciesOf(d.file, run);
      deps.set(d.uri, dep);
      watches.update([...deps.values()].flatMap((x) => [...x.dirs]));
      if (ownWatch)
        ownWatch.update(
          d.uri,
          // a folder reached through the export's report, not a path of the spec, the client's
          // watching (through the spec's paths or its project's files) may miss, as a linked one
          watches.dynamic ? [...dep.dirs].filter((x) => dep.reported.has(x) || missedByClient(x, rootSources.folders)) : dep.dirs,
        );
      if (specStateChanged) void connection.sendNotification(SpecStateChangedNotification, { uri: d.uri }).catch(() => undefined);
    },
    closed(d) {
      deps.delete(d.uri);
      ownWatch?.remove(d.uri);
      watches.update([...deps.values()].flatMap((x) => [...x.dirs]));
      workspaceDiags?.closed(d.file);
    },
  });
  if (options.debounceMs !== undefined) documents.debounceMs = options.debounceMs;

  /** The check of the current text of `uri` (undefined when not open or superseded repeatedly). */
  const runOf = async (uri: string): Promise<{ d: SpecDoc; run: CheckRun } | undefined> => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const d = documents.docs.get(uri);
      if (!d) return undefined;
      const run = await documents.ready(d);
      if (run && documents.docs.get(uri) === d) return { d, run };
    }
    return undefined;
  };

  connection.onInitialize((params: InitializeParams): InitializeResult => {
    try {
      const init = initOptionsOf(params.initializationOptions);
      rootSources.init = rootsOf(init) ?? [];
      if (params.workspaceFolders) {
        rootSources.folders = params.workspaceFolders.map((f) => uriToPath(f.uri)).filter((p): p is string => !!p);
      } else if (params.rootUri) {
        const p = uriToPath(params.rootUri);
        if (p) rootSources.folders = [p];
      }
      applyRoots();
      if (typeof init.debounceMs === 'number' && init.debounceMs >= 0) documents.debounceMs = init.debounceMs;
      if (init.workspaceDiagnostics === true) {
        workspaceDiags = new WorkspaceDiagnostics({
          connection,
          log,
          cache: documents.cache,
          roots: () => documents.roots,
          isOpen: (uri) => documents.docs.has(uri),
        });
      }
      const experimental = params.capabilities.experimental as { weightSpec?: { specStateChanged?: unknown } } | undefined;
      specStateChanged = init.specStateChanged === true || experimental?.weightSpec?.specStateChanged === true;
      clientCommands = init.clientCommands === true;
      tensorLinks = init.tensorLinks === true;
      progressSupport = params.capabilities.window?.workDoneProgress === true;
      completionEditRange = params.capabilities.textDocument?.completion?.completionList?.itemDefaults?.includes('editRange') === true;
      configurationSupport = params.capabilities.workspace?.configuration === true;
      initSettings = settingsOf(init);
      trustWorkspaceSettings = init.trustWorkspaceSettings === true;
      const ws = params.capabilities.workspace;
      watches.dynamic = !!ws?.didChangeWatchedFiles?.dynamicRegistration;
      watches.relativePatterns = !!ws?.didChangeWatchedFiles?.relativePatternSupport;
      ownWatch = new FsWatchers(
        (uris) => void filesChanged((d) => uris.includes(d.uri)),
        options.watchDebounceMs ?? 100,
        options.watchOptions,
      );
      codeLensRefresh = !!ws?.codeLens?.refreshSupport;
      inlayRefresh = !!ws?.inlayHint?.refreshSupport;
    } catch (err) {
      log.error(`initialize: ${String(err)}`);
    }
    return {
      capabilities: {
        // save: the lens's compile state reads the saved file, so a save refreshes the lenses.
        textDocumentSync: { openClose: true, change: TextDocumentSyncKind.Incremental, save: { includeText: false } },
        hoverProvider: true,
        definitionProvider: true,
        completionProvider: { triggerCharacters: ['"', '.'] },
        documentSymbolProvider: true,
        inlayHintProvider: true,
        documentFormattingProvider: true,
        codeLensProvider: { resolveProvider: false },
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
        executeCommandProvider: { commands: Object.values(SERVER_COMMANDS), workDoneProgress: true },
        workspace: { workspaceFolders: { supported: true, changeNotifications: true } },
      },
      serverInfo: { name: 'weight-spec', version: '0.1.0' },
    };
  });

  connection.onDidOpenTextDocument(
    guardedNotification(log, 'didOpen', (p) => {
      documents.open(p.textDocument.uri, p.textDocument.languageId, p.textDocument.version, p.textDocument.text);
    }),
  );
  connection.onDidChangeTextDocument(
    guardedNotification(log, 'didChange', (p) => {
      documents.change(p.textDocument.uri, p.textDocument.version, p.contentChanges);
    }),
  );
  connection.onDidCloseTextDocument(guardedNotification(log, 'didClose', (p) => documents.close(p.textDocument.uri)));
  connection.onDidSaveTextDocument(
    guardedNotification(log, 'didSave', (p) => {
      // compile.json's spec fingerprint uses the saved file: refresh the lens state.
      const d = documents.docs.get(p.textDocument.uri);
      if (d && codeLensRefresh) void connection.sendRequest(CodeLensRefreshRequest.type).catch(() => undefined);
    }),
  );

  connection.onDidChangeWatchedFiles(
    guardedNotification(log, 'didChangeWatchedFiles', (p) => {
      const changed = p.changes.map((c) => uriToPath(c.uri)).filter((x): x is string => !!x);
      if (changed.length === 0) return;
      // A spec deleted from disk (itself or its folder) leaves Problems; one created again returns.
      const paths = (t: FileChangeType) =>
        p.changes
          .filter((c) => c.type === t)
          .map((c) => uriToPath(c.uri))
          .filter((x): x is string => !!x);
      const gone = paths(FileChangeType.Deleted);
      const back = new Set(paths(FileChangeType.Created));
      for (const d of documents.docs.values()) {
        if (!d.file) continue;
        if (back.has(d.file)) d.deletedOnDisk = false;
        else if (gone.some((g) => isWithin(d.file, g)) && !fs.existsSync(d.file)) d.deletedOnDisk = true;
      }
      if (gone.length) workspaceDiags?.deleted(gone);
      void filesChanged((d) => back.has(d.file) || !!d.deletedOnDisk || changed.some((c) => affects(deps.get(d.uri), c)));
      workspaceDiags?.filesChanged(changed);
    }),
  );

  /** Replaces the roots that came from the settings; re-checks when they changed. */
  const settingsRoots = (roots: string[] | undefined): void => {
    if (!roots || roots.join('\n') === rootSources.settings.join('\n')) return;
    rootSources.settings = roots;
    applyRoots();
    documents.cache.clear();
    documents.recheckAll();
    workspaceDiags?.recheckAll();
  };
  /** Pulls `weightSpec.roots` through workspace/configuration (Helix, eglot, lspconfig answer it). */
  const pullRoots = async (): Promise<void> => {
    if (!configurationSupport) return;
    try {
      settingsRoots(rootsOf(await connection.workspace.getConfiguration('weightSpec')));
    } catch {
      /* the client does not answer: the pushed and initial roots stay */
    }
  };
  connection.onDidChangeConfiguration(
    guardedNotification(log, 'didChangeConfiguration', (p) => {
      // Pushed settings (the extension's synchronize.configurationSection), else pull them: a
      // client of the pull model sends this notification with `settings: null`.
      const pushed = rootsOf((p.settings as { weightSpec?: unknown } | null | undefined)?.weightSpec);
      if (pushed) settingsRoots(pushed);
      else void pullRoots();
    }),
  );

  const foldersChanged = guardedNotification(log, 'didChangeWorkspaceFolders', (e: WorkspaceFoldersChangeEvent) => {
    const removed = new Set(e.removed.map((f) => uriToPath(f.uri)));
    const added = e.added.map((f) => uriToPath(f.uri)).filter((x): x is string => !!x);
    rootSources.folders = [...rootSources.folders.filter((r) => !removed.has(r)), ...added];
    applyRoots();
    documents.cache.clear();
    documents.recheckAll();
    workspaceDiags?.start(rootSources.folders);
  });
  connection.onInitialized(() => {
    void pullRoots();
    workspaceDiags?.start(rootSources.folders);
    // The library's workspace-folders feature owns the notification when the client declared
    // support (it would replace a handler set here); otherwise listen to it directly.
    try {
      connection.workspace.onDidChangeWorkspaceFolders(foldersChanged);
    } catch {
      connection.onNotification(DidChangeWorkspaceFoldersNotification.type, (p) => foldersChanged(p.event));
    }
  });

  registerFeatures(connection, {
    log,
    documents,
    runOf,
    completionEditRange: () => completionEditRange,
    tensorLinks: () => tensorLinks,
    clientCommands: () => clientCommands,
  });

  const settingsFor = async (file: string): Promise<CommandSettings> => {
    if (!configurationSupport) return initSettings;
    try {
      const got: unknown = await connection.workspace.getConfiguration({ scopeUri: pathToFileURL(file).toString(), section: 'weightSpec' });
      const { qaicCompilePath, onnxRuntimePath, ...rest } = settingsOf(got);
      // Code to run comes from the user's own configuration unless the client vouches for the project's.
      const code = trustWorkspaceSettings
        ? { ...(qaicCompilePath ? { qaicCompilePath } : {}), ...(onnxRuntimePath ? { onnxRuntimePath } : {}) }
        : {};
      return { ...initSettings, ...rest, ...code };
    } catch {
      return initSettings;
    }
  };
  // Not connection.onExecuteCommand: it deletes params.workDoneToken before the handler runs,
  // so a client's own token would be lost (and a second progress created).
  connection.onRequest(ExecuteCommandRequest.type, (p, token) =>
    executeCommand(
      {
        connection,
        cliPath: options.cliPath ?? 'cli.js',
        settings: settingsFor,
        roots: () => documents.roots,
        progressSupport,
        finished() {
          // Files the command wrote change the checks (a prepared dir appears): re-check now,
          // whether or not any watcher reports it, and publish before the reply: a client may
          // leave what follows a reply unread until the server next writes (jsonrpc 1.0.14,
          // eglot on Emacs 28), so diagnostics sent after it would look stale.
          return filesChanged(() => true);
        },
      },
      p,
      token,
      p.workDoneToken !== undefined ? connection.window.attachWorkDoneProgress(p.workDoneToken) : undefined,
    ),
  );

  connection.onRequest(
    SpecStateRequest,
    guarded(log, SpecStateRequest.method, null, async (p) => {
      const r = await runOf(p.uri);
      if (!r) return null;
      const { run, d } = r;
      const errors = run.problems.filter((x) => x.severity === 'error').length;
      const spec = run.parsed.spec;
      return {
        uri: p.uri,
        ...(d.published ? { version: d.published.version } : {}),
        errors,
        warnings: run.problems.length - errors,
        codes: [...new Set(run.problems.map((x) => x.code))].sort(),
        inputs: spec?.inputs.length ?? 0,
        files: (spec?.files ?? []).map((f, i) => ({
          path: f.path,
          ...(run.files[i]?.abs ? { abs: run.files[i]!.abs } : {}),
          readable: !!run.files[i]?.header,
          ...(run.files[i]?.header ? { tensors: run.files[i]!.header!.tensors.size } : {}),
        })),
        ...(run.onnx ? { onnx: run.onnx.file } : {}),
        compile: d.file ? compileStateOf(d.file) : { state: 'never-compiled' },
      } satisfies SpecStateResult;
    }),
  );

  connection.onShutdown(() => {
    ownWatch?.dispose();
    workspaceDiags?.dispose();
    for (const uri of [...documents.docs.keys()]) documents.close(uri);
  });

  return { documents, workspaceDiagnostics: () => workspaceDiags };
}

/**
 * initializationOptions with a nested `weightSpec` object merged over the flat keys: Helix
 * sends its `config` table (written as `config.weightSpec`, which also answers
 * workspace/configuration) as initializationOptions.
 */
function initOptionsOf(v: unknown): ServerInitOptions {
  const o = v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  const nested = o.weightSpec && typeof o.weightSpec === 'object' ? (o.weightSpec as Record<string, unknown>) : {};
  return { ...o, ...nested } as ServerInitOptions;
}

/** The `roots` string list in a settings object, or undefined when it has none. */
function rootsOf(v: unknown): string[] | undefined {
  const roots = v && typeof v === 'object' ? (v as { roots?: unknown }).roots : undefined;
  return Array.isArray(roots) ? roots.filter((r): r is string => typeof r === 'string') : undefined;
}

/** The command settings in `v` (initializationOptions or the `weightSpec` configuration section). */
function settingsOf(v: unknown): CommandSettings {
  const o = v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  const str = (k: string) => (typeof o[k] === 'string' ? { [k]: o[k] as string } : {});
  return {
    ...str('defaultDtype'),
    ...str('compileBackend'),
    ...str('qaicCompilePath'),
    ...str('onnxRuntimePath'),
    ...(typeof o.maxRamGb === 'number' ? { maxRamGb: o.maxRamGb } : {}),
  };
}
