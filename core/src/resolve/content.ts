/**
 * Content comparison of tensors stored in files, in bounded memory.
 *
 * A legacy `torch.onnx.export` with constant folding renames Linear weights to
 * `onnx::MatMul_N` and stores `W.T`; only the values can say which checkpoint tensor such an
 * initializer is. Values are compared after widening to f32 (bf16/f16 → f32 is exact), so a
 * bf16 checkpoint matches the f32 initializers an fp32 export embedded.
 *
 * The digest is a *multiset* hash (a sum of mixed bit patterns), so it is the same for a
 * tensor and its transpose: one digest per candidate finds both orientations, and an exact
 * streaming comparison then decides which one it is.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { DTYPE_SIZE, type DType } from '../formats/dtype';
import { halfBitsToFloatBits, toFloat32 } from '../formats/float-convert';
import { DequantReader, type DequantSource } from './dequant-source';

/** A tensor's bytes somewhere in a file. */
export interface TensorSource {
  file: string;
  /** Absolute offset of the first data byte. */
  offset: number;
  byteLength: number;
  dtype: DType;
  shape: number[];
  /** The values are an FP8 tensor dequantized (dtype F32, offset 0): read through {@link DequantReader}. */
  dequant?: DequantSource;
}

const WIDENS_TO_F32: ReadonlySet<DType> = new Set<DType>(['F32', 'F16', 'BF16']);

/** Number of elements of a shape (1 for a scalar). */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * True when both tensors' values can be compared exactly: both widen to f32 without loss,
 * or they share one dtype (compared byte for byte).
 */
export function comparable(a: DType, b: DType): boolean {
  return a === b || (WIDENS_TO_F32.has(a) && WIDENS_TO_F32.has(b));
}

/** Reads ranges of one file through one handle, into a buffer the caller reuses. */
class RangeReader {
  private constructor(private readonly fh: FileHandle) {}
  static async open(file: string): Promise<RangeReader> {
    return new RangeReader(await open(file, 'r'));
  }
  /** Fills `into[0, length)` from `offset` (a new buffer when `into` is absent) and returns that part. */
  async read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const buf = into ? into.subarray(0, length) : new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${offset + done}`);
      done += bytesRead;
    }
    return buf;
  }
  close(): Promise<void> {
    return this.fh.close();
  }
}

/** A reader of `src`'s bytes: the file, or the dequantized values of a quantized tensor. */
function openSource(src: TensorSource): Promise<RangeReader | DequantReader> {
  return src.dequant ? DequantReader.open(src.dequant) : RangeReader.open(src.file);
}

/**
 * Element values as 32-bit patterns, read through a view of `bytes` (no copy, so streaming
 * a large tensor allocates nothing per chunk): f32 bits for floats (bf16/f16 widened
 * exactly), raw bytes for other dtypes. `bytes` must start at a 4-byte-aligned offset.
 */
interface Words {
  n: number;
  at(i: number): number;
}

function words(bytes: Uint8Array, dtype: DType): Words {
  if (dtype === 'F32') {
    const u = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
    return { n: u.length, at: (i) => u[i]! };
  }
  if (dtype === 'BF16' || dtype === 'F16') {
    const u = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 1);
    return dtype === 'BF16'
      ? { n: u.length, at: (i) => (u[i]! << 16) >>> 0 }
      : { n: u.length, at: (i) => halfBitsToFloatBits(u[i]!) >>> 0 };
  }
  return { n: bytes.length, at: (i) => bytes[i]! };
}

function mixA(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

function mixB(x: number): number {
  x = Math.imul(x ^ 0x9e3779b9, 0x27d4eb2f);
  x ^= x >>> 15;
  x = Math.imul(x, 0x165667b1);
  return (x ^ (x >>> 13)) >>> 0;
}

/** Chunk size for streaming reads: whole elements, about `budget` bytes. */
function chunkLength(elemSize: number, budget: number): number {
  return Math.max(elemSize, Math.floor(budget / elemSize) * elemSize);
}

/**
 * Order-independent digest of a tensor's values, computed streaming in chunks of at most
 * `chunkBytes`. Equal for a tensor and any permutation of it (in particular its transpose).
 */
export async function multisetDigest(src: TensorSource, chunkBytes = 4 << 20): Promise<string> {
  const reader = await openSource(src);
  try {
    let a = 0;
    let b = 0;
    let n = 0;
    const step = chunkLength(DTYPE_SIZE[src.dtype], chunkBytes);
    const buf = new Uint8Array(Math.min(step, src.byteLength));
    for (let off = 0; off < src.byteLength; off += step) {
      const w = words(await reader.read(src.offset + off, Math.min(step, src.byteLength - off), buf), src.dtype);
      for (let i = 0; i < w.n; i++) {
        const x = w.at(i);
        a = (a + mixA(x)) >>> 0;
        b = (b + mixB(x)) >>> 0;
      }
      n += w.n;
    }
    const family = WIDENS_TO_F32.has(src.dtype) ? 'f' : src.dtype;
    return `${family}:${n}:${a.toString(16)}:${b.toString(16)}`;
  } finally {
    await reader.close();
  }
}

function equalWords(x: Words, y: Words): boolean {
  if (x.n !== y.n) return false;
  for (let i = 0; i < x.n; i++) if (x.at(i) !== y.at(i)) return false;
  return true;
}

/** True when `a` and `b` hold the same values in the same order. */
export async function sameValues(a: TensorSource, b: TensorSource, chunkBytes = 4 << 20): Promise<boolean> {
  if (!comparable(a.dtype, b.dtype) || numel(a.shape) !== numel(b.shape)) return false;
  const [ra, rb] = [await openSource(a), await openSource(b)];
  try {
    const total = numel(a.shape);
    const step = Math.max(1, Math.min(total, Math.floor(chunkBytes / 4)));
    const sa = DTYPE_SIZE[a.dtype];
    const sb = DTYPE_SIZE[b.dtype];
    const [ba, bb] = [new Uint8Array(step * sa), new Uint8Array(step * sb)];
    for (let e = 0; e < total; e += step) {
      const n = Math.min(step, total - e);
      const wa = words(await ra.read(a.offset + e * sa, n * sa, ba), a.dtype);
      const wb = words(await rb.read(b.offset + e * sb, n * sb, bb), b.dtype);
      if (!equalWords(wa, wb)) return false;
    }
    return true;
  } finally {
    await Promise.all([ra.close(), rb.close()]);
  }
}

/**
 * True when 2-D `a` ([r, c]) equals the transpose of 2-D `b` ([c, r]). `a` is streamed in
 * blocks of rows; for each block the matching column segment of every row of `b` is read,
 * so memory stays near `chunkBytes` whatever the tensors' sizes.
 */
export async function sameValuesTransposed(a: TensorSource, b: TensorSource, chunkBytes = 4 << 20): Promise<boolean> {
  if (a.shape.length !== 2 || b.shape.length !== 2) return false;
  const [r, c] = a.shape as [number, number];
  if (b.shape[0] !== c || b.shape[1] !== r || !comparable(a.dtype, b.dtype)) return false;
  const sa = DTYPE_SIZE[a.dtype];
  const sb = DTYPE_SIZE[b.dtype];
  const rows = Math.max(1, Math.min(r, Math.floor(chunkBytes / Math.max(1, c * 4))));
  const [ra, rb] = [await openSource(a), await openSource(b)];
  try {
    const [ba, bb] = [new Uint8Array(rows * c * sa), new Uint8Array(rows * sb)];
    for (let i0 = 0; i0 < r; i0 += rows) {
      const n = Math.min(rows, r - i0);
      // a[i0 .. i0+n, :] is contiguous.
      const wa = words(await ra.read(a.offset + i0 * c * sa, n * c * sa, ba), a.dtype);
      for (let j = 0; j < c; j++) {
        // b[j, i0 .. i0+n] is contiguous too; it must equal column j of the block of a.
        const wb = words(await rb.read(b.offset + (j * r + i0) * sb, n * sb, bb), b.dtype);
        for (let k = 0; k < n; k++) if (wa.at(k * c + j) !== wb.at(k)) return false;
      }
    }
    return true;
  } finally {
    await Promise.all([ra.close(), rb.close()]);
  }
}

/** An exact elementwise relation `init = ckpt + add` or `init = ckpt × mul` (in f32). */
export interface Affine {
  add?: number;
  mul?: number;
}

/** Largest tensor {@link affineRelation} reads whole (norm weights and biases are far smaller). */
export const AFFINE_MAX_ELEMENTS = 1 << 20;

async function readF32(src: TensorSource): Promise<Float32Array> {
  const r = await openSource(src);
  try {
    return toFloat32(await r.read(src.offset, src.byteLength), src.dtype);
  } finally {
    await r.close();
  }
}

/**
 * Finds a constant `c` with `init[i] == fround(ckpt[i] + c)` for every i (or `× c`), the
 * form constant folding leaves for norms such as Gemma's `(1 + weight)`. Exact f32
 * equality over every element is required, so a chance fit is not a risk in practice.
 */
export async function affineRelation(init: TensorSource, ckpt: TensorSource): Promise<Affine | undefined> {
  const n = numel(init.shape);
  if (n !== numel(ckpt.shape) || n < 4 || n > AFFINE_MAX_ELEMENTS) return undefined;
  if (!WIDENS_TO_F32.has(init.dtype) || !WIDENS_TO_F32.has(ckpt.dtype)) return undefined;
  const [b, a] = [await readF32(init), await readF32(ckpt)];
  const holds = (f: (x: number) => number): boolean => {
    for (let i = 0; i < n; i++) if (Math.fround(f(a[i]!)) !== b[i]) return false;
    return true;
  };
  for (const c of new Set([1, Math.fround(b[0]! - a[0]!)])) {
    if (c !== 0 && Number.isFinite(c) && holds((x) => x + c)) return { add: c };
  }
  const i0 = a.findIndex((x) => x !== 0);
  if (i0 >= 0) {
    const c = Math.fround(b[i0]! / a[i0]!);
    if (c !== 1 && c !== 0 && Number.isFinite(c) && holds((x) => x * c)) return { mul: c };
  }
  return undefined;
}
