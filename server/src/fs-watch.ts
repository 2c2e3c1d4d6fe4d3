/**
 * The server's own file watching: for clients that cannot watch (no dynamic registration of
 * `workspace/didChangeWatchedFiles`, as Neovim 0.7) every directory an open spec depends on,
 * for the others those a client watching its roots could miss ({@link missedByClient}).
 * `fs.watch` on the directories each open
 * spec depends on (see {@link dependenciesOf}) and on their real paths when they go through
 * symlinks. A directory that does not exist yet (the prepared folder before prepare) is
 * watched through its nearest existing ancestor, so its creation is seen. Events are
 * debounced; a spec is re-checked when a directory it depends on reports a change, and once
 * when a watch on one of its directories starts (a file written before the watch began).
 * Where `fs.watch` fails or breaks (the inotify watch limit, ENOSPC; some network file
 * systems), the directory is polled instead (`fs.watchFile`): its mtime changes when an entry
 * is created, removed or renamed — prepare's sentinel, a renamed shard, and every file our
 * tools write (temp + rename) — though not when a file is rewritten in place.
 */
import fs from 'node:fs';
import path from 'node:path';

/**
 * True when a client that watches its workspace roots could miss changes in `dir`: it lies
 * outside every root, or a symlink lies between the root and it (eglot 1.9 watches only
 * folders that hold project files, and a project listing does not follow the export's link
 * to its prepared folder). The server then watches `dir` itself, whatever the client claims.
 */
export function missedByClient(dir: string, roots: readonly string[]): boolean {
  const abs = path.resolve(dir);
  for (const r of roots) {
    const root = path.resolve(r);
    const rel = path.relative(root, abs);
    if (rel.startsWith('..') || path.isAbsolute(rel)) continue;
    let linked = false;
    for (let cur = abs; cur.length > root.length && !linked; cur = path.dirname(cur)) linked = isLink(cur);
    if (!linked) return false;
  }
  return true;
}

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false; // not there (yet): its nearest existing ancestor decides
  }
}

/** The directories to watch for a set of dependency directories. */
export function watchTargets(dirs: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const d of dirs) addTarget(out, path.resolve(d), 0);
  return out;
}

function addTarget(out: Set<string>, dir: string, depth: number): void {
  if (isDir(dir)) {
    out.add(dir);
    try {
      out.add(fs.realpathSync(dir)); // a symlinked folder's changes happen at its target
    } catch {
      /* vanished meanwhile */
    }
    return;
  }
  // A dangling symlink (a link made before prepare made its folder: exports older than
  // issue 30.8, or a folder removed since): its
  // target's creation happens beside the target, so watch there too.
  const link = readLink(dir);
  if (link !== undefined && depth < 8) addTarget(out, path.resolve(path.dirname(dir), link), depth + 1);
  // The nearest existing ancestor: a created child shows up as an event there.
  const parent = path.dirname(dir);
  if (parent !== dir) addTarget(out, parent, depth + 1);
}

function readLink(p: string): string | undefined {
  try {
    return fs.readlinkSync(p);
  } catch {
    return undefined;
  }
}

function inodeOf(p: string): number {
  try {
    return fs.statSync(p).ino;
  } catch {
    return -1;
  }
}

function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Options of {@link FsWatchers}. */
export interface FsWatchOptions {
  /** Interval of the polling fallback (default 1000 ms). */
  pollMs?: number;
  /** The watcher (fs.watch; tests pass one that fails as fs.watch does at the inotify limit). */
  watch?: (dir: string, options: { persistent: boolean }, listener: () => void) => fs.FSWatcher;
}

/** fs.watch watchers per spec (polling where fs.watch fails), debounced into `onChange(uris)`. */
export class FsWatchers {
  /** Watchers by directory, with the inode watched (a replaced directory needs a new watch). */
  private readonly watchers = new Map<string, { close(): void; ino: number }>();
  private readonly bySpec = new Map<string, Set<string>>();
  private pending = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly pollMs: number;
  private readonly watch: NonNullable<FsWatchOptions['watch']>;

  constructor(
    private readonly onChange: (uris: string[]) => void,
    private readonly debounceMs = 100,
    options: FsWatchOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 1000;
    this.watch = options.watch ?? ((dir, o, listener) => fs.watch(dir, o, listener));
  }

  /** Watches `dirs` for the spec `uri` (replacing what it watched before). */
  update(uri: string, dirs: Iterable<string>): void {
    const targets = watchTargets(dirs);
    const before = this.bySpec.get(uri);
    this.bySpec.set(uri, targets);
    let added = false;
    for (const t of targets) {
      const ino = inodeOf(t);
      const cur = this.watchers.get(t);
      if (cur && cur.ino === ino) continue;
      if (cur) this.drop(t);
      try {
        const w = this.watch(t, { persistent: false }, () => this.fire(t));
        // A watch that breaks (e.g. the file system stops reporting) becomes a poll.
        w.on('error', () => {
          this.drop(t);
          if (this.needed().has(t)) this.poll(t, ino);
        });
        this.watchers.set(t, { close: () => w.close(), ino });
      } catch {
        // fs.watch refused (the inotify limit: ENOSPC, EMFILE; unsupported file system): poll.
        if (isDir(t)) this.poll(t, ino);
      }
      if (this.watchers.has(t) && (cur || (before && !before.has(t)))) added = true;
    }
    this.prune();
    if (added) this.queue([uri]);
  }

  /** Stops watching for `uri`. */
  remove(uri: string): void {
    this.bySpec.delete(uri);
    this.prune();
  }

  dispose(): void {
    this.bySpec.clear();
    this.prune();
    if (this.timer) clearTimeout(this.timer);
  }

  private fire(dir: string): void {
    this.queue([...this.bySpec].filter(([, t]) => t.has(dir)).map(([u]) => u));
  }

  private queue(uris: string[]): void {
    if (uris.length === 0) return;
    for (const u of uris) this.pending.add(u);
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const list = [...this.pending].filter((u) => this.bySpec.has(u));
      this.pending = new Set();
      if (list.length) this.onChange(list);
    }, this.debounceMs);
  }

  /** Polls `dir`'s stat: an entry created, removed or renamed changes its mtime. */
  private poll(dir: string, ino: number): void {
    const listener = (cur: fs.Stats, prev: fs.Stats) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.ino !== prev.ino) this.fire(dir);
    };
    fs.watchFile(dir, { persistent: false, interval: this.pollMs }, listener);
    this.watchers.set(dir, { close: () => fs.unwatchFile(dir, listener), ino });
  }

  private drop(dir: string): void {
    this.watchers.get(dir)?.close();
    this.watchers.delete(dir);
  }

  private needed(): Set<string> {
    return new Set([...this.bySpec.values()].flatMap((s) => [...s]));
  }

  /** Closes watchers no spec needs any more. */
  private prune(): void {
    const needed = this.needed();
    for (const d of [...this.watchers.keys()]) if (!needed.has(d)) this.drop(d);
  }
}
