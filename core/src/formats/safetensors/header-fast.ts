/**
 * The fast path of the safetensors header parser, for headers of the usual shape: a flat
 * object of `"key": {"dtype": …, "shape": […], "data_offsets": [b, e]}` entries (the three
 * fields in any order) and at most one `__metadata__` object of strings, in strict JSON.
 *
 * Why: the general path (header.ts) runs a JavaScript scan of every character for depth,
 * container and duplicate-key limits, then JSON.parse, then a walk of the parsed object; on
 * the language server's cold open of an 80 000-input spec over 8 shards that was about 40% of
 * the CPU. Here one sticky regular expression (compiled to native code by the engine) matches
 * each entry in place and the entry goes straight into the columns of a {@link TensorTable}:
 * no object per tensor, no per-character JavaScript.
 *
 * Contract: {@link parseHeaderFast} returns exactly what the general path returns, or
 * undefined whenever anything is unusual or wrong — another field, an escape in a key, a
 * number that is not a plain integer of at most 15 digits, a duplicate, a failed check — and
 * the caller then runs the general path, which gives the same result or the one FormatError
 * for it. So every malformed header keeps its message; this path only ever accepts a subset
 * of what the general path accepts (core/test/safetensors/safetensors-fast.test.ts compares both).
 */
import { isAscii, isUtf8 } from 'node:buffer';
import { DTYPE_SIZE } from '../dtype';
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

/** Bytes per element, by dtype code (DTYPE_LIST's order). */
const CODE_SIZE = DTYPE_LIST.map((d) => DTYPE_SIZE[d]);

/**
 * Reads the header bytes `buf[8, 8 + headerLength)` of a file of `fileSize` bytes, or returns
 * undefined (see the module comment). A header's entries share one array per distinct shape
 * list text (its table keeps each once).
 */
export function parseHeaderFast(buf: Uint8Array, headerLength: number, fileSize: number): FastHeader | undefined {
  const bytes = Buffer.from(buf.buffer, buf.byteOffset + 8, headerLength);
  const ascii = isAscii(bytes);
  if (!ascii && !isUtf8(bytes)) return undefined;
  // One character per byte, so a match's index is its byte offset; keys are decoded from the
  // bytes (a fresh string each: a regex capture would keep the whole header text alive).
  const text = bytes.toString('latin1');
  const dataStart = 8 + headerLength;
  const dataSize = fileSize - dataStart;
  OPEN.lastIndex = 0;
  if (!OPEN.test(text)) return undefined;
  const rows = newRows();
  const read = readEntries(bytes, ascii, text, OPEN.lastIndex, dataSize, rows);
  if (!read) return undefined;
  const { metadata, properties } = read;
  TRAILING.lastIndex = read.pos;
  if (!TRAILING.test(text)) return undefined;
  // The general path's property limit (its other shape limits always hold for this shape).
  if (properties > 1_000_000) return undefined;
  const table = tableOf(rows, dataStart, dataSize);
  if (!table) return undefined; // a key twice, or entries that do not tile the data
  return { tensors: table, ...(metadata ? { metadata } : {}) };
}

/**
 * The entries read so far, in reading order, in columns: one row per tensor, its shape by id
 * in `shapes` (one array per distinct shape text), `elements` per shape id.
 */
interface Rows {
  keys: string[];
  codes: number[];
  shapeIds: number[];
  begins: number[];
  ends: number[];
  shapes: number[][];
  elements: number[];
  /** Shape text → id (-1: not a list of integers, or too many elements). */
  ids: Map<string, number>;
  mask: number;
  /** Rows in (begin, end) order, as writers put them: then there is nothing to sort. */
  ordered: boolean;
}

function newRows(): Rows {
  return { keys: [], codes: [], shapeIds: [], begins: [], ends: [], shapes: [], elements: [], ids: new Map(), mask: 0, ordered: true };
}

/**
 * The table of `rows` (sorted by begin, zero-size tensors first at a shared offset, unless
 * already in order), or undefined when a key repeats or the rows do not tile [0, dataSize)
 * exactly, as the general path checks.
 */
function tableOf(rows: Rows, dataStart: number, dataSize: number): TensorTable | undefined {
  const n = rows.keys.length;
  let order: number[] | undefined;
  if (!rows.ordered) {
    const { begins, ends } = rows;
    order = Array.from({ length: n }, (_, i) => i);
    order.sort((a, b) => begins[a]! - begins[b]! || ends[a]! - ends[b]! || a - b);
  }
  const keys = new Array<string>(n);
  const row = new Map<string, number>();
  const dtypes = new Uint8Array(n);
  const shapeIds = new Uint32Array(n);
  const begins = new Float64Array(n);
  const ends = new Float64Array(n);
  let at = 0;
  for (let r = 0; r < n; r++) {
    const i = order ? order[r]! : r;
    const b = rows.begins[i]!;
    if (b !== at) return undefined;
    at = rows.ends[i]!;
    const key = rows.keys[i]!;
    keys[r] = key;
    row.set(key, r);
    dtypes[r] = rows.codes[i]!;
    shapeIds[r] = rows.shapeIds[i]!;
    begins[r] = b;
    ends[r] = at;
  }
  if (at !== dataSize || row.size !== n) return undefined;
  return new TensorTable(keys, row, dtypes, shapeIds, rows.shapes, begins, ends, dataStart, rows.mask);
}

/** What {@link readEntries} read besides the rows: where it stopped. */
interface Entries {
  pos: number;
  metadata?: Record<string, string>;
  properties: number;
}

/**
 * The entries of the header `text` (the header's bytes as latin1) from `pos`, just after its
 * `{`, through its closing `}`, into `rows`; undefined when the fast path refuses one. The loop
 * is apart from {@link parseHeaderFast}'s Buffer calls and uses no closure made per header: the
 * engine compiles the function holding it during a cold open (on-stack, while the first header
 * is read), and with those calls inside it that was the largest compilation of the open, done
 * twice (a per-header closure's inlined call target changed on the next header, undoing it).
 */
function readEntries(bytes: Buffer, ascii: boolean, text: string, start: number, dataSize: number, rows: Rows): Entries | undefined {
  const raw = bytes as unknown as Slices;
  let pos = start;
  let lastRaw: string | undefined;
  let lastId = -1;
  let metadata: Record<string, string> | undefined;
  let properties = 0;
  let lastBegin = -1;
  let lastEnd = -1;
  EMPTY_END.lastIndex = pos;
  let done = EMPTY_END.test(text);
  if (done) pos = EMPTY_END.lastIndex;
  while (!done) {
    const c = text.charCodeAt(pos + 1);
    // Keys that are array indices come first in JSON.parse's key order, which the general
    // path's order of zero-size tensors at one offset follows: leave them to it.
    if (c >= 0x30 && c <= 0x39) return undefined;
    let m: RegExpExecArray | null;
    // (The first character of the key first: the string compare runs, and is compiled, only for a rare key.)
    if (c === 0x5f && text.startsWith('"__metadata__"', pos)) {
      if (metadata) return undefined; // the key twice: the general path's error
      METADATA.lastIndex = pos;
      m = METADATA.exec(text);
      if (!m) return undefined;
      const pairs = metadataOf(bytes, text, pos, METADATA.lastIndex);
      if (!pairs) return undefined;
      metadata = pairs.value;
      properties += 1 + pairs.count;
      pos = METADATA.lastIndex;
      done = m[m.length - 1] !== undefined;
      continue;
    }
    let code: number | undefined;
    let b: number;
    let e: number;
    let id: number;
    CANONICAL.lastIndex = pos;
    m = CANONICAL.exec(text);
    if (m) {
      // Entries mostly repeat the previous entry's shape text: no lookup for those.
      const rawShape = m[3]!;
      if (rawShape !== lastRaw) {
        lastId = shapeIdOf(rows, rawShape);
        lastRaw = rawShape;
      }
      id = lastId;
      code = DTYPE_CODE.get(m[2]!);
      b = Number(m[4]);
      e = Number(m[5]);
      rows.keys.push(keyAt(raw, ascii, pos + 1, pos + 1 + m[1]!.length));
      pos = CANONICAL.lastIndex;
    } else {
      ANY_ORDER.lastIndex = pos;
      m = ANY_ORDER.exec(text);
      if (!m) return undefined;
      const f = anyOrder(m, rows);
      if (!f) return undefined;
      ({ code, id, b, e } = f);
      rows.keys.push(keyAt(raw, ascii, pos + 1, pos + 1 + m[1]!.length));
      pos = ANY_ORDER.lastIndex;
    }
    // The entry as header.ts's parseEntry checks it: a known dtype, a shape of integers whose
    // element count is exact, offsets inside the data region spanning exactly its bytes.
    if (code === undefined || id < 0) return undefined;
    const expected = rows.elements[id]! * CODE_SIZE[code]!;
    if (e < b || e > dataSize || !Number.isSafeInteger(expected) || expected !== e - b) return undefined;
    if (b < lastBegin || (b === lastBegin && e < lastEnd)) rows.ordered = false;
    lastBegin = b;
    lastEnd = e;
    rows.codes.push(code);
    rows.mask |= 1 << code;
    rows.shapeIds.push(id);
    rows.begins.push(b);
    rows.ends.push(e);
    properties += 4;
    done = m[m.length - 1] !== undefined;
  }
  return { pos, ...(metadata ? { metadata } : {}), properties };
}

/** Key bytes `[a, b)` of the header as a string (a fresh one: see {@link Slices}). */
function keyAt(raw: Slices, ascii: boolean, a: number, b: number): string {
  return ascii ? raw.latin1Slice(a, b) : raw.utf8Slice(a, b);
}

/**
 * The id of shape list text `raw` in `rows.shapes`, once per distinct text of a header; -1 when
 * it is not a list of integers or its element count is beyond 2^53 (the general path's errors).
 */
function shapeIdOf(rows: Rows, raw: string): number {
  let id = rows.ids.get(raw);
  if (id === undefined) {
    const shape = parseList(raw);
    let elements = 1;
    for (let i = 0; shape && i < shape.length && elements <= Number.MAX_SAFE_INTEGER; i++) elements *= shape[i]!;
    id = shape && elements <= Number.MAX_SAFE_INTEGER ? rows.shapes.push(shape) - 1 : -1;
    if (id >= 0) rows.elements.push(elements);
    rows.ids.set(raw, id);
  }
  return id;
}

/** An {@link ANY_ORDER} match's fields (each once, of its own kind): dtype code, shape id, offsets. */
function anyOrder(m: RegExpExecArray, rows: Rows): { code: number | undefined; id: number; b: number; e: number } | undefined {
  let dtype: string | undefined;
  let id: number | undefined;
  let offsets: number[] | undefined;
  for (let f = 0; f < 3; f++) {
    const name = m[2 + 4 * f]!;
    const str = m[4 + 4 * f];
    const raw = m[5 + 4 * f];
    if (name === 'dtype') {
      if (dtype !== undefined || str === undefined) return undefined;
      dtype = str;
    } else if (raw === undefined) return undefined;
    else if (name === 'shape') {
      if (id !== undefined) return undefined;
      id = shapeIdOf(rows, raw);
    } else {
      if (offsets) return undefined;
      offsets = parseList(raw);
      if (offsets?.length !== 2) return undefined;
    }
  }
  if (dtype === undefined || id === undefined || !offsets) return undefined;
  return { code: DTYPE_CODE.get(dtype), id, b: offsets[0]!, e: offsets[1]! };
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
