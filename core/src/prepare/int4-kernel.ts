/**
 * The arithmetic of GPTQ / AutoAWQ-GEMM int4 Linears (layouts in transforms/int4.ts): the
 * packed codes read in place, the dequantized `[out, in]` weight a block of output rows at a
 * time (f32: `scale · (q − zero)` is exact there, a small integer times an fp16 scale), and the
 * MatMulNBits parts. Pure functions over typed arrays, run by the worker threads.
 */
import { PipelineError } from '../errors';
import type { Int4Module } from './types';

/** AutoAWQ packs the 8 columns of a word in the order [0, 2, 4, 6, 1, 3, 5, 7]: column c sits in nibble AWQ_NIBBLE[c]. */
export const AWQ_NIBBLE = [0, 4, 1, 5, 2, 6, 3, 7] as const;

/** One module's packed tensors, decoded once per task. */
export interface Int4Data {
  mod: Int4Module;
  qweight: Int32Array;
  /** Zero point of (group, output column), the stored value plus the format's offset: `[groups, out]`. */
  zeros: Uint8Array;
  /** `[groups, out]` in f32. */
  scales: Float32Array;
  /** Group of each input row: g_idx, or i / group. */
  groupOf: Int32Array;
}

/** The 4-bit code of input row i, output column o. */
export function codeAt(d: Pick<Int4Data, 'mod' | 'qweight'>, i: number, o: number): number {
  const { mod, qweight } = d;
  if (mod.format === 'gptq') return (qweight[(i >> 3) * mod.out + o]! >>> ((i & 7) * 4)) & 15;
  return (qweight[i * (mod.out >> 3) + (o >> 3)]! >>> (AWQ_NIBBLE[o & 7]! * 4)) & 15;
}

/**
 * The zero points `[groups, out]` of `qzeros` (int32 `[groups, ⌈out/8⌉]`), offset added. A v1
 * GPTQ nibble of 15 would be a zero point of 16, which 4 bits cannot hold: AutoGPTQ masks it to
 * 0, GPTQModel carries it into the next column, so the checkpoint is refused rather than guessed.
 */
export function decodeZeros(mod: Int4Module, qzeros: Int32Array, file: string): Uint8Array {
  const words = Math.ceil(mod.out / 8);
  const z = new Uint8Array(mod.groups * mod.out);
  for (let g = 0; g < mod.groups; g++) {
    for (let o = 0; o < mod.out; o++) {
      const nib = mod.format === 'gptq' ? o & 7 : AWQ_NIBBLE[o & 7]!;
      const stored = (qzeros[g * words + (o >> 3)]! >>> (nib * 4)) & 15;
      if (mod.zeroOffset === 1 && stored === 15)
        throw new PipelineError(
          `${file}: "${mod.qzeros}" stores 15 at group ${g}, column ${o}: a GPTQ v1 zero point of 16 is not 4-bit (checkpoint_format "gptq" stores zero − 1)`,
        );
      z[g * mod.out + o] = stored + mod.zeroOffset;
    }
  }
  return z;
}

/**
 * The group of every input row: `g_idx` checked to lie in `[0, groups)`, or ⌊i / group⌋. With
 * `plain`, a g_idx that is not ⌊i / group⌋ is refused (a kept graph without act-order reads none).
 */
export function groupsOf(mod: Int4Module, gIdx: Int32Array | undefined, file: string, plain: boolean): Int32Array {
  const g = new Int32Array(mod.in);
  for (let i = 0; i < mod.in; i++) {
    const v = gIdx ? gIdx[i]! : Math.floor(i / mod.group);
    if (!(v >= 0 && v < mod.groups))
      throw new PipelineError(`${file}: "${mod.gIdx}" gives input row ${i} group ${v}, outside 0..${mod.groups - 1}`);
    if (plain && v !== Math.floor(i / mod.group))
      throw new PipelineError(
        `${file}: "${mod.gIdx}" permutes the groups (row ${i} is in group ${v}), but quantization_config.desc_act is false: the kept graph would read none`,
      );
    g[i] = v;
  }
  return g;
}

/** Refuses a NaN or infinite scale (every weight of its group would be one). */
export function checkInt4Scales(file: string, key: string, f: Float32Array): void {
  for (let i = 0; i < f.length; i++)
    if (!Number.isFinite(f[i]!)) throw new PipelineError(`${file}: scale tensor "${key}" holds ${f[i]} at element ${i}`);
}

/**
 * Output rows `o0 … o1 − 1` of the dequantized weight, `[o1 − o0, in]` in f32 into `out`:
 * W[o, i] = scales[g, o] · (q[i, o] − zero[g, o]), g = the group of row i.
 */
export function dequantRows(d: Int4Data, o0: number, o1: number, out: Float32Array): Float32Array {
  const { mod, qweight, zeros, scales, groupOf } = d;
  const K = mod.in;
  const N = mod.out;
  if (mod.format === 'gptq') {
    // word row r holds input rows 8r … 8r + 7 of every column: the block's columns are read
    // contiguously, each word gives eight outputs of one row
    const gRow = new Int32Array(8);
    for (let r = 0; r < K >> 3; r++) {
      for (let j = 0; j < 8; j++) gRow[j] = groupOf[r * 8 + j]! * N;
      const wbase = r * N;
      for (let o = o0; o < o1; o++) {
        const word = qweight[wbase + o]!;
        const base = (o - o0) * K + r * 8;
        for (let j = 0; j < 8; j++) {
          const g = gRow[j]! + o;
          out[base + j] = scales[g]! * (((word >>> (j * 4)) & 15) - zeros[g]!);
        }
      }
    }
    return out;
  }
  // AWQ: row i's words hold eight columns each, read contiguously across the block
  const words = N >> 3;
  for (let i = 0; i < K; i++) {
    const g0 = groupOf[i]! * N;
    const wbase = i * words;
    for (let o = o0; o < o1; o++) {
      const g = g0 + o;
      const q = (qweight[wbase + (o >> 3)]! >>> (AWQ_NIBBLE[o & 7]! * 4)) & 15;
      out[(o - o0) * K + i] = scales[g]! * (q - zeros[g]!);
    }
  }
  return out;
}

/** Output rows `o0 … o1 − 1` of MatMulNBits' B: `[rows, groups, group/2]` bytes, even input row in the low nibble, zero past `in`. */
export function repackRows(d: Pick<Int4Data, 'mod' | 'qweight'>, o0: number, o1: number): Uint8Array {
  const { mod } = d;
  const blob = mod.group / 2;
  const per = mod.groups * blob;
  const out = new Uint8Array((o1 - o0) * per);
  for (let o = o0; o < o1; o++) {
    const base = (o - o0) * per;
    for (let k = 0; k < mod.in; k += 2) {
      const hi = k + 1 < mod.in ? codeAt(d, k + 1, o) : 0;
      out[base + (k >> 1)] = codeAt(d, k, o) | (hi << 4);
    }
  }
  return out;
}

/** MatMulNBits' scales `[out · groups]` (row-major over output columns) from `[groups, out]`. */
export function transposeScales(mod: Int4Module, scales: Float32Array): Float32Array {
  const out = new Float32Array(mod.out * mod.groups);
  for (let o = 0; o < mod.out; o++) for (let g = 0; g < mod.groups; g++) out[o * mod.groups + g] = scales[g * mod.out + o]!;
  return out;
}

/** MatMulNBits' packed zero points `[out · ⌈groups/2⌉]`: per output column, two groups per byte, low nibble first. */
export function packZeros(mod: Int4Module, zeros: Uint8Array): Uint8Array {
  const per = Math.ceil(mod.groups / 2);
  const out = new Uint8Array(mod.out * per);
  for (let o = 0; o < mod.out; o++) {
    for (let g = 0; g < mod.groups; g += 2) {
      const hi = g + 1 < mod.groups ? zeros[(g + 1) * mod.out + o]! : 0;
      out[o * per + (g >> 1)] = zeros[g * mod.out + o]! | (hi << 4);
    }
  }
  return out;
}
