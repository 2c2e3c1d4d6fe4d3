// An in-memory LSP client for tests: two PassThrough streams, the real server
// (createConnection from vscode-languageserver/node) on one side and a real JSON-RPC client
// (createMessageConnection from vscode-jsonrpc/node) on the other. No sleeps: waiting for
// diagnostics means awaiting the publishDiagnostics notification of a document version.
import { SpecStateChangedNotification } from '../../core/src/protocol';
import { readFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';
import { createConnection, ProposedFeatures } from 'vscode-languageserver/node';
import type { Diagnostic, InitializeResult, PublishDiagnosticsParams } from 'vscode-languageserver-protocol';
import { afterEach } from 'vitest';
import { createServer, type ServerOptions, type WeightSpecServer } from '../src/server';

/**
 * Error-level `window/logMessage`s the server sent during the current test. The server's
 * guard turns a handler's exception into an empty answer plus such a message, so a test that
 * expects an empty answer would pass on a crash: every test fails on them instead, unless it
 * takes them itself ({@link TestClient.takeLoggedErrors}) because the error is the point.
 */
const loggedErrors: string[] = [];
afterEach(() => {
  const errors = loggedErrors.splice(0);
  if (errors.length) throw new Error(`the server logged ${errors.length} error(s): ${errors.join(' | ').slice(0, 2000)}`);
});

type Waiter = { uri: string; version?: number; resolve: (d: Diagnostic[]) => void };

/** A connected client with helpers. */
export interface TestClient {
  rpc: MessageConnection;
  server?: WeightSpecServer;
  /** Opens `file` (its text on disk unless given); resolves to its first diagnostics. */
  open(file: string, text?: string): Promise<{ uri: string; text: string; diagnostics: Diagnostic[] }>;
  /** Replaces the whole text; resolves to the diagnostics of the new version. */
  replace(uri: string, text: string): Promise<Diagnostic[]>;
  /** One incremental change (offsets in the current text). */
  edit(uri: string, start: number, end: number, newText: string): Promise<Diagnostic[]>;
  /** The next diagnostics published for `uri` (any version). */
  nextDiagnostics(uri: string): Promise<Diagnostic[]>;
  /** The diagnostics last published for `uri` (undefined before any). */
  diagnostics(uri: string): Diagnostic[] | undefined;
  text(uri: string): string;
  version(uri: string): number;
  request<R>(method: string, params: unknown): Promise<R>;
  notify(method: string, params: unknown): void;
  /** Every publishDiagnostics received: uri, version and count, in order. */
  published: { uri: string; version?: number; count: number }[];
  /** Sends one incremental change without waiting for diagnostics. */
  editNoWait(uri: string, start: number, end: number, newText: string): void;
  /** URIs of the weightSpec/specStateChanged notifications received, in order. */
  specStateChanged: string[];
  /** Registrations the server asked for (client/registerCapability). */
  registrations: unknown[];
  /** Removes and returns the error-level log messages so far (otherwise the test fails on them). */
  takeLoggedErrors(): string[];
  /** The server's answer to `initialize`. */
  initialized: InitializeResult;
  close(): void;
}

/** Line/character of an offset (UTF-16), as LSP counts. */
export function positionOf(text: string, offset: number): { line: number; character: number } {
  let line = 0;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, character: offset - start };
}

/** The text an LSP range covers. */
export function textOf(text: string, r: { start: { line: number; character: number }; end: { line: number; character: number } }): string {
  const lines = text.split('\n');
  const off = (p: { line: number; character: number }) => lines.slice(0, p.line).reduce((a, l) => a + l.length + 1, 0) + p.character;
  return text.slice(off(r.start), off(r.end));
}

/** Applies LSP TextEdits (non-overlapping) to `text`. */
export function applyEdits(
  text: string,
  edits: { range: { start: { line: number; character: number }; end: { line: number; character: number } }; newText: string }[],
): string {
  const lines = text.split('\n');
  const off = (p: { line: number; character: number }) => lines.slice(0, p.line).reduce((a, l) => a + l.length + 1, 0) + p.character;
  const sorted = edits.map((e) => ({ s: off(e.range.start), e: off(e.range.end), t: e.newText })).sort((a, b) => b.s - a.s);
  let out = text;
  for (const e of sorted) out = out.slice(0, e.s) + e.t + out.slice(e.e);
  return out;
}

/** Wires a client to `toServer`/`fromServer` streams and initializes. */
export async function connectClient(
  toServer: NodeJS.WritableStream,
  fromServer: NodeJS.ReadableStream,
  opts: {
    capabilities?: Record<string, unknown>;
    initializationOptions?: Record<string, unknown>;
    server?: WeightSpecServer;
    workspaceFolders?: { uri: string; name: string }[];
  } = {},
): Promise<TestClient> {
  const rpc = createMessageConnection(new StreamMessageReader(fromServer), new StreamMessageWriter(toServer));
  const latest = new Map<string, { version?: number; diagnostics: Diagnostic[] }>();
  let waiters: Waiter[] = [];
  const registrations: unknown[] = [];
  const published: { uri: string; version?: number; count: number }[] = [];
  rpc.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => {
    published.push({ uri: p.uri, version: p.version, count: p.diagnostics.length });
    latest.set(p.uri, { version: p.version, diagnostics: p.diagnostics });
    const ready = waiters.filter((w) => w.uri === p.uri && (w.version === undefined || w.version === p.version));
    waiters = waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve(p.diagnostics);
  });
  rpc.onNotification('window/logMessage', (p: { type: number; message: string }) => {
    if (p.type === 1) loggedErrors.push(p.message);
  });
  const specStateChanged: string[] = [];
  rpc.onNotification(SpecStateChangedNotification.method, (p: { uri: string }) => void specStateChanged.push(p.uri));
  rpc.onRequest('client/registerCapability', (p: { registrations: unknown[] }) => {
    registrations.push(...p.registrations);
    return null;
  });
  rpc.onRequest('client/unregisterCapability', () => null);
  rpc.onRequest('workspace/codeLens/refresh', () => null);
  rpc.onRequest('workspace/inlayHint/refresh', () => null);
  rpc.listen();
  const initialized = await rpc.sendRequest<InitializeResult>('initialize', {
    processId: process.pid,
    rootUri: null,
    workspaceFolders: opts.workspaceFolders ?? null,
    capabilities: opts.capabilities ?? {
      workspace: { didChangeWatchedFiles: { dynamicRegistration: true, relativePatternSupport: true } },
    },
    initializationOptions: { debounceMs: 0, ...(opts.initializationOptions ?? {}) },
  });
  await rpc.sendNotification('initialized', {});
  const docs = new Map<string, { text: string; version: number }>();
  const wait = (uri: string, version?: number) =>
    new Promise<Diagnostic[]>((resolve) => {
      const l = latest.get(uri);
      if (l && version !== undefined && l.version === version) return resolve(l.diagnostics);
      waiters.push({ uri, version, resolve });
    });
  const client: TestClient = {
    rpc,
    server: opts.server,
    registrations,
    specStateChanged,
    published,
    takeLoggedErrors: () => loggedErrors.splice(0),
    initialized,
    editNoWait(uri, start, end, newText) {
      const d = docs.get(uri)!;
      const range = { start: positionOf(d.text, start), end: positionOf(d.text, end) };
      d.text = d.text.slice(0, start) + newText + d.text.slice(end);
      d.version++;
      void rpc
        .sendNotification('textDocument/didChange', {
          textDocument: { uri, version: d.version },
          contentChanges: [{ range, text: newText }],
        })
        .catch(() => undefined);
    },
    async open(file, text) {
      const t = text ?? readFileSync(file, 'utf8');
      const uri = pathToFileURL(file).toString();
      docs.set(uri, { text: t, version: 1 });
      const p = wait(uri, 1);
      await rpc.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'weight-spec', version: 1, text: t } });
      return { uri, text: t, diagnostics: await p };
    },
    async replace(uri, text) {
      const d = docs.get(uri)!;
      d.text = text;
      d.version++;
      const p = wait(uri, d.version);
      await rpc.sendNotification('textDocument/didChange', { textDocument: { uri, version: d.version }, contentChanges: [{ text }] });
      return p;
    },
    async edit(uri, start, end, newText) {
      const d = docs.get(uri)!;
      const range = { start: positionOf(d.text, start), end: positionOf(d.text, end) };
      d.text = d.text.slice(0, start) + newText + d.text.slice(end);
      d.version++;
      const p = wait(uri, d.version);
      await rpc.sendNotification('textDocument/didChange', {
        textDocument: { uri, version: d.version },
        contentChanges: [{ range, text: newText }],
      });
      return p;
    },
    nextDiagnostics: (uri) => wait(uri),
    diagnostics: (uri) => latest.get(uri)?.diagnostics,
    text: (uri) => docs.get(uri)!.text,
    version: (uri) => docs.get(uri)!.version,
    request: (method, params) => rpc.sendRequest(method, params),
    notify: (method, params) => void rpc.sendNotification(method, params).catch(() => undefined),
    close: () => rpc.dispose(),
  };
  return client;
}

/** Starts the server in memory and connects a client to it. */
export async function startInMemory(
  opts: {
    capabilities?: Record<string, unknown>;
    initializationOptions?: Record<string, unknown>;
    workspaceFolders?: { uri: string; name: string }[];
    serverOptions?: ServerOptions;
  } = {},
): Promise<TestClient> {
  const toServer = new PassThrough();
  const fromServer = new PassThrough();
  const connection = createConnection(ProposedFeatures.all, toServer, fromServer);
  const server = createServer(connection, { debounceMs: 0, ...opts.serverOptions });
  connection.listen();
  const client = await connectClient(toServer, fromServer, { ...opts, server });
  const close = client.close;
  client.close = () => {
    close();
    connection.dispose();
  };
  return client;
}
