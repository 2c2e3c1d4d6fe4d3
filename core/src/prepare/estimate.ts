/**
 * Peak-memory estimates of tasks. A task produces its output tensors one after another, so
 * its peak is the largest working set of one tensor: for a streamed conversion two chunks
 * in flight (input + output, double-buffered, plus an f32 temporary); for a stacked tensor
 * one expert slice's input, f32 intermediate and output; for a paired tensor (GPT-OSS
 * gate/up) additionally the whole sibling, held until it is written.
 */
import { DTYPE_SIZE } from '../formats/dtype';
import { elementCount } from '../formats/safetensors';
import { CHUNK_ELEMS, SLOT_BATCH_BYTES } from './kernels';
import type { Int4Module, Int4Part, OutputTensor, ScaleRef, SlicePlan, SourceTensor } from './types';

/** An FP8 scale tensor held in f32 while its weight dequantizes. */
function scaleBytes(scale: ScaleRef | undefined, srcs: Record<string, SourceTensor>): number {
  return scale ? elementCount(srcs[scale.key]!.shape) * 4 : 0;
}

function sliceBytes(s: SlicePlan, srcs: Record<string, SourceTensor>, outSize: number, sliceElems: number, paired: boolean): number {
  const out = sliceElems * outSize * (paired ? 2 : 1);
  switch (s.kind) {
    case 'whole': {
      const t = srcs[s.src]!;
      return t.byteLength + sliceElems * 4 + out + scaleBytes(s.scale, srcs);
    }
    case 'range':
      return s.length + sliceElems * 4 + out + scaleBytes(s.scale, srcs);
    case 'mxfp4': {
      const b = srcs[s.blocks]!;
      const [, R, G] = b.shape as [number, number, number];
      return R * G * 17 + R * G * 32 * 4 * 2 + out;
    }
    case 'columns': {
      const t = srcs[s.src]!;
      return (t.byteLength / t.shape[0]!) * 2 + out;
    }
    case 'half-columns': {
      const t = srcs[s.src]!;
      const per = t.byteLength / t.shape[0]!;
      return per * 2 + (s.scale ? (per / DTYPE_SIZE[t.dtype]) * 4 + scaleBytes(s.scale, srcs) : 0) + out;
    }
  }
}

/**
 * An int4 module's working set (int4-task.ts): its packed sources read whole, the decoded zero
 * points, scales and groups, and one block of output rows (f32 and the narrowed copy).
 */
function int4Peak(m: Int4Module, part: Int4Part, srcs: Record<string, SourceTensor>): number {
  const bytes = (k: string | undefined) => (k ? srcs[k]!.byteLength : 0);
  const decoded = m.groups * m.out * 9 + m.in * 4;
  if (part === 'weight')
    return bytes(m.qweight) + bytes(m.qzeros) + bytes(m.scales) + bytes(m.gIdx) + decoded + Math.max(CHUNK_ELEMS, m.in) * 8;
  return bytes(m.qweight) + decoded + m.groups * m.out * 8 + bytes(m.gIdx) + Math.max(CHUNK_ELEMS, m.in) * 2;
}

/** Estimated peak bytes while producing `t` (siblings looked up in `byKey`). */
export function peakOfTensor(t: OutputTensor, srcs: Record<string, SourceTensor>, byKey: Map<string, OutputTensor>): number {
  const outSize = DTYPE_SIZE[t.dtype];
  if (t.recipe.kind === 'convert') {
    const s = srcs[t.recipe.src]!;
    const chunk = Math.min(elementCount(s.shape), CHUNK_ELEMS);
    return chunk * (2 * DTYPE_SIZE[s.dtype] + 2 * outSize + 4) + scaleBytes(t.recipe.scale, srcs);
  }
  if (t.recipe.kind === 'int4') return int4Peak(t.recipe.module, t.recipe.part, srcs);
  const slots = t.recipe.slots;
  const sliceElems = slots.length ? elementCount(t.shape) / slots.length : 0;
  const paired = t.pairedWith !== undefined;
  // a transposed slot is copied once more (the transpose's output)
  const transposed = t.transposeSlots ? sliceElems * outSize : 0;
  let working = Math.max(0, ...slots.map((s) => sliceBytes(s, srcs, outSize, sliceElems, paired) + transposed));
  if (!paired && slots.length && slots.every((s) => s.kind === 'whole' && !s.scale)) {
    // the streamed path (run-task streamSlots): one slice buffer and one batch of whole output
    // slices, each counted twice (the buffer pool may round a buffer up to twice its size)
    const sliceOut = sliceElems * outSize;
    const batch = Math.min(slots.length, Math.max(1, Math.floor(SLOT_BATCH_BYTES / Math.max(1, sliceOut)))) * sliceOut;
    working = Math.max(working, 2 * srcs[(slots[0] as { src: string }).src]!.byteLength + 2 * batch);
  }
  const sibling = t.pairedWith ? byKey.get(t.pairedWith) : undefined;
  return working + (sibling ? elementCount(sibling.shape) * DTYPE_SIZE[sibling.dtype] : 0);
}
