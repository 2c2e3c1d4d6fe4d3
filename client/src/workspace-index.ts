/**
 * What the workspace holds, for the "Weight Spec" tree and the explorer menus: every export
 * folder (a folder with a spec file) with its graphs and state, and which `.onnx` files are
 * already weight-free (they carry the spec as metadata `com.qti.aisw.extdata`, so "Export
 * Weight-Free ONNX…" is not offered on them). Rescanned, debounced, on the events of the
 * context's one file watcher (the files the language server watches too) and on workspace
 * folder changes. The scan is bounded (file counts) and reads graphs through core's
 * metadata-only ONNX summary, once per file stamp.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { pathStamp } from '../../core/src/file-stamp';
import { specInfo, type SpecInfo } from '../../core/src/editor/spec-state';
import { summarizeOnnxSync } from '../../core/src/formats/onnx/summary';
import { SPEC_GLOB, specFileIn } from '../../core/src/spec/file-names';
import { SPEC_METADATA_KEY } from '../../core/src/spec/types';

/** True when `file` is `p` or inside the folder `p`. */
export function isWithin(file: string, p: string): boolean {
  return file === p || file.startsWith(p.endsWith(path.sep) ? p : p + path.sep);
}

/** Folders never scanned: dependencies, VCS data. */
export const SCAN_EXCLUDE = '{**/node_modules/**,**/.git/**}';
/** At most this many specs and graphs are looked at (a workspace of model zoos stays responsive). */
const MAX_FILES = 500;
/** The context key listing the weight-free graphs (package.json's `when` clauses use it). */
export const WEIGHT_FREE_KEY = 'weightSpec.weightFreeGraphs';

/** One export folder: its spec, graphs and state. */
export interface ExportEntry {
  dir: string;
  spec: string;
  /** The `.onnx` files of the folder (not qaic artifacts). */
  graphs: string[];
  info: SpecInfo;
}

export class WorkspaceIndex implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires after each scan that found something different. */
  readonly onDidChange = this.changed.event;
  private entries: ExportEntry[] = [];
  private weightFree = new Map<string, { stamp: string; weightFree: boolean }>();
  private readonly subs: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private lastKey = '';
  /** Resolves once the first scan is done. */
  readonly ready: Promise<void>;

  constructor(
    watcher: vscode.FileSystemWatcher,
    private readonly log: vscode.LogOutputChannel,
    private readonly debounceMs = 200,
    folders?: vscode.FileSystemWatcher,
  ) {
    const later = () => this.schedule();
    // A folder created or deleted whole can come as one event for the folder: rescan when a
    // deleted one held an export, or a created one is a folder (it may hold one).
    const gone = (u: vscode.Uri) => {
      if (this.entries.some((e) => isWithin(e.spec, u.fsPath))) this.schedule();
    };
    const made = (u: vscode.Uri) => {
      try {
        if (fs.statSync(u.fsPath).isDirectory()) this.schedule();
      } catch {
        // gone again already
      }
    };
    if (folders) this.subs.push(folders.onDidDelete(gone), folders.onDidCreate(made));
    this.subs.push(
      this.changed,
      watcher.onDidCreate(later),
      watcher.onDidChange(later),
      watcher.onDidDelete(later),
      vscode.workspace.onDidChangeWorkspaceFolders(later),
    );
    this.ready = this.refresh();
  }

  /** The export folders, sorted by path. */
  exports(): readonly ExportEntry[] {
    return this.entries;
  }

  /** True when `file` is an ONNX graph carrying the weight spec metadata (as last scanned). */
  isWeightFree(file: string): boolean {
    return this.weightFree.get(file)?.weightFree === true;
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.debounceMs);
  }

  /**
   * Rescans now. While a scan runs, one more is queued after it (shared by every caller in
   * the meantime): the returned promise always covers a scan that started after the call.
   */
  refresh(): Promise<void> {
    if (this.scanning) {
      this.queued ??= this.scanning.then(() => {
        this.queued = undefined;
        return this.refresh();
      });
      return this.queued;
    }
    this.scanning = this.scan()
      .catch((e: unknown) => this.log.warn(`workspace scan: ${e instanceof Error ? e.message : String(e)}`))
      .finally(() => {
        this.scanning = undefined;
      });
    return this.scanning;
  }

  private async scan(): Promise<void> {
    const [specs, graphs] = await Promise.all([
      vscode.workspace.findFiles(SPEC_GLOB, SCAN_EXCLUDE, MAX_FILES),
      vscode.workspace.findFiles('**/*.onnx', SCAN_EXCLUDE, MAX_FILES),
    ]);
    const dirs = new Set<string>();
    const entries: ExportEntry[] = [];
    for (const uri of specs.map((u) => u.fsPath).sort()) {
      const dir = path.dirname(uri);
      // A folder is one export: its weight_spec.json, else its single *.weight_spec.json.
      if (dirs.has(dir) || specFileIn(dir) !== uri) continue;
      dirs.add(dir);
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      const onnx = names
        .filter((n) => n.endsWith('.onnx') && !n.includes('.qaic.'))
        .sort()
        .map((n) => path.join(dir, n));
      entries.push({ dir, spec: uri, graphs: onnx, info: specInfo(uri) });
    }
    const seen = new Map<string, { stamp: string; weightFree: boolean }>();
    for (const g of graphs.map((u) => u.fsPath)) {
      const stamp = pathStamp(g);
      const hit = this.weightFree.get(g);
      if (hit && hit.stamp === stamp) {
        seen.set(g, hit);
        continue;
      }
      let weightFree = false;
      try {
        weightFree = SPEC_METADATA_KEY in summarizeOnnxSync(g).metadata;
      } catch {
        // Unreadable or not ONNX: offered for export, whose error then names the problem.
      }
      seen.set(g, { stamp, weightFree });
    }
    this.weightFree = seen;
    this.entries = entries;
    const free = [...seen]
      .filter(([, v]) => v.weightFree)
      .map(([k]) => k)
      .sort();
    const key = JSON.stringify([entries.map((e) => [e.dir, e.spec, e.graphs, e.info.state, e.info.compile, e.info.preparedDir]), free]);
    if (key === this.lastKey) return;
    this.lastKey = key;
    await vscode.commands.executeCommand('setContext', WEIGHT_FREE_KEY, free);
    this.changed.fire();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.subs.splice(0)) s.dispose();
  }
}
