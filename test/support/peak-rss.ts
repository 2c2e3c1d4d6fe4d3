/**
 * Peak memory of one command in a fresh Node process. A process's `maxRSS` is a lifetime
 * peak, so measuring a step inside a test worker also counts whatever ran there before
 * (module loads, the fixture writer, an earlier test file): it read 104 MB once on CI for a
 * step that takes a few. A child that does only the step, set against a child that does the
 * same on a tiny input, measures the step alone.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** What a measured child printed, how it ended and its peak RSS in KiB. */
export interface PeakRun {
  kb: number;
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node <args>` in a child process and reads back its peak RSS (KiB), written by a
 * preload on exit. `dir` holds the preload and its output.
 */
export function peakRss(dir: string, args: string[]): PeakRun {
  const preload = path.join(dir, `rss-${process.pid}.cjs`);
  const out = path.join(dir, `rss-${process.pid}.txt`);
  fs.rmSync(out, { force: true });
  fs.writeFileSync(
    preload,
    `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, String(process.resourceUsage().maxRSS)));`,
  );
  const r = spawnSync(process.execPath, ['--require', preload, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  const kb = Number(fs.readFileSync(out, 'utf8'));
  return { kb, status: r.status, stdout: r.stdout, stderr: r.stderr };
}
