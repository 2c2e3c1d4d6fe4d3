/**
 * The fast path of the safetensors header parser, for headers of the usual shape: a flat
 * object of `"key": {"dtype": …, "shape": […], "data_offsets": [b, e]}` entries (the three
 * fields in any order) and at most one `__metadata__` object of strings, in strict JSON.
 *
 * Why: the general path (header.ts) runs a JavaScript scan of every character for depth,
 * container and duplicate-key limits, then JSON.parse, then a walk of the parsed object; on
 * the language server's cold open of an 80 000-input spec over 8 shards that was about 40% of
 * the CPU. Here one sticky regular expression (compiled to native code by the engine) matches
 * each entry in place and the entry goes straight into the columns of a {@link TensorTable}: no
 * object per tensor, no per-character JavaScript.
 *
 * Contract: {@link parseHeaderFast} returns exactly what the general path returns, or
 * undefined whenever anything is unusual or wrong — another field, an escape in a key, a
 * number that is not a plain integer of at most 15 digits, a duplicate, a failed check — and
 * the caller then runs the general path, which gives the same result or the one FormatError
 * for it. So every malformed header keeps its message; this path only ever accepts a subset
 * of what the general path accepts (core/test/safetensors/safetensors-fast.test.ts compares both).
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { DTYPE_SIZE, isDType } from '../dtype';
import { DTYPE_CODE, DTYPE_LIST, TensorTable } from './tensor-table';

/** What {@link parseHeaderFast} reads (the caller adds the file's own fields). */
export interface FastHeader {
  /** In file (offset) order, keys unique. */
  tensors: TensorTable;
  metadata?: Record<string, string>;
}

// JSON whitespace, an integer as the general path accepts it without question (≤ 15 digits is
// below 2^53), a string without escapes or control characters, and one with JSON escapes.
const W = '[ \\t\\n\\r]*';
const INT = '(0|[1-9][0-9]{0,14})';
const PLAIN = '"([^"\\\\\\x00-\\x1f]*)"';
const STR = '"(?:[^"\\\\\\x00-\\x1f]|\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4}))*"';
/** After an entry: `,` and the next key's quote (not consumed), or the closing `}` (the last group). */
const NEXT = `${W}(?:,${W}(?=")|(\\}))`;
const LIST = `\\[([ \\t\\n\\r0-9,]*)\\]`;

/** An entry in the Rust writer's field order (dtype, shape, data_offsets): key, dtype, shape list, begin, end, last. */
const CANONICAL = new RegExp(
  `${PLAIN}${W}:${W}\\{${W}"dtype"${W}:${W}"([A-Z0-9_]{1,16})"${W},${W}"shape"${W}:${W}${LIST}${W},${W}` +
    `"data_offsets"${W}:${W}\\[${W}${INT}${W},${W}${INT}${W}\\]${W}\\}${NEXT}`,
  'y',
);
const FIELD = `"(dtype|shape|data_offsets)"${W}:${W}(${PLAIN}|${LIST})`;
/** An entry with its three fields in any order: key, then (name, value, string, list) three times, last. */
const ANY_ORDER = new RegExp(`${PLAIN}${W}:${W}\\{${W}${FIELD}${W},${W}${FIELD}${W},${W}${FIELD}${W}\\}${NEXT}`, 'y');
/** `"__metadata__": {"k": "v", …}` (escapes allowed in its strings). */
const METADATA = new RegExp(
  `"__metadata__"${W}:${W}\\{${W}(?:${STR}${W}:${W}${STR}(?:${W},${W}${STR}${W}:${W}${STR})*)?${W}\\}${NEXT}`,
  'y',
);
const STRING_TOKEN = new RegExp(STR, 'g');
const OPEN = new RegExp(`\\{${W}`, 'y');
const EMPTY_END = /\}/y;
const TRAILING = /[ \t\n\r]*$/y;
const LIST_ITEM = /^[ \t\n\r]*(0|[1-9][0-9]{0,14})[ \t\n\r]*$/;

/**
 * Buffer's own decoders, which `toString(encoding, start, end)` calls after checking its
 * arguments: 0.1 µs a key against toString's 0.8 µs (10 000 keys a shard).
 */
interface Slices {
  latin1Slice(start: number, end: number): string;
  utf8Slice(start: number, end: number): string;
}

/**
 * The columns of a header being read, sized once: an entry is at least 48 bytes
 * (`"k":{"dtype":"U8","shape":[],"data_offsets":[0,0]},`), so a header of N bytes has
 * fewer than N / 48 + 1 of them.
 */
class Columns {
  n = 0;
  readonly keys: string[] = [];
  readonly dtypes: Uint8Array;
  readonly shapeIds: Uint32Array;
  readonly begins: Float64Array;
  readonly ends: Float64Array;

  constructor(headerLength: number) {
    const cap = Math.floor(headerLength / 48) + 1;
    this.dtypes = new Uint8Array(cap);
    this.shapeIds = new Uint32Array(cap);
    this.begins = new Float64Array(cap);
    this.ends = new Float64Array(cap);
  }
}

/** Where shape lists are kept: one array per distinct list text of a header, and its id. */
interface Shapes {
  list: number[][];
  ids: Map<string, number>;
}

/**
 * Reads the header bytes `buf[8, 8 + headerLength)` of a file of `fileSize` bytes, or returns
 * undefined (see the module comment).
 */
export function parseHeaderFast(buf: Uint8Array, headerLength: number, fileSize: number): FastHeader | undefined {
  const bytes = Buffer.from(buf.buffer, buf.byteOffset + 8, headerLength);
  const ascii = isAscii(bytes);
  if (!ascii && !isUtf8(bytes)) return undefined;
  // One character per byte, so a match's index is its byte offset; keys are decoded from the
  // bytes (a fresh string each: a regex capture would keep the whole header text alive).
  const text = bytes.toString('latin1');
  const raw = bytes as unknown as Slices;
  const keyAt = ascii ? (a: number, b: number) => raw.latin1Slice(a, b) : (a: number, b: number) => raw.utf8Slice(a, b);
  const dataStart = 8 + headerLength;
  const dataSize = fileSize - dataStart;
  OPEN.lastIndex = 0;
  if (!OPEN.test(text)) return undefined;
  let pos = OPEN.lastIndex;
  const cols = new Columns(headerLength);
  const shapes: Shapes = { list: [], ids: new Map() };
  let metadata: Record<string, string> | undefined;
  let properties = 0;
  /** Entries so far in (begin, end) order, as writers put them: then the sort has nothing to do. */
  let ordered = true;
  EMPTY_END.lastIndex = pos;
  let done = EMPTY_END.test(text);
  if (done) pos = EMPTY_END.lastIndex;
  while (!done) {
    const c = text.charCodeAt(pos + 1);
    // Keys that are array indices come first in JSON.parse's key order, which the general
    // path's order of zero-size tensors at one offset follows: leave them to it.
    if (c >= 0x30 && c <= 0x39) return undefined;
    let m: RegExpExecArray | null;
    if (text.startsWith('"__metadata__"', pos)) {
      if (metadata) return undefined; // the key twice: the general path's error
      METADATA.lastIndex = pos;
      m = METADATA.exec(text);
      if (!m) return undefined;
      const pairs = metadataOf(bytes, text, pos, METADATA.lastIndex);
      if (!pairs) return undefined;
      metadata = pairs.value;
      properties += 1 + pairs.count;
      pos = METADATA.lastIndex;
    } else {
      let ok: boolean;
      CANONICAL.lastIndex = pos;
      m = CANONICAL.exec(text);
      if (m) {
        ok = entry(cols, shapes, m[2]!, m[3]!, Number(m[4]), Number(m[5]), dataSize);
        if (ok) cols.keys.push(keyAt(pos + 1, pos + 1 + m[1]!.length));
        pos = CANONICAL.lastIndex;
      } else {
        ANY_ORDER.lastIndex = pos;
        m = ANY_ORDER.exec(text);
        if (!m) return undefined;
        ok = anyOrder(cols, shapes, m, dataSize);
        if (ok) cols.keys.push(keyAt(pos + 1, pos + 1 + m[1]!.length));
        pos = ANY_ORDER.lastIndex;
      }
      if (!ok) return undefined;
      const k = cols.n++;
      if (k > 0) {
        const b = cols.begins[k]!;
        const lb = cols.begins[k - 1]!;
        if (b < lb || (b === lb && cols.ends[k]! < cols.ends[k - 1]!)) ordered = false;
      }
      properties += 4;
    }
    done = m[m.length - 1] !== undefined;
  }
  TRAILING.lastIndex = pos;
  if (!TRAILING.test(text)) return undefined;
  // The general path's property limit (its other shape limits always hold for this shape).
  if (properties > 1_000_000) return undefined;
  const tensors = tableOf(cols, shapes.list, dataStart, dataSize, ordered);
  if (!tensors) return undefined;
  return { tensors, ...(metadata ? { metadata } : {}) };
}

/**
 * The table of `cols`, or undefined when the entries do not tile [0, dataSize) exactly or a
 * key repeats (the general path's errors). Sorted by begin first (zero-size tensors first at
 * a shared offset; a stable sort, as the general path's) when they were not in order.
 */
function tableOf(cols: Columns, shapes: number[][], dataStart: number, dataSize: number, ordered: boolean): TensorTable | undefined {
  const n = cols.n;
  let order: number[] | undefined;
  if (!ordered) {
    order = Array.from({ length: n }, (_, i) => i);
    order.sort((a, b) => cols.begins[a]! - cols.begins[b]! || cols.ends[a]! - cols.ends[b]!);
  }
  const keys = new Array<string>(n);
  const dtypes = new Uint8Array(n);
  const shapeIds = new Uint32Array(n);
  const begins = new Float64Array(n);
  const ends = new Float64Array(n);
  const row = new Map<string, number>();
  let at = 0;
  for (let i = 0; i < n; i++) {
    const j = order ? order[i]! : i;
    const b = cols.begins[j]!;
    if (b !== at) return undefined;
    at = cols.ends[j]!;
    keys[i] = cols.keys[j]!;
    dtypes[i] = cols.dtypes[j]!;
    shapeIds[i] = cols.shapeIds[j]!;
    begins[i] = b;
    ends[i] = at;
    row.set(keys[i], i);
  }
  if (at !== dataSize) return undefined;
  if (row.size !== n) return undefined; // a key twice
  return new TensorTable(keys, row, dtypes, shapeIds, shapes, begins, ends, dataStart);
}

/** The id of shape list `raw` (the inside of its brackets), or -1 when it is no list of integers. */
function shapeId(shapes: Shapes, raw: string): number {
  let id = shapes.ids.get(raw);
  if (id === undefined) {
    const list = parseList(raw);
    id = list ? shapes.list.push(list) - 1 : -1;
    shapes.ids.set(raw, id);
  }
  return id;
}

/** A tensor entry checked as header.ts's parseEntry checks it, written to row `cols.n`; false when it fails. */
function entry(cols: Columns, shapes: Shapes, dtypeName: string, shapeRaw: string, b: number, e: number, dataSize: number): boolean {
  const dtype = DTYPE_CODE.get(dtypeName);
  if (dtype === undefined) return false;
  const id = shapeId(shapes, shapeRaw);
  if (id < 0) return false;
  const shape = shapes.list[id]!;
  let elements = 1;
  for (let i = 0; i < shape.length; i++) {
    elements *= shape[i]!;
    if (elements > Number.MAX_SAFE_INTEGER) return false;
  }
  const expected = elements * DTYPE_SIZE[DTYPE_LIST[dtype]!];
  if (e < b || e > dataSize || !Number.isSafeInteger(expected) || expected !== e - b) return false;
  const k = cols.n;
  cols.dtypes[k] = dtype;
  cols.shapeIds[k] = id;
  cols.begins[k] = b;
  cols.ends[k] = e;
  return true;
}

/** An {@link ANY_ORDER} match as an entry: each field once, of its own kind. */
function anyOrder(cols: Columns, shapes: Shapes, m: RegExpExecArray, dataSize: number): boolean {
  let dtype: string | undefined;
  let shape: string | undefined;
  let offsets: number[] | undefined;
  for (let f = 0; f < 3; f++) {
    const name = m[2 + 4 * f]!;
    const str = m[4 + 4 * f];
    const raw = m[5 + 4 * f];
    if (name === 'dtype') {
      if (dtype !== undefined || str === undefined || !isDType(str)) return false;
      dtype = str;
    } else if (raw === undefined) return false;
    else if (name === 'shape') {
      if (shape !== undefined) return false;
      shape = raw;
    } else {
      if (offsets) return false;
      offsets = parseList(raw);
      if (offsets?.length !== 2) return false;
    }
  }
  if (dtype === undefined || shape === undefined || !offsets) return false;
  return entry(cols, shapes, dtype, shape, offsets[0]!, offsets[1]!, dataSize);
}

/** `1, 2, 3` (the inside of a JSON list of integers) as numbers, or undefined. */
function parseList(raw: string): number[] | undefined {
  if (/^[ \t\n\r]*$/.test(raw)) return [];
  const parts = raw.split(',');
  const out: number[] = new Array<number>(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const d = LIST_ITEM.exec(parts[i]!);
    if (!d) return undefined;
    out[i] = Number(d[1]);
  }
  return out;
}

/**
 * The `__metadata__` object matched at `[start, end)` of the header: its strings in order
 * (key, value, key, value …), decoded from the bytes as JSON strings. Undefined for a key
 * given twice (the general path's error).
 */
function metadataOf(bytes: Buffer, text: string, start: number, end: number): { value: Record<string, string>; count: number } | undefined {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  const seen = new Set<string>();
  STRING_TOKEN.lastIndex = text.indexOf('{', start);
  let key: string | undefined;
  let count = 0;
  for (let m = STRING_TOKEN.exec(text); m && m.index < end; m = STRING_TOKEN.exec(text)) {
    const s = JSON.parse(bytes.toString('utf8', m.index, STRING_TOKEN.lastIndex)) as string;
    if (key === undefined) {
      if (seen.has(s)) return undefined;
      seen.add(s);
      key = s;
    } else {
      out[key] = s;
      key = undefined;
      count++;
    }
  }
  STRING_TOKEN.lastIndex = 0;
  // A plain object, as the general path's parseMetadata makes it (an own "__proto__" stays one).
  return { value: { ...out }, count };
}
