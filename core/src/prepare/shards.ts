/**
 * One prepare plan split over many hosts by the scheduler they already run (Slurm arrays,
 * Kubernetes Indexed Jobs, Ray): `prepare --shard i/N` runs the tasks that fall to shard i,
 * `prepare --finalize` commits the result. See docs/PREPARE-CLUSTER.md.
 *
 * Every host plans the same plan from the shared source, so everything here is derived from
 * the plan alone: the assignment ({@link assignShards}), the shared staging folder
 * `<out>.shards-<fingerprint>` (where the task files go) and its records folder
 * `<out>.shards-<fingerprint>.records` (one `shard-<i>-of-<N>.json` per shard run).
 *
 * Lock rules. A whole-output prepare and `--finalize` hold `<out>.lock` for their whole run
 * (they replace `<out>`). A shard holds it only while it checks `<out>` and creates the staging
 * folders, then releases it: shards of one plan must run side by side, and they need no
 * mutual exclusion, because each task file is written to a unique temp name and renamed into
 * place with identical bytes, and records are written the same way. So a shard refuses to
 * start while a prepare or a finalize holds the lock, and finalize must run after the shard
 * jobs have ended (the scheduler's dependency: it then finds what is missing, if anything).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { PipelineError, UsageError } from '../errors';
import { TEMP_NAME_RE, assertWritableDir, atomicWriteFile, printable, processAlive, readJsonText } from '../paths';
import { safetensorsSource } from './bin-source';
import { defaultBudgetBytes, runTasks, type PrepareProgress } from './executor';
import { finalizePrepared, removeLeftovers } from './finalize';
import { canonicalJson } from './fingerprint';
import { preparedStatus } from './manifest';
import { checkApartFromSource, checkReplaceable, lockOutput } from './ownership';
import { planPrepare } from './planner';
import type { PrepareOptions, PreparePlan, Task } from './types';

/** How long a shard waits for the output lock: far longer than another shard's hold. */
const SHARD_LOCK_WAIT_MS = 5_000;

/** A shard: index `i` (0-based, as Slurm's and Kubernetes' indices are) of `n`. */
export interface ShardSpec {
  i: number;
  n: number;
}

/**
 * The most shards a plan may be split into: far beyond any cluster array (Slurm's default
 * MaxArraySize is 1001), small enough that a record name and the shard loads stay bounded.
 */
export const MAX_SHARDS = 65_536;

/** Parses `i/N` (UsageError naming the flag when malformed, N < 1, N > {@link MAX_SHARDS} or i ≥ N), before any allocation. */
export function parseShard(text: string): ShardSpec {
  const m = /^(\d{1,16})\/(\d{1,16})$/.exec(text.trim());
  if (!m) throw new UsageError(`prepare: --shard must be i/N with 0 ≤ i < N ≤ ${MAX_SHARDS} (got ${JSON.stringify(text.slice(0, 64))})`);
  const i = Number(m[1]);
  const n = Number(m[2]);
  if (n < 1) throw new UsageError(`prepare: --shard ${text}: N must be at least 1`);
  if (n > MAX_SHARDS) throw new UsageError(`prepare: --shard ${text}: N must be at most ${MAX_SHARDS}`);
  if (i >= n) throw new UsageError(`prepare: --shard ${text}: i must be below N (shards are numbered 0 to ${n - 1})`);
  return { i, n };
}

/**
 * The shard of every task: largest first (bytes, then id, so ties are stable) onto the shard
 * holding the fewest bytes so far (lowest index on a tie) — LPT, within 4/3 of the best balance.
 */
export function assignShards(tasks: readonly Task[], n: number): Map<string, number> {
  // Shards past the task count never get a task (an empty shard of lower index always wins
  // the tie), so the loads are bounded by the plan, not by N; a heap ordered by (load, index)
  // picks exactly the shard the linear scan would.
  const k = Math.max(1, Math.min(n, tasks.length));
  const load = new Float64Array(k);
  const heap = Array.from({ length: k }, (_, s) => s);
  const less = (a: number, b: number) => load[a]! < load[b]! || (load[a] === load[b] && a < b);
  const out = new Map<string, number>();
  const order = [...tasks].sort((a, b) => b.outBytes - a.outBytes || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const t of order) {
    const best = heap[0]!;
    load[best]! += t.outBytes;
    out.set(t.id, best);
    // sift the root down
    for (let at = 0; ;) {
      const l = 2 * at + 1;
      const r = l + 1;
      let m = at;
      if (l < k && less(heap[l]!, heap[m]!)) m = l;
      if (r < k && less(heap[r]!, heap[m]!)) m = r;
      if (m === at) break;
      [heap[at], heap[m]] = [heap[m]!, heap[at]!];
      at = m;
    }
  }
  return out;
}

/** The shared staging folder of a plan (beside the output, named by the fingerprint). */
export function stagingDirOf(plan: PreparePlan): string {
  return `${plan.outDir}.shards-${plan.fingerprint.slice(0, 16)}`;
}

/** A shard record's name in the records folder. */
const RECORD_NAME = /^shard-\d+-of-\d+\.json$/;

function recordsDirOf(plan: PreparePlan): string {
  return `${stagingDirOf(plan)}.records`;
}

/** A task's fingerprint: the plan's and the task's own definition (its file name included). */
export function taskFingerprint(plan: PreparePlan, t: Task): string {
  const def = { plan: plan.fingerprint, id: t.id, transform: t.transform, params: t.params, file: t.file, tensors: t.tensors };
  return createHash('sha256').update(canonicalJson(def)).digest('hex');
}

/** One task in a shard record. */
const TaskRecordSchema = z.object({
  id: z.string(),
  file: z.string(),
  size: z.number().int().nonnegative(),
  fingerprint: z.string(),
  sha256: z.string(),
});
export type TaskRecord = z.infer<typeof TaskRecordSchema>;

/**
 * The record a shard run writes: `shard-<i>-of-<N>.json` in the records folder. Read through
 * this schema, never a cast: a record another host left half-written, or any other JSON there,
 * counts as absent (its tasks as missing); an entry counts only with the plan's own file name.
 */
const ShardRecordSchema = z.object({
  fingerprint: z.string(),
  shard: z.number().int().nonnegative(),
  of: z.number().int().positive(),
  tasks: z.array(TaskRecordSchema),
});
export type ShardRecord = z.infer<typeof ShardRecordSchema>;

async function sha256Of(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 22 })) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Every record entry of this plan whose file is present with its recorded size, by task id. */
async function presentTasks(plan: PreparePlan): Promise<Map<string, TaskRecord>> {
  const done = new Map<string, TaskRecord>();
  const dir = recordsDirOf(plan);
  const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => RECORD_NAME.test(n)).sort();
  const wanted = new Map(plan.tasks.map((t) => [t.id, { fingerprint: taskFingerprint(plan, t), file: t.file }]));
  for (const name of names) {
    let rec: ShardRecord;
    try {
      const parsed = ShardRecordSchema.safeParse(JSON.parse(await readJsonText(path.join(dir, name))));
      if (!parsed.success) continue; // not a shard record: its tasks count as missing
      rec = parsed.data;
    } catch {
      continue; // unreadable: its tasks count as missing
    }
    if (rec.fingerprint !== plan.fingerprint) continue;
    for (const e of rec.tasks) {
      const w = wanted.get(e.id);
      if (w?.fingerprint !== e.fingerprint || w.file !== e.file) continue;
      const st = await fs.stat(path.join(stagingDirOf(plan), e.file)).catch(() => undefined);
      if (st?.size === e.size) done.set(e.id, e);
    }
  }
  return done;
}

/** Plans as runPrepare does and applies its checks on the output folder. */
async function planChecked(opts: PrepareOptions): Promise<{ plan: PreparePlan; budgetBytes: number }> {
  const budgetBytes = opts.budgetBytes ?? defaultBudgetBytes();
  const source = await safetensorsSource(opts.checkpoint);
  const plan = await planPrepare({ ...opts, checkpoint: source.checkpoint, budgetBytes });
  checkApartFromSource(plan.outDir, plan.source);
  assertWritableDir(plan.outDir);
  return { plan, budgetBytes };
}

async function upToDate(plan: PreparePlan): Promise<boolean> {
  const status = await preparedStatus(plan.outDir);
  return status.state === 'prepared' && status.manifest?.fingerprint === plan.fingerprint;
}

/** What a shard run did. */
export interface ShardResult {
  plan: PreparePlan;
  staging: string;
  shard: ShardSpec;
  /** The output already holds this plan: nothing was done. */
  upToDate: boolean;
  assigned: number;
  written: number;
  /** Tasks found present and recorded (by an earlier or a concurrent run), not redone. */
  skipped: number;
  bytes: number;
}

/** Runs shard `shard` of the plan into the shared staging folder and records what it wrote. */
export async function runShard(
  opts: PrepareOptions & { shard: ShardSpec; workers?: number; onProgress?: (p: PrepareProgress) => void },
): Promise<ShardResult> {
  const { plan, budgetBytes } = await planChecked(opts);
  const staging = stagingDirOf(plan);
  const mine = (() => {
    const of = assignShards(plan.tasks, opts.shard.n);
    return plan.tasks.filter((t) => of.get(t.id) === opts.shard.i);
  })();
  const base = { plan, staging, shard: opts.shard, assigned: mine.length, written: 0, skipped: 0, bytes: 0 };
  // The lock only for the checks and the folders (milliseconds; another shard's hold is
  // waited out, a prepare's or a finalize's is not): shards of one plan run side by side.
  const lock = await lockOutput(plan.outDir, { waitMs: SHARD_LOCK_WAIT_MS });
  try {
    if (await upToDate(plan)) return { ...base, upToDate: true, skipped: mine.length };
    await checkReplaceable(plan.outDir, plan.source);
    await fs.mkdir(staging, { recursive: true });
    await fs.mkdir(recordsDirOf(plan), { recursive: true });
  } finally {
    await lock.release();
  }
  const done = await presentTasks(plan);
  const todo = mine.filter((t) => !done.has(t.id));
  if (todo.length > 0) {
    await runTasks(todo, {
      outDir: staging,
      budgetBytes,
      ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
  }
  const entries: TaskRecord[] = [];
  for (const t of mine) {
    const prev = done.get(t.id);
    if (prev) {
      entries.push(prev);
      continue;
    }
    const file = path.join(staging, t.file);
    const st = await fs.stat(file);
    entries.push({ id: t.id, file: t.file, size: st.size, fingerprint: taskFingerprint(plan, t), sha256: await sha256Of(file) });
  }
  const record: ShardRecord = { fingerprint: plan.fingerprint, shard: opts.shard.i, of: opts.shard.n, tasks: entries };
  const name = `shard-${opts.shard.i}-of-${opts.shard.n}.json`;
  await atomicWriteFile(path.join(recordsDirOf(plan), name), JSON.stringify(record, null, 2) + '\n');
  const bytes = entries.reduce((a, e) => a + e.size, 0);
  return { ...base, upToDate: false, written: todo.length, skipped: mine.length - todo.length, bytes };
}

/** What a finalize did. */
export interface FinalizeResult {
  plan: PreparePlan;
  upToDate: boolean;
  tasks: number;
}

/**
 * Checks that every task of the plan is recorded with its fingerprint and present with its
 * size in the staging folder, then writes the index, the sidecars, the manifest and the
 * sentinel last (finalize.ts) and renames the folder into place. Refuses with the list of
 * missing tasks (and the shard each fell to, when the records agree on N).
 */
export async function finalizeShards(opts: PrepareOptions): Promise<FinalizeResult> {
  const { plan } = await planChecked(opts);
  const lock = await lockOutput(plan.outDir);
  try {
    if (await upToDate(plan)) {
      await removeStaging(plan);
      return { plan, upToDate: true, tasks: plan.tasks.length };
    }
    const staging = stagingDirOf(plan);
    const done = await presentTasks(plan);
    const missing = plan.tasks.filter((t) => !done.has(t.id));
    if (missing.length > 0) throw new PipelineError(missingMessage(plan, missing, await recordedN(plan)));
    await checkReplaceable(plan.outDir, plan.source);
    await dropShardTemporaries(plan, staging);
    await removeLeftovers(plan.outDir);
    await finalizePrepared(plan, staging);
    await removeOwned(recordsDirOf(plan), (n) => RECORD_NAME.test(n));
    return { plan, upToDate: false, tasks: plan.tasks.length };
  } finally {
    await lock.release();
  }
}

/**
 * Only the plan's files go into place. Temporaries of killed shard runs (a plan file's temp
 * name, `<file>.tmp-<pid>-<hex>`, of a process that is gone) are removed — one at a time, never
 * recursively. Anything else in the staging folder was not written by a shard (a user's
 * notes): finalize refuses, naming it, and deletes nothing.
 */
async function dropShardTemporaries(plan: PreparePlan, staging: string): Promise<void> {
  const files = new Set(plan.tasks.map((t) => t.file));
  const temps: string[] = [];
  const foreign: string[] = [];
  for (const e of await fs.readdir(staging, { withFileTypes: true })) {
    if (files.has(e.name)) continue;
    const m = TEMP_NAME_RE.exec(e.name);
    const ours = m && m[1] === 'tmp' && files.has(e.name.slice(0, m.index)) && e.isFile();
    if (!ours) foreign.push(e.name);
    else if (!processAlive(Number(m[2]))) temps.push(e.name);
    else foreign.push(e.name); // a shard still writing: finalize runs after every shard ended
  }
  if (foreign.length > 0) {
    const shown = foreign
      .sort()
      .slice(0, 5)
      .map((n) => printable(n))
      .join(', ');
    const more = foreign.length > 5 ? `, and ${foreign.length - 5} more` : '';
    throw new PipelineError(
      `${printable(staging)}: cannot finalize, it holds ${shown}${more}, which no shard of this plan wrote ` +
        '(or a shard still writing); move it out of the staging folder and run --finalize again',
    );
  }
  for (const n of temps) await fs.rm(path.join(staging, n), { force: true });
}

/**
 * Removes from `dir` the entries `ours` names (and their dead temporaries), one by one, then
 * the folder when nothing else is left: what a user put there stays, with the folder.
 */
async function removeOwned(dir: string, ours: (name: string) => boolean): Promise<void> {
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const n of names) {
    const m = TEMP_NAME_RE.exec(n);
    const mine = ours(n) || (m !== null && ours(n.slice(0, m.index)) && !processAlive(Number(m[2])));
    if (mine) await fs.rm(path.join(dir, n), { force: true });
  }
  await fs.rmdir(dir).catch(() => undefined); // not empty: someone else's files remain
}

/** An up-to-date output's leftover staging: the plan's files and the records, nothing else. */
async function removeStaging(plan: PreparePlan): Promise<void> {
  const files = new Set(plan.tasks.map((t) => t.file));
  await removeOwned(stagingDirOf(plan), (n) => files.has(n));
  await removeOwned(recordsDirOf(plan), (n) => RECORD_NAME.test(n));
}

/** The N the shard records were written with, when they all agree. */
async function recordedN(plan: PreparePlan): Promise<number | undefined> {
  const names = await fs.readdir(recordsDirOf(plan)).catch(() => [] as string[]);
  const ns = new Set(names.map((n) => /^shard-\d+-of-(\d+)\.json$/.exec(n)?.[1]).filter((x): x is string => !!x));
  return ns.size === 1 ? Number([...ns][0]) : undefined;
}

function missingMessage(plan: PreparePlan, missing: Task[], n: number | undefined): string {
  const of = n ? assignShards(plan.tasks, n) : undefined;
  const shown = missing.slice(0, 20).map((t) => `${t.id} (${t.file}${of ? `, shard ${of.get(t.id)}/${n}` : ''})`);
  const more = missing.length > shown.length ? `, and ${missing.length - shown.length} more` : '';
  return `${printable(plan.outDir)}: cannot finalize, ${missing.length} of ${plan.tasks.length} tasks missing: ${shown.join(', ')}${more}; run those shards (prepare --shard i/N) first`;
}
