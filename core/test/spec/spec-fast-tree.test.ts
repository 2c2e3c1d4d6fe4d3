/**
 * The fast tree builder (spec/fast-tree.ts) gives jsonc-parser's tree, node for node (type,
 * offset, length, value, colonOffset, children), on generated strict JSON and on nesting,
 * escapes and whitespace written by hand.
 */
import fc from 'fast-check';
import { parseTree, type Node } from 'jsonc-parser';
import { expect, it } from 'vitest';
import { fastParseTree } from '../../src/spec/fast-tree';

type Plain = { type: string; offset: number; length: number; value?: unknown; colonOffset?: number; children?: Plain[] };

function plain(n: Node | undefined): Plain | undefined {
  if (!n) return undefined;
  return {
    type: n.type,
    offset: n.offset,
    length: n.length,
    ...(n.value !== undefined ? { value: n.value } : {}),
    ...(n.colonOffset !== undefined ? { colonOffset: n.colonOffset } : {}),
    ...(n.children ? { children: n.children.map((c) => plain(c)!) } : {}),
  };
}

it('equals jsonc-parser on hand-written JSON', () => {
  for (const text of ['{}', '[]', ' { "a" : [ 1 , -2.5e3, true, false, null, "x\\"y\\u00e9" ] ,"b":{ }, "c":[[],[{}]] } ', '"s"', '0']) {
    expect(plain(fastParseTree(text)), text).toEqual(plain(parseTree(text)));
  }
});

it('equals jsonc-parser on generated JSON, compact and indented', () => {
  fc.assert(
    fc.property(fc.jsonValue(), fc.constantFrom(0, 1, 2), (v, indent) => {
      const text = JSON.stringify(v, null, indent);
      expect(plain(fastParseTree(text))).toEqual(plain(parseTree(text)));
    }),
    { numRuns: 300, seed: 18 },
  );
});
