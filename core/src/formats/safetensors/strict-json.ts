/**
 * Strict JSON for file headers: `JSON.parse` for the grammar (it rejects comments and
 * trailing commas, which jsonc-parser would forgive) plus a token scan that rejects
 * duplicate keys (JSON.parse silently keeps the last one, so a header could name a tensor
 * twice with different offsets) and records where each top-level property starts.
 */
import { ownKeyCount, scanJsonShape } from '../json-depth';
import { FormatError } from '../../errors';

/** Result of {@link parseStrictJson}. */
export interface StrictJson {
  value: unknown;
  /** Character offset of each top-level property name, in document order (computed on first access). */
  topLevel: Map<string, number>;
  /** Character offset of each property name of each second-level object, by parent key. */
  secondLevel: Map<string, Map<string, number>>;
  /** The number of property names in the text (every level). */
  properties: number;
  /**
   * The duplicate-key check, for a caller that counted the value's own keys itself (with
   * `deferDuplicateCheck`): throws the duplicate's error when `ownKeys` (what
   * {@link ownKeyCount} gives for the value) differs from {@link StrictJson.properties}.
   */
  checkDuplicates(ownKeys: number): void;
}

/**
 * Parses `text` strictly. Errors become `FormatError(file, …, byte)` where the byte is
 * `base` plus the UTF-8 offset of the problem in `text`.
 */
export function parseStrictJson(
  text: string,
  file: string,
  what: string,
  base = 0,
  limits: {
    maxDepth?: number;
    maxContainersPerProperty?: number;
    maxProperties?: number;
    /**
     * Leave the duplicate-key check to the caller ({@link StrictJson.checkDuplicates}), which
     * walks the value anyway: a second walk of a 10 000-key header object costs as much again.
     */
    deferDuplicateCheck?: boolean;
  } = {},
): StrictJson {
  const byteAt = (charOffset: number) => base + Buffer.byteLength(text.slice(0, charOffset), 'utf8');
  // Shape first, before JSON.parse allocates: jsonc-parser's visit recurses once per nesting
  // level (fuzz finding: 100k nested arrays threw RangeError), and JSON.parse of megabytes of
  // brackets takes seconds and a gigabyte. Headers nest 3 levels.
  const maxDepth = limits.maxDepth ?? 1000;
  const shape = scanJsonShape(text, maxDepth);
  if (shape.deepAt >= 0) throw new FormatError(file, `${what} nests deeper than ${maxDepth} levels`, byteAt(shape.deepAt));
  const perProp = limits.maxContainersPerProperty;
  if (perProp !== undefined && shape.containers > perProp * shape.properties + 2) {
    throw new FormatError(
      file,
      `${what} holds ${shape.containers} arrays and objects for ${shape.properties} property names (not the shape of a ${what})`,
    );
  }
  if (limits.maxProperties !== undefined && shape.properties > limits.maxProperties) {
    throw new FormatError(file, `${what} names ${shape.properties} properties, over the limit of ${limits.maxProperties}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const msg = (e as Error).message;
    const m = /position (\d+)/.exec(msg);
    const first = msg.split('\n')[0]!;
    const detail = first.length > 200 ? `${first.slice(0, 200)}…` : first;
    throw new FormatError(file, `${what} is not valid JSON: ${detail}`, m ? byteAt(Number(m[1])) : undefined);
  }
  // The key scan (offsets, first duplicate) runs only when the property count says some key
  // repeats, or when a caller asks for offsets (to name a byte in an error).
  let scanned: { topLevel: Map<string, number>; secondLevel: Map<string, Map<string, number>> } | undefined;
  let duplicateError: FormatError | undefined;
  const scan = () => {
    if (duplicateError) throw duplicateError; // every later ask says so too
    if (!scanned) {
      const found = { topLevel: new Map<string, number>(), secondLevel: new Map<string, Map<string, number>>() };
      const duplicate = scanKeys(text, found.topLevel, found.secondLevel);
      if (duplicate) {
        throw (duplicateError = new FormatError(
          file,
          `${what} has the key ${JSON.stringify(duplicate.key)} twice`,
          byteAt(duplicate.offset),
        ));
      }
      scanned = found;
    }
    return scanned;
  };
  const checkDuplicates = (ownKeys: number) => {
    if (shape.properties !== ownKeys) scan();
  };
  if (!limits.deferDuplicateCheck) checkDuplicates(ownKeyCount(value));
  return {
    value,
    properties: shape.properties,
    checkDuplicates,
    get topLevel() {
      return scan().topLevel;
    },
    get secondLevel() {
      return scan().secondLevel;
    },
  };
}

/** True for a plain JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Byte offset (from `base`) of character `charOffset` of `text`, or undefined. */
export function byteOffsetIn(text: string, charOffset: number | undefined, base: number): number | undefined {
  return charOffset === undefined ? undefined : base + Buffer.byteLength(text.slice(0, charOffset), 'utf8');
}

/** An open object or array during {@link scanKeys}. */
interface Frame {
  object: boolean;
  /** Keys seen so far (a list while small: most header objects have three). */
  keys: string[] | Set<string>;
  /** The property name this container is the value of ('' for array elements and the root). */
  name: string;
}

/**
 * One pass over text that JSON.parse accepted: finds every property name (a string token
 * right after `{` or `,` inside an object), records top- and second-level offsets and returns
 * the first duplicate key. A hand-written scan: a general tokenizer with callbacks was most
 * of the cost of reading a 20 000-tensor header.
 */
function scanKeys(
  text: string,
  topLevel: Map<string, number>,
  secondLevel: Map<string, Map<string, number>>,
): { key: string; offset: number } | undefined {
  const frames: Frame[] = [];
  let prev = 0; // last significant character outside strings
  let pendingKey: string | undefined;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      let k = i + 1;
      let escaped = false;
      for (;;) {
        const d = text.charCodeAt(k);
        if (d === 0x22 || k >= n) break;
        if (d === 0x5c) {
          escaped = true;
          k += 2;
        } else k++;
      }
      const top = frames[frames.length - 1];
      if (top?.object && (prev === 0x7b || prev === 0x2c)) {
        const key = escaped ? (JSON.parse(text.slice(i, k + 1)) as string) : text.slice(i + 1, k);
        let dup: boolean;
        if (Array.isArray(top.keys)) {
          dup = top.keys.includes(key);
          top.keys.push(key);
          if (top.keys.length > 8) top.keys = new Set(top.keys);
        } else {
          dup = top.keys.has(key);
          top.keys.add(key);
        }
        if (dup) return { key, offset: i };
        if (frames.length === 1) topLevel.set(key, i);
        else if (frames.length === 2) {
          const parent = top.name;
          let m = secondLevel.get(parent);
          if (!m) secondLevel.set(parent, (m = new Map()));
          m.set(key, i);
        }
        pendingKey = key;
      }
      prev = 0x22;
      i = k;
    } else if (c === 0x7b || c === 0x5b) {
      frames.push({ object: c === 0x7b, keys: [], name: frames.length > 0 && frames[frames.length - 1]!.object ? (pendingKey ?? '') : '' });
      pendingKey = undefined;
      prev = c;
    } else if (c === 0x7d || c === 0x5d) {
      frames.pop();
      pendingKey = undefined;
      prev = c;
    } else if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
      if (c === 0x2c) pendingKey = undefined;
      prev = c;
    }
  }
  return undefined;
}
