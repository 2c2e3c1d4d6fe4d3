/**
 * Worker-thread entry of the prepare executor (bundled to dist/prepare-worker.js). It runs
 * one task (or one piece of a dense task) at a time on request: `{type: 'run', task, outDir, piece?}` → progress messages
 * `{type: 'progress', bytes}` (batched) → `{type: 'done', stats}` or `{type: 'error', message}`.
 */
import { parentPort } from 'node:worker_threads';
import { oneLine } from '../errors';
import { executePiece, type TaskPiece } from './run-piece';
import { executeTask } from './run-task';
import type { Task } from './types';

/** A request from the executor. */
export interface WorkerRequest {
  type: 'run';
  task: Task;
  outDir: string;
  /** Set for one byte range of a dense task (run-piece.ts): the file exists, the piece fills its range. */
  piece?: TaskPiece;
}

/** Messages to the executor. */
export type WorkerMessage =
  | { type: 'progress'; bytes: number }
  | { type: 'done'; stats: import('./run-task').TaskStats }
  | { type: 'error'; message: string; name: string };

const port = parentPort;
if (port) {
  port.on('message', (req: WorkerRequest) => {
    if (req.type !== 'run') return;
    let pending = 0;
    let last = Date.now();
    const flush = () => {
      if (pending) port.postMessage({ type: 'progress', bytes: pending } satisfies WorkerMessage);
      pending = 0;
      last = Date.now();
    };
    const onBytes = (n: number) => {
      pending += n;
      if (Date.now() - last > 100) flush();
    };
    (req.piece ? executePiece(req.task, req.piece, onBytes) : executeTask(req.task, req.outDir, onBytes, { seal: true })).then(
      (stats) => {
        flush();
        port.postMessage({ type: 'done', stats } satisfies WorkerMessage);
      },
      (err: unknown) => {
        flush();
        port.postMessage({ type: 'error', message: oneLine(err), name: err instanceof Error ? err.name : 'Error' } satisfies WorkerMessage);
      },
    );
  });
}
