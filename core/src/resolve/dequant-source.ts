/**
 * A quantized checkpoint tensor seen as its dequantized f32 values, for content matching: a
 * legacy ONNX exported from the dequantized model embeds those values, which exist in no
 * file. {@link DequantReader} serves byte ranges of the virtual f32 tensor by reading the
 * FP8 bytes and applying prepare's own kernel ({@link dequantFp8}), so the resolver's
 * streaming comparisons work unchanged and in bounded memory.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { type DType } from '../formats/dtype';
import { toFloat32 } from '../formats/float-convert';
import { dequantFp8 } from '../prepare/fp8-kernel';
import type { ScaleRef } from '../prepare/types';

/** Where a quantized tensor and its scale are. */
export interface DequantSource {
  q: { file: string; offset: number; dtype: DType; shape: number[] };
  scale: { file: string; offset: number; byteLength: number; dtype: DType };
  ref: ScaleRef;
}

async function readAt(fh: FileHandle, offset: number, buf: Uint8Array): Promise<Uint8Array> {
  let done = 0;
  while (done < buf.length) {
    const { bytesRead } = await fh.read(buf, done, buf.length - done, offset + done);
    if (bytesRead === 0) throw new Error(`unexpected end of file at byte ${offset + done}`);
    done += bytesRead;
  }
  return buf;
}

/** Byte ranges of the dequantized f32 tensor (offset 0 = its first element). */
export class DequantReader {
  private constructor(
    private readonly fh: FileHandle,
    private readonly d: DequantSource,
    private readonly scale: Float32Array,
  ) {}

  static async open(d: DequantSource): Promise<DequantReader> {
    const sf = await open(d.scale.file, 'r');
    let scale: Float32Array;
    try {
      scale = toFloat32(await readAt(sf, d.scale.offset, new Uint8Array(d.scale.byteLength)), d.scale.dtype);
    } finally {
      await sf.close();
    }
    return new DequantReader(await open(d.q.file, 'r'), d, scale);
  }

  /** `length` bytes of the f32 values from byte `offset` (both multiples of 4). */
  async read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const first = offset / 4;
    const q = await readAt(this.fh, this.d.q.offset + first, new Uint8Array(length / 4));
    const f = dequantFp8(q, this.d.q.dtype, first, this.d.q.shape, this.scale, this.d.ref);
    const bytes = new Uint8Array(f.buffer, f.byteOffset, f.byteLength);
    if (!into) return bytes;
    const out = into.subarray(0, length);
    out.set(bytes);
    return out;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}
