/**
 * A checkpoint as one key → tensor view over its safetensors files. Three layouts:
 * `model.safetensors.index.json` + shards (HF sharded), a single `.safetensors` file, or a
 * directory of `*.safetensors` without an index (`model.safetensors` alone when present,
 * as HF loaders do, otherwise every shard). Only headers are read on open.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { FormatError } from '../../errors';
import { MAX_HEADER_BYTES, type SafetensorsHeader, type TensorInfo } from './header';
import { readSafetensorsHeader, readTensorBytes } from './read';
import { byteOffsetIn, isJsonObject, parseStrictJson } from './strict-json';
import { assertRegularFile, readRegularFile } from '../../paths/file-kind';

/** The index file name HF writes for sharded checkpoints. */
export const INDEX_FILE = 'model.safetensors.index.json';

/** How a checkpoint was found. */
export type CheckpointLayout = 'index' | 'single' | 'directory';

/** A tensor of a checkpoint: its header info plus the absolute file holding it. */
export type CheckpointTensor = TensorInfo & { file: string };

/** Runs `fn` over `items` with at most `limit` in flight (thousands of shards must not hit EMFILE). */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** One file, size-bounded, as text (index.json, config.json). */
async function readJsonText(file: string): Promise<string> {
  let st: fs.Stats;
  try {
    st = await fsp.stat(file);
  } catch {
    throw new FormatError(file, 'file does not exist');
  }
  assertRegularFile(file, st);
  if (st.size > MAX_HEADER_BYTES) throw new FormatError(file, `is ${st.size} bytes, over the ${MAX_HEADER_BYTES}-byte limit for JSON`);
  const buf = await readRegularFile(file);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new FormatError(file, 'is not valid UTF-8');
  }
}

/**
 * Checks that a shard name from an index stays inside the checkpoint directory: relative,
 * no `..` segment, no NUL. Returns a description of the problem or undefined.
 */
export function badShardName(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.includes('\0')) return 'contains a NUL byte';
  if (path.isAbsolute(name) || path.win32.isAbsolute(name) || /^[a-zA-Z]:/.test(name)) return 'is an absolute path';
  if (name.split(/[\\/]/).includes('..')) return 'contains ".." (must stay inside the checkpoint directory)';
  return undefined;
}

/** Key → tensor view over a checkpoint's safetensors files. */
export class Checkpoint {
  private configCache?: Promise<Record<string, unknown> | undefined>;

  private constructor(
    /** The directory holding the files (and config.json). */
    readonly dir: string,
    /** Absolute paths of the safetensors files, in index (or name) order. */
    readonly files: string[],
    /** Header of each file, by absolute path. */
    readonly headers: Map<string, SafetensorsHeader>,
    private readonly where: Map<string, string>,
    readonly layout: CheckpointLayout,
    /** The index file, for the sharded layout. */
    readonly indexFile?: string,
    /** The index's `metadata` object, when it has one. */
    readonly indexMetadata?: Record<string, unknown>,
  ) {}

  /** Opens an index file, a single safetensors file, or a directory. Throws FormatError. */
  static async open(pathOrDir: string): Promise<Checkpoint> {
    const target = path.resolve(pathOrDir);
    let st: fs.Stats;
    try {
      st = await fsp.stat(target);
    } catch {
      throw new FormatError(target, 'does not exist');
    }
    if (st.isFile()) {
      if (target.endsWith('.json')) return Checkpoint.fromIndex(target);
      return Checkpoint.fromFiles(path.dirname(target), [target], 'single');
    }
    if (!st.isDirectory()) throw new FormatError(target, 'is neither a file nor a directory');
    const names = (await fsp.readdir(target)).sort();
    if (names.includes(INDEX_FILE)) return Checkpoint.fromIndex(path.join(target, INDEX_FILE));
    const indexes = names.filter((n) => n.endsWith('.safetensors.index.json'));
    if (indexes.length === 1) return Checkpoint.fromIndex(path.join(target, indexes[0]!));
    if (indexes.length > 1) throw new FormatError(target, `has several index files (${indexes.join(', ')}) and no ${INDEX_FILE}`);
    if (names.includes('model.safetensors')) return Checkpoint.fromFiles(target, [path.join(target, 'model.safetensors')], 'single');
    const shards = names.filter((n) => n.endsWith('.safetensors')).map((n) => path.join(target, n));
    if (shards.length === 0) throw new FormatError(target, `has no ${INDEX_FILE} and no *.safetensors file`);
    return Checkpoint.fromFiles(target, shards, 'directory');
  }

  private static async fromFiles(dir: string, files: string[], layout: CheckpointLayout): Promise<Checkpoint> {
    const list = await mapLimited(files, 16, (f) => readSafetensorsHeader(f));
    const headers = new Map<string, SafetensorsHeader>();
    const where = new Map<string, string>();
    for (const h of list) {
      headers.set(h.file, h);
      for (const [key, t] of h.tensors) {
        const prev = where.get(key);
        if (prev !== undefined) {
          throw new FormatError(
            h.file,
            `tensor ${JSON.stringify(key)} is also in ${path.basename(prev)} (no index says which one to use)`,
            t.dataOffset,
          );
        }
        where.set(key, h.file);
      }
    }
    return new Checkpoint(dir, files, headers, where, layout);
  }

  private static async fromIndex(indexFile: string): Promise<Checkpoint> {
    const dir = path.dirname(indexFile);
    const text = await readJsonText(indexFile);
    const json = parseStrictJson(text, indexFile, 'index');
    const value = json.value;
    if (!isJsonObject(value)) throw new FormatError(indexFile, 'index JSON is not an object', 0);
    const map = value.weight_map;
    if (map === undefined) throw new FormatError(indexFile, 'index has no "weight_map"', 0);
    if (!isJsonObject(map))
      throw new FormatError(indexFile, '"weight_map" is not an object', byteOffsetIn(text, json.topLevel.get('weight_map'), 0));
    const meta = value.metadata;
    if (meta !== undefined && meta !== null && !isJsonObject(meta)) {
      throw new FormatError(indexFile, '"metadata" is not an object', byteOffsetIn(text, json.topLevel.get('metadata'), 0));
    }
    const keyAt = (k: string) => byteOffsetIn(text, json.secondLevel.get('weight_map')?.get(k), 0);
    const shardOf = new Map<string, string>();
    const files: string[] = [];
    // A 20,000-key index names a few dozen shards: check and join each shard name once.
    const absOf = new Map<string, string>();
    for (const [key, shard] of Object.entries(map)) {
      if (typeof shard !== 'string') {
        throw new FormatError(indexFile, `weight_map[${JSON.stringify(key)}] is not a file name`, keyAt(key));
      }
      let abs = absOf.get(shard);
      if (abs === undefined) {
        const bad = badShardName(shard);
        if (bad) throw new FormatError(indexFile, `weight_map[${JSON.stringify(key)}] shard ${JSON.stringify(shard)} ${bad}`, keyAt(key));
        abs = path.join(dir, shard);
        absOf.set(shard, abs);
        if (!files.includes(abs)) files.push(abs);
      }
      shardOf.set(key, abs);
    }
    const headers = new Map<string, SafetensorsHeader>();
    for (const f of files) {
      if (!fs.existsSync(f)) {
        const key = [...shardOf].find(([, s]) => s === f)![0];
        throw new FormatError(
          indexFile,
          `shard ${JSON.stringify(path.relative(dir, f))} (for ${JSON.stringify(key)}) does not exist`,
          keyAt(key),
        );
      }
    }
    await mapLimited(files, 16, async (f) => headers.set(f, await readSafetensorsHeader(f)));
    for (const [key, f] of shardOf) {
      if (!headers.get(f)!.tensors.has(key)) {
        throw new FormatError(
          indexFile,
          `weight_map maps ${JSON.stringify(key)} to ${JSON.stringify(path.relative(dir, f))}, which has no such tensor`,
          keyAt(key),
        );
      }
    }
    const ordered = new Map(files.map((f) => [f, headers.get(f)!]));
    return new Checkpoint(dir, files, ordered, shardOf, 'index', indexFile, isJsonObject(meta) ? meta : undefined);
  }

  /** Every tensor key (index order for a sharded checkpoint, else file then offset order). */
  keys(): string[] {
    return [...this.where.keys()];
  }

  /** True when the checkpoint has `key`. */
  has(key: string): boolean {
    return this.where.has(key);
  }

  /** The absolute file holding `key`. */
  fileOf(key: string): string | undefined {
    return this.where.get(key);
  }

  /** Header info of `key` plus its file, or undefined. */
  get(key: string): CheckpointTensor | undefined {
    const file = this.where.get(key);
    if (file === undefined) return undefined;
    const info = this.headers.get(file)!.tensors.get(key)!;
    return { ...info, file };
  }

  /** All tensors, in {@link keys} order. */
  tensors(): CheckpointTensor[] {
    return this.keys().map((k) => this.get(k)!);
  }

  /** Total bytes of all tensors' data. */
  totalBytes(): number {
    let n = 0;
    for (const k of this.where.keys()) n += this.get(k)!.byteLength;
    return n;
  }

  /** Reads `key`'s bytes by offset (FormatError naming the checkpoint when the key is absent). */
  async read(key: string): Promise<Uint8Array> {
    const t = this.get(key);
    if (!t) throw new FormatError(this.indexFile ?? this.files[0] ?? this.dir, `has no tensor ${JSON.stringify(key)}`);
    return readTensorBytes(t.file, t);
  }

  /** config.json beside the checkpoint, parsed (undefined when there is none). */
  config(): Promise<Record<string, unknown> | undefined> {
    this.configCache ??= (async () => {
      const file = path.join(this.dir, 'config.json');
      if (!fs.existsSync(file)) return undefined;
      const { value } = parseStrictJson(await readJsonText(file), file, 'config.json');
      if (!isJsonObject(value)) throw new FormatError(file, 'config.json is not a JSON object', 0);
      return value;
    })();
    return this.configCache;
  }
}
