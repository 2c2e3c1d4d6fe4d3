/**
 * The prepare executor: a pool of worker threads over the plan's tasks. A task is admitted
 * only while the sum of the admitted tasks' estimated peak bytes stays within the budget,
 * so memory use is bounded by the budget, not by the number of cores. Progress is
 * reported as bytes written and tasks finished.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { FormatError, PipelineError } from '../errors';
import { SafetensorsWriter, commitSealedFile } from '../formats/safetensors';
import { PIECE_BYTES, executePiece, isPieceable, mergeStats, pieceRanges, type TaskPiece } from './run-piece';
import { executeTask, type TaskStats } from './run-task';
import { checkTaskNonFinite } from './overflow';
import { DIRECT_STAGING_BYTES, wantsDirect } from './direct-io';
import type { Task } from './types';
import type { WorkerMessage, WorkerRequest } from './worker';

/** Progress of a run. */
export interface PrepareProgress {
  bytesDone: number;
  bytesTotal: number;
  tasksDone: number;
  tasksTotal: number;
}

/** Options of {@link runTasks}. */
export interface ExecutorOptions {
  outDir: string;
  budgetBytes: number;
  /** Worker threads (default: cores, at most the task count); 0 runs tasks in this thread. */
  workers?: number;
  /** The bundled worker script (default: prepare-worker.js beside this bundle, or dist/). */
  workerPath?: string;
  onProgress?: (p: PrepareProgress) => void;
  /** Output bytes per piece of a dense task (default {@link PIECE_BYTES}; tests make it small). */
  pieceBytes?: number;
  /** Keep tensors that got ±Inf/NaN values (narrowing overflow, FP8 NaN codes): counted, not refused. */
  allowOverflow?: boolean;
}

/** What the executor observed (the budget test reads these). */
export interface ExecutorResult {
  stats: Map<string, TaskStats>;
  /** Largest sum of admitted peak estimates at any moment. */
  peakAdmittedBytes: number;
  /** Most tasks running at once. */
  maxConcurrent: number;
  /** Pieces run (dense tasks cut into byte ranges; 0 when every task ran whole). */
  pieces: number;
  /** Output tensors holding ±Inf/NaN values, with their counts (only with `allowOverflow`; else the run fails). */
  nonFinite: Record<string, number>;
}

/** Default RAM budget: 80 % of the memory available now. */
export function defaultBudgetBytes(): number {
  return Math.floor(availableMemory() * 0.8);
}

/** MemAvailable from /proc/meminfo where it exists (page cache counts as available), else os.freemem(). */
export function availableMemory(): number {
  try {
    // eslint-disable-next-line no-restricted-syntax -- the kernel's /proc file (the read policy refuses /proc on purpose)
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return os.freemem();
}

/** Where the worker script is: beside the running bundle (dist/), else the repo's dist/. */
export function defaultWorkerPath(): string | undefined {
  const here = typeof __dirname === 'string' ? __dirname : process.cwd();
  const candidates = [
    process.env.WEIGHT_SPEC_PREPARE_WORKER,
    path.join(here, 'prepare-worker.js'),
    path.resolve(here, '..', '..', '..', 'dist', 'prepare-worker.js'),
  ];
  return candidates.find((c): c is string => !!c && fs.existsSync(c));
}

/** A queued unit of work: a whole task, or one byte range of a dense task's output. */
export interface Job {
  task: Task;
  piece?: [number, number];
}

/**
 * A job's estimated peak: its task's working set, plus the staging buffers of the thread when
 * it writes past the page cache (direct-io.ts; a thread runs one job at a time).
 */
function jobBytes(j: Job): number {
  const out = j.piece ? j.piece[1] - j.piece[0] : j.task.outBytes;
  return j.task.peakBytes + (!j.task.link && wantsDirect(out) ? DIRECT_STAGING_BYTES : 0);
}

/** A dense task made in pieces: its writer (created by the first piece to start) and its tally. */
interface Filled {
  writer?: Promise<SafetensorsWriter>;
  remaining: number;
  written: number;
  stats?: TaskStats;
}

/**
 * The pieces of several tasks in the order workers should take them: `width` tasks at a
 * time, one piece of each in turn (the next task joins when one runs out), so workers
 * running side by side write different files.
 */
export function interleave(lists: Job[][], width: number): Job[] {
  const out: Job[] = [];
  const active: Job[][] = [];
  let next = 0;
  while (active.length > 0 || next < lists.length) {
    while (active.length < width && next < lists.length) active.push([...lists[next++]!]);
    for (let i = 0; i < active.length;) {
      out.push(active[i]!.shift()!);
      if (active[i]!.length === 0) active.splice(i, 1);
      else i++;
    }
  }
  return out;
}

/** Runs `tasks`, each writing its file into `opts.outDir`. Rejects on the first failure. */
export async function runTasks(tasks: Task[], opts: ExecutorOptions): Promise<ExecutorResult> {
  const bytesTotal = tasks.reduce((a, t) => a + t.outBytes, 0);
  const progress: PrepareProgress = { bytesDone: 0, bytesTotal, tasksDone: 0, tasksTotal: tasks.length };
  const report = () => opts.onProgress?.({ ...progress });
  const stats = new Map<string, TaskStats>();
  let admitted = 0;
  let peakAdmittedBytes = 0;
  let running = 0;
  let maxConcurrent = 0;
  for (const t of tasks) {
    if (jobBytes({ task: t }) > opts.budgetBytes)
      throw new PipelineError(
        `task ${t.id} (${t.file}) needs an estimated ${jobBytes({ task: t })} bytes, over the RAM budget of ${opts.budgetBytes} bytes`,
      );
  }
  const workerPath = opts.workerPath ?? defaultWorkerPath();
  const wanted = opts.workers ?? Math.max(1, Math.min(os.availableParallelism?.() ?? os.cpus().length, tasks.length));
  const inThread = wanted === 0 || !workerPath;
  if (!inThread && !fs.existsSync(workerPath)) throw new FormatError(workerPath, 'prepare worker script not found (run the build)');
  const slots = inThread ? 1 : wanted;
  const workers: Worker[] = [];
  const idle: Worker[] = [];
  // Largest first (LPT): the last round then holds small tasks, so no worker idles long. With
  // more than one worker, a large dense task is cut into pieces that workers fill side by side.
  const filled = new Map<string, Filled>();
  const queue: Job[] = [];
  const pieced: Job[][] = [];
  for (const task of [...tasks].sort((a, b) => b.outBytes - a.outBytes)) {
    const ranges = slots > 1 && isPieceable(task) ? pieceRanges(task, opts.pieceBytes ?? PIECE_BYTES) : [];
    if (ranges.length < 2) {
      queue.push({ task });
      continue;
    }
    filled.set(task.id, { remaining: ranges.length, written: 0 });
    pieced.push(ranges.map((piece) => ({ task, piece })));
  }
  queue.push(...interleave(pieced, slots));
  const queuedPieces = pieced.reduce((a, l) => a + l.length, 0);
  /** Jobs running per task. */
  const busy = new Map<string, number>();
  /** Files being committed (fsync + rename) after their last piece or their sealed task. */
  let finishing = 0;
  const commits: Promise<unknown>[] = [];
  report();

  const runOn = (task: Task, w: Worker | undefined, piece?: TaskPiece): Promise<TaskStats> => {
    const onBytes = (n: number) => {
      progress.bytesDone += n;
      report();
    };
    if (!w) return piece ? executePiece(task, piece, onBytes) : executeTask(task, opts.outDir, onBytes);
    return new Promise<TaskStats>((resolve, reject) => {
      const onMessage = (m: WorkerMessage) => {
        if (m.type === 'progress') {
          progress.bytesDone += m.bytes;
          report();
          return;
        }
        w.off('message', onMessage);
        w.off('error', onError);
        w.off('exit', onExit);
        if (m.type === 'done') resolve(m.stats);
        else
          reject(
            m.name === 'FormatError' || m.name === 'PipelineError'
              ? new PipelineError(m.message)
              : new PipelineError(`task ${task.id}: ${m.message}`),
          );
      };
      const onError = (e: Error) => reject(new PipelineError(`task ${task.id}: worker failed: ${e.message}`));
      // A worker that dies without a word (killed, out of memory) must not hang the run.
      const onExit = (code: number) => reject(new PipelineError(`task ${task.id}: worker exited (code ${code}) before finishing`));
      w.on('message', onMessage);
      w.once('error', onError);
      w.once('exit', onExit);
      w.postMessage({ type: 'run', task, outDir: opts.outDir, ...(piece ? { piece } : {}) } satisfies WorkerRequest);
    });
  };

  /**
   * Runs a job on a worker. Resolves when the worker is free again: with the task's stats
   * when the task is complete, with `finish` when this was a dense task's last piece (the
   * file's final fsync and rename, which need no worker), else with nothing.
   */
  const nonFinite: Record<string, number> = {};
  // checked once the task is whole, before its file is committed: a refusal leaves nothing complete
  const checked = (task: Task, st: TaskStats) => Object.assign(nonFinite, checkTaskNonFinite(task, st, opts.allowOverflow ?? false));
  const runJob = async (job: Job, w: Worker | undefined): Promise<{ stats?: TaskStats; finish?: Promise<TaskStats> }> => {
    if (!job.piece) {
      const st = await runOn(job.task, w);
      checked(job.task, st);
      const sealed = st.sealed;
      if (!sealed) return { stats: st };
      delete st.sealed;
      const finish = commitSealedFile(sealed).then(() => st);
      commits.push(finish);
      return { finish };
    }
    const f = filled.get(job.task.id)!;
    const t = job.task;
    f.writer ??= SafetensorsWriter.open(
      path.join(opts.outDir, t.file),
      t.tensors.map((x) => ({ key: x.key, dtype: x.dtype, shape: x.shape })),
    );
    const writer = await f.writer;
    const [start, end] = job.piece;
    const s = await runOn(t, w, { file: writer.tempFile, dataOffset: writer.dataOffset, start, end });
    f.stats = mergeStats(f.stats, s);
    f.written += Object.values(s.writtenBytes).reduce((a, b) => a + b, 0);
    if (--f.remaining > 0) {
      writer.startFlush();
      return {};
    }
    checked(t, f.stats);
    const finish = writer.finishFilled(f.written).then(() => f.stats!);
    commits.push(finish);
    return { finish };
  };

  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      const pump = () => {
        if (failed) return;
        if (queue.length === 0 && running === 0 && finishing === 0) return resolve();
        while (running < slots) {
          const fits = (j: Job) => admitted + jobBytes(j) <= opts.budgetBytes;
          // a piece of a file no other worker is writing, where there is one (see run-piece.ts)
          let i = queue.findIndex((j) => fits(j) && !(j.piece && busy.has(j.task.id)));
          if (i < 0) i = queue.findIndex(fits);
          if (i < 0) break;
          const job = queue.splice(i, 1)[0]!;
          const task = job.task;
          let w: Worker | undefined;
          if (!inThread) {
            w = idle.pop();
            if (!w) {
              w = new Worker(workerPath!);
              workers.push(w);
            }
          }
          const cost = jobBytes(job);
          admitted += cost;
          busy.set(task.id, (busy.get(task.id) ?? 0) + 1);
          running++;
          peakAdmittedBytes = Math.max(peakAdmittedBytes, admitted);
          maxConcurrent = Math.max(maxConcurrent, running);
          const fail = (e: unknown) => {
            failed = true;
            reject(e);
          };
          const complete = (s: TaskStats) => {
            stats.set(task.id, s);
            progress.tasksDone++;
            report();
          };
          runJob(job, w).then((r) => {
            admitted -= cost;
            busy.set(task.id, busy.get(task.id)! - 1);
            if (busy.get(task.id) === 0) busy.delete(task.id);
            running--;
            if (r.stats) complete(r.stats);
            if (r.finish) {
              finishing++;
              r.finish.then((s) => {
                finishing--;
                complete(s);
                pump();
              }, fail);
            }
            if (w) idle.push(w);
            pump();
          }, fail);
        }
        if (running === 0 && queue.length > 0) {
          failed = true;
          reject(new PipelineError(`task ${queue[0]!.task.id} cannot be admitted within the RAM budget`));
        }
      };
      pump();
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
    // commits under way finish (or fail and remove their temp file) before this returns
    await Promise.allSettled(commits);
    // a failed run leaves no piece-written file open (finished ones are committed already)
    for (const f of filled.values()) await f.writer?.then((w) => w.abort()).catch(() => undefined);
  }
  return { stats, peakAdmittedBytes, maxConcurrent, pieces: queuedPieces, nonFinite };
}
