/**
 * `.bin` checkpoint → safetensors. Reads only tensor metadata from each pickle (allow-listed,
 * nothing executed), streams each tensor's bytes from its storage into a safetensors file,
 * and writes an index for sharded checkpoints plus the usual sidecars (config, tokenizer).
 * A fresh output directory is built as a temp sibling and renamed in whole; an existing one
 * is written file by file (each atomic, index last) through the output guard.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { FormatError, PipelineError, UsageError } from '../../errors';
import { atomicReplaceDir, createOutputGuard, makeTempSiblingDir, printable, removeStaleTemps, resolveReadPath } from '../../paths';
import { SafetensorsWriter } from '../safetensors';
import { openTorchBin } from './torch-bin';
import { readJsonText, readRegularFile } from '../../paths/file-kind';

/** Options of {@link convertBinCheckpoint}. */
export interface ConvertOptions {
  /** Replace outputs of an earlier conversion in an existing output directory. */
  overwrite?: boolean;
  /** Called after each tensor. */
  onProgress?: (done: number, total: number, key: string) => void;
}

/** What {@link convertBinCheckpoint} wrote. */
export interface ConvertResult {
  outDir: string;
  /** Absolute paths of the safetensors files, in shard order. */
  files: string[];
  /** `model.safetensors.index.json` when there is more than one shard. */
  index?: string;
  tensors: number;
  bytes: number;
  /** Sidecar files copied (config.json, tokenizer files, …). */
  sidecars: string[];
  /** State-dict entries that were not tensors (ignored). */
  skipped: string[];
}

/** Files copied beside the converted weights so the output is a usable checkpoint directory. */
export const SIDECARS = [
  'config.json',
  'generation_config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'tokenizer.model',
  'special_tokens_map.json',
  'added_tokens.json',
  'vocab.json',
  'merges.txt',
  'chat_template.jinja',
];

/** `pytorch_model-00001-of-00002.bin` → `model-00001-of-00002.safetensors`. */
export function safetensorsNameFor(binName: string): string {
  const stem = path.basename(binName).replace(/\.bin$/, '');
  return `${stem.replace(/^pytorch_model/, 'model')}.safetensors`;
}

/** The `.bin` shards of `input` (a file, or a directory with or without an index). */
async function findShards(input: string): Promise<{ dir: string; shards: string[] }> {
  const st = await fsp.stat(input).catch(() => undefined);
  if (!st) throw new UsageError(`${input}: no such file or directory`);
  if (st.isFile()) return { dir: path.dirname(path.resolve(input)), shards: [path.resolve(input)] };
  const dir = path.resolve(input);
  const names = await fsp.readdir(dir);
  const indexName = names.find((n) => n.endsWith('.bin.index.json'));
  if (indexName) {
    const file = path.join(dir, indexName);
    let map: unknown;
    try {
      map = (JSON.parse(await readJsonText(file)) as { weight_map?: unknown }).weight_map;
    } catch (e) {
      throw new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
    }
    if (!map || typeof map !== 'object') throw new FormatError(file, 'has no weight_map object');
    const shards: string[] = [];
    for (const v of Object.values(map as Record<string, unknown>)) {
      if (typeof v !== 'string') throw new FormatError(file, 'weight_map values must be file names');
      // The index is input data: its file names obey the read policy like a spec's paths.
      const abs = resolveReadPath(dir, v).abs;
      if (!shards.includes(abs)) shards.push(abs);
    }
    if (shards.length === 0) throw new FormatError(file, 'weight_map is empty');
    return { dir, shards };
  }
  const bins = names.filter((n) => n.endsWith('.bin')).sort();
  if (bins.length === 0) throw new UsageError(`${dir}: no .bin checkpoint (pytorch_model*.bin) in this directory`);
  return { dir, shards: bins.map((n) => path.join(dir, n)) };
}

/**
 * Converts a PyTorch `.bin` checkpoint (one file, or a directory of shards with
 * `pytorch_model.bin.index.json`) into safetensors under `outDir`. Tensor bytes are copied
 * exactly (strided views materialized in C order). Throws FormatError for a corrupt or
 * hostile file, PathPolicyError for refused paths, UsageError for a missing input.
 */
export async function convertBinCheckpoint(input: string, outDir: string, opts: ConvertOptions = {}): Promise<ConvertResult> {
  const { dir, shards } = await findShards(input);
  const finalOut = path.resolve(outDir);
  const outNames = shards.map(safetensorsNameFor);
  if (new Set(outNames).size !== outNames.length) throw new UsageError(`${dir}: shard names collide after conversion`);
  const indexName = 'model.safetensors.index.json';

  const existing = fs.existsSync(finalOut) ? fs.readdirSync(finalOut) : undefined;
  const fresh = existing === undefined || existing.length === 0;
  // Repair after a killed run: its temp sibling (or in-place temp files) are removed first.
  await removeStaleTemps(path.dirname(finalOut), false, `${path.basename(finalOut)}.`);
  if (!fresh) await removeStaleTemps(finalOut);
  const work = fresh ? await makeTempSiblingDir(finalOut) : finalOut;
  const guard = createOutputGuard(work, { owned: opts.overwrite ? [...outNames, indexName, ...SIDECARS] : [] });
  const result: ConvertResult = { outDir: finalOut, files: [], tensors: 0, bytes: 0, sidecars: [], skipped: [] };
  try {
    const weightMap: Record<string, string> = Object.create(null) as Record<string, string>;
    const bins = [];
    // Open (and so validate) every shard before writing anything.
    for (const s of shards) bins.push(await openTorchBin(s));
    try {
      const total = bins.reduce((a, b) => a + b.tensors.length, 0);
      for (let i = 0; i < bins.length; i++) {
        const bin = bins[i]!;
        for (const t of bin.tensors) {
          if (weightMap[t.key] !== undefined)
            throw new FormatError(bin.file, `tensor "${printable(t.key)}" also appears in ${weightMap[t.key]}`);
          weightMap[t.key] = outNames[i]!;
        }
        const target = guard.target(outNames[i]!);
        const w = await SafetensorsWriter.open(
          target,
          bin.tensors.map((t) => ({ key: t.key, dtype: t.dtype, shape: t.shape })),
          { format: 'pt' },
        );
        try {
          for (const t of bin.tensors) {
            await w.write(t.key, await bin.read(t));
            result.tensors++;
            result.bytes += t.byteLength;
            opts.onProgress?.(result.tensors, total, t.key);
          }
          await w.finish();
        } catch (e) {
          await w.abort();
          throw e;
        }
        result.files.push(path.join(finalOut, outNames[i]!));
        result.skipped.push(...bin.skipped);
      }
    } finally {
      for (const b of bins) await b.close();
    }
    for (const name of SIDECARS) {
      const src = path.join(dir, name);
      if (!fs.existsSync(src) || !fs.statSync(src).isFile()) continue;
      await guard.writeFile(name, await readRegularFile(src));
      result.sidecars.push(name);
    }
    if (shards.length > 1) {
      const index = { metadata: { total_size: result.bytes }, weight_map: weightMap };
      await guard.writeFile(indexName, `${JSON.stringify(index, null, 2)}\n`);
      result.index = path.join(finalOut, indexName);
    }
    if (fresh) await atomicReplaceDir(work, finalOut);
    return result;
  } catch (e) {
    if (fresh) await fsp.rm(work, { recursive: true, force: true });
    throw diskError(e, finalOut);
  }
}

/** Disk-full and file-size-limit failures become one clear line naming the output. */
function diskError(e: unknown, out: string): unknown {
  // The safetensors writer reports errno codes inside its own PipelineError message.
  const msg = e instanceof Error ? e.message : '';
  const code = (e as NodeJS.ErrnoException)?.code ?? /\b(ENOSPC|EDQUOT|EFBIG)\b/.exec(msg)?.[1];
  if (code === 'ENOSPC' || code === 'EDQUOT')
    return new PipelineError(`${out}: no space left on the device while writing the converted checkpoint (nothing was kept)`);
  if (code === 'EFBIG')
    return new PipelineError(`${out}: file size limit reached while writing the converted checkpoint (nothing was kept)`);
  return e;
}
