/**
 * Reads a PyTorch `.bin` checkpoint (the zip format of `torch.save` since 1.6):
 * `<archive>/data.pkl` (the pickled state dict) and `<archive>/data/<key>` (raw storages,
 * little-endian). Only tensor metadata is taken from the pickle, through the allow-listed
 * VM; tensor bytes are read by range from the storages. The legacy pre-1.6 format (a bare
 * pickle stream or tar) is refused with a message saying how to re-save it.
 */
import { FormatError } from '../../errors';
import { BIN_DTYPE_SIZE, decodeStateDict, type BinTensor } from './state-dict';
import { ZipReader, type ZipEntry } from './zip';
import { openRegularFile } from '../../paths/file-kind';

/** Largest `data.pkl` accepted: the pickle of a state dict is kilobytes to a few megabytes. */
const MAX_PICKLE_BYTES = 512 * 1024 * 1024;

/** An open `.bin` checkpoint. */
export interface TorchBin {
  file: string;
  /** Archive folder inside the zip (`archive`, `pytorch_model`, …). */
  prefix: string;
  tensors: BinTensor[];
  /** Top-level entries that are not tensors (ignored by the converter). */
  skipped: string[];
  /** Materialized tensor bytes, C-contiguous little-endian. */
  read(t: BinTensor): Promise<Uint8Array>;
  close(): Promise<void>;
}

/** Refuses non-zip input with the precise reason. */
async function sniff(file: string): Promise<void> {
  const fh = await openRegularFile(file);
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await fh.read(head, 0, 512, 0);
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0x04034b50) return;
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0x06054b50)
      throw new FormatError(file, 'empty zip archive, not a PyTorch checkpoint', 0);
    if (bytesRead >= 2 && head[0] === 0x80 && head[1]! <= 5) {
      throw new FormatError(
        file,
        'legacy (pre-1.6) torch.save format is not supported; re-save with torch.save(state_dict, f) on torch >= 1.6, or save as safetensors',
        0,
      );
    }
    if (bytesRead >= 262 && head.toString('latin1', 257, 262) === 'ustar') {
      throw new FormatError(file, 'legacy tar-format torch checkpoint is not supported; re-save it with a current torch', 257);
    }
    throw new FormatError(file, 'not a PyTorch zip checkpoint (no zip signature)', 0);
  } finally {
    await fh.close();
  }
}

/** Copies a strided tensor out of its storage span into C-contiguous order. */
export function gatherStrided(span: Uint8Array, t: BinTensor): Uint8Array {
  const es = BIN_DTYPE_SIZE[t.dtype];
  const out = new Uint8Array(t.byteLength);
  const nd = t.shape.length;
  if (t.byteLength === 0) return out;
  if (nd === 0) {
    out.set(span.subarray(0, es));
    return out;
  }
  const rowLen = t.shape[nd - 1]!;
  const rowStride = t.stride[nd - 1]!;
  const rows = t.byteLength / es / rowLen;
  const idx = new Array<number>(nd - 1).fill(0);
  let base = 0; // element offset of the current row's first element, relative to the span
  let o = 0;
  for (let r = 0; r < rows; r++) {
    if (rowStride === 1) {
      out.set(span.subarray(base * es, (base + rowLen) * es), o);
      o += rowLen * es;
    } else {
      for (let j = 0; j < rowLen; j++) {
        const src = (base + j * rowStride) * es;
        for (let b = 0; b < es; b++) out[o++] = span[src + b]!;
      }
    }
    for (let d = nd - 2; d >= 0; d--) {
      idx[d]!++;
      base += t.stride[d]!;
      if (idx[d]! < t.shape[d]!) break;
      base -= t.stride[d]! * t.shape[d]!;
      idx[d] = 0;
    }
  }
  return out;
}

/**
 * Opens a `.bin` checkpoint and decodes its state dict. Throws FormatError on a legacy or
 * corrupt file, a refused global, or a tensor that does not fit its storage.
 */
export async function openTorchBin(file: string): Promise<TorchBin> {
  await sniff(file);
  const zip = await ZipReader.open(file);
  try {
    // eslint-disable-next-line no-control-regex -- entry names with control characters are refused
    const pkls = [...zip.entries.keys()].filter((n) => /^[^/\x00-\x1f]+\/data\.pkl$/.test(n));
    if (pkls.length !== 1) {
      throw new FormatError(
        file,
        pkls.length === 0 ? 'zip has no <archive>/data.pkl: not a torch.save checkpoint' : 'zip holds more than one data.pkl',
        0,
      );
    }
    const prefix = pkls[0]!.slice(0, -'/data.pkl'.length);
    const order = zip.entries.get(`${prefix}/byteorder`);
    if (order) {
      const text = Buffer.from(await zip.readChecked(order, 16))
        .toString('latin1')
        .trim();
      if (text !== 'little')
        throw new FormatError(file, `storages are ${text}-endian; only little-endian checkpoints are supported`, order.cdOffset);
    }
    const pklEntry = zip.entries.get(pkls[0]!)!;
    const pkl = await zip.readChecked(pklEntry, MAX_PICKLE_BYTES);
    const base = pklEntry.method === 0 ? await zip.dataOffset(pklEntry) : 0;
    const { tensors, storages, skipped } = decodeStateDict(pkl, file, base);
    const entryOf = new Map<string, ZipEntry>();
    for (const s of storages.values()) {
      const e = zip.entries.get(`${prefix}/data/${s.key}`);
      if (!e) throw new FormatError(file, `storage ${s.key} is referenced but ${prefix}/data/${s.key} is missing`, pklEntry.cdOffset);
      const need = s.dtype ? s.numel * BIN_DTYPE_SIZE[s.dtype] : s.numel;
      if (e.size < need) throw new FormatError(file, `storage ${s.key} holds ${e.size} bytes but ${need} are declared`, e.cdOffset);
      entryOf.set(s.key, e);
    }
    return {
      file,
      prefix,
      tensors,
      skipped,
      async read(t) {
        const span = await zip.read(entryOf.get(t.storage.key)!, t.spanStart, t.spanLength);
        return t.contiguous ? span : gatherStrided(span, t);
      },
      close: () => zip.close(),
    };
  } catch (e) {
    await zip.close();
    throw e;
  }
}
