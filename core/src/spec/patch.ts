/**
 * Incremental re-parse for the language server: when the only difference between the old and
 * the new text lies inside one string token that is an input's `name` or `location.key`, the
 * previous {@link ParsedSpec} is updated in place (value, tree and offsets shifted) instead of
 * re-parsing a multi-megabyte document on every keystroke. Anything else — structure changed,
 * escapes, an empty string, duplicate properties — returns undefined and the caller parses.
 */
import type { OffsetRange, Problem } from '../errors';
import type { ParsedSpec } from './parse';
import { detached } from './offset-index';
import type { JsonPath } from './types';

/** The edit between two texts: old `[start, oldEnd)` became new `[start, newEnd)`. */
export interface TextEdit {
  start: number;
  oldEnd: number;
  newEnd: number;
}

const CHUNK = 1 << 16;

/** The smallest single edit that turns `before` into `after` (common prefix and suffix). */
export function diffTexts(before: string, after: string): TextEdit {
  const min = Math.min(before.length, after.length);
  // Whole chunks are compared as strings first (a memory compare), then character by character.
  let p = 0;
  for (let c = CHUNK; p + c <= min;) {
    if (before.slice(p, p + c) === after.slice(p, p + c)) p += c;
    else if (c > 16) c >>= 2;
    else break;
  }
  while (p < min && before.charCodeAt(p) === after.charCodeAt(p)) p++;
  let s = 0;
  const maxS = min - p;
  for (let c = CHUNK; s + c <= maxS;) {
    if (before.slice(before.length - s - c, before.length - s) === after.slice(after.length - s - c, after.length - s)) s += c;
    else if (c > 16) c >>= 2;
    else break;
  }
  while (s < maxS && before.charCodeAt(before.length - 1 - s) === after.charCodeAt(after.length - 1 - s)) s++;
  return { start: p, oldEnd: before.length - s, newEnd: after.length - s };
}

/** What a patch changed: the input index and which of its fields. */
export interface PatchResult {
  parsed: ParsedSpec;
  input: number;
  field: 'name' | 'key';
}

function samePath(a: Readonly<JsonPath>, b: Readonly<JsonPath>): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** True when `raw` can stand for itself inside JSON quotes (no quote, backslash or control). */
function plainString(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c < 0x20) return false;
  }
  return true;
}

/**
 * Applies the edit from `oldText` to `newText` to `prev` (which must be the parse of
 * `oldText`) when it is a plain edit of one input's name or key. Mutates and returns `prev`'s
 * parts; undefined when the edit is not of that kind (nothing is changed then).
 */
export function patchParsedSpec(prev: ParsedSpec, oldText: string, newText: string): PatchResult | undefined {
  const { spec, sources, offsets } = prev;
  if (!spec || !sources) return undefined;
  if (offsets.duplicates.length > 0) return undefined;
  if (prev.problems.some((p) => p.severity === 'error')) return undefined;
  const edit = diffTexts(oldText, newText);
  if (edit.oldEnd === edit.start && edit.newEnd === edit.start) return undefined; // same text
  const i = inputAt(prev, edit.start);
  if (i === undefined) return undefined;
  const src = sources.inputs.at(i)!;
  const input = spec.inputs[i]!;
  let field: 'name' | 'key' | undefined;
  let range: OffsetRange | undefined;
  for (const [f, p, canonical] of [
    ['key', src.key, ['inputs', i, 'location', 'key']],
    ['name', src.name, ['inputs', i, 'name']],
  ] as const) {
    if (!samePath(p, canonical)) continue; // v1 inputs (fqn as name and key): parse again
    const r = offsets.value(p);
    if (r && r.start < edit.start && edit.oldEnd <= r.end - 1) {
      field = f;
      range = r;
    }
  }
  if (!field || !range) return undefined;
  if (oldText.charCodeAt(range.start) !== 0x22 || oldText.charCodeAt(range.end - 1) !== 0x22) return undefined;
  const oldRaw = oldText.slice(range.start + 1, range.end - 1);
  if (!plainString(oldRaw)) return undefined;
  const delta = edit.newEnd - edit.oldEnd;
  const value = detached(newText.slice(range.start + 1, range.end - 1 + delta));
  if (value.length === 0 || !plainString(value)) return undefined;

  // Commit: nothing above changed any state. The jsonc tree is not kept up to date (offsets
  // are what callers use); it is dropped so nobody reads stale positions from it.
  offsets.shift(edit.oldEnd, delta);
  prev.tree = undefined;
  prev.problems = prev.problems.map((p) => shiftProblem(p, edit.oldEnd, delta));
  if (field === 'key') input.location = { ...input.location, key: value };
  else input.name = value;
  return { parsed: prev, input: i, field };
}

/** The input whose object contains `offset` (binary search over the inputs' ranges). */
function inputAt(parsed: ParsedSpec, offset: number): number | undefined {
  const n = parsed.spec!.inputs.length;
  let lo = 0;
  let hi = n - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = parsed.offsets.value(['inputs', mid]);
    if (!r) return undefined;
    if (offset < r.start) hi = mid - 1;
    else if (offset >= r.end) lo = mid + 1;
    else return mid;
  }
  return undefined;
}

function shiftProblem(p: Problem, from: number, delta: number): Problem {
  const r = p.range;
  if (!r || r.end < from) return p;
  return { ...p, range: { start: r.start >= from ? r.start + delta : r.start, end: r.end + delta } };
}
