/**
 * Strict JSON for file headers: `JSON.parse` for the grammar (it rejects comments and
 * trailing commas, which jsonc-parser would forgive) plus a jsonc-parser scan that rejects
 * duplicate keys (JSON.parse silently keeps the last one, so a header could name a tensor
 * twice with different offsets) and records where each top-level property starts.
 */
import { visit } from 'jsonc-parser';
import { FormatError } from '../../errors';

/** Result of {@link parseStrictJson}. */
export interface StrictJson {
  value: unknown;
  /** Character offset of each top-level property name, in document order. */
  topLevel: Map<string, number>;
  /** Character offset of each property name of each second-level object, by parent key. */
  secondLevel: Map<string, Map<string, number>>;
}

/**
 * Parses `text` strictly. Errors become `FormatError(file, …, byte)` where the byte is
 * `base` plus the UTF-8 offset of the problem in `text`.
 */
export function parseStrictJson(text: string, file: string, what: string, base = 0): StrictJson {
  const byteAt = (charOffset: number) => base + Buffer.byteLength(text.slice(0, charOffset), 'utf8');
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
  // jsonc-parser's visit recurses once per nesting level; refuse depths that would overflow
  // the stack (fuzz finding: 100k nested arrays threw RangeError). Headers nest 3 levels.
  const deep = nestingBeyond(text, 1000);
  if (deep >= 0) throw new FormatError(file, `${what} nests deeper than 1000 levels`, byteAt(deep));
  const topLevel = new Map<string, number>();
  const secondLevel = new Map<string, Map<string, number>>();
  // One set of seen keys per open object; arrays push a placeholder so nesting stays aligned.
  const stack: (Set<string> | null)[] = [];
  const path: string[] = [];
  let pendingKey: string | undefined;
  let duplicate: { key: string; offset: number } | undefined;
  visit(text, {
    onObjectBegin: () => {
      if (stack.length > 0) path.push(pendingKey ?? '');
      stack.push(new Set());
      pendingKey = undefined;
    },
    onObjectEnd: () => {
      stack.pop();
      path.pop();
    },
    onArrayBegin: () => {
      if (stack.length > 0) path.push(pendingKey ?? '');
      stack.push(null);
      pendingKey = undefined;
    },
    onArrayEnd: () => {
      stack.pop();
      path.pop();
    },
    onObjectProperty: (key, offset) => {
      const seen = stack[stack.length - 1];
      pendingKey = key;
      if (!seen || duplicate) return;
      if (seen.has(key)) {
        duplicate = { key, offset };
        return;
      }
      seen.add(key);
      if (stack.length === 1) topLevel.set(key, offset);
      else if (stack.length === 2 && path.length === 1) {
        const parent = path[0]!;
        let m = secondLevel.get(parent);
        if (!m) secondLevel.set(parent, (m = new Map()));
        m.set(key, offset);
      }
    },
    onLiteralValue: () => {
      pendingKey = undefined;
    },
  });
  if (duplicate) {
    throw new FormatError(file, `${what} has the key ${JSON.stringify(duplicate.key)} twice`, byteAt(duplicate.offset));
  }
  return { value, topLevel, secondLevel };
}

/** True for a plain JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Byte offset (from `base`) of character `charOffset` of `text`, or undefined. */
export function byteOffsetIn(text: string, charOffset: number | undefined, base: number): number | undefined {
  return charOffset === undefined ? undefined : base + Buffer.byteLength(text.slice(0, charOffset), 'utf8');
}

/** Character offset where `[`/`{` nesting outside strings first exceeds `max`, or -1. */
function nestingBeyond(text: string, max: number): number {
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inStr) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inStr = false;
    } else if (c === 0x22) inStr = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return -1;
}
