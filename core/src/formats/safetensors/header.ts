/**
 * The safetensors header parser. A file is `u64 LE N` + `N` bytes of UTF-8 JSON + the data
 * region. Nothing in the header is trusted: every length and offset is checked against the
 * file's real size before anything is allocated or read, so a hostile header that claims
 * 2^60 bytes is rejected from its text alone.
 */
import { FormatError } from '../../errors';
import { DTYPE_SIZE, isDType } from '../dtype';
import { ownKeyCount } from '../json-depth';
import { parseHeaderFast } from './header-fast';
import { byteOffsetIn, isJsonObject, parseStrictJson } from './strict-json';
import { TensorTable, type TensorInfo } from './tensor-table';

/** Largest header the reader accepts (the Rust reference's limit: 100 MB). */
export const MAX_HEADER_BYTES = 100_000_000;

export type { TensorInfo } from './tensor-table';
export { TensorTable, hasDtype, storedKey } from './tensor-table';

/** A validated safetensors header. */
export interface SafetensorsHeader {
  file: string;
  fileSize: number;
  /** N, the JSON header's byte length (including padding). */
  headerLength: number;
  /** 8 + N: where the data region starts. */
  dataStart: number;
  /**
   * Tensors in file (offset) order. A {@link TensorTable} when read from a file; a plain Map
   * where one is made by hand (a planned header).
   */
  tensors: Map<string, TensorInfo>;
  metadata?: Record<string, string>;
}

/** Number of elements of `shape` (1 for a scalar). Assumes a validated shape. */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/**
 * Reads and bounds-checks the 8-byte header length. `fileSize` is the whole file's size;
 * `prefix` needs at least its first 8 bytes (when the file has them).
 */
export function headerLengthOf(prefix: Uint8Array, fileSize: number, file: string): number {
  if (fileSize < 8 || prefix.length < 8) {
    throw new FormatError(file, `file is ${fileSize} bytes, too short for the 8-byte safetensors header length`, 0);
  }
  const n = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (n === 0n) throw new FormatError(file, 'header length is 0 (a safetensors header is at least "{}")', 0);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    // Any file's first 8 bytes read as a number: printing it would only puzzle the reader.
    throw new FormatError(
      file,
      `not a safetensors file (its first 8 bytes are no header length up to the ${MAX_HEADER_BYTES}-byte limit)`,
      0,
    );
  }
  const len = Number(n);
  if (8 + len > fileSize) {
    throw new FormatError(
      file,
      `header length ${len} runs past the end of the ${fileSize}-byte file (truncated, or not a safetensors file)`,
      0,
    );
  }
  return len;
}

/**
 * Parses a safetensors header. `buf` holds at least the first `8 + N` bytes of the file
 * (more is fine); `fileSize` is the file's real size. Throws one {@link FormatError} naming
 * the file, the problem and the byte.
 */
export function parseSafetensorsHeader(buf: Uint8Array, fileSize: number, file: string): SafetensorsHeader {
  return parseHeader(buf, fileSize, file, true);
}

/** {@link parseSafetensorsHeader}; `fast: false` skips the fast path (tests compare both). */
export function parseHeader(buf: Uint8Array, fileSize: number, file: string, fast: boolean): SafetensorsHeader {
  const headerLength = headerLengthOf(buf, fileSize, file);
  if (buf.length < 8 + headerLength) {
    throw new FormatError(file, `only ${buf.length} bytes given for a ${headerLength}-byte header`, buf.length);
  }
  // The usual header, read in place (header-fast.ts); anything else, or anything wrong, is
  // read below, which finds the same tensors or the one error.
  const quick = fast ? parseHeaderFast(buf, headerLength, fileSize) : undefined;
  if (quick) {
    const { tensors, metadata } = quick;
    return { file, fileSize, headerLength, dataStart: 8 + headerLength, tensors, ...(metadata ? { metadata } : {}) };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buf.subarray(8, 8 + headerLength));
  } catch {
    throw new FormatError(file, 'header is not valid UTF-8', 8);
  }
  if (!text.startsWith('{')) {
    throw new FormatError(file, `header does not start with "{" (found ${JSON.stringify(text.slice(0, 16))})`, 8);
  }
  // Checked before JSON.parse builds anything: a header nests 3 levels ({key: {shape: [..]}})
  // and a tensor entry is 3 objects/arrays for 4 property names (+ the root and __metadata__).
  // A 20 MB [[[…]]] or [[],[],…] would otherwise cost seconds and a gigabyte in JSON.parse.
  // 1,000,000 property names is 250,000 tensors, far beyond any shard; V8 takes seconds over an
  // object with millions of keys.
  const json = parseStrictJson(text, file, 'header', 8, {
    maxDepth: 3,
    maxContainersPerProperty: 0.75,
    maxProperties: 1_000_000,
    deferDuplicateCheck: true,
  });
  const value = json.value;
  // The duplicate-key check comes first, as without deferring it: its key count is made in
  // the entries loop below (one walk of the header object instead of two); any error found
  // before the count is complete waits for the check over the whole value.
  const duplicatesFirst = (err: unknown): never => {
    json.checkDuplicates(ownKeyCount(value));
    throw err;
  };
  if (!isJsonObject(value)) return duplicatesFirst(new FormatError(file, 'header JSON is not an object', 8));
  // Byte offsets are computed only for an error (each costs a scan of the text before it).
  // In a big header the exact scan (a map of every key) costs seconds; the first place the
  // key's JSON text appears is close enough for a message.
  const at = (key: string) => {
    if (text.length < 1 << 20) return byteOffsetIn(text, json.topLevel.get(key), 8);
    const i = text.indexOf(`${JSON.stringify(key)}:`);
    return byteOffsetIn(text, i >= 0 ? i : undefined, 8);
  };

  const dataStart = 8 + headerLength;
  const dataSize = fileSize - dataStart;
  let metadata: Record<string, string> | undefined;
  const tensors: TensorInfo[] = [];
  const keys = Object.keys(value);
  const share = shapeSharer();
  let ownKeys = keys.length;
  try {
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      const entry = value[key];
      ownKeys += ownKeyCount(entry);
      if (key === '__metadata__') {
        metadata = parseMetadata(entry, file, () => at(key));
        continue;
      }
      const t = parseEntry(key, entry, file, dataStart, dataSize, () => at(key));
      t.shape = share(t.shape);
      tensors.push(t);
    }
  } catch (err) {
    duplicatesFirst(err);
  }
  json.checkDuplicates(ownKeys);

  // Sorted by begin (zero-size tensors first at a shared offset), the entries must tile
  // [0, dataSize) exactly: no gap, no overlap, nothing after the last tensor.
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  for (const t of tensors) {
    if (t.begin < pos) {
      const other = tensors.find((o) => o !== t && o.end > t.begin && o.begin <= t.begin);
      throw new FormatError(
        file,
        `tensor ${q(t.key)} data_offsets [${t.begin}, ${t.end}] overlap ${other ? q(other.key) : 'another tensor'}`,
        at(t.key),
      );
    }
    if (t.begin > pos) {
      throw new FormatError(file, `gap in the data region: bytes ${pos}..${t.begin} belong to no tensor (before ${q(t.key)})`, at(t.key));
    }
    pos = t.end;
  }
  if (pos !== dataSize) {
    throw new FormatError(
      file,
      `tensors cover ${pos} bytes of data but the file has ${dataSize} bytes after the header (${dataSize - pos} trailing bytes)`,
      dataStart + pos,
    );
  }
  return { file, fileSize, headerLength, dataStart, tensors: TensorTable.of(tensors, dataStart), ...(metadata ? { metadata } : {}) };
}

function parseMetadata(entry: unknown, file: string, byte: () => number | undefined): Record<string, string> {
  if (!isJsonObject(entry)) throw new FormatError(file, '__metadata__ must be an object of strings', byte());
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(entry)) {
    if (typeof v !== 'string') {
      throw new FormatError(file, `__metadata__ value for ${q(k)} is ${describe(v)}, not a string`, byte());
    }
    out[k] = v;
  }
  return { ...out };
}

function parseEntry(
  key: string,
  entry: unknown,
  file: string,
  dataStart: number,
  dataSize: number,
  byte: () => number | undefined,
): TensorInfo {
  const bad = (what: string) => new FormatError(file, `tensor ${q(key)}: ${what}`, byte());
  if (!isJsonObject(entry)) throw bad(`entry is ${describe(entry)}, not an object`);
  const { dtype, shape, data_offsets: offsets } = entry;
  if (!isDType(dtype)) throw bad(`unknown dtype ${JSON.stringify(dtype) ?? 'undefined'}`);
  if (!Array.isArray(shape)) throw bad(`shape is ${describe(shape)}, not an array`);
  let elements = 1;
  for (let i = 0; i < shape.length; i++) {
    const d: unknown = shape[i];
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) {
      throw bad(`shape[${i}] is ${describe(d)}, not a non-negative integer`);
    }
    elements *= d;
    if (elements > Number.MAX_SAFE_INTEGER) throw bad(`shape ${JSON.stringify(shape)} has more elements than any file can hold`);
  }
  const expected = elements * DTYPE_SIZE[dtype];
  if (!Array.isArray(offsets) || offsets.length !== 2) throw bad(`data_offsets is ${describe(offsets)}, not [begin, end]`);
  const [begin, end] = offsets as unknown[];
  if (!isOffset(begin)) throw bad(`data_offsets begin is ${describe(begin)}, not a non-negative integer`);
  if (!isOffset(end)) throw bad(`data_offsets end is ${describe(end)}, not a non-negative integer`);
  const b = begin as number;
  const e = end as number;
  if (e < b) throw bad(`data_offsets [${b}, ${e}] end before they begin`);
  if (e > dataSize)
    throw bad(`data_offsets [${b}, ${e}] run past the ${dataSize}-byte data region (file ends at byte ${dataStart + dataSize})`);
  if (!Number.isSafeInteger(expected) || expected !== e - b) {
    throw bad(
      `shape ${JSON.stringify(shape)} × ${dtype} (${DTYPE_SIZE[dtype]} bytes) needs ${expected} bytes but data_offsets [${b}, ${e}] span ${e - b}`,
    );
  }
  return { key, dtype, shape: shape as number[], dataOffset: dataStart + b, byteLength: e - b, begin: b, end: e };
}

/**
 * One array per distinct shape of a header (a checkpoint repeats a few dozen shapes over
 * thousands of tensors; the language server keeps every header it checks against). Shapes
 * are never mutated.
 */
function shapeSharer(): (shape: number[]) => number[] {
  const vectors = new Map<number, number[]>();
  const matrices = new Map<number, Map<number, number[]>>();
  const others = new Map<string, number[]>();
  return (shape) => {
    if (shape.length === 1) {
      const got = vectors.get(shape[0]!);
      if (got) return got;
      vectors.set(shape[0]!, shape);
    } else if (shape.length === 2) {
      let rows = matrices.get(shape[0]!);
      if (!rows) matrices.set(shape[0]!, (rows = new Map()));
      const got = rows.get(shape[1]!);
      if (got) return got;
      rows.set(shape[1]!, shape);
    } else {
      const k = shape.join(',');
      const got = others.get(k);
      if (got) return got;
      others.set(k, shape);
    }
    return shape;
  };
}

function isOffset(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** A key quoted for a one-line message (hostile keys can be megabytes long). */
function q(key: string): string {
  return JSON.stringify(key.length > 120 ? `${key.slice(0, 120)}…` : key);
}

/** A short description of a JSON value for messages. */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (typeof v === 'object') return 'an object';
  if (v === undefined) return 'missing';
  return String(v);
}
