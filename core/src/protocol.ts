/**
 * Custom LSP messages shared by the language server (server/) and the extension (client/),
 * one typed definition per message (as rust-analyzer's lsp_ext.ts): a `RequestType` /
 * `NotificationType` carries the method name with its parameter and result types, so a
 * handler or a call with the wrong shape does not compile. No dependency on vscode.
 *
 * The types come from vscode-languageserver-protocol, the version the server library uses;
 * the extension's vscode-languageclient 9 ships an older vscode-jsonrpc whose classes are
 * nominally different, so client/src/protocol-client.ts bridges by method name with these types.
 */
import { NotificationType, RequestType } from 'vscode-languageserver-protocol';
import type { CompileStatus } from './compile/status';

/** Commands the server's code lenses invoke; the extension registers them. */
export const CLIENT_COMMANDS = {
  /** `weightSpec.prepare(specUri: string, options?)`; the lens passes {@link PREPARE_LENS_OPTIONS}. */
  prepare: 'weightSpec.prepare',
  /** `weightSpec.compile(specUri: string)` */
  compile: 'weightSpec.compile',
  /** `weightSpec.recompile(specUri: string)` (= compile --force) */
  recompile: 'weightSpec.recompile',
  /** `weightSpec.inspect(fileUri: string)`: the companion ONNX's URI (the spec's when there is none). */
  inspect: 'weightSpec.inspect',
  /** `weightSpec.runPrompt(specUri: string)`: asks for a prompt, streams the answer (only the extension runs it). */
  runPrompt: 'weightSpec.runPrompt',
  /** `weightSpec.openTensor(file: string, key: string)`: the checkpoint viewer of `file` at tensor `key` (hover links). */
  openTensor: 'weightSpec.openTensor',
} as const;

/** Options of the extension's Prepare that only its code lens sets. */
export interface PrepareLensOptions {
  /** Show the dtype picker with the spec's dtype first rather than preparing in it unasked (issue 50). */
  confirmDtype?: boolean;
}

/** The Prepare lens's second argument when it invokes the extension's command. */
export const PREPARE_LENS_OPTIONS: PrepareLensOptions = { confirmDtype: true };

/** The fragment that marks a definition's shard URI as "at this tensor" (`#tensor=<key>`), for clients with {@link ServerInitOptions.tensorLinks}. */
export const TENSOR_FRAGMENT = 'tensor=';

/** `fileUri` (a `file:` URI without a fragment) marked as pointing at tensor `key`. */
export function tensorLinkUri(fileUri: string, key: string): string {
  return `${fileUri}#${TENSOR_FRAGMENT}${encodeURIComponent(key)}`;
}

/** The shard URI and tensor key of a {@link tensorLinkUri}, or undefined for any other URI. */
export function parseTensorLink(uri: string): { fileUri: string; key: string } | undefined {
  const at = uri.indexOf(`#${TENSOR_FRAGMENT}`);
  if (at < 0) return undefined;
  try {
    return { fileUri: uri.slice(0, at), key: decodeURIComponent(uri.slice(at + 1 + TENSOR_FRAGMENT.length)) };
  } catch {
    return undefined;
  }
}

/**
 * Commands the server itself executes (`workspace/executeCommand`, announced in
 * `executeCommandProvider`): the lenses carry them for clients other than the extension
 * (Neovim, Helix, Emacs). Ids differ from {@link CLIENT_COMMANDS} so that vscode-languageclient,
 * which registers a server's commands in VS Code, never collides with the extension's own.
 * Each takes the same argument as its client command.
 */
export const SERVER_COMMANDS = {
  prepare: 'weight-spec.server.prepare',
  compile: 'weight-spec.server.compile',
  recompile: 'weight-spec.server.recompile',
  inspect: 'weight-spec.server.inspect',
} as const;

/** Result of a {@link SERVER_COMMANDS} command (also shown to the user as a message). */
export interface ServerCommandResult {
  ok: boolean;
  cancelled?: boolean;
  /** The one-line summary shown (the CLI's error line on failure). */
  message: string;
  /** The CLI's stdout (inspect's table). */
  output?: string;
}

export type { CompileState } from './compile/status';

/** What the extension's status bar shows for a spec: core's compile status without the record. */
export type CompileInfo = Omit<CompileStatus, 'record'>;

/** Parameters of {@link SpecStateRequest}. */
export interface SpecStateParams {
  /** The spec document's URI (as the client sent it in didOpen). */
  uri: string;
}

/** Result of {@link SpecStateRequest}; `null` when the document is not open in the server. */
export interface SpecStateResult {
  uri: string;
  /** Document version the diagnostics belong to (undefined before the first check finished). */
  version?: number;
  /** Problem counts of the last check. */
  errors: number;
  warnings: number;
  /** The stable codes found (sorted, unique). */
  codes: string[];
  inputs: number;
  /** Checkpoint files as written in the spec, with their absolute path and readability. */
  files: { path: string; abs?: string; readable: boolean; tensors?: number }[];
  /** The companion ONNX checked against, if any. */
  onnx?: string;
  compile: CompileInfo;
}

/** Request client → server `weightSpec/specState`: the server's view of one open spec. */
export const SpecStateRequest = new RequestType<SpecStateParams, SpecStateResult | null, void>('weightSpec/specState');

/** Parameters of {@link SpecStateChangedNotification}. */
export interface SpecStateChangedParams {
  uri: string;
}

/** Notification server → client `weightSpec/specStateChanged`: re-query the state of `uri`. */
export const SpecStateChangedNotification = new NotificationType<SpecStateChangedParams>('weightSpec/specStateChanged');

/** `initializationOptions` the extension may pass when starting the server. */
export interface ServerInitOptions {
  /** Extra read roots (`weightSpec.roots`); workspace folders are added by the server. */
  roots?: string[];
  /** Delay between an edit and its check, in ms (default 150; 0 checks at once). */
  debounceMs?: number;
  /**
   * Check the spec files of the workspace folders that are not open too, and publish their
   * diagnostics (server/src/workspace-diagnostics.ts; the extension sets it). Default false.
   */
  workspaceDiagnostics?: boolean;
  /**
   * The client handles {@link SpecStateChangedNotification} (the extension's status bar). Other
   * clients do not get it; they may also declare it as the experimental client capability
   * `{ "weightSpec": { "specStateChanged": true } }`.
   */
  specStateChanged?: boolean;
  /**
   * The client runs the lenses' commands itself (the extension's `weightSpec.*` commands);
   * otherwise the lenses carry the server's {@link SERVER_COMMANDS}, run through `workspace/executeCommand`.
   */
  clientCommands?: boolean;
  /**
   * The client opens a checkpoint shard at a tensor: Go to Definition on a key answers the
   * shard's URI with `#tensor=<key>` ({@link tensorLinkUri}), and the hover's shard line runs
   * {@link CLIENT_COMMANDS}.openTensor (the extension). Otherwise both are the shard's plain `file:` URI.
   */
  tensorLinks?: boolean;
  /**
   * The extension's settings without the `weightSpec.` prefix, for clients that do not answer
   * `workspace/configuration` (section `weightSpec`, which overrides these when answered).
   */
  defaultDtype?: string;
  maxRamGb?: number;
  compileBackend?: string;
  qaicCompilePath?: string;
  onnxRuntimePath?: string;
  /**
   * Settings that name code to run (`qaicCompilePath`, `onnxRuntimePath`) are taken from
   * `workspace/configuration` only when this is true: a client may answer that request from
   * project-local files (`.vscode/settings.json`, `.helix/languages.toml`, `.dir-locals.el`),
   * which a repository can carry. Default false: only the values in initializationOptions
   * (the user's own editor configuration) count.
   */
  trustWorkspaceSettings?: boolean;
  /**
   * The same settings nested (Helix sends its `config` table, written `config.weightSpec`, as
   * initializationOptions); they win over the flat keys.
   */
  weightSpec?: Pick<
    ServerInitOptions,
    | 'roots'
    | 'debounceMs'
    | 'defaultDtype'
    | 'maxRamGb'
    | 'compileBackend'
    | 'qaicCompilePath'
    | 'onnxRuntimePath'
    | 'trustWorkspaceSettings'
  >;
}
