/**
 * What an interrupted command leaves behind. Every temporary a command writes is named
 * `<name>.tmp-<pid>-<hex>` (or `.old-…`, see atomic.ts), so the temporaries of *this* process
 * can be told apart from anything else in a folder. A command that writes registers a
 * {@link WorkScope} — the folders its temporaries live in, its lock file, its output — while it
 * runs; on SIGINT/SIGTERM the CLI calls {@link abandonWork}, which removes exactly this
 * process's temporaries and lock, and says whether the output was already complete.
 *
 * At the start of a scope, temporaries of runs whose process is gone are removed too, and a
 * notice says so (the CLI prints notices on stderr; the language server sets none).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processAlive, TEMP_NAME_RE } from './atomic';

/** One command's writing work, while it runs. */
export interface WorkScope {
  /** The output the user named (for the message). */
  readonly out: string;
  /** Folders this run's temporaries are made in. */
  readonly dirs: readonly string[];
  /** Adds a folder known only later (e.g. the prepared directory a compile binds). */
  addDir(dir: string): void;
  /** A lock file this run holds (removed on interrupt when it names this process). */
  readonly lockFile?: string;
  /** Set once the output is complete (the final rename happened). */
  committed: boolean;
  /** What is already in place when the output is neither untouched nor complete. */
  partial?: string;
  /** Ends the scope (normal completion or a handled error). */
  end(): void;
}

const active = new Set<WorkScope>();
let notice: ((line: string) => void) | undefined;

/** Where notices ("removed 2 temporaries of interrupted runs …") go; the CLI sets stderr. */
export function setWorkNotices(fn: ((line: string) => void) | undefined): void {
  notice = fn;
}

function ownOrDeadTemps(dir: string, own: boolean): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const n of names) {
    const m = TEMP_NAME_RE.exec(n);
    if (!m) continue;
    const pid = Number(m[2]);
    if (own ? pid === process.pid : pid !== process.pid && !processAlive(pid)) out.push(path.join(dir, n));
  }
  return out;
}

/**
 * Starts a scope: removes the temporaries of dead runs in `dirs` (with a notice) and
 * registers this run's folders for {@link abandonWork}.
 */
export function beginWork(out: string, dirs: string[], lockFile?: string): WorkScope {
  const unique = [...new Set(dirs.map((d) => path.resolve(d)))];
  for (const dir of unique) {
    const stale = ownOrDeadTemps(dir, false);
    for (const p of stale) fs.rmSync(p, { recursive: true, force: true });
    if (stale.length) {
      notice?.(
        `removed ${stale.length} temporar${stale.length === 1 ? 'y' : 'ies'} of interrupted runs in ${dir}: ${stale.map((p) => path.basename(p)).join(', ')}`,
      );
    }
  }
  const scope: WorkScope = {
    out: path.resolve(out),
    dirs: unique,
    addDir: (dir) => {
      const d = path.resolve(dir);
      if (!unique.includes(d)) unique.push(d);
    },
    ...(lockFile ? { lockFile } : {}),
    committed: false,
    end: () => void active.delete(scope),
  };
  active.add(scope);
  return scope;
}

const scratch = new Set<string>();

/** A folder of {@link scratchDir}: where it is, and its removal (for the normal end and errors). */
export interface ScratchDir {
  readonly dir: string;
  remove(): Promise<void>;
}

/**
 * A fresh folder in the OS temp dir (`<prefix>XXXXXX`) for intermediate files of this run (e.g.
 * dequantized experts, which can be gigabytes). The caller removes it when done; if the
 * process is interrupted first, {@link abandonWork} removes it, so Ctrl-C leaves nothing in TMPDIR.
 */
export function scratchDir(prefix: string): ScratchDir {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratch.add(dir);
  return {
    dir,
    remove: async () => {
      scratch.delete(dir);
      await fs.promises.rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * On an interrupt: removes this process's scratch folders, and its temporaries and lock files
 * in every active scope, synchronously (the process exits right after), and returns one
 * sentence per scope.
 */
export function abandonWork(): string[] {
  for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
  scratch.clear();
  const lines: string[] = [];
  for (const s of active) {
    let removed = 0;
    for (const dir of s.dirs) {
      for (const p of ownOrDeadTemps(dir, true)) {
        fs.rmSync(p, { recursive: true, force: true });
        removed++;
      }
    }
    if (s.lockFile) {
      try {
        if (Number.parseInt(fs.readFileSync(s.lockFile, 'utf8'), 10) === process.pid) fs.rmSync(s.lockFile, { force: true });
      } catch {
        /* not there */
      }
    }
    const cleaned = removed ? ` (removed ${removed} temporar${removed === 1 ? 'y' : 'ies'})` : '';
    lines.push(
      s.committed
        ? `${s.out} was already complete${cleaned}`
        : s.partial
          ? `${s.partial}${cleaned}`
          : `nothing was written to ${s.out}${cleaned}`,
    );
  }
  active.clear();
  return lines;
}

/**
 * A named pause for the interrupt tests: when `WEIGHT_SPEC_FAILPOINT` names this point, the
 * process says so on stderr and waits (up to a minute) for the test's signal. It lets a test
 * interrupt a fast command at an exact moment instead of guessing a delay. Unset, it is a no-op.
 * `name:<text>` holds only where `subject` (e.g. the checkpoint being prepared) contains
 * `<text>`, so an end-to-end run can hold one command while the others it starts go through.
 */
export async function failpoint(name: string, subject?: string): Promise<void> {
  const want = process.env.WEIGHT_SPEC_FAILPOINT;
  if (!want) return;
  const colon = want.indexOf(':');
  const point = colon < 0 ? want : want.slice(0, colon);
  if (point !== name) return;
  if (colon >= 0 && !(subject ?? '').includes(want.slice(colon + 1))) return;
  process.stderr.write(`failpoint ${name}\n`);
  await new Promise((r) => setTimeout(r, 60_000));
}
