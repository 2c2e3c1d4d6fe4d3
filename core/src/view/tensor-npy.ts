/**
 * A tensor's values as a NumPy `.npy` file (issue 50 item 5): float32 (`<f4`), in the tensor's
 * shape, decoded — and for a block-scaled FP8 weight or a packed 4-bit one dequantized — as
 * {@link tensorStats} reads them (bf16, FP8 and int4 have no NumPy dtype; a packed tensor is
 * written in its dequantized shape). Streamed chunk by chunk into a temp file beside the
 * output, fsynced and renamed, so memory stays bounded and a failure leaves no half file.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { PipelineError } from '../errors';
import { commitTempFile, tempPathFor, writeError } from '../paths/atomic';
import { forEachInt4Slab } from './tensor-packed';
import { STATS_CHUNK_BYTES, closeTensor, forEachChunk, openTensor, valuesShape, type OpenTensor } from './tensor-stats';

type Opts = { chunkBytes?: number; signal?: AbortSignal };

/**
 * Writes an int4 weight's `[out, in]` values after the header at `at`: each column slab's rows
 * go to their places in the C-order file (the packed words hold columns, not rows).
 */
async function writeInt4(t: OpenTensor, fh: fsp.FileHandle, at: number, opts: Opts): Promise<number> {
  const p = t.packed;
  if (!p || p.format === 'mxfp4') throw new Error(`${t.info.key}: not an int4 weight`);
  const K = p.shape[1]!;
  await forEachInt4Slab(
    t.reader,
    t.info,
    p,
    async (v, i0, cols) => {
      const rows = v.length / cols;
      const u8 = new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      // one write per output row of the slab, all in flight together (distinct offsets)
      await Promise.all(Array.from({ length: rows }, (_, o) => fh.write(u8, o * cols * 4, cols * 4, at + (o * K + i0) * 4)));
    },
    { chunkBytes: opts.chunkBytes ?? STATS_CHUNK_BYTES, signal: opts.signal },
  );
  return p.shape[0]! * K * 4;
}

/** The `.npy` (format 1.0) header of a C-order `<f4` array of `shape`, padded to 64 bytes. */
export function npyHeader(shape: readonly number[]): Uint8Array {
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(', ');
  let dict = `{'descr': '<f4', 'fortran_order': False, 'shape': (${dims}), }`;
  const total = 10 + dict.length + 1;
  dict += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const out = new Uint8Array(10 + dict.length);
  out.set([0x93, ...Buffer.from('NUMPY'), 1, 0]);
  new DataView(out.buffer).setUint16(8, dict.length, true);
  out.set(Buffer.from(dict, 'latin1'), 10);
  return out;
}

/**
 * Writes tensor `key` of safetensors `file` to `out` as `.npy`. An existing `out` is replaced
 * only with `replace` (the editor's save dialog has asked); otherwise it is refused.
 */
export async function exportNpy(
  file: string,
  key: string,
  out: string,
  opts: { replace?: boolean } & Opts = {},
): Promise<{ out: string; bytes: number }> {
  if (!opts.replace && fs.existsSync(out)) throw new PipelineError(`${out}: exists; choose another name (nothing was written)`);
  const t = await openTensor(file, key);
  const tmp = tempPathFor(out);
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(tmp, 'wx', 0o644);
    const header = npyHeader(valuesShape(t));
    await fh.write(header);
    let bytes = header.length;
    const w = fh;
    const chunking = { ...(opts.chunkBytes ? { chunkBytes: opts.chunkBytes } : {}), ...(opts.signal ? { signal: opts.signal } : {}) };
    if (t.packed && t.packed.format !== 'mxfp4') bytes += await writeInt4(t, w, header.length, opts);
    else
      await forEachChunk(
        t,
        async (v) => {
          await w.write(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
          bytes += v.byteLength;
        },
        chunking,
      );
    await fh.sync();
    await fh.close();
    fh = undefined;
    await commitTempFile(tmp, out);
    return { out, bytes };
  } catch (e) {
    await fh?.close().catch(() => undefined);
    await fsp.rm(tmp, { force: true }).catch(() => undefined);
    throw writeError(out, e);
  } finally {
    await closeTensor(t);
  }
}
