/**
 * Source offsets for every JSON path of a document, taken from jsonc-parser's tree, so that a
 * diagnostic found on the *parsed* value can point at the exact text that produced it.
 */
import { parseTree, type Node } from 'jsonc-parser';
import { fastParseTree } from './fast-tree';
import { OBJECT, OffsetIndex, SCALAR } from './offset-index';
import type { OffsetRange } from '../errors';
import type { JsonPath, SpecOffsetsView } from './types';

export { formatPath } from '../zod-issue';

/** Pending edits {@link SpecOffsets.shift} keeps before folding them into the stored ranges. */
const MAX_PENDING_SHIFTS = 256;

/** A duplicated property name in one object (the later one wins, as in Python's json). */
export interface DuplicateProperty {
  path: JsonPath;
  range: OffsetRange;
}

/**
 * Offsets of all values and property names of one parsed document. Two representations: a
 * jsonc-parser tree (documents with syntax errors or duplicate keys), or, for strict JSON, a
 * compact {@link OffsetIndex} built on first lookup (a 20 000-input spec has ~140 000 values;
 * a tree of node objects for them was the slowest part of a cold check and most of its
 * garbage, and a check that reports nothing needs no offsets at all). Lookups walk along the
 * path: array steps are O(1), object steps scan that object's properties.
 */
export class SpecOffsets implements SpecOffsetsView {
  /** Properties that appear twice in the same object. */
  readonly duplicates: DuplicateProperty[] = [];
  private tree?: Node;
  private ix?: OffsetIndex;
  /** Text whose index is still to be built. */
  private ixText?: string;

  constructor(root?: Node) {
    this.tree = root;
    if (root) this.findDuplicates(root, []);
  }

  /**
   * Offsets of strict JSON `text` in which, as the caller proved, no object repeats a key
   * (so there are no {@link duplicates}); the index is built on first use.
   */
  static ofStrictJson(text: string): SpecOffsets {
    const o = new SpecOffsets();
    o.ixText = text;
    return o;
  }

  /** The jsonc-parser tree (tree representation only). */
  get root(): Node | undefined {
    return this.tree;
  }

  /** Builds a deferred index now (e.g. while the editor is idle, before the first lookup). */
  prepare(): void {
    void this.index;
  }

  private get index(): OffsetIndex | undefined {
    if (this.ixText !== undefined) {
      const text = this.ixText;
      this.ixText = undefined;
      this.ix = OffsetIndex.build(text);
      // Never expected for strict JSON; a tree gives the same offsets.
      if (!this.ix) this.tree = fastParseTree(text) ?? parseTree(text);
    }
    return this.ix;
  }

  private findDuplicates(node: Node, path: JsonPath): void {
    const children = node.children;
    if (!children) return;
    if (node.type === 'object') {
      const seen = children.length > 8 ? new Set<string>() : undefined;
      for (let j = 0; j < children.length; j++) {
        const prop = children[j]!;
        const k = prop.children?.[0];
        if (!k || typeof k.value !== 'string') continue;
        const name = k.value;
        let dup = false;
        if (seen) {
          dup = seen.has(name);
          seen.add(name);
        } else {
          for (let q = 0; q < j && !dup; q++) dup = children[q]!.children?.[0]?.value === name;
        }
        path.push(name);
        if (dup) this.duplicates.push({ path: [...path], range: { start: k.offset, end: k.offset + k.length } });
        const v = prop.children?.[1];
        if (v?.children) this.findDuplicates(v, path);
        path.pop();
      }
    } else if (node.type === 'array') {
      for (let i = 0; i < children.length; i++) {
        const c = children[i]!;
        if (!c.children) continue;
        path.push(i);
        this.findDuplicates(c, path);
        path.pop();
      }
    }
  }

  /**
   * Edits applied since the tree was parsed, oldest first: an edit that ended at `from` (in
   * the text of its time, inside one string token) changed the length by `delta`. Lookups
   * map the tree's ranges through them, so an edit costs O(1); past
   * {@link MAX_PENDING_SHIFTS} they are folded into the tree's nodes once.
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
    const ix = this.index;
    if (ix) {
      for (let n = 0; n < ix.count; n++) {
        const r = this.mapRange({ start: ix.start[n]!, end: ix.end[n]! });
        ix.start[n] = r.start;
        ix.end[n] = r.end;
        const k = ix.keyStart[n]!;
        if (k >= 0) ix.keyStart[n] = this.mapRange({ start: k, end: k + ix.keyLength[n]! }).start;
      }
    }
    const root = this.tree;
    const stack: Node[] = root ? [root] : [];
    while (stack.length > 0) {
      const n = stack.pop()! as { offset: number; length: number; colonOffset?: number; children?: Node[] };
      const r = this.mapRange({ start: n.offset, end: n.offset + n.length });
      n.offset = r.start;
      n.length = r.end - r.start;
      if (n.colonOffset !== undefined) n.colonOffset = this.mapRange({ start: n.colonOffset, end: n.colonOffset }).start;
      if (n.children) for (const c of n.children) stack.push(c);
    }
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

  private range(n: Node | undefined): OffsetRange | undefined {
    return n ? this.mapRange({ start: n.offset, end: n.offset + n.length }) : undefined;
  }

  /** Range of the value at `path` (strings include their quotes). */
  value(path: Readonly<JsonPath>): OffsetRange | undefined {
    const ix = this.index;
    if (ix) {
      const n = indexAt(ix, path);
      return n < 0 ? undefined : this.mapRange({ start: ix.start[n]!, end: ix.end[n]! });
    }
    return this.range(this.nodeAt(path));
  }

  /** Range of the property name whose value is at `path`. */
  key(path: Readonly<JsonPath>): OffsetRange | undefined {
    if (path.length === 0) return undefined;
    const ix = this.index;
    if (ix) {
      const parent = indexAt(ix, path.slice(0, -1));
      const n = parent < 0 || ix.kind[parent] !== OBJECT ? -1 : ix.child(parent, path[path.length - 1]!);
      if (n < 0) return undefined;
      const k = ix.keyStart[n]!;
      return this.mapRange({ start: k, end: k + ix.keyLength[n]! });
    }
    const parent = this.nodeAt(path.slice(0, -1));
    if (parent?.type !== 'object') return undefined;
    return this.range(lastProperty(parent, path[path.length - 1]!)?.children?.[0]);
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
    const container = this.isContainer(near.path);
    if (exact && !container) return near.range;
    return this.key(near.path) ?? { start: near.range.start, end: near.range.start + 1 };
  }

  private isContainer(path: Readonly<JsonPath>): boolean {
    const ix = this.index;
    if (ix) {
      const n = indexAt(ix, path);
      return n >= 0 && ix.kind[n] !== SCALAR;
    }
    const node = this.nodeAt(path);
    return node?.type === 'object' || node?.type === 'array';
  }

  private nodeAt(path: Readonly<JsonPath>): Node | undefined {
    let node = this.root;
    for (const seg of path) {
      if (!node) return undefined;
      if (node.type === 'array') node = typeof seg === 'number' ? node.children?.[seg] : undefined;
      else if (node.type === 'object') node = lastProperty(node, seg)?.children?.[1];
      else return undefined;
    }
    return node;
  }
}

/** The value at `path` in `ix` (-1 if none). */
function indexAt(ix: OffsetIndex, path: Readonly<JsonPath>): number {
  let n = 0;
  for (let j = 0; j < path.length && n >= 0; j++) n = ix.child(n, path[j]!);
  return n;
}

/** The last property of `obj` named `name` (the one JSON.parse keeps), if any. */
function lastProperty(obj: Node, name: string | number): Node | undefined {
  const props = obj.children ?? [];
  for (let j = props.length - 1; j >= 0; j--) {
    if (props[j]!.children?.[0]?.value === name) return props[j];
  }
  return undefined;
}
