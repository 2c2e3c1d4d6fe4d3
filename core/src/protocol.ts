/**
 * Custom LSP messages shared by the language server (server/) and the extension (client/):
 * plain method names and their parameter/result types. No dependency on vscode or on the
 * LSP libraries, so both sides (and core's tests) can import it.
 */

/** Commands the server's code lenses invoke; the extension registers them. */
export const CLIENT_COMMANDS = {
  /** `weightSpec.prepare(specUri: string)` */
  prepare: 'weightSpec.prepare',
  /** `weightSpec.compile(specUri: string)` */
  compile: 'weightSpec.compile',
  /** `weightSpec.recompile(specUri: string)` (= compile --force) */
  recompile: 'weightSpec.recompile',
  /** `weightSpec.inspect(fileUri: string)`: the companion ONNX's URI (the spec's when there is none). */
  inspect: 'weightSpec.inspect',
} as const;

/** State of the last compile of a spec's export directory (`<dir>/compile.json`). */
export type CompileState = 'never-compiled' | 'up-to-date' | 'stale';

/** What the extension's status bar shows for a spec. */
export interface CompileInfo {
  state: CompileState;
  backend?: string;
  /** The compiled artifact (absolute path), when recorded. */
  artifact?: string;
  createdAt?: string;
  /** Which fingerprint parts changed since the compile (`graph`, `spec`, `prepared`), when stale. */
  changed?: string[];
}

/** Request `weightSpec/specState`: the server's view of one open spec. */
export const SPEC_STATE_REQUEST = 'weightSpec/specState';

/** Parameters of {@link SPEC_STATE_REQUEST}. */
export interface SpecStateParams {
  /** The spec document's URI (as the client sent it in didOpen). */
  uri: string;
}

/** Result of {@link SPEC_STATE_REQUEST}; `null` when the document is not open in the server. */
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

/** Notification server → client `weightSpec/specStateChanged`: re-query the state of `uri`. */
export const SPEC_STATE_CHANGED_NOTIFICATION = 'weightSpec/specStateChanged';

/** Parameters of {@link SPEC_STATE_CHANGED_NOTIFICATION}. */
export interface SpecStateChangedParams {
  uri: string;
}

/** `initializationOptions` the extension may pass when starting the server. */
export interface ServerInitOptions {
  /** Extra read roots (`weightSpec.roots`); workspace folders are added by the server. */
  roots?: string[];
  /** Delay between an edit and its check, in ms (default 150; 0 checks at once). */
  debounceMs?: number;
}
