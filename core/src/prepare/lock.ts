/**
 * prepare's lock beside its output folder, `<out>.lock`. The lock file holds its holder's
 * identity: `<pid> <start time> <nonce>`, the start time being field 22 of /proc/<pid>/stat
 * (clock ticks since boot), so a pid reused by an unrelated process is not mistaken for the
 * holder. A lock appears complete (written to a temp name, then hard-linked into place, which
 * fails if the name exists).
 *
 * Taking over a stale lock is where two processes used to both win (each read a dead pid, then
 * removed the lock by name — possibly the other's fresh lock). Now a takeover first takes a
 * short-lived guard `<out>.lock.takeover` (the same exclusive link), reads the lock again and
 * removes it only when it still holds the stale identity it judged: identities are unique
 * (nonce), and while the name exists nobody else can link a lock in, so what is removed is
 * exactly the stale lock. A guard older than {@link GUARD_STALE_MS} belongs to a process that
 * died inside those few system calls and is removed.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { FormatError, PipelineError } from '../errors';
import { MAX_REF_BYTES, printable, processAlive, readRegularFile, tempPathFor } from '../paths';

/** A guard older than this was left by a process that died during a takeover. */
const GUARD_STALE_MS = 10_000;

/** A held lock; `release` removes it when it is still ours (idempotent). */
export interface OutputLock {
  readonly file: string;
  release(): Promise<void>;
}

/** The lock file of an output folder: `<outDir>.lock`, beside it. */
export function lockFileOf(outDir: string): string {
  return `${path.resolve(outDir)}.lock`;
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or undefined. */
export function processStartTime(pid: number): string | undefined {
  try {
    // eslint-disable-next-line no-restricted-syntax -- the kernel's /proc file (the read policy refuses /proc on purpose)
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    // comm (field 2) is in parentheses and may hold spaces: count from the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19];
  } catch {
    return undefined;
  }
}

/** Boot time (s since the epoch) from /proc/stat, for turning a start time into a date. */
function bootTime(): number | undefined {
  try {
    // eslint-disable-next-line no-restricted-syntax -- the kernel's /proc file
    const m = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'latin1'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when the lock text names a running process that is its holder: the pid runs and its
 * start time is the recorded one; for a bare pid (an older lock), the process started before
 * the lock was written (a pid reused later cannot be the holder).
 */
export function holderAlive(text: string, lockMtimeMs: number): boolean {
  const [pidText, start] = text.trim().split(/\s+/);
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0 || !processAlive(pid)) return false;
  const now = processStartTime(pid);
  if (now === undefined) return true; // no /proc: the pid is all there is
  if (start !== undefined && start !== '-') return start === now;
  const boot = bootTime();
  // USER_HZ is 100 on every Linux ABI Node runs on; a second of slack for rounding.
  return boot === undefined || (boot + Number(now) / 100) * 1000 <= lockMtimeMs + 1000;
}

async function readLock(file: string): Promise<{ text: string; mtimeMs: number } | undefined> {
  // Through the read policy: a `<out>.lock` shipped as a FIFO or a link to /dev/zero is refused
  // with one line instead of blocking the open or filling memory.
  try {
    const [text, st] = await Promise.all([readRegularFile(file, 'utf8', MAX_REF_BYTES), fsp.stat(file)]);
    return { text, mtimeMs: st.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e instanceof FormatError && e.detail === 'file does not exist'))
      return undefined;
    throw e;
  }
}

/** Creates `file` holding `text`, atomically and only if absent; false when it exists. */
async function linkNew(file: string, text: string): Promise<boolean> {
  const tmp = tempPathFor(file);
  try {
    await fsp.writeFile(tmp, text, { mode: 0o644, flag: 'wx' });
    await fsp.link(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  } finally {
    await fsp.rm(tmp, { force: true });
  }
}

/** Removes `stale` from `file` under the takeover guard; true when the caller may try again at once. */
async function takeOver(file: string, stale: string, me: string): Promise<boolean> {
  const guard = `${file}.takeover`;
  if (!(await linkNew(guard, me))) {
    const g = await readLock(guard);
    if (g && Date.now() - g.mtimeMs > GUARD_STALE_MS && !holderAlive(g.text, g.mtimeMs)) {
      // Same rule one level down: remove the abandoned guard only if it is still that one.
      const again = await readLock(guard);
      if (again?.text === g.text) await fsp.rm(guard, { force: true });
    }
    return false;
  }
  try {
    const now = await readLock(file);
    if (now?.text === stale) await fsp.rm(file, { force: true });
    return true;
  } finally {
    const g = await readLock(guard);
    if (g?.text === me) await fsp.rm(guard, { force: true });
  }
}

/**
 * Takes `<outDir>.lock`. A live holder makes this refuse with one line — after `waitMs` of
 * retries when given (a shard waits out another shard's brief hold, shards.ts); a stale lock
 * (dead holder, reused pid) is taken over atomically (see the module comment).
 */
export async function lockOutput(outDir: string, opts: { waitMs?: number } = {}): Promise<OutputLock> {
  const since = Date.now();
  const out = path.resolve(outDir);
  const file = lockFileOf(out);
  await fsp.mkdir(path.dirname(out), { recursive: true });
  const me = `${process.pid} ${processStartTime(process.pid) ?? '-'} ${randomBytes(8).toString('hex')}\n`;
  let staleTries = 0;
  for (;;) {
    if (await linkNew(file, me)) {
      let released = false;
      return {
        file,
        async release() {
          if (released) return;
          released = true;
          if ((await readLock(file))?.text === me) await fsp.rm(file, { force: true });
        },
      };
    }
    const held = await readLock(file);
    if (!held) continue; // released meanwhile
    if (holderAlive(held.text, held.mtimeMs)) {
      if (Date.now() - since < (opts.waitMs ?? 0)) {
        await new Promise((r) => setTimeout(r, 10 + Math.random() * 40));
        continue;
      }
      const pid = Number.parseInt(held.text, 10);
      throw new PipelineError(
        `${printable(out)}: another prepare (pid ${pid}) is writing this folder; wait for it to finish or choose another --out`,
      );
    }
    if (staleTries++ >= 200) {
      throw new PipelineError(`${printable(out)}: cannot take over the stale lock ${printable(file)}; remove it if no prepare is running`);
    }
    if (!(await takeOver(file, held.text, me))) await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
  }
}
