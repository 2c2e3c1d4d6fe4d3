/**
 * Source offsets for every JSON path of a document, taken from jsonc-parser's tree, so that a
 * diagnostic found on the *parsed* value can point at the exact text that produced it.
 */
import type { Node } from 'jsonc-parser';
import type { OffsetRange } from '../errors';
import type { JsonPath, SpecOffsetsView } from './types';

/** Encodes a JSON path as a string key (JSON-pointer escaping), e.g. `inputs/3/location/key`. */
export function pathKey(path: Readonly<JsonPath>): string {
  return path.map((p) => escapeSegment(String(p))).join('/');
}

function escapeSegment(s: string): string {
  return s.includes('~') || s.includes('/') ? s.replace(/~/g, '~0').replace(/\//g, '~1') : s;
}

/** Formats a JSON path for messages: `inputs[3].location.key`. */
export function formatPath(path: Readonly<JsonPath>): string {
  let s = '';
  for (const p of path) {
    if (typeof p === 'number') s += `[${p}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(p)) s += s ? `.${p}` : p;
    else s += `[${JSON.stringify(p)}]`;
  }
  return s || '(document)';
}

/** Pending edits {@link SpecOffsets.shift} keeps before folding them into the stored ranges. */
const MAX_PENDING_SHIFTS = 256;

/** A duplicated property name in one object (the later one wins, as in Python's json). */
export interface DuplicateProperty {
  path: JsonPath;
  range: OffsetRange;
}

/**
 * Offsets of all values and property names of one parsed document. Lookups are by JSON path;
 * the map is built once (a spec with 10 000 inputs has ~60 000 entries).
 */
export class SpecOffsets implements SpecOffsetsView {
  private readonly values = new Map<string, OffsetRange>();
  private readonly keys = new Map<string, OffsetRange>();
  /** Properties that appear twice in the same object. */
  readonly duplicates: DuplicateProperty[] = [];

  constructor(readonly root?: Node) {
    if (root) this.walk(root, '', []);
  }

  // Keys are built by appending to the parent's key (same strings as pathKey): a 20 000-input
  // spec has ~200 000 nodes, and re-encoding every full path made this the slowest part of a parse.
  private walk(node: Node, key: string, path: JsonPath): void {
    this.values.set(key, { start: node.offset, end: node.offset + node.length });
    const prefix = path.length === 0 ? '' : key + '/';
    if (node.type === 'object') {
      const children = node.children;
      if (!children) return;
      const seen = new Set<string>();
      for (const prop of children) {
        const k = prop.children?.[0];
        const v = prop.children?.[1];
        if (!k || typeof k.value !== 'string') continue;
        const name = k.value;
        const childKey = prefix + escapeSegment(name);
        const keyRange = { start: k.offset, end: k.offset + k.length };
        path.push(name);
        if (seen.has(name)) this.duplicates.push({ path: [...path], range: keyRange });
        seen.add(name);
        this.keys.set(childKey, keyRange);
        if (v) this.walk(v, childKey, path);
        path.pop();
      }
    } else if (node.type === 'array') {
      const children = node.children;
      if (!children) return;
      for (let i = 0; i < children.length; i++) {
        path.push(i);
        this.walk(children[i]!, prefix + i, path);
        path.pop();
      }
    }
  }

  /**
   * Edits applied since the maps were built, oldest first: an edit that ended at `from` (in
   * the text of its time, inside one string token) changed the length by `delta`. Lookups
   * map stored ranges through them, so an edit costs O(1) instead of rewriting ~200 000
   * ranges; past {@link MAX_PENDING_SHIFTS} they are folded into the maps once.
   */
  private readonly shifts: { from: number; delta: number }[] = [];

  /**
   * Moves every range at or after `from` by `delta` (an edit of `delta` characters ended at
   * `from` in the old text, inside one string token): ranges that end after it grow, later ones
   * move. Ranges handed out earlier are never mutated.
   */
  shift(from: number, delta: number): void {
    if (delta === 0) return;
    this.shifts.push({ from, delta });
    if (this.shifts.length > MAX_PENDING_SHIFTS) this.foldShifts();
  }

  private foldShifts(): void {
    for (const m of [this.values, this.keys]) for (const [k, r] of m) m.set(k, this.mapRange(r));
    for (const d of this.duplicates) d.range = this.mapRange(d.range);
    this.shifts.length = 0;
  }

  private mapRange(r: OffsetRange): OffsetRange {
    if (this.shifts.length === 0) return r;
    let { start, end } = r;
    for (const s of this.shifts) {
      if (end < s.from) continue;
      if (start >= s.from) start += s.delta;
      end += s.delta;
    }
    return start === r.start && end === r.end ? r : { start, end };
  }

  /** Range of the value at `path` (strings include their quotes). */
  value(path: Readonly<JsonPath>): OffsetRange | undefined {
    const r = this.values.get(pathKey(path));
    return r && this.mapRange(r);
  }

  /** Range of the property name whose value is at `path`. */
  key(path: Readonly<JsonPath>): OffsetRange | undefined {
    const r = this.keys.get(pathKey(path));
    return r && this.mapRange(r);
  }

  /** The deepest existing prefix of `path` with its value range. */
  nearest(path: Readonly<JsonPath>): { path: JsonPath; range: OffsetRange } | undefined {
    for (let n = path.length; n >= 0; n--) {
      const p = path.slice(0, n);
      const range = this.value(p);
      if (range) return { path: p, range };
    }
    return undefined;
  }

  /**
   * A short range to flag `path` with: the value itself when it is a scalar; for a missing
   * field or a container, the property name that holds it (or its opening bracket), so a
   * problem about a large object does not underline the whole document.
   */
  anchor(path: Readonly<JsonPath>): OffsetRange | undefined {
    const near = this.nearest(path);
    if (!near) return undefined;
    const exact = near.path.length === path.length;
    const node = this.nodeAt(near.path);
    const container = node?.type === 'object' || node?.type === 'array';
    if (exact && !container) return near.range;
    return this.key(near.path) ?? { start: near.range.start, end: near.range.start + 1 };
  }

  private nodeAt(path: Readonly<JsonPath>): Node | undefined {
    let node = this.root;
    for (const seg of path) {
      if (!node) return undefined;
      if (node.type === 'array' && typeof seg === 'number') node = node.children?.[seg];
      else if (node.type === 'object') {
        const props = (node.children ?? []).filter((p) => p.children?.[0]?.value === seg);
        node = props[props.length - 1]?.children?.[1];
      } else return undefined;
    }
    return node;
  }
}
