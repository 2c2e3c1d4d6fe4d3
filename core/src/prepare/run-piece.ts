/**
 * Dense tasks in pieces. A checkpoint of a few large shards on a machine of a few cores
 * leaves cores idle at the end of a run when each shard is one task (five equal shards on
 * two workers: the last shard runs alone for a third of the time). A dense task — every
 * output tensor one converted source tensor — has a fixed layout known from its plan, so its
 * output can be cut into byte ranges that workers fill in parallel, each through its own
 * descriptor at its own offsets. The executor creates the file (header included), starts its
 * writeback as pieces finish, and when every piece is in, checks the size and commits it
 * (SafetensorsWriter.finishFilled). Workers take pieces of different files at once where
 * they can: two writers of one file serialize on its inode lock (measured: a third of the
 * CPU time spinning on it).
 */
import fs from 'node:fs';
import { PipelineError } from '../errors';
import { DTYPE_SIZE } from '../formats/dtype';
import { elementCount } from '../formats/safetensors';
import { IO_CHUNK } from '../formats/safetensors/read';
import { counted, streamSlots, streamableSlots, type TaskStats } from './run-task';
import { markTally, nonFiniteOf, tallySince } from './overflow';
import { Sources, countingSink, streamConvert, type Sink } from './task-io';
import { DirectStream, wantsDirect } from './direct-io';
import type { NonFinite, OutputTensor, Task } from './types';

/** Output bytes per piece: large enough that a piece's setup (headers read and checked) is noise. */
export const PIECE_BYTES = 64 * 1024 * 1024;

/** Bytes `start .. end` of a dense task's data region, written into `file` at `dataOffset + start`. */
export interface TaskPiece {
  /** The output's temp file (created, header written, by the executor). */
  file: string;
  dataOffset: number;
  start: number;
  end: number;
}

/**
 * Whether `task` can be made in pieces: written (not linked), every tensor a dense conversion
 * or a stack of whole FP8 expert slices (DeepSeek's separate experts: a layer is one task, so
 * five layers on two workers would leave one idle for the last), cut between slices.
 */
export function isPieceable(task: Task): boolean {
  return !task.link && task.tensors.length > 0 && task.tensors.every((t) => t.recipe.kind === 'convert' || slicedFp8(task, t));
}

/** Whether `t` is a stack of whole FP8 slices that streamSlots makes by slice range (no sibling sharing its reads). */
function slicedFp8(task: Task, t: OutputTensor): boolean {
  if (t.recipe.kind !== 'slots' || t.pairedWith || task.tensors.some((x) => x.pairedWith === t.key)) return false;
  const s0 = t.recipe.slots[0];
  return s0?.kind === 'whole' && s0.scale !== undefined && streamableSlots(t, { src: (k) => task.sources[k]! });
}

/** Bytes between the places a tensor may be cut: an element, or one expert slice of a stack. */
function cutUnit(t: OutputTensor): number {
  const size = DTYPE_SIZE[t.dtype];
  if (t.recipe.kind !== 'slots') return size;
  return (elementCount(t.shape) / t.recipe.slots.length) * size;
}

/**
 * Cuts a task's data region into ranges of about `pieceBytes`, each cut on an element boundary
 * (a slice boundary for a stack of slices) of the tensor it falls in; one range when the task
 * is small.
 */
export function pieceRanges(task: Task, pieceBytes = PIECE_BYTES): [number, number][] {
  const ranges: [number, number][] = [];
  let offset = 0;
  let start = 0;
  for (const t of task.tensors) {
    const size = cutUnit(t);
    const bytes = elementCount(t.shape) * DTYPE_SIZE[t.dtype];
    // Cut this tensor where the open piece [start, …) reaches pieceBytes, rounded up to this
    // tensor's next element boundary — at its first byte when the piece is already full (a
    // previous tensor's rounding can overshoot).
    while (offset + bytes - start > pieceBytes) {
      const cut = offset + Math.max(0, Math.ceil((start + pieceBytes - offset) / size)) * size;
      if (cut >= offset + bytes || cut <= start) break;
      ranges.push([start, cut]);
      start = cut;
    }
    offset += bytes;
  }
  if (offset > start || ranges.length === 0) ranges.push([start, offset]);
  return ranges;
}

/** Makes one piece of `task`; `onBytes` is told about every write. Stats cover this piece only. */
export async function executePiece(task: Task, piece: TaskPiece, onBytes: (n: number) => void = () => undefined): Promise<TaskStats> {
  if (!isPieceable(task)) throw new PipelineError(`task ${task.id}: not a dense task, cannot be made in pieces`);
  const started = Date.now();
  const src = await Sources.open(task);
  const writtenBytes: Record<string, number> = Object.create(null) as Record<string, number>;
  const stages: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  const owned: { t: Task['tensors'][number]; lo: number; hi: number }[] = [];
  let fd: number | undefined;
  let direct: DirectStream | undefined;
  try {
    fd = fs.openSync(piece.file, 'r+');
    const out = fd;
    let position = piece.dataOffset + piece.start;
    // whole blocks past the page cache (direct-io.ts); the partial ones it shares with its neighbours through fd
    direct = wantsDirect(piece.end - piece.start) ? DirectStream.open(piece.file, position, fd) : undefined;
    const count = (key: string, n: number) => {
      position += n;
      writtenBytes[key] = (writtenBytes[key] ?? 0) + n;
      onBytes(n);
    };
    const write: Sink = countingSink(
      direct,
      (_key, bytes) => {
        for (let done = 0; done < bytes.byteLength;) {
          const n = fs.writeSync(out, bytes, done, Math.min(bytes.byteLength - done, IO_CHUNK), position + done);
          if (n <= 0) throw new PipelineError(`${piece.file}: write returned ${n} at byte ${position + done}`);
          done += n;
        }
      },
      count,
    );
    const sizes = task.tensors.map((t) => elementCount(t.shape) * DTYPE_SIZE[t.dtype]);
    const total = sizes.reduce((a, b) => a + b, 0);
    let offset = 0;
    task.tensors.forEach((t, i) => {
      const bytes = sizes[i]!;
      // an empty tensor belongs to the piece its offset falls in (the last one at the very end)
      const mine =
        bytes > 0
          ? offset < piece.end && offset + bytes > piece.start
          : (piece.start <= offset && offset < piece.end) || (offset === total && piece.end === total);
      if (mine) owned.push({ t, lo: Math.max(piece.start, offset) - offset, hi: Math.min(piece.end, offset + bytes) - offset });
      offset += bytes;
    });
    const nonFinite: Record<string, NonFinite> = Object.create(null) as Record<string, NonFinite>;
    for (const { t, lo, hi } of owned) {
      stages[t.key] = t.stages;
      writtenBytes[t.key] ??= 0;
      const size = cutUnit(t);
      const mark = markTally();
      if (lo < hi && t.recipe.kind === 'convert') await streamConvert(t, src, write, lo / size, hi / size);
      else if (lo < hi) await streamSlots(t, src, write, lo / size, hi / size);
      const got = nonFiniteOf(tallySince(mark), t.dtype);
      if (got.n > 0 || got.fp8Nan > 0) nonFinite[t.key] = got;
    }
    await direct?.close();
    return { readBytes: src.readBytes, writtenBytes, stages, ms: Date.now() - started, ...counted(nonFinite) };
  } catch (e) {
    throw e instanceof PipelineError
      ? e
      : new PipelineError(`${piece.file}: cannot write (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  } finally {
    await direct?.abort();
    if (fd !== undefined) fs.closeSync(fd);
    await src.close();
  }
}

/** Adds a piece's stats into a task's (bytes summed, stages united, time the longest). */
export function mergeStats(into: TaskStats | undefined, add: TaskStats): TaskStats {
  const sum = (a: Record<string, number>, b: Record<string, number>) => {
    for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
    return a;
  };
  const fresh = () => Object.create(null) as Record<string, number>;
  const out = into ?? { readBytes: fresh(), writtenBytes: fresh(), stages: Object.create(null) as Record<string, string[]>, ms: 0 };
  sum(out.readBytes, add.readBytes);
  sum(out.writtenBytes, add.writtenBytes);
  Object.assign(out.stages, add.stages);
  for (const [k, v] of Object.entries(add.nonFinite ?? {})) {
    const had = ((out.nonFinite ??= Object.create(null) as Record<string, NonFinite>)[k] ??= { n: 0, fp8Nan: 0 });
    had.n += v.n;
    had.fp8Nan += v.fp8Nan;
  }
  out.ms = Math.max(out.ms, add.ms);
  return out;
}
