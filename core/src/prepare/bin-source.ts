/**
 * `.bin` checkpoints in prepare. QEfficient converts `pytorch_model*.bin` to safetensors when a
 * model has no safetensors; so does prepare, with the project's safe converter
 * (`formats/pickle`: allow-listed unpickler, nothing executed). The converted checkpoint goes
 * beside the source as `<name>-safetensors` with a record of the `.bin` files it came from, and
 * is reused while those files are unchanged; prepare then plans from it like any checkpoint.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { convertBinCheckpoint } from '../formats/pickle';
import { atomicWriteFile, readJsonText } from '../paths';

/** Written last in the converted directory: the `.bin` files (size, mtime) it was made from. */
export const CONVERTED_FROM_FILE = '.converted-from.json';

/** What {@link safetensorsSource} did when it had to convert (or reuse a conversion). */
export interface BinConversion {
  /** The `.bin` source directory (or file). */
  from: string;
  /** The safetensors checkpoint prepare plans from. */
  to: string;
  binFiles: string[];
  /** False when an earlier conversion of the same `.bin` files was reused. */
  converted: boolean;
  tensors?: number;
}

/** The `.bin` shards of a directory that has no safetensors, else undefined (a `.bin` file given directly counts). */
function binOnly(checkpoint: string): { dir: string; bins: string[] } | undefined {
  const st = fs.statSync(checkpoint, { throwIfNoEntry: false });
  if (!st) return undefined;
  if (st.isFile()) return checkpoint.endsWith('.bin') ? { dir: path.dirname(checkpoint), bins: [checkpoint] } : undefined;
  if (!st.isDirectory()) return undefined;
  const names = fs.readdirSync(checkpoint);
  if (names.some((n) => n.endsWith('.safetensors') || n === 'model.safetensors.index.json')) return undefined;
  const bins = names
    .filter((n) => /^pytorch_model.*\.bin$/.test(n))
    .sort()
    .map((n) => path.join(checkpoint, n));
  return bins.length ? { dir: checkpoint, bins } : undefined;
}

async function stamps(files: string[]): Promise<{ path: string; size: number; mtime_ms: number }[]> {
  return Promise.all(
    files.map(async (f) => {
      const st = await fsp.stat(f);
      return { path: path.basename(f), size: st.size, mtime_ms: st.mtimeMs };
    }),
  );
}

/**
 * The checkpoint prepare should plan from: `checkpoint` itself, or — for a `.bin`-only
 * checkpoint — its safetensors conversion (made now, or reused when up to date).
 */
export async function safetensorsSource(checkpoint: string): Promise<{ checkpoint: string; conversion?: BinConversion }> {
  const abs = path.resolve(checkpoint);
  const bin = binOnly(abs);
  if (!bin) return { checkpoint };
  const to = path.join(path.dirname(bin.dir), `${path.basename(bin.dir)}-safetensors`);
  const want = JSON.stringify({ version: 1, source: bin.dir, bin_files: await stamps(bin.bins) });
  const have = await readJsonText(path.join(to, CONVERTED_FROM_FILE)).catch(() => undefined);
  if (have === want) return { checkpoint: to, conversion: { from: abs, to, binFiles: bin.bins, converted: false } };
  const res = await convertBinCheckpoint(fs.statSync(abs).isFile() ? abs : bin.dir, to, { overwrite: true });
  await atomicWriteFile(path.join(to, CONVERTED_FROM_FILE), want);
  return { checkpoint: to, conversion: { from: abs, to, binFiles: bin.bins, converted: true, tensors: res.tensors } };
}
