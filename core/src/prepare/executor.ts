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
import { executeTask, type TaskStats } from './run-task';
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
}

/** What the executor observed (the budget test reads these). */
export interface ExecutorResult {
  stats: Map<string, TaskStats>;
  /** Largest sum of admitted peak estimates at any moment. */
  peakAdmittedBytes: number;
  /** Most tasks running at once. */
  maxConcurrent: number;
}

/** Default RAM budget: 80 % of the memory available now. */
export function defaultBudgetBytes(): number {
  return Math.floor(availableMemory() * 0.8);
}

/** MemAvailable from /proc/meminfo where it exists (page cache counts as available), else os.freemem(). */
export function availableMemory(): number {
  try {
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
    if (t.peakBytes > opts.budgetBytes)
      throw new PipelineError(
        `task ${t.id} (${t.file}) needs an estimated ${t.peakBytes} bytes, over the RAM budget of ${opts.budgetBytes} bytes`,
      );
  }
  const workerPath = opts.workerPath ?? defaultWorkerPath();
  const wanted = opts.workers ?? Math.max(1, Math.min(os.availableParallelism?.() ?? os.cpus().length, tasks.length));
  const inThread = wanted === 0 || !workerPath;
  if (!inThread && !fs.existsSync(workerPath)) throw new FormatError(workerPath, 'prepare worker script not found (run the build)');
  const slots = inThread ? 1 : wanted;
  const workers: Worker[] = [];
  const idle: Worker[] = [];
  // Largest first (LPT): the last round then holds small tasks, so no worker idles long.
  const queue = [...tasks].sort((a, b) => b.outBytes - a.outBytes);
  report();

  const runOn = (task: Task, w: Worker | undefined): Promise<TaskStats> => {
    if (!w)
      return executeTask(task, opts.outDir, (n) => {
        progress.bytesDone += n;
        report();
      });
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
      w.postMessage({ type: 'run', task, outDir: opts.outDir } satisfies WorkerRequest);
    });
  };

  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      const pump = () => {
        if (failed) return;
        if (queue.length === 0 && running === 0) return resolve();
        while (running < slots) {
          const i = queue.findIndex((t) => admitted + t.peakBytes <= opts.budgetBytes);
          if (i < 0) break;
          const task = queue.splice(i, 1)[0]!;
          let w: Worker | undefined;
          if (!inThread) {
            w = idle.pop();
            if (!w) {
              w = new Worker(workerPath!);
              workers.push(w);
            }
          }
          admitted += task.peakBytes;
          running++;
          peakAdmittedBytes = Math.max(peakAdmittedBytes, admitted);
          maxConcurrent = Math.max(maxConcurrent, running);
          runOn(task, w).then(
            (s) => {
              stats.set(task.id, s);
              admitted -= task.peakBytes;
              running--;
              progress.tasksDone++;
              report();
              if (w) idle.push(w);
              pump();
            },
            (e: unknown) => {
              failed = true;
              reject(e);
            },
          );
        }
        if (running === 0 && queue.length > 0) {
          failed = true;
          reject(new PipelineError(`task ${queue[0]!.id} cannot be admitted within the RAM budget`));
        }
      };
      pump();
    });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return { stats, peakAdmittedBytes, maxConcurrent };
}
