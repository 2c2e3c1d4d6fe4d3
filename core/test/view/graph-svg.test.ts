// The graph explorer's SVG export (core/src/view/graph-svg.ts), read back by an independent XML
// parser (Python's xml.etree under /usr/bin/python3): a well-formed document holding every
// operator box and edge of the expanded sections, a block per collapsed one, names with XML's
// special characters as written (a node named `<a&b>` does not break it), shape labels on request.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { GraphModel } from '../../src/view/graph-data';
import { GraphLayout } from '../../src/view/graph-layout';
import { graphSvg, xmlEscape } from '../../src/view/graph-svg';
import { PYTHON } from '../../../test/support/onnx-checker';

/** What Python's parser reads from `svg`: element counts by tag/class, every text, edge values, op names. */
function parse(svg: string): { tags: Record<string, number>; texts: string[]; edges: string[]; ops: string[]; titles: string[] } {
  const py = String.raw`
import json, sys
import xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
ns = '{http://www.w3.org/2000/svg}'
assert root.tag == ns + 'svg', root.tag
tags = {}
for e in root.iter():
    t = e.tag.replace(ns, '') + ('.' + e.get('class').split()[0] if e.get('class') else '')
    tags[t] = tags.get(t, 0) + 1
print(json.dumps({
  'tags': tags,
  'texts': [e.text for e in root.iter(ns + 'text')],
  'titles': [e.text for e in root.iter(ns + 'title')],
  'edges': [e.get('data-value') for e in root.iter(ns + 'polyline')],
  'ops': [e.get('data-node') for e in root.iter(ns + 'g') if e.get('class') == 'op'],
}))
`;
  return JSON.parse(execFileSync(PYTHON, ['-c', py], { input: svg }).toString());
}

const hasPython = fs.existsSync(PYTHON);
if (!hasPython) {
  if (process.env.CI === 'true') throw new Error(`${PYTHON} is missing (CI=true requires it)`);
  console.warn(`[weight-spec] ${PYTHON} is missing: the SVG parse tests are skipped`);
}

/** Two sections: a prologue (Gather of a weight) and a layer whose names hold XML's special characters. */
function model(): GraphModel {
  return {
    file: '/x/<model>.onnx',
    nodes: [
      { op: 'Gather', name: 'embed', inputs: [1, 0], outputs: [2], attrs: [], section: 0 },
      { op: 'MatMul', name: '<a&b>', inputs: [2, 3], outputs: [4], attrs: [{ name: 'note', value: '"q" & \'r\'' }], section: 1 },
      { op: 'Reshape', name: 'r', inputs: [4, 5], outputs: [6], attrs: [], section: 1 },
      { op: 'Add', name: 'add', inputs: [6, 2], outputs: [7], attrs: [], section: 1 },
    ],
    values: [
      { name: 'ids<&>', kind: 'input', dtype: 'INT64', dims: ['batch', 'seq'], producer: -1, consumers: [0] },
      { name: 'model.embed.weight', kind: 'weight', producer: -1, consumers: [0] },
      { name: 'h', kind: 'inner', dtype: 'F32', dims: ['batch', 'seq', 8], producer: 0, consumers: [1, 3] },
      { name: 'w"<&>\'\u0001', kind: 'weight', producer: -1, consumers: [1] },
      { name: 'mm', kind: 'inner', dtype: 'F32', dims: ['batch', 'seq', 8], producer: 1, consumers: [2] },
      { name: 'shape_c', kind: 'const', text: 'int64[2] [-1, 8]', producer: -1, consumers: [2] },
      { name: 'flat', kind: 'inner', producer: 2, consumers: [3] },
      { name: 'out>', kind: 'output', dtype: 'F32', dims: ['batch*seq', 8], producer: 3, consumers: [] },
    ],
    sections: [
      { id: 'prologue', label: 'prologue', nodes: [0], weights: 1, ops: 'Gather 1' },
      { id: 'layer-0', label: 'layer 0 <&>', layer: 0, nodes: [1, 2, 3], weights: 1, ops: 'MatMul 1 · Reshape 1 · Add 1' },
    ],
    sources: {},
    folded: 1,
  };
}

describe.skipIf(!hasPython)('graph SVG export', () => {
  it('is well-formed with every op box and edge of the expanded sections, names escaped', () => {
    const m = model();
    const L = new GraphLayout(m);
    L.expanded.add(0).add(1);
    L.place();
    const svg = graphSvg(L, m);
    const got = parse(svg);
    const lays = [0, 1].map((s) => L.layoutOf(s));
    expect(got.ops).toEqual(lays.flatMap((l) => l.boxes.filter((b) => b.kind === 'op').map((b) => m.nodes[b.node]!.name)));
    expect(new Set(got.ops)).toEqual(new Set(['embed', '<a&b>', 'r', 'add']));
    // Every edge, with its arrow head (a marker on each polyline), and one arrow between the sections.
    expect(got.edges).toEqual(lays.flatMap((l) => l.edges.map((e) => m.values[e.value]!.name)));
    expect(got.edges.length).toBeGreaterThanOrEqual(5);
    expect(svg.match(/<polyline [^>]*marker-end="url\(#arrow\)"/g)!.length).toBe(got.edges.length);
    expect(got.tags['line']).toBe(1);
    expect(got.tags['marker']).toBe(1);
    // Titles, rows and pills as the layout holds them; special characters read back as written.
    const texts = got.texts.join('\n');
    expect(texts).toContain('▾ layer 0 <&> · 3 ops');
    expect(texts).toContain('MatMul');
    expect(texts).toContain('note = "q" & \'r\'');
    expect(texts).toContain('shape = int64[2] [-1, 8]');
    expect(texts).toContain('ids<&>');
    expect(texts).toContain('↗ h');
    // A control character XML 1.0 cannot hold is replaced, not written.
    expect(texts).toContain('B = w"<&>\'\ufffd');
    expect(got.titles).toContain('<a&b>');
    expect(got.titles[0]).toBe('<model>.onnx');
    // No shape labels unless the layout placed them (the "shapes" toggle).
    expect(got.tags['text.shape']).toBeUndefined();
    L.setLabels(true);
    const shaped = parse(graphSvg(L, m));
    expect(shaped.texts).toContain('F32[batch, seq, 8]');
    // One per edge whose value has a shape: h (twice: in its section and as a ref), mm, out>, ids<&>.
    const withShape = lays.flatMap((l) => l.edges.filter((e) => m.values[e.value]!.dims));
    expect(shaped.tags['text.shape']).toBe(withShape.length);
  });

  it('draws a collapsed section as one block, without its boxes', () => {
    const m = model();
    const L = new GraphLayout(m);
    L.expanded.add(0);
    L.place();
    const got = parse(graphSvg(L, m));
    expect(got.ops).toEqual(['embed']);
    expect(got.tags['g.section']).toBe(2);
    expect(got.texts).toContain('▸ layer 0 <&>');
    expect(got.texts).not.toContain('MatMul');
    expect(got.edges).toEqual(L.layoutOf(0).edges.map((e) => m.values[e.value]!.name));
  });

  it('follows the attribute and weight toggles: rows go, boxes shrink, the SVG drops them', () => {
    const m = model();
    const L = new GraphLayout(m);
    L.expanded.add(0).add(1);
    L.place();
    const mm = () => L.layoutOf(1).boxes.find((b) => b.node === 1)!;
    expect(mm().rows.map((r) => r.kind)).toEqual(['weight', 'attr']);
    const full = { h: mm().h, height: L.height };
    L.setRows({ attrs: false, weights: true });
    expect(mm().rows.map((r) => r.kind)).toEqual(['weight']);
    L.setRows({ attrs: false, weights: false });
    expect(mm().rows).toEqual([]);
    // The Gather's weight row is gone too; the Reshape's folded constant stays.
    expect(L.layoutOf(0).boxes.find((b) => b.node === 0)!.rows).toEqual([]);
    expect(
      L.layoutOf(1)
        .boxes.find((b) => b.node === 2)!
        .rows.map((r) => r.kind),
    ).toEqual(['const']);
    expect(mm().h).toBeLessThan(full.h);
    expect(L.height).toBeLessThan(full.height);
    expect(L.rows).toEqual({ attrs: false, weights: false });
    const texts = parse(graphSvg(L, m)).texts.join('\n');
    expect(texts).not.toContain('note = ');
    expect(texts).not.toContain('embed.weight');
    expect(texts).toContain('shape = int64[2] [-1, 8]');
    L.setRows({ attrs: true, weights: true });
    expect(mm().h).toBe(full.h);
  });

  it('draws the layout left to right when it is laid out so: blocks across, arrows along x, labels where placed', () => {
    const m = model();
    const L = new GraphLayout(m);
    L.expanded.add(0).add(1);
    L.setDirection('LR');
    L.setLabels(true);
    const svg = graphSvg(L, m);
    const got = parse(svg);
    expect(got.ops.length).toBe(4);
    // The section frames: the second starts right of the first, both centered on y = 0.
    const frames = [...svg.matchAll(/<g class="section"[^>]*>\n<rect x="([-\d.]+)" y="([-\d.]+)" width="([\d.]+)" height="([\d.]+)"/g)].map(
      (r) => r.slice(1).map(Number),
    );
    expect(frames.length).toBe(2);
    expect(frames[1]![0]!).toBeGreaterThan(frames[0]![0]! + frames[0]![2]!);
    for (const [, y, , h] of frames) expect(Math.abs(y! + h! / 2)).toBeLessThan(0.1);
    // The arrow between them runs along y = 0; the viewBox holds the whole picture.
    const line = /<line x1="([-\d.]+)" y1="([-\d.]+)" x2="([-\d.]+)" y2="([-\d.]+)"/.exec(svg)!.slice(1).map(Number);
    expect(line[1]).toBe(0);
    expect(line[3]).toBe(0);
    expect(line[2]).toBeGreaterThan(line[0]!);
    const vb = /viewBox="([-\d.]+) ([-\d.]+) ([\d.]+) ([\d.]+)"/.exec(svg)!.slice(1).map(Number);
    expect(vb[0]!).toBeLessThanOrEqual(frames[0]![0]!);
    expect(vb[0]! + vb[2]!).toBeGreaterThanOrEqual(frames[1]![0]! + frames[1]![2]! - 0.1);
    expect(vb[1]!).toBeLessThanOrEqual(Math.min(...frames.map((f) => f[1]!)));
    // A label per edge the layout labelled, with its text.
    const placed = [0, 1].flatMap((s) => L.layoutOf(s).edges.flatMap((e) => (e.label ? [e.label.text] : [])));
    expect(placed.length).toBeGreaterThan(0);
    expect(got.tags['text.shape']).toBe(placed.length);
    for (const t of placed) expect(got.texts).toContain(t);
  });

  it('escapes the five XML characters', () => {
    expect(xmlEscape(`<a&b> "c" 'd'`)).toBe('&lt;a&amp;b&gt; &quot;c&quot; &apos;d&apos;');
  });
});
