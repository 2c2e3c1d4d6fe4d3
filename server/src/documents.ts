/**
 * Open spec documents and their validation: each edit schedules a check after a short
 * debounce; a newer edit aborts the older check through its AbortSignal; diagnostics are
 * published only for the version they were computed from. Request handlers that need the
 * facts of the current text (hover, completion, code actions) await {@link SpecDocuments.ready}.
 */
import { fileURLToPath } from 'node:url';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import type { Connection, TextDocumentContentChangeEvent } from 'vscode-languageserver/node';
import { HeaderCache, SpecCheckSession, type CheckRun } from '../../core/src/check';
import { oneLine, type Problem } from '../../core/src/errors';
import { toDiagnostic } from './diagnostics';
import { createTextDocument, updateTextDocument } from './text-document';
import type { Log } from './guard';

/** One open spec. */
export interface SpecDoc {
  uri: string;
  /** Absolute file path ('' for a non-file URI: checked as if in the working directory). */
  file: string;
  doc: TextDocument;
  session: SpecCheckSession;
  /** The check of the newest version, in flight or done. */
  current?: { version: number; promise: Promise<CheckRun | undefined>; abort: AbortController };
  timer?: ReturnType<typeof setTimeout>;
  /** The last check whose diagnostics were published, with the version it belongs to. */
  published?: { version: number; run: CheckRun };
  /** The last check of a text that parsed as a spec (completion inside a half-typed string). */
  lastParsed?: CheckRun;
  /**
   * The file was deleted from disk while open (the editor keeps the text): its checks publish
   * no diagnostics, so Problems does not list a file that is gone, until it is edited or created again.
   */
  deletedOnDisk?: boolean;
}

/** Callbacks of {@link SpecDocuments}. */
export interface DocumentsHooks {
  /** After diagnostics of a check were published. */
  checked?(d: SpecDoc, run: CheckRun): void;
  closed?(d: SpecDoc): void;
}

/** Absolute path of a `file:` URI, or undefined. */
export function uriToPath(uri: string): string | undefined {
  try {
    return uri.startsWith('file:') ? fileURLToPath(uri) : undefined;
  } catch {
    return undefined;
  }
}

/** The open documents and their checks. */
export class SpecDocuments {
  readonly docs = new Map<string, SpecDoc>();
  readonly cache = new HeaderCache();
  roots: string[] = [];
  debounceMs = 150;

  constructor(
    private readonly connection: Connection,
    private readonly log: Log,
    private readonly hooks: DocumentsHooks = {},
  ) {}

  /** didOpen: starts tracking and checks at once. */
  open(uri: string, languageId: string, version: number, text: string): void {
    const file = uriToPath(uri) ?? '';
    const session = new SpecCheckSession(file || 'untitled.weight_spec.json', { roots: this.roots, cache: this.cache });
    const d: SpecDoc = { uri, file, doc: createTextDocument(uri, languageId, version, text), session };
    this.docs.get(uri)?.current?.abort.abort();
    this.docs.set(uri, d);
    this.schedule(d, 0);
  }

  /** didChange: applies the (incremental or full) changes and schedules a check. */
  change(uri: string, version: number, changes: TextDocumentContentChangeEvent[]): void {
    const d = this.docs.get(uri);
    if (!d) return;
    d.doc = updateTextDocument(d.doc, changes, version);
    d.deletedOnDisk = false;
    // Keep the parse one edit behind at most (cheap when it is a key/name edit); the check
    // itself waits for the debounce.
    d.session.advance(d.doc.getText());
    this.schedule(d, this.debounceMs);
  }

  /** didClose: stops checks and clears the document's diagnostics. */
  close(uri: string): void {
    const d = this.docs.get(uri);
    if (!d) return;
    if (d.timer) clearTimeout(d.timer);
    d.current?.abort.abort();
    this.docs.delete(uri);
    void this.connection.sendDiagnostics({ uri, diagnostics: [] }).catch(() => undefined);
    this.hooks.closed?.(d);
  }

  /**
   * Re-checks every open document (files on disk or settings changed); the promises settle
   * once each document's newest check published its diagnostics (or the document closed).
   */
  recheckAll(filter: (d: SpecDoc) => boolean = () => true): Promise<void>[] {
    const checks: Promise<void>[] = [];
    for (const d of this.docs.values()) {
      if (!filter(d)) continue;
      d.session.options = { ...d.session.options, roots: this.roots };
      this.schedule(d, 0, true);
      checks.push(this.settled(d));
    }
    return checks;
  }

  /**
   * Resolves when `d`'s newest check is done: a check superseded meanwhile (a watcher's, an
   * edit's) publishes nothing, so the one that replaced it is awaited in turn.
   */
  private async settled(d: SpecDoc): Promise<void> {
    for (let cur = d.current; cur;) {
      await cur.promise;
      if (d.current === cur || this.docs.get(d.uri) !== d) return;
      cur = d.current;
    }
  }

  /** Schedules a check of `d`'s current text; aborts the older one. */
  schedule(d: SpecDoc, delayMs: number, force = false): void {
    if (d.timer) clearTimeout(d.timer);
    d.timer = undefined;
    const version = d.doc.version;
    if (!force && d.current?.version === version) return;
    d.current?.abort.abort();
    const abort = new AbortController();
    let start!: () => void;
    const gate = new Promise<void>((resolve) => (start = resolve));
    const promise = gate.then(() => this.run(d, version, abort.signal));
    d.current = { version, promise, abort };
    if (delayMs <= 0) start();
    else
      d.timer = setTimeout(() => {
        d.timer = undefined;
        start();
      }, delayMs);
    // ready() may start it early: keep the starter reachable.
    (d.current as { start?: () => void }).start = start;
  }

  /** The check of `d`'s current text (starting it now if it still waits for the debounce). */
  async ready(d: SpecDoc): Promise<CheckRun | undefined> {
    if (!d.current || d.current.version !== d.doc.version) this.schedule(d, 0);
    const cur = d.current as { start?: () => void; promise: Promise<CheckRun | undefined> } | undefined;
    if (d.timer) {
      clearTimeout(d.timer);
      d.timer = undefined;
    }
    cur?.start?.();
    return cur?.promise;
  }

  private async run(d: SpecDoc, version: number, signal: AbortSignal): Promise<CheckRun | undefined> {
    if (signal.aborted || this.docs.get(d.uri) !== d) return undefined;
    const text = d.doc.getText();
    let run: CheckRun;
    try {
      run = await d.session.check(text, signal);
    } catch (err) {
      if (signal.aborted) return undefined;
      // Never expected (core reports problems as data); keep serving, show it, start afresh.
      this.log.error(`check of ${d.uri} failed: ${oneLine(err)}`);
      d.session.reset();
      const problem: Problem = { code: 'internal', severity: 'error', message: `check failed: ${oneLine(err)}`, path: [] };
      run = { problems: [problem], parsed: d.session.parse(text), files: [] };
    }
    if (signal.aborted || d.doc.version !== version || this.docs.get(d.uri) !== d) return run;
    d.published = { version, run };
    if (run.parsed.spec) d.lastParsed = run;
    try {
      const diagnostics = d.deletedOnDisk ? [] : run.problems.map((p) => toDiagnostic(d.doc, p));
      await this.connection.sendDiagnostics({ uri: d.uri, version, diagnostics });
    } catch (err) {
      this.log.error(`publishing diagnostics of ${d.uri} failed: ${oneLine(err)}`);
    }
    // Offsets (hover, inlay hints, the next edit's patch) need the document's offset index,
    // which the parse defers, and every position conversion needs the text's line table:
    // build both once the diagnostics are out, unless an edit came first.
    setImmediate(() => {
      if (d.published?.run !== run || d.doc.version !== version) return;
      run.parsed.offsets.prepare();
      d.doc.offsetAt({ line: 0, character: 0 });
    });
    try {
      this.hooks.checked?.(d, run);
    } catch (err) {
      this.log.error(`after check of ${d.uri}: ${oneLine(err)}`);
    }
    return run;
  }
}
