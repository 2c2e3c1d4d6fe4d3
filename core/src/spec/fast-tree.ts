/**
 * A fast builder of jsonc-parser-compatible trees for text already known to be strict JSON
 * (the caller checked it with JSON.parse). jsonc-parser's general scanner (comments, error
 * recovery, visitor callbacks) costs ~3× more on a multi-megabyte spec; this one only has to
 * find token boundaries. Same node shapes: object/array/property/string/number/boolean/null
 * with offset, length, parent, children, value and colonOffset.
 */
import type { Node, NodeType } from 'jsonc-parser';

type MNode = { type: NodeType; offset: number; length: number; parent?: MNode; children?: MNode[]; value?: unknown; colonOffset?: number };

/** The tree of `text`, which must be valid JSON (undefined if it turns out not to be). */
export function fastParseTree(text: string): Node | undefined {
  let i = 0;
  const n = text.length;
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };
  const str = (parent: MNode | undefined): MNode => {
    const start = i;
    let k = i + 1;
    let escaped = false;
    for (;;) {
      const c = text.charCodeAt(k);
      if (c === 0x22) break;
      if (c === 0x5c) {
        escaped = true;
        k += 2;
      } else if (k >= n) throw new SyntaxError('unterminated string');
      else k++;
    }
    i = k + 1;
    const raw = text.slice(start, i);
    const value = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
    return { type: 'string', offset: start, length: i - start, parent, value };
  };
  /** An object or array from its opening bracket (at `i`) to `close`, each member read by `member`. */
  const container = (type: 'object' | 'array', close: number, parent: MNode | undefined, member: (node: MNode) => MNode): MNode => {
    const node: MNode = { type, offset: i, length: 0, parent, children: [] };
    i++;
    ws();
    if (text.charCodeAt(i) === close) {
      i++;
    } else {
      for (;;) {
        ws();
        node.children!.push(member(node));
        ws();
        const d = text.charCodeAt(i++);
        if (d === close) break;
        if (d !== 0x2c) throw new SyntaxError(`bad ${type}`);
      }
    }
    node.length = i - node.offset;
    return node;
  };
  const property = (node: MNode): MNode => {
    const prop: MNode = { type: 'property', offset: i, length: 0, parent: node, children: [] };
    const key = str(prop);
    ws();
    prop.colonOffset = i;
    i++; // ':'
    const v = value(prop);
    prop.children!.push(key, v);
    prop.length = i - prop.offset;
    return prop;
  };
  const value = (parent: MNode | undefined): MNode => {
    ws();
    const start = i;
    const c = text.charCodeAt(i);
    if (c === 0x7b) return container('object', 0x7d, parent, property);
    if (c === 0x5b) return container('array', 0x5d, parent, value);
    if (c === 0x22) return str(parent);
    if (c === 0x74) {
      i += 4;
      return { type: 'boolean', offset: start, length: 4, parent, value: true };
    }
    if (c === 0x66) {
      i += 5;
      return { type: 'boolean', offset: start, length: 5, parent, value: false };
    }
    if (c === 0x6e) {
      i += 4;
      return { type: 'null', offset: start, length: 4, parent, value: null };
    }
    let k = i;
    while (k < n) {
      const d = text.charCodeAt(k);
      if ((d >= 0x30 && d <= 0x39) || d === 0x2d || d === 0x2b || d === 0x2e || d === 0x65 || d === 0x45) k++;
      else break;
    }
    if (k === i) throw new SyntaxError('unexpected token');
    const num = Number(text.slice(i, k));
    i = k;
    return { type: 'number', offset: start, length: k - start, parent, value: num };
  };
  try {
    const root = value(undefined);
    ws();
    return i === n ? (root as Node) : undefined;
  } catch {
    return undefined;
  }
}
