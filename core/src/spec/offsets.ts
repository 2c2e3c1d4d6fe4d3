/**
 * Source offsets for every JSON path of a document, taken from jsonc-parser's tree, so that a
 * diagnostic found on the *parsed* value can point at the exact text that produced it.
 */
import type { Node } from 'jsonc-parser';
import type { OffsetRange } from '../errors';
import type { JsonPath, SpecOffsetsView } from './types';

/** Encodes a JSON path as a string key (JSON-pointer escaping), e.g. `inputs/3/location/key`. */
export function pathKey(path: JsonPath): string {
  return path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

/** Formats a JSON path for messages: `inputs[3].location.key`. */
export function formatPath(path: JsonPath): string {
  let s = '';
  for (const p of path) {
    if (typeof p === 'number') s += `[${p}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(p)) s += s ? `.${p}` : p;
    else s += `[${JSON.stringify(p)}]`;
  }
  return s || '(document)';
}

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
    if (root) this.walk(root, []);
  }

  private walk(node: Node, path: JsonPath): void {
    this.values.set(pathKey(path), { start: node.offset, end: node.offset + node.length });
    if (node.type === 'object') {
      const seen = new Set<string>();
      for (const prop of node.children ?? []) {
        const [k, v] = prop.children ?? [];
        if (!k || typeof k.value !== 'string') continue;
        const child = [...path, k.value];
        const keyRange = { start: k.offset, end: k.offset + k.length };
        if (seen.has(k.value)) this.duplicates.push({ path: child, range: keyRange });
        seen.add(k.value);
        this.keys.set(pathKey(child), keyRange);
        if (v) this.walk(v, child);
      }
    } else if (node.type === 'array') {
      (node.children ?? []).forEach((c, i) => this.walk(c, [...path, i]));
    }
  }

  /** Range of the value at `path` (strings include their quotes). */
  value(path: JsonPath): OffsetRange | undefined {
    return this.values.get(pathKey(path));
  }

  /** Range of the property name whose value is at `path`. */
  key(path: JsonPath): OffsetRange | undefined {
    return this.keys.get(pathKey(path));
  }

  /** The deepest existing prefix of `path` with its value range. */
  nearest(path: JsonPath): { path: JsonPath; range: OffsetRange } | undefined {
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
  anchor(path: JsonPath): OffsetRange | undefined {
    const near = this.nearest(path);
    if (!near) return undefined;
    const exact = near.path.length === path.length;
    const node = this.nodeAt(near.path);
    const container = node?.type === 'object' || node?.type === 'array';
    if (exact && !container) return near.range;
    return this.key(near.path) ?? { start: near.range.start, end: near.range.start + 1 };
  }

  private nodeAt(path: JsonPath): Node | undefined {
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
