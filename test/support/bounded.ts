/**
 * Hang tests that never wait on the process (issue #43): a spawned CLI or language server is
 * watched for time and resident memory (VmRSS from /proc, every 25 ms) and killed with SIGKILL
 * past either bound, and the test then fails on `hung` / `rssExceeded` instead of stalling the
 * suite or the machine. A FIFO's open() and a read of /dev/zero are exactly what this bounds.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './fixtures';

/** The default bounds: 10 s and 1 GB resident. */
export const BOUND_MS = 10_000;
export const BOUND_RSS_MB = 1024;

/** Resident memory of `pid` in MB (0 once it is gone). */
export function rssMb(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Watches `pid`: kills it with SIGKILL once its RSS passes `maxMb`. `stop()` ends the watch. */
export function watchRss(pid: number, maxMb = BOUND_RSS_MB): { stop(): void; readonly peakMb: number; readonly exceeded: boolean } {
  let peak = 0;
  let exceeded = false;
  const timer = setInterval(() => {
    const mb = rssMb(pid);
    peak = Math.max(peak, mb);
    if (mb > maxMb && !exceeded) {
      exceeded = true;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }, 25);
  return {
    stop: () => clearInterval(timer),
    get peakMb() {
      return peak;
    },
    get exceeded() {
      return exceeded;
    },
  };
}

/** What a bounded run of the CLI did. */
export interface BoundedRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Killed at the time bound. */
  hung: boolean;
  /** Killed at the memory bound. */
  rssExceeded: boolean;
  peakRssMb: number;
  ms: number;
}

/** Runs `node dist/cli.js <args>` bounded in time and memory (build dist first). */
export function cliBounded(
  args: string[],
  o: { cwd?: string; env?: Record<string, string>; ms?: number; maxRssMb?: number } = {},
): Promise<BoundedRun> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), ...args], {
      cwd: o.cwd ?? REPO_ROOT,
      env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', WEIGHT_SPEC_DEBUG: '', ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hung = false;
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const rss = watchRss(p.pid!, o.maxRssMb ?? BOUND_RSS_MB);
    const timer = setTimeout(() => {
      hung = true;
      p.kill('SIGKILL');
    }, o.ms ?? BOUND_MS);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      rss.stop();
      resolve({ code, stdout, stderr, hung, rssExceeded: rss.exceeded, peakRssMb: rss.peakMb, ms: Date.now() - t0 });
    });
  });
}

/** `p`, or a rejection naming `what` after `ms` (a request a hung server never answers). */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
