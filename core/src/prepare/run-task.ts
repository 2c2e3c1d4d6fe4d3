/**
 * Executes one task: validates that every source tensor is still where the plan says (so a
 * missing or changed key fails before anything is written), then produces the output
 * tensors in file order into one streaming safetensors writer. Dense tensors stream in
 * cache-sized chunks (task-io.ts); MoE tensors are built one expert slice at a time. Every
 * source byte is read once and every output byte written once; the stats prove it. (Large
 * dense tasks are instead split into byte ranges that workers fill in parallel: run-piece.ts.)
 */
import path from 'node:path';
import { PipelineError } from '../errors';
import { DTYPE_SIZE, type DType } from '../formats/dtype';
import { toFloat32 } from '../formats/float-convert';
import { SafetensorsWriter, commitSealedFile, elementCount } from '../formats/safetensors';
import {
  SLOT_BATCH_BYTES,
  dequantMxfp4,
  encodeF32,
  everyOtherElement,
  everyOtherRow,
  halfColumns,
  makeConverter,
  type Converter,
} from './kernels';
import { makeTransposeConverter, transposeMatrix } from './transpose-kernels';
import { dequantFp8 } from './fp8-kernel';
import { markTally, nonFiniteOf, tallySince, type TallyMark } from './overflow';
import type { NonFinite, OutputTensor, ScaleRef, SlicePlan, Task, TaskStats } from './types';
import { linkTask } from './links';
import { loraSlot } from './lora-plan';
import { DirectFile, wantsDirect } from './direct-io';
import { simdTransposer } from './simd/simd-convert';
import { canDequantTranspose, simdDequant } from './simd/simd-fp8';
import { Flusher, Sources, buffer, countingSink, streamConvert, type Sink } from './task-io';
import { streamInt4 } from './int4-task';

export type { TaskStats } from './types';

/**
 * Runs `task`, writing `<outDir>/<task.file>`; `onBytes` is told about every write. With
 * `seal`, the file is left sealed under its temp name for the caller to commit (a worker
 * then goes on while the file's last bytes reach the disk).
 */
export async function executeTask(
  task: Task,
  outDir: string,
  onBytes: (n: number) => void = () => undefined,
  opts: { seal?: boolean } = {},
): Promise<TaskStats> {
  if (task.link) {
    const stats = await linkTask(task, outDir);
    onBytes(task.outBytes); // its bytes are in place: progress counts them as done
    return stats;
  }
  const started = Date.now();
  const src = await Sources.open(task);
  let writer: SafetensorsWriter | undefined;
  let flusher: Flusher | undefined;
  let direct: DirectFile | undefined;
  const writtenBytes: Record<string, number> = Object.create(null) as Record<string, number>;
  const stages: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  try {
    const entries = task.tensors.map((t) => ({ key: t.key, dtype: t.dtype, shape: t.shape }));
    const file = path.join(outDir, task.file);
    // large outputs past the page cache (direct-io.ts), else the streaming writer with background flushes
    direct = wantsDirect(task.outBytes) ? await DirectFile.create(file, entries) : undefined;
    if (!direct) {
      writer = await SafetensorsWriter.open(file, entries);
      flusher = await Flusher.open(writer.tempFile);
    }
    const w = writer;
    const f = flusher;
    const count = (key: string, n: number) => {
      writtenBytes[key] = (writtenBytes[key] ?? 0) + n;
      onBytes(n);
    };
    const write: Sink = countingSink(
      direct,
      (key, bytes) => {
        w!.writePartSync(key, bytes);
        f!.wrote(bytes.byteLength);
      },
      count,
    );
    const stash = new Map<string, Uint8Array[]>();
    const byKey = new Map(task.tensors.map((t) => [t.key, t]));
    // non-finite results per output (overflow.ts): a paired sibling's are counted while its main tensor is made
    const nonFinite: Record<string, NonFinite> = Object.create(null) as Record<string, NonFinite>;
    const sibTally = new Map<string, TallyMark>();
    for (const t of task.tensors) {
      stages[t.key] = t.stages;
      const kept = stash.get(t.key);
      const mark = markTally();
      let sibGrowth: TallyMark | undefined;
      if (kept) {
        stash.delete(t.key);
        for (const part of kept) await write(t.key, part);
      } else if (t.recipe.kind === 'convert') {
        await streamConvert(t, src, write);
      } else if (t.recipe.kind === 'int4') {
        await streamInt4(t, src, write);
      } else if (!t.pairedWith && streamableSlots(t, src)) {
        await streamSlots(t, src, write);
      } else {
        const sib = t.pairedWith ? byKey.get(t.pairedWith) : undefined;
        const parts: Uint8Array[] = [];
        if (sib) stash.set(sib.key, parts);
        sibGrowth = { nonFinite: 0, fp8Nan: 0 };
        for (const slot of t.recipe.slots) {
          const r = produceSlot(slot, t, sib, src);
          await write(t.key, oriented(t, r.main));
          if (r.sibling) parts.push(oriented(sib!, r.sibling));
          if (r.sibTally) {
            sibGrowth.nonFinite += r.sibTally.nonFinite;
            sibGrowth.fp8Nan += r.sibTally.fp8Nan;
          }
        }
        if (sib) sibTally.set(sib.key, sibGrowth);
      }
      const grew = tallySince(mark);
      if (sibGrowth) {
        grew.nonFinite -= sibGrowth.nonFinite;
        grew.fp8Nan -= sibGrowth.fp8Nan;
      }
      const had = sibTally.get(t.key);
      if (had) {
        grew.nonFinite += had.nonFinite;
        grew.fp8Nan += had.fp8Nan;
      }
      const got = nonFiniteOf(grew, t.dtype);
      if (got.n > 0 || got.fp8Nan > 0) nonFinite[t.key] = got;
      if (elementCount(t.shape) === 0) {
        w?.writePartSync(t.key, new Uint8Array(0)); // an empty tensor: the writer moves past it
        writtenBytes[t.key] ??= 0;
      }
    }
    const done = { readBytes: src.readBytes, writtenBytes, stages, ms: Date.now() - started, ...counted(nonFinite) };
    if (direct) {
      const sealed = await direct.seal();
      if (opts.seal) return { ...done, sealed };
      await commitSealedFile(sealed);
      return done;
    }
    if (opts.seal) {
      flusher!.detach();
      const sealed = await writer!.seal();
      return { ...done, sealed };
    }
    await flusher!.close();
    await writer!.finish();
    return done;
  } catch (e) {
    await flusher?.close();
    await writer?.abort();
    await direct?.abort();
    throw e;
  } finally {
    await src.close();
  }
}

/** `{ nonFinite }` when any output got non-finite values, else nothing (stats stay as they were). */
export function counted(nonFinite: Record<string, NonFinite>): { nonFinite?: Record<string, NonFinite> } {
  return Object.keys(nonFinite).length > 0 ? { nonFinite } : {};
}

/**
 * Whether `t` is whole slices of one dtype and shape that {@link streamSlots} can make: unscaled
 * with a fused kernel, or FP8 with scales of one block size, transposed into f32, bf16 or f16 by
 * the SIMD kernels (DeepSeek's separate experts).
 */
export function streamableSlots(t: OutputTensor, src: Pick<Sources, 'src'>): boolean {
  if (t.recipe.kind !== 'slots' || t.recipe.slots.length === 0) return false;
  const slots = t.recipe.slots;
  const s0 = slots[0]!;
  if (s0.kind !== 'whole') return false;
  const scaled = s0.scale !== undefined;
  const sameScale = (s: SlicePlan) =>
    s.kind === 'whole' &&
    (scaled
      ? s.scale !== undefined && s.scale.block.join() === s0.scale!.block.join() && s.scale.grid.join() === s0.scale!.grid.join()
      : !s.scale);
  if (!slots.every(sameScale)) return false;
  const first = src.src(s0.src);
  const same = (k: string) => {
    const x = src.src(k);
    return x.dtype === first.dtype && x.byteLength === first.byteLength && x.shape.join() === first.shape.join();
  };
  if (first.shape.length !== 2 || !slots.every((s) => same((s as { src: string }).src))) return false;
  if (scaled) return t.transposeSlots === true && canDequantTranspose(first.dtype, t.dtype, first.shape[0]!, first.shape[1]!);
  return !t.transposeSlots || makeTransposeConverter(first.dtype, t.dtype) !== undefined;
}

/**
 * Makes slices `from … to − 1` of a stacked tensor of whole FP8 expert slices (all of them for a
 * whole task, a range for a piece: run-piece.ts): each slice's codes are read into the SIMD
 * module's memory and dequantized with its own scales straight into a batch slot, transposed
 * (bf16: the fused lookup kernel; f16 and f32: dequantize, then transpose16 or transpose32); a full batch is written
 * from there. No allocation, no f32 buffer.
 */
async function streamScaledSlots(t: OutputTensor, src: Sources, write: Sink, from: number, to: number): Promise<void> {
  const slots = (t.recipe as { slots: { src: string; scale: ScaleRef }[] }).slots;
  const s0 = src.src(slots[0]!.src);
  const [rows, cols] = s0.shape as [number, number];
  const elems = rows * cols;
  const per = Math.min(to - from, Math.max(1, Math.floor(SLOT_BATCH_BYTES / (elems * DTYPE_SIZE[t.dtype]))));
  const ref = slots[0]!.scale;
  const deq = simdDequant(s0.dtype, t.dtype, s0.shape, ref, elems, ref.grid[0] * ref.grid[1], per)!;
  let n = 0;
  for (let i = from; i < to; i++) {
    const slot = slots[i]!;
    src.read(slot.src, 0, elems, deq.input(elems));
    deq.setScales(src.scale(slot.scale));
    deq.dequantTransposeInto(rows, cols, n++);
    if (n === per || i + 1 === to) {
      await write(t.key, deq.batch(n, elems));
      n = 0;
    }
  }
}

/**
 * Makes a stacked tensor of whole expert slices: each slice is read, converted (and
 * transposed, in one pass) straight into a batch buffer, and a full batch is written while
 * it is still in the CPU's cache. No per-slice allocation. Transposed 16-bit slices whose
 * sides are multiples of 8 (every real model's) go through the SIMD transposer.
 */
export async function streamSlots(t: OutputTensor, src: Sources, write: Sink, from = 0, to?: number): Promise<void> {
  const n = (t.recipe as { slots: unknown[] }).slots.length;
  if (t.recipe.kind === 'slots' && t.recipe.slots[0]!.kind === 'whole' && t.recipe.slots[0]!.scale)
    return streamScaledSlots(t, src, write, from, to ?? n);
  if (from !== 0 || (to ?? n) !== n) throw new PipelineError(`task tensor ${t.key}: only FP8 expert slices stream by range`);
  const keys = (t.recipe as { slots: { src: string }[] }).slots.map((s) => s.src);
  const s0 = src.src(keys[0]!);
  const [rows, cols] = s0.shape as [number, number];
  const inBytes = s0.byteLength;
  const outBytes = rows * cols * DTYPE_SIZE[t.dtype];
  const fused = t.transposeSlots ? makeTransposeConverter(s0.dtype, t.dtype)! : undefined;
  const plain = fused ? undefined : converter(s0.dtype, t.dtype);
  const per = Math.min(keys.length, Math.max(1, Math.floor(SLOT_BATCH_BYTES / Math.max(1, outBytes))));
  const simd = t.transposeSlots ? simdTransposer(s0.dtype, t.dtype, rows, cols, per) : undefined;
  if (simd) {
    let n = 0;
    for (let i = 0; i < keys.length; i++) {
      src.read(keys[i]!, 0, inBytes, simd.input(rows * cols));
      simd.run(rows, cols, n++);
      if (n === per || i + 1 === keys.length) {
        await write(t.key, simd.output(n, rows * cols));
        n = 0;
      }
    }
    return;
  }
  const inb = buffer(2, inBytes);
  const batch = buffer(3, per * outBytes);
  let filled = 0;
  for (let i = 0; i < keys.length; i++) {
    const slice = src.read(keys[i]!, 0, inBytes, inb);
    const out = batch.subarray(filled * outBytes, (filled + 1) * outBytes);
    if (fused) fused(slice, out, rows, cols);
    else plain!(slice, out);
    filled++;
    if (filled === per || i + 1 === keys.length) {
      await write(t.key, batch.subarray(0, filled * outBytes));
      filled = 0;
    }
  }
}

const converters = new Map<string, Converter>();
function converter(from: DType, to: DType): Converter {
  const k = `${from}>${to}`;
  let c = converters.get(k);
  if (!c) converters.set(k, (c = makeConverter(from, to)));
  return c;
}

/** A produced slot in the output's orientation: transposed from the source `[b, a]` when the tensor asks. */
function oriented(t: OutputTensor, slot: Uint8Array): Uint8Array {
  if (!t.transposeSlots) return slot;
  const [a, b] = t.shape.slice(-2) as [number, number];
  return transposeMatrix(slot, b, a, DTYPE_SIZE[t.dtype]);
}

/** Source bytes of a whole/range slot as `to`: converted, or dequantized first when scaled. */
function readSlice(src: Sources, key: string, start: number, length: number, to: DType, scale?: ScaleRef): Uint8Array {
  const s = src.src(key);
  const bytes = src.read(key, start, length);
  if (!scale) return converter(s.dtype, to)(bytes);
  return encodeF32(dequantFp8(bytes, s.dtype, start / DTYPE_SIZE[s.dtype], s.shape, src.scale(scale), scale, to), to);
}

/** Produces one expert slice of `t` (and of its paired sibling, from the same reads). */
function produceSlot(
  slot: SlicePlan,
  t: OutputTensor,
  sib: OutputTensor | undefined,
  src: Sources,
): { main: Uint8Array; sibling?: Uint8Array; sibTally?: TallyMark } {
  // the sibling's share of the tally, measured around its conversion
  const sibling = (make: () => Uint8Array): { sibling: Uint8Array; sibTally: TallyMark } => {
    const m = markTally();
    const out = make();
    return { sibling: out, sibTally: tallySince(m) };
  };
  switch (slot.kind) {
    case 'whole':
      return { main: readSlice(src, slot.src, 0, src.src(slot.src).byteLength, t.dtype, slot.scale) };
    case 'range':
      return { main: readSlice(src, slot.src, slot.start, slot.length, t.dtype, slot.scale) };
    case 'columns': {
      const s = src.src(slot.src);
      const rowBytes = s.byteLength / s.shape[0]!;
      const row = src.read(slot.src, slot.row * rowBytes, rowBytes);
      const size = DTYPE_SIZE[s.dtype];
      const main = converter(s.dtype, t.dtype)(everyOtherElement(row, size, slot.parity));
      if (!sib) return { main };
      return { main, ...sibling(() => converter(s.dtype, sib.dtype)(everyOtherElement(row, size, slot.parity === 0 ? 1 : 0))) };
    }
    case 'half-columns': {
      const s = src.src(slot.src);
      const [, rows] = s.shape as [number, number, number];
      const per = s.byteLength / s.shape[0]!;
      let m = src.read(slot.src, slot.expert * per, per);
      let from = s.dtype;
      if (slot.scale) {
        // FP8 experts: dequantize the expert's whole [H, 2I] matrix first, then split it.
        const f = dequantFp8(m, s.dtype, (slot.expert * per) / DTYPE_SIZE[s.dtype], s.shape, src.scale(slot.scale), slot.scale, t.dtype);
        m = new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
        from = 'F32';
      }
      const size = DTYPE_SIZE[from];
      const main = converter(from, t.dtype)(halfColumns(m, rows, size, slot.half));
      if (!sib) return { main };
      return { main, ...sibling(() => converter(from, sib.dtype)(halfColumns(m, rows, size, slot.half === 0 ? 1 : 0))) };
    }
    case 'lora': {
      // [in, R] (A) or [R, out] (B): the side that is not the rank
      const [rows, cols] = t.shape.slice(-2) as [number, number];
      const s = slot.src === undefined ? undefined : src.src(slot.src);
      const values = s && toFloat32(src.read(slot.src!, 0, s.byteLength), s.dtype);
      const r = !s ? 0 : slot.side === 'A' ? s.shape[0]! : s.shape[1]!;
      return { main: encodeF32(loraSlot(values, slot.side, r, slot.rank, slot.side === 'A' ? rows : cols, slot.factor), t.dtype) };
    }
    case 'mxfp4': {
      const b = src.src(slot.blocks);
      const [, R, G] = b.shape as [number, number, number];
      const blocks = src.read(slot.blocks, slot.expert * R * G * 16, R * G * 16);
      const scales = src.read(slot.scales, slot.expert * R * G, R * G);
      const f32 = dequantMxfp4(blocks, scales, R, G);
      if (slot.parity === undefined) return { main: encodeF32(f32, t.dtype, true) };
      const cols = G * 32;
      const main = encodeF32(everyOtherRow(f32, R, cols, slot.parity), t.dtype, true);
      if (!sib) return { main };
      return { main, ...sibling(() => encodeF32(everyOtherRow(f32, R, cols, slot.parity === 0 ? 1 : 0), sib.dtype, true)) };
    }
  }
}
