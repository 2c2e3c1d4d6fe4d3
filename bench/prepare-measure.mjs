// What the prepare bench (prepare.bench.mjs) measures a run with, apart from the scenarios:
// a timed command (wall, CPU of its whole process tree, peak RSS), the two baselines (`cp` +
// `sync` and four `cp` processes in parallel + `sync`), whether a prepare run wrote with O_DIRECT,
// (the machine-readable summary is written by support.mjs's writeSummary).
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const sync = () => spawnSync('sync');
const pause = (s) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, s * 1000);

/**
 * Runs `cmd` under /usr/bin/time after a `sync` and a settling pause of `settle` seconds.
 * Wall seconds, peak RSS (KiB) and CPU seconds (user + system): GNU time reads them from wait4,
 * whose usage on Linux covers the process, its threads (prepare's workers) and every
 * descendant it waited for (the `cp` processes of a baseline, `sync`).
 */
export function timed(cmd, args, runEnv, settle) {
  sync();
  pause(settle);
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%M %U %S', cmd, ...args], { encoding: 'utf8', env: runEnv });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) {
    console.error(`prepare.bench: ${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr.trim()}`);
    process.exit(1);
  }
  const [rssKb, user, system] = r.stderr.trim().split('\n').pop().split(' ').map(Number);
  return { s, rssKb, cpuS: user + system, load: os.loadavg()[0] };
}

/** `cp` of the checkpoint's shards into `dst`, then `sync`: a durable copy, as prepare's fsynced output is. */
export const cpSync = (ck, dst) => [
  'sh',
  ['-c', 'mkdir "$1" && shift && cp "$@" "$0" && sync', dst, dst, ...ck.files.map((f) => path.join(ck.dir, f))],
];

/** Copies run side by side in the parallel baseline: enough to keep the disk's queue busy. */
export const PARALLEL_COPIES = 4;

/**
 * The shards dealt round-robin to {@link PARALLEL_COPIES} `cp` processes running at once, then
 * `sync`: a durable copy that keeps several requests in the disk's queue, as prepare's
 * workers do, so a slow single `cp` does not flatter prepare's ratio.
 */
export function parallelCpSync(ck, dst) {
  const groups = Array.from({ length: PARALLEL_COPIES }, () => []);
  ck.files.forEach((f, i) => groups[i % PARALLEL_COPIES].push(path.join(ck.dir, f)));
  const q = (s) => `'${s.replaceAll("'", `'\\''`)}'`;
  const cps = groups.filter((g) => g.length > 0).map((g) => `cp ${g.map(q).join(' ')} ${q(dst)} & p="$p $!";`);
  // each copy's status is waited for: one failed `cp` fails the baseline
  return ['sh', ['-c', `mkdir ${q(dst)} || exit 1; p=; ${cps.join(' ')} for x in $p; do wait $x || exit 1; done; sync`]];
}

let strace;
/**
 * Whether prepare (`cmd`, run once more, untimed, under strace) opened its outputs with O_DIRECT:
 * `yes (n O_DIRECT opens)`, `no (refused: …)` when the file system returned an error, `no (not asked)`
 * when it never tried (WEIGHT_SPEC_DIRECT_IO=off, outputs under 16 MiB), or `unknown (…)`.
 * Observed from the system calls, not inferred from the settings.
 */
export function directIoUse([cmd, args, runEnv], traceFile) {
  strace ??= spawnSync('strace', ['-V']).status === 0;
  if (!strace) return 'unknown (no strace)';
  const r = spawnSync('strace', ['-f', '-qq', '-e', 'trace=openat', '-o', traceFile, cmd, ...args], { encoding: 'utf8', env: runEnv });
  if (r.status !== 0) return `unknown (strace: ${r.stderr.trim().split('\n').pop()})`;
  const opens = readFileSync(traceFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('O_DIRECT'));
  rmSync(traceFile, { force: true });
  const ok = opens.filter((l) => /= \d+$/.test(l.trim())).length;
  if (ok > 0) return `yes (${ok} O_DIRECT opens)`;
  if (opens.length > 0) return `no (refused: ${opens[0].trim().split(' ').pop()})`;
  return 'no (not asked)';
}
