/**
 * The safetensors viewer's page: the tensors of the checkpoint a `.safetensors` file belongs
 * to (its folder's index when the index lists the file, else the file alone), from headers
 * only, with the spec inputs that use each key.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Checkpoint, type CheckpointTensor, type TensorInfo } from '../formats/safetensors';
import { linkSpecs, type SpecText } from './spec-links';
import type { CheckpointPage, TensorEntry } from './types';

/** Each shard's tensors (for an index: only the keys it maps to that shard) by data offset. */
function shardTensors(ck: Checkpoint, file: string): TensorInfo[] {
  const mine: TensorInfo[] = [];
  for (const [key, t] of ck.headers.get(file)!.tensors) if (ck.fileOf(key) === file) mine.push(t);
  return mine.sort((a, b) => a.begin - b.begin);
}

/** Tensors of `ck` in storage order: shard order, then data offset. */
export function storageOrder(ck: Checkpoint): CheckpointTensor[] {
  return ck.files.flatMap((file) => shardTensors(ck, file).map((t) => ({ ...t, file })));
}

/**
 * The checkpoint a file belongs to: a folder with an index (or a folder of shards with neither
 * an index nor model.safetensors) that holds `file` is read whole, so that opening any shard
 * shows the checkpoint; otherwise the file alone.
 */
export async function checkpointOf(file: string): Promise<Checkpoint> {
  const abs = path.resolve(file);
  const st = fs.statSync(abs, { throwIfNoEntry: false });
  if (!st?.isFile()) return Checkpoint.open(abs); // a folder, or the "does not exist" FormatError
  const dir = path.dirname(abs);
  const names = fs.readdirSync(dir);
  const sharded = names.some((n) => n.endsWith('.safetensors.index.json')) || !names.includes('model.safetensors');
  if (sharded && path.basename(abs) !== 'model.safetensors') {
    try {
      const ck = await Checkpoint.open(dir);
      if (ck.files.includes(abs)) return ck;
    } catch {
      // A broken or ambiguous folder (two shards with one key, a bad index): the file alone
      // still has a readable header, and an error in it is reported for the file.
    }
  }
  return Checkpoint.open(abs);
}

/** Options of {@link buildCheckpointPage}. */
export interface CheckpointPageOptions {
  /** Spec files of the workspace (path and text); inputs pointing into this checkpoint are linked. */
  specs?: SpecText[];
}

/** The page for `file` (a .safetensors file or a checkpoint folder). Throws FormatError on a bad header. */
export async function buildCheckpointPage(file: string, opts: CheckpointPageOptions = {}): Promise<CheckpointPage> {
  const ck = await checkpointOf(file);
  const files = ck.files.map((f) => ({ name: path.relative(ck.dir, f) || path.basename(f), tensors: 0, bytes: 0 }));
  const tensors: TensorEntry[] = [];
  let totalBytes = 0;
  ck.files.forEach((file, shard) => {
    for (const t of shardTensors(ck, file)) {
      tensors.push({ key: t.key, dtype: t.dtype, shape: t.shape, bytes: t.byteLength, shard });
      files[shard]!.tensors++;
      files[shard]!.bytes += t.byteLength;
      totalBytes += t.byteLength;
    }
  });
  const { links, specs } = linkSpecs(ck, opts.specs ?? []);
  const opened = path.resolve(file);
  const metadata = ck.headers.get(opened)?.metadata;
  return {
    kind: 'checkpoint',
    opened,
    dir: ck.dir,
    layout: ck.layout,
    files,
    tensors,
    totalBytes,
    links,
    linkedSpecs: specs,
    ...(metadata && Object.keys(metadata).length ? { metadata } : {}),
  };
}
