/**
 * Watches the files open specs depend on — their checkpoint files, companion ONNX, prepared
 * manifests/sentinels and compile.json — by registering `workspace/didChangeWatchedFiles`
 * watchers for the directories that hold them (dynamically, as the set changes), and maps a
 * change back to the specs to re-validate. Core's header cache re-reads a file only when its
 * size, mtime or inode changed, so a re-validation after a change costs just that file.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { randomUUID } from 'node:crypto';
import {
  DidChangeWatchedFilesNotification,
  RegistrationRequest,
  UnregistrationRequest,
  WatchKind,
  type Connection,
  type FileSystemWatcher,
} from 'vscode-languageserver/node';
import type { CheckRun } from '../../core/src/check';
import { oneLine } from '../../core/src/errors';
import type { Log } from './guard';

/** Files and directories one spec depends on. */
export interface Dependencies {
  files: Set<string>;
  dirs: Set<string>;
  /** Those of `dirs` reached through the export's report, not the spec's paths (FileState.viaReport). */
  reported: Set<string>;
}

/** The dependencies of a spec from its last check. */
export function dependenciesOf(specFile: string, run: CheckRun): Dependencies {
  const files = new Set<string>();
  const dirs = new Set<string>();
  const reported = new Set<string>();
  if (specFile) dirs.add(path.dirname(specFile)); // companion ONNX, compile.json, new files
  for (const f of run.files) {
    if (!f.abs) continue;
    files.add(f.abs);
    dirs.add(path.dirname(f.abs)); // prepared manifest and sentinel live beside the shards
    if (f.viaReport) reported.add(path.dirname(f.abs));
  }
  if (run.onnx) {
    files.add(run.onnx.file);
    dirs.add(path.dirname(run.onnx.file));
  }
  return { files, dirs, reported };
}

/** True when a changed path matters to a spec with these dependencies. */
export function affects(deps: Dependencies | undefined, changed: string): boolean {
  if (!deps) return false;
  return deps.files.has(changed) || deps.dirs.has(path.dirname(changed));
}

/** Keeps one dynamic registration of watchers covering every dependency directory. */
export class WatchRegistry {
  private registered = '';
  /** The id of the current registration (settled in order: each update awaits the previous). */
  private current: Promise<string | undefined> = Promise.resolve(undefined);
  /** Set from the client's capabilities at initialize. */
  dynamic = false;
  relativePatterns = false;

  constructor(
    private readonly connection: Connection,
    private readonly log: Log,
  ) {}

  /** Registers watchers for exactly `dirs` (no-op when unchanged or unsupported). */
  update(dirs: Iterable<string>): void {
    if (!this.dynamic) return;
    const list = [...new Set(dirs)].sort();
    const key = list.join('\n');
    if (key === this.registered) return;
    this.registered = key;
    const previous = this.current;
    const watchers: FileSystemWatcher[] = list.map((d) =>
      this.relativePatterns
        ? {
            globPattern: { baseUri: pathToFileURL(d).toString(), pattern: '*' },
            kind: WatchKind.Create | WatchKind.Change | WatchKind.Delete,
          }
        : { globPattern: `${d.replace(/[\\[\]{}*?]/g, (c) => `[${c}]`)}/*`, kind: WatchKind.Create | WatchKind.Change | WatchKind.Delete },
    );
    const method = DidChangeWatchedFilesNotification.type.method;
    // Raw (un)registration requests: the library's Disposable logs through a console that
    // throws once the connection is gone, which would surface as an unhandled rejection.
    this.current = (async () => {
      const old = await previous;
      try {
        if (old) await this.connection.sendRequest(UnregistrationRequest.type, { unregisterations: [{ id: old, method }] });
      } catch {
        /* the client forgot it already, or the connection is gone */
      }
      if (watchers.length === 0) return undefined;
      const id = randomUUID();
      try {
        await this.connection.sendRequest(RegistrationRequest.type, { registrations: [{ id, method, registerOptions: { watchers } }] });
        return id;
      } catch (err) {
        this.log.error(`registering file watchers failed: ${oneLine(err)}`);
        return undefined;
      }
    })();
  }
}
