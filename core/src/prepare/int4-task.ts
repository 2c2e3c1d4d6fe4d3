/**
 * Produces one output tensor of an int4 module (transforms/int4.ts) inside a task: the sources
 * it needs are read whole (packed, an eighth of the f32 weight), the dequantized weight is
 * written a block of output rows at a time (about {@link CHUNK_ELEMS} elements), and each kept
 * MatMulNBits part reads only its own source, so every source byte is read once per module.
 */
import { PipelineError } from '../errors';
import { toFloat32 } from '../formats/float-convert';
import { CHUNK_ELEMS, encodeF32, makeConverter } from './kernels';
import { simdConverter } from './simd/simd-convert';
import { checkInt4Scales, decodeZeros, dequantRows, groupsOf, packZeros, repackRows, transposeScales, type Int4Data } from './int4-kernel';
import type { Sink, Sources } from './task-io';
import type { Int4Module, OutputTensor } from './types';

/** A whole I32 source as an Int32Array (copied when the read is not 4-byte aligned). */
function readI32(src: Sources, key: string): Int32Array {
  const b = src.read(key, 0, src.src(key).byteLength);
  const a = b.byteOffset % 4 === 0 ? b : b.slice();
  return new Int32Array(a.buffer, a.byteOffset, a.byteLength >> 2);
}

function readScales(src: Sources, mod: Int4Module): Float32Array {
  const s = src.src(mod.scales);
  const f = toFloat32(src.read(mod.scales, 0, s.byteLength), s.dtype);
  checkInt4Scales(s.file, mod.scales, f);
  return f;
}

const fileOf = (src: Sources, key: string) => src.src(key).file;

/** Writes int4 output `t` (its recipe must be `int4`). */
export async function streamInt4(t: OutputTensor, src: Sources, write: Sink): Promise<void> {
  if (t.recipe.kind !== 'int4') throw new PipelineError(`task tensor ${t.key}: not an int4 recipe`);
  const { module: mod, part } = t.recipe;
  const gIdx = (plain: boolean) =>
    groupsOf(mod, mod.gIdx ? readI32(src, mod.gIdx) : undefined, fileOf(src, mod.gIdx ?? mod.qweight), plain);
  switch (part) {
    case 'weight': {
      const d: Int4Data = {
        mod,
        qweight: readI32(src, mod.qweight),
        zeros: decodeZeros(mod, readI32(src, mod.qzeros), fileOf(src, mod.qzeros)),
        scales: readScales(src, mod),
        groupOf: gIdx(false),
      };
      const rows = Math.max(1, Math.min(mod.out, Math.floor(CHUNK_ELEMS / mod.in)));
      // f16: the rows are dequantized straight into the SIMD converter's input (simd-convert.ts)
      const simd = t.dtype === 'F32' ? undefined : simdConverter('F32', t.dtype, rows * mod.in, makeConverter('F32', t.dtype));
      const buf = simd ? undefined : new Float32Array(rows * mod.in);
      for (let o = 0; o < mod.out; o += rows) {
        const n = Math.min(rows, mod.out - o);
        if (simd) {
          const into = simd.input(n * mod.in);
          dequantRows(d, o, o + n, new Float32Array(into.buffer, into.byteOffset, n * mod.in));
          simd.run(n * mod.in);
          await write(t.key, simd.output(n * mod.in));
        } else await write(t.key, encodeF32(dequantRows(d, o, o + n, buf!).subarray(0, n * mod.in), t.dtype));
      }
      return;
    }
    case 'qweight': {
      const d = { mod, qweight: readI32(src, mod.qweight) };
      const rows = Math.max(1, Math.min(mod.out, Math.floor((CHUNK_ELEMS * 2) / mod.in)));
      for (let o = 0; o < mod.out; o += rows) await write(t.key, repackRows(d, o, Math.min(mod.out, o + rows)));
      return;
    }
    case 'scales': {
      // without act-order the graph reads no g_idx: the checkpoint's must be the plain one
      if (!mod.actOrder && mod.gIdx) gIdx(true);
      await write(t.key, encodeF32(transposeScales(mod, readScales(src, mod)), t.dtype));
      return;
    }
    case 'qzeros':
      await write(t.key, packZeros(mod, decodeZeros(mod, readI32(src, mod.qzeros), fileOf(src, mod.qzeros))));
      return;
    case 'g_idx': {
      const g = gIdx(false);
      await write(t.key, new Uint8Array(g.buffer, g.byteOffset, g.byteLength));
      return;
    }
  }
}
