/**
 * docs/PREPARE-CLUSTER.md on a real Slurm (issue #48): Debian's slurmctld, slurmd and munge,
 * started by scripts/slurm-local.sh on this machine, run the page's two sbatch scripts and its
 * submission (`sbatch --array` + a `--dependency=afterok` finalize job) taken from the page, only
 * the paths given through CKPT/OUT as the scripts read them. The result must be byte-identical to
 * a single-host prepare (SOURCE_DATE_EPOCH set). A second run kills a shard mid-run: its
 * `weight-spec` stops itself (SIGSTOP, a test-only Node preload) with its task files written and
 * its record a temporary not yet renamed into place, and the test requeues it with `scontrol requeue`;
 * Slurm kills the frozen process, runs the task again (SLURM_RESTART_COUNT=1), the finalize
 * job waits for it, and the result is still byte-identical with no temporary left.
 *
 * Where Slurm is not installed this file is skipped with a notice; under CI=true (which installs
 * it in .ci/run) a Slurm that cannot start fails the run with the daemon's own line.
 * Run `npm run build` first (the jobs run dist/cli.js).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-slurm-');
const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs', 'PREPARE-CLUSTER.md'), 'utf8');
const blocks = [...doc.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
const CKPT = path.join(fixturesDir(), 'llama');
const installed = fs.existsSync('/usr/sbin/slurmctld') && fs.existsSync('/usr/sbin/slurmd') && fs.existsSync('/usr/sbin/munged');
if (!installed && process.env.CI === 'true') {
  throw new Error('Slurm is not installed (CI=true requires it: apt-get install slurmctld slurmd slurm-client munge)');
}
if (!installed) console.warn('[weight-spec] Slurm not installed (Debian slurmctld slurmd slurm-client munge): real-Slurm tests skipped');

/**
 * Stops the process just before its first rename into the shard staging or records folder: the
 * main thread's first such rename is the shard's record, after its task files are written (the
 * task files are committed by the worker threads, which this preload does not reach). That is
 * the kill the page describes: "a run killed between writing and recording".
 */
const FREEZE = `
const fsp = require('node:fs/promises');
const fs = require('node:fs');
const rename = fsp.rename;
fsp.rename = async function (from, to) {
  if (/\\.shards-[^/]*\\/[^/]*\\.tmp-/.test(String(from))) {
    fs.writeFileSync(process.env.WS_FREEZE_MARKER, process.pid + ' ' + String(from));
    process.kill(process.pid, 'SIGSTOP');
  }
  return rename.call(this, from, to);
};
`;

let slurmDir = '';
let slurmConf = '';
let bin = '';
let single = '';
const env = (extra: Record<string, string> = {}) => ({
  ...process.env,
  PATH: `${bin}:${process.env.PATH}`,
  SLURM_CONF: slurmConf,
  WEIGHT_SPEC_PROGRESS: 'off',
  SOURCE_DATE_EPOCH: '1700000000',
  ...extra,
});

function sh(cmd: string, args: string[], o: { cwd?: string; extra?: Record<string, string> } = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: o.cwd, env: env(o.extra) });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

const scontrol = (...args: string[]) => spawnSync('scontrol', args, { env: env(), encoding: 'utf8' });

/** A job's state from `scontrol show job -o` (array jobs: every task's state). */
function jobStates(id: string): string[] {
  const r = scontrol('show', 'job', '-o', id);
  return [...(r.stdout ?? '').matchAll(/JobState=(\S+)/g)].map((m) => m[1]!);
}

/** Waits (bounded) until every task of `id` has ended; returns the states. */
async function waitEnded(id: string, ms: number): Promise<string[]> {
  const end = Date.now() + ms;
  for (;;) {
    const s = jobStates(id);
    if (s.length > 0 && s.every((x) => !/PENDING|RUNNING|CONFIGURING|COMPLETING|REQUEUE|SUSPENDED/.test(x))) return s;
    if (Date.now() > end) {
      const all = spawnSync('scontrol', ['show', 'job', '-o'], { env: env(), encoding: 'utf8' }).stdout;
      throw new Error(`job ${id} still ${s.join(',')} after ${ms} ms; the queue:\n${all}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** What the jobs printed, for a failure message. */
function jobOutputs(dir: string): string {
  return fs
    .readdirSync(dir)
    .filter((n) => n.startsWith('slurm-'))
    .map((n) => `--- ${n}\n${fs.readFileSync(path.join(dir, n), 'utf8')}`)
    .join('\n');
}

function expectLikeSingle(out: string): void {
  const names = fs.readdirSync(single).sort();
  expect(fs.readdirSync(out).sort()).toEqual(names);
  for (const n of names) {
    const a = path.join(single, n);
    const b = path.join(out, n);
    if (fs.lstatSync(a).isSymbolicLink()) expect(fs.readlinkSync(b), n).toBe(fs.readlinkSync(a));
    else expect(fs.readFileSync(b).equals(fs.readFileSync(a)), n).toBe(true);
  }
  // the staging and records folders (and any temporary of the killed shard) are gone
  expect(fs.readdirSync(path.dirname(out)).filter((n) => n.startsWith(`${path.basename(out)}.`))).toEqual([]);
}

/** Writes the page's two scripts into `dir` and runs its submission there; returns the finalize job id. */
async function submit(dir: string, out: string, extra: Record<string, string> = {}): Promise<{ array: string; finalize: string }> {
  const scripts = blocks.filter((b) => b.lang === 'bash' && b.text.startsWith('#!/bin/bash'));
  expect(scripts).toHaveLength(2);
  const submission = blocks.find((b) => b.lang === 'bash' && b.text.includes('sbatch --parsable'));
  expect(submission).toBeDefined();
  fs.writeFileSync(path.join(dir, 'prepare-shards.sbatch'), scripts[0]!.text);
  fs.writeFileSync(path.join(dir, 'prepare-finalize.sbatch'), scripts[1]!.text);
  // the submission runs verbatim; `set -x` shows the array job's id that it keeps in $jid
  const r = await sh('bash', ['-euxo', 'pipefail', '-c', submission!.text], { cwd: dir, extra: { CKPT, OUT: out, ...extra } });
  expect(r.code, r.out).toBe(0);
  const array = /jid=(\d+)/.exec(r.out)?.[1];
  const finalize = /Submitted batch job (\d+)/.exec(r.out)?.[1];
  expect(array, r.out).toBeDefined();
  expect(finalize, r.out).toBeDefined();
  return { array: array!, finalize: finalize! };
}

describeFixtures('docs/PREPARE-CLUSTER.md on a real Slurm', () => {
  beforeAll(() => {
    if (!installed) return;
    const root = tmp();
    slurmDir = path.join(root, 'slurm');
    const up = spawnSync('bash', [path.join(REPO_ROOT, 'scripts', 'slurm-local.sh'), 'start', slurmDir], { encoding: 'utf8' });
    // says why when a daemon cannot start; under CI this fails the run
    expect(up.status, `Slurm could not start: ${up.stderr.trim()}`).toBe(0);
    slurmConf = /SLURM_CONF=(\S+)/.exec(up.stdout)![1]!;
    bin = path.join(root, 'bin');
    fs.mkdirSync(bin);
    const cli = path.join(REPO_ROOT, 'dist', 'cli.js');
    fs.writeFileSync(path.join(root, 'freeze.cjs'), FREEZE);
    // `weight-spec` as the page runs it; the shard named by WS_FREEZE_TASK freezes on its first run only
    fs.writeFileSync(
      path.join(bin, 'weight-spec'),
      `#!/bin/sh
if [ -n "\${WS_FREEZE_TASK:-}" ] && [ "\${SLURM_ARRAY_TASK_ID:-}" = "$WS_FREEZE_TASK" ] && [ -z "\${SLURM_RESTART_COUNT:-}" ]; then
  exec "${process.execPath}" --require "${path.join(root, 'freeze.cjs')}" "${cli}" "$@"
fi
exec "${process.execPath}" "${cli}" "$@"
`,
      { mode: 0o755 },
    );
    single = path.join(root, 'single');
    const r = spawnSync(path.join(bin, 'weight-spec'), ['prepare', '--checkpoint', CKPT, '--dtype', 'bfloat16', '--out', single], {
      env: env(),
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
  }, 60_000);

  afterAll(() => {
    if (slurmDir) spawnSync('bash', [path.join(REPO_ROOT, 'scripts', 'slurm-local.sh'), 'stop', slurmDir]);
  });

  const slurmIt = installed ? it : it.skip;

  slurmIt(
    'sbatch --array runs the shards, the afterok job finalizes, the result equals one host',
    async () => {
      const dir = tmp();
      const out = path.join(dir, 'out');
      const ids = await submit(dir, out);
      const states = await waitEnded(ids.finalize, 120_000);
      expect(states, jobOutputs(dir)).toEqual(['COMPLETED']);
      expect(await waitEnded(ids.array, 10_000)).toEqual(Array(8).fill('COMPLETED'));
      // each array task ran its own shard of 8
      for (let i = 0; i < 8; i++) expect(fs.readFileSync(path.join(dir, `slurm-${ids.array}_${i}.out`), 'utf8')).toContain(`shard ${i}/8`);
      expectLikeSingle(out);
    },
    180_000,
  );

  slurmIt(
    'a shard killed mid-run and requeued: the finalize job waits for it, the result still equals one host',
    async () => {
      const dir = tmp();
      const out = path.join(dir, 'out');
      const marker = path.join(dir, 'frozen');
      const ids = await submit(dir, out, { WS_FREEZE_TASK: '3', WS_FREEZE_MARKER: marker });
      // shard 3 stops itself with a finished task file not yet renamed into place
      const end = Date.now() + 60_000;
      while (!fs.existsSync(marker)) {
        if (Date.now() > end) throw new Error(`shard 3 never reached its first rename\n${jobOutputs(dir)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const [pidText, frozenTemp] = fs.readFileSync(marker, 'utf8').split(' ');
      const pid = Number(pidText);
      // the shard's tasks are written, its record is a temporary not yet renamed into place
      expect(frozenTemp).toMatch(/\.records\/shard-3-of-8\.json\.tmp-/);
      expect(fs.existsSync(frozenTemp!)).toBe(true);
      // the finalize job is held by its dependency meanwhile
      expect(jobStates(ids.finalize)).toEqual(['PENDING']);
      const task = `${ids.array}_3`;
      const rq = scontrol('requeue', task);
      expect(rq.status, rq.stderr).toBe(0);
      // Slurm holds a requeued job back for two minutes (BeginTime) once the kill is done; the
      // operator lets it start now
      const held = Date.now() + 30_000;
      while (!/JobState=PENDING .*Reason=BeginTime/.test(scontrol('show', 'job', '-o', task).stdout ?? '')) {
        if (Date.now() > held) throw new Error(`requeued shard not pending: ${scontrol('show', 'job', '-o', task).stdout}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const start = scontrol('update', `jobid=${task}`, 'StartTime=now');
      expect(start.status, start.stderr).toBe(0);
      const states = await waitEnded(ids.finalize, 120_000);
      expect(states, jobOutputs(dir)).toEqual(['COMPLETED']);
      // the frozen process was killed by Slurm; the task ran again
      expect(() => process.kill(pid, 0)).toThrow();
      expect(scontrol('show', 'job', '-o', task).stdout).toMatch(/Restarts=1\b/);
      expectLikeSingle(out);
    },
    240_000,
  );
});
