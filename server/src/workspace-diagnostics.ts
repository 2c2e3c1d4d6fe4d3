/**
 * Diagnostics for the whole workspace, not only open documents (as eslint and the TypeScript
 * server give them): a background scan of the workspace folders finds every spec file
 * (`weight_spec.json`, `*.weight_spec.json`) and checks the closed ones from disk, publishing
 * their problems, so a broken spec in a folder never opened shows in Problems at start-up.
 *
 * Bounded and cancellable: the walk skips `node_modules`, `.git` and hidden folders, stops at
 * {@link ScanLimits} (files, depth), yields to the event loop between specs, and a new scan
 * (workspace folders changed) aborts the running one. Kept current: a spec file changing on
 * disk, or a checkpoint / ONNX file one depends on (the client's file events), re-checks that
 * spec; a spec that was open and is closed again is re-checked from disk instead of cleared;
 * an open spec belongs to the open-document checks, never to this. Opt-in through
 * `initializationOptions.workspaceDiagnostics` (the extension sets it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Connection } from 'vscode-languageserver/node';
import { createTextDocument } from './text-document';
import { SpecCheckSession, type HeaderCache } from '../../core/src/check';
import { oneLine } from '../../core/src/errors';
import { readJsonTextSync } from '../../core/src/paths';
import { isSpecFile } from '../../core/src/spec/file-names';
import { toDiagnostic } from './diagnostics';
import type { Log } from './guard';
import { affects, dependenciesOf, type Dependencies } from './watch';

/** How far the scan goes. */
export interface ScanLimits {
  /** Spec files checked at most (the rest are left to be opened). */
  maxSpecs: number;
  /** Folder depth below a workspace folder. */
  maxDepth: number;
  /** Directory entries read at most (a workspace of millions of files is not walked through). */
  maxEntries: number;
}

export const DEFAULT_LIMITS: ScanLimits = { maxSpecs: 500, maxDepth: 8, maxEntries: 200_000 };

const SKIP_DIRS = new Set(['node_modules', '.git']);

/** What the server gives the scan. */
export interface WorkspaceDiagnosticsHost {
  connection: Connection;
  log: Log;
  cache: HeaderCache;
  /** The current allowed roots (workspace folders + settings). */
  roots(): string[];
  /** True when `uri` is open (its diagnostics are the open document's). */
  isOpen(uri: string): boolean;
}

/** One closed spec the scan published diagnostics for. */
interface Entry {
  file: string;
  deps?: Dependencies;
  /** The check running now, if any. */
  abort?: AbortController;
}

export class WorkspaceDiagnostics {
  private readonly entries = new Map<string, Entry>();
  private scan?: AbortController;
  /** Resolves when the current scan (and its checks) finished: for tests. */
  done: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: WorkspaceDiagnosticsHost,
    private readonly limits: ScanLimits = DEFAULT_LIMITS,
  ) {}

  /** (Re)scans `folders`: aborts a running scan; specs outside the new folders lose their diagnostics. */
  start(folders: string[]): void {
    this.scan?.abort();
    const ac = new AbortController();
    this.scan = ac;
    for (const [uri, e] of this.entries) {
      if (!folders.some((f) => e.file === f || e.file.startsWith(f.endsWith(path.sep) ? f : f + path.sep))) this.forget(uri);
    }
    this.done = this.run(folders, ac.signal).catch((err: unknown) => {
      if (!ac.signal.aborted) this.host.log.error(`workspace diagnostics: ${oneLine(err)}`);
    });
  }

  private async run(folders: string[], signal: AbortSignal): Promise<void> {
    const specs = await findSpecs(folders, this.limits, signal);
    for (const file of specs) {
      if (signal.aborted) return;
      await this.check(file, signal);
      await new Promise<void>((r) => setImmediate(r));
    }
  }

  /** Files changed on disk: re-checks the closed specs they are or that depend on them. */
  filesChanged(paths: string[]): void {
    for (const p of paths) {
      if (isSpecFile(p) && !this.entries.has(uriOf(p)) && this.scan && !this.scan.signal.aborted) void this.check(p, this.scan.signal);
    }
    for (const e of this.entries.values()) {
      if (paths.some((p) => p === e.file || affects(e.deps, p))) void this.check(e.file, this.scan?.signal);
    }
  }

  /**
   * Paths deleted on disk, files or whole folders (a watcher reports a deleted folder alone,
   * not the files it held): the closed specs at or under them lose their diagnostics.
   */
  deleted(paths: string[]): void {
    for (const [uri, e] of this.entries) if (paths.some((p) => isWithin(e.file, p))) this.forget(uri);
  }

  /** A spec document was closed: its diagnostics come from disk again. */
  closed(file: string): void {
    if (file && isSpecFile(file)) void this.check(file, this.scan?.signal);
  }

  /** Settings changed (roots): every closed spec is checked again. */
  recheckAll(): void {
    for (const e of this.entries.values()) void this.check(e.file, this.scan?.signal);
  }

  private forget(uri: string): void {
    this.entries.get(uri)?.abort?.abort();
    this.entries.delete(uri);
    if (!this.host.isOpen(uri)) void this.host.connection.sendDiagnostics({ uri, diagnostics: [] }).catch(() => undefined);
  }

  /** Checks `file` from disk and publishes its problems, unless it is open (or gone: then its diagnostics are cleared). */
  private async check(file: string, scanSignal?: AbortSignal): Promise<void> {
    const uri = uriOf(file);
    if (this.host.isOpen(uri)) return;
    let text: string;
    try {
      text = readJsonTextSync(file);
    } catch {
      if (this.entries.has(uri)) this.forget(uri);
      return;
    }
    const prev = this.entries.get(uri);
    prev?.abort?.abort();
    const ac = new AbortController();
    const onScanAbort = () => ac.abort();
    scanSignal?.addEventListener('abort', onScanAbort, { once: true });
    const entry: Entry = { file, ...(prev?.deps ? { deps: prev.deps } : {}), abort: ac };
    this.entries.set(uri, entry);
    try {
      const session = new SpecCheckSession(file, { roots: this.host.roots(), cache: this.host.cache });
      const run = await session.check(text, ac.signal);
      if (ac.signal.aborted || this.host.isOpen(uri) || this.entries.get(uri) !== entry) return;
      entry.deps = dependenciesOf(file, run);
      const doc = createTextDocument(uri, 'weight-spec', 0, text);
      await this.host.connection.sendDiagnostics({ uri, diagnostics: run.problems.map((p) => toDiagnostic(doc, p)) });
    } catch (err) {
      if (!ac.signal.aborted) this.host.log.error(`workspace check of ${file}: ${oneLine(err)}`);
    } finally {
      scanSignal?.removeEventListener('abort', onScanAbort);
      if (entry.abort === ac) delete entry.abort;
    }
  }

  dispose(): void {
    this.scan?.abort();
    for (const e of this.entries.values()) e.abort?.abort();
  }
}

/** True when `file` is `p` or inside the folder `p`. */
export function isWithin(file: string, p: string): boolean {
  return file === p || file.startsWith(p.endsWith(path.sep) ? p : p + path.sep);
}

/** The URI the client uses for a file path. */
function uriOf(file: string): string {
  return pathToFileURL(file).toString();
}

/** Spec files below `folders`, breadth first, within `limits`; stops early when `signal` aborts. */
export async function findSpecs(folders: string[], limits: ScanLimits, signal: AbortSignal): Promise<string[]> {
  const out: string[] = [];
  let entries = 0;
  let level: string[] = [...folders];
  for (let depth = 0; depth <= limits.maxDepth && level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      if (signal.aborted) return out;
      let list: fs.Dirent[];
      try {
        list = await fs.promises.readdir(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      entries += list.length;
      for (const d of list) {
        if (d.isDirectory()) {
          if (!SKIP_DIRS.has(d.name) && !d.name.startsWith('.')) next.push(path.join(dir, d.name));
        } else if (d.isFile() && isSpecFile(d.name)) {
          out.push(path.join(dir, d.name));
          if (out.length >= limits.maxSpecs) return out;
        }
      }
      if (entries >= limits.maxEntries) return out;
    }
    level = next;
  }
  return out;
}
