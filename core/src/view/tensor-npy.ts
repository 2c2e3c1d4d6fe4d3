/**
 * A tensor's values as a NumPy `.npy` file (issue 50 item 5): float32 (`<f4`), in the tensor's
 * shape, decoded — and for a block-scaled FP8 weight dequantized — as {@link tensorStats} reads
 * them (bf16 and FP8 have no NumPy dtype). Streamed chunk by chunk into a temp file beside
 * the output, fsynced and renamed, so memory stays bounded and a failure leaves no half file.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { PipelineError } from '../errors';
import { commitTempFile, tempPathFor, writeError } from '../paths/atomic';
import { forEachChunk, openTensor } from './tensor-stats';

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
  opts: { replace?: boolean; signal?: AbortSignal; chunkBytes?: number } = {},
): Promise<{ out: string; bytes: number }> {
  if (!opts.replace && fs.existsSync(out)) throw new PipelineError(`${out}: exists; choose another name (nothing was written)`);
  const t = await openTensor(file, key);
  const tmp = tempPathFor(out);
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(tmp, 'wx', 0o644);
    const header = npyHeader(t.info.shape);
    await fh.write(header);
    let bytes = header.length;
    const w = fh;
    await forEachChunk(
      t,
      async (v) => {
        await w.write(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
        bytes += v.byteLength;
      },
      { ...(opts.chunkBytes ? { chunkBytes: opts.chunkBytes } : {}), ...(opts.signal ? { signal: opts.signal } : {}) },
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
    await t.reader.close();
  }
}
