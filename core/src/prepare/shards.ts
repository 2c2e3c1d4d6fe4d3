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
import { assertWritableDir, atomicWriteFile, printable, readJsonText } from '../paths';
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

/** Parses `i/N` (UsageError naming the flag when malformed, N < 1 or i ≥ N). */
export function parseShard(text: string): ShardSpec {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) throw new UsageError(`prepare: --shard must be i/N with 0 ≤ i < N (got ${JSON.stringify(text)})`);
  const i = Number(m[1]);
  const n = Number(m[2]);
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`prepare: --shard ${text}: N must be at least 1`);
  if (i >= n) throw new UsageError(`prepare: --shard ${text}: i must be below N (shards are numbered 0 to ${n - 1})`);
  return { i, n };
}

/**
 * The shard of every task: largest first (bytes, then id, so ties are stable) onto the shard
 * holding the fewest bytes so far (lowest index on a tie) — LPT, within 4/3 of the best balance.
 */
export function assignShards(tasks: readonly Task[], n: number): Map<string, number> {
  const load = new Array<number>(n).fill(0);
  const out = new Map<string, number>();
  const order = [...tasks].sort((a, b) => b.outBytes - a.outBytes || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const t of order) {
    let best = 0;
    for (let s = 1; s < n; s++) if (load[s]! < load[best]!) best = s;
    load[best]! += t.outBytes;
    out.set(t.id, best);
  }
  return out;
}

/** The shared staging folder of a plan (beside the output, named by the fingerprint). */
export function stagingDirOf(plan: PreparePlan): string {
  return `${plan.outDir}.shards-${plan.fingerprint.slice(0, 16)}`;
}

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
  const names = (await fs.readdir(dir).catch(() => [] as string[])).filter((n) => /^shard-\d+-of-\d+\.json$/.test(n)).sort();
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
    // Only the plan's files go into place: temporaries of killed shard runs are dropped.
    const files = new Set(plan.tasks.map((t) => t.file));
    for (const n of await fs.readdir(staging)) if (!files.has(n)) await fs.rm(path.join(staging, n), { recursive: true, force: true });
    await checkReplaceable(plan.outDir, plan.source);
    await removeLeftovers(plan.outDir);
    await finalizePrepared(plan, staging);
    await fs.rm(recordsDirOf(plan), { recursive: true, force: true });
    return { plan, upToDate: false, tasks: plan.tasks.length };
  } finally {
    await lock.release();
  }
}

async function removeStaging(plan: PreparePlan): Promise<void> {
  await fs.rm(stagingDirOf(plan), { recursive: true, force: true });
  await fs.rm(recordsDirOf(plan), { recursive: true, force: true });
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
