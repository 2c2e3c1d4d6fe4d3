// The graph explorer's horizontal layout and its edge shape labels (issue 50.4), on the real
// 61-layer DeepSeek-V3 export (shared/configs/deepseek-v3.json, 7,357 nodes, 63 blocks), every
// block expanded: left to right, ranks advance along x with boxes at their own size and edges
// from a box's right side to the next one's left; the blocks stack left to right. With labels
// on, every edge that has a shape gets a label on its own polyline whose rectangle covers no
// node box, in both directions (core/src/view/edge-labels.ts). The pure placement is also
// checked on small hand-made cases where the first place is taken.
import path from 'node:path';
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { exportFromConfig } from '../../src/export/export-config';
import { buildViewerPage, graphModelOf, type GraphModel } from '../../src/view';
import { shapeLabel } from '../../src/view/graph-data';
import { GraphLayout, type LayoutDirection, type SectionLayout } from '../../src/view/graph-layout';
import { overlaps, placeEdgeLabels, type Rect } from '../../src/view/edge-labels';
import { configsDir, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-graph-direction-');

/** Distance from `(x, y)` to polyline `pts`. */
function toPolyline(pts: number[], x: number, y: number): number {
  let best = Infinity;
  for (let i = 0; i + 3 < pts.length; i += 2) {
    const [ax, ay, bx, by] = [pts[i]!, pts[i + 1]!, pts[i + 2]!, pts[i + 3]!];
    const len2 = (bx - ax) ** 2 + (by - ay) ** 2;
    const t = len2 ? Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / len2)) : 0;
    best = Math.min(best, Math.hypot(x - ax - t * (bx - ax), y - ay - t * (by - ay)));
  }
  return best;
}

/** Distance from `(x, y)` to rectangle `r` (0 inside). */
const toRect = (r: Rect, x: number, y: number) => Math.hypot(Math.max(r.x - x, 0, x - r.x - r.w), Math.max(r.y - y, 0, y - r.y - r.h));

describeFixtures('graph layout directions on the DeepSeek-V3 export', () => {
  let m: GraphModel;
  const layouts = new Map<string, GraphLayout>();
  /** Every block of `m` expanded, laid out in `dir`, labels on or off. */
  const all = (dir: LayoutDirection, labels: boolean) => {
    const key = `${dir}${labels}`;
    let L = layouts.get(key);
    if (!L) {
      L = new GraphLayout(m);
      L.setDirection(dir);
      L.setLabels(labels);
      m.sections.forEach((_, i) => L!.expanded.add(i));
      L.place();
      layouts.set(key, L);
    }
    return L;
  };
  const sections = (L: GraphLayout): SectionLayout[] => m.sections.map((_, s) => L.layoutOf(s));

  beforeAll(async () => {
    const dir = tmp();
    fs.copyFileSync(path.join(configsDir(), 'deepseek-v3.json'), path.join(dir, 'config.json'));
    const out = path.join(dir, 'export');
    await exportFromConfig({ config: dir, out });
    const file = path.join(out, 'model.onnx');
    const r = await buildViewerPage(file);
    m = graphModelOf(r.graph!, file, r.graph!.values);
  }, 120_000);

  it('left to right: ranks advance along x, boxes keep their size, edges run right side to left side, blocks stack across', () => {
    expect(m.sections.length).toBe(63);
    const tb = all('TB', false);
    const lr = all('LR', false);
    expect(lr.direction).toBe('LR');
    sections(lr).forEach((lay, s) => {
      const down = tb.layoutOf(s);
      // The same boxes at the same sizes, none overlapping.
      expect(lay.boxes.map((b) => [b.title, b.w, b.h])).toEqual(down.boxes.map((b) => [b.title, b.w, b.h]));
      const clash = lay.boxes.flatMap((a, i) => lay.boxes.slice(i + 1).flatMap((b) => (overlaps(a, b) ? [`${a.title}/${b.title}`] : [])));
      expect(clash).toEqual([]);
      const sg = new Map(lay.boxes.map((b, i) => [b, i]));
      for (const e of lay.edges) {
        if (!e.pts.length) continue;
        // Every edge leaves a box's right side and enters another's left side, moving right.
        const from = lay.boxes.find((b) => Math.abs(b.x + b.w - e.pts[0]!) < 1e-6 && e.pts[1]! >= b.y && e.pts[1]! <= b.y + b.h);
        const n = e.pts.length;
        const to = lay.boxes.find((b) => Math.abs(b.x - e.pts[n - 2]!) < 1e-6 && e.pts[n - 1]! >= b.y && e.pts[n - 1]! <= b.y + b.h);
        if (!from || !to || sg.get(from) === sg.get(to))
          throw new Error(`edge ${m.values[e.value]!.name} in block ${s}: ${e.pts.join(',')}`);
        for (let j = 2; j < n; j += 2) if (!(e.pts[j]! > e.pts[j - 2]!)) throw new Error(`edge ${m.values[e.value]!.name} turns back`);
      }
      // The picture is wider than tall where the top-to-bottom one is taller than wide (a layer's chain of ops).
      if (s > 0 && s < 62) expect(lay.w / lay.h).toBeGreaterThan(down.w / down.h);
    });
    // The blocks: left to right, centered on y = 0; the arrows between them horizontal.
    for (let i = 1; i < lr.placed.length; i++) {
      const [a, b] = [lr.placed[i - 1]!, lr.placed[i]!];
      expect(b.x).toBeGreaterThan(a.x + a.w);
      expect(b.y + b.h / 2).toBeCloseTo(0);
      const [x1, y1, x2, y2] = lr.sectionArrow(i);
      expect([x1, x2, y1, y2]).toEqual([a.x + a.w, b.x, 0, 0]);
    }
    expect(lr.width).toBeCloseTo(lr.placed.at(-1)!.x + lr.placed.at(-1)!.w);
    expect(lr.origin).toEqual({ x: 0, y: -lr.height / 2 });
    // Hit-testing follows: the centre of a node's rectangle is that node.
    const n = m.nodes.findIndex((x) => x.section === 30);
    const r = lr.rectOf(n);
    expect(lr.hit(r.x + r.w / 2, r.y + 5)?.box?.node).toBe(n);
    expect(lr.sectionsInView(r.x, r.y, r.x + 1, r.y + 1)).toEqual([30]);
    // Back to top to bottom: the same layout as one made that way.
    lr.setDirection('TB');
    expect(lr.layoutOf(5).boxes.map((b) => [b.x, b.y])).toEqual(tb.layoutOf(5).boxes.map((b) => [b.x, b.y]));
    lr.setDirection('LR');
  });

  for (const dir of ['TB', 'LR'] as const)
    it(`labels every shaped edge on its own polyline, over no node box (${dir})`, () => {
      const L = all(dir, true);
      let labelled = 0;
      sections(L).forEach((lay) => {
        for (const e of lay.edges) {
          const want = shapeLabel(m.values[e.value]!);
          expect(e.label?.text).toBe(want);
          const l = e.label;
          if (!l) continue;
          labelled++;
          for (const b of lay.boxes) if (overlaps(l, b)) throw new Error(`label ${l.text} at ${l.x},${l.y} covers ${b.title}`);
          // Anchored on its edge, and beside that point.
          expect(toPolyline(e.pts, ...l.at)).toBeLessThan(1e-6);
          expect(toRect(l, ...l.at)).toBeLessThanOrEqual(4 + 1e-6);
          // Inside the section's interior.
          expect(l.x >= -1e-6 && l.y >= -1e-6 && l.x + l.w <= lay.w + 1e-6 && l.y + l.h <= lay.h + 1e-6).toBe(true);
        }
      });
      expect(labelled).toBeGreaterThan(5000);
      // Left to right the gaps between ranks widen to hold the labels; without labels they do not.
      if (dir === 'LR') expect(L.layoutOf(3).w).toBeGreaterThan(all('LR', false).layoutOf(3).w * 1.5);
      else expect(L.layoutOf(3).h).toBe(all('TB', false).layoutOf(3).h);
    });
});

describe('edge label placement', () => {
  const size = { w: 40, h: 10 };
  it('takes the anchor when it is free, else the next free place on the edge, else none', () => {
    // One vertical edge from (0, 0) to (0, 100) through two segments.
    const edge = [0, 0, 0, 50, 0, 100];
    const free = placeEdgeLabels({ direction: 'TB', boxes: [], edges: [edge], sizes: [size], anchors: [[0, 20]] });
    expect(free[0]).toEqual({ x: 4, y: 15, w: 40, h: 10, at: [0, 20] });
    // A box right of the anchor: the label goes left of the edge.
    const right = placeEdgeLabels({
      direction: 'TB',
      boxes: [{ x: 2, y: 10, w: 60, h: 20 }],
      edges: [edge],
      sizes: [size],
      anchors: [[0, 20]],
    });
    expect(right[0]).toMatchObject({ x: -44, y: 15, at: [0, 20] });
    // Both sides taken at the anchor: the first segment's middle (0, 25) is taken too, the second's (0, 75) is free.
    const both = { x: -60, y: 0, w: 120, h: 40 };
    expect(placeEdgeLabels({ direction: 'TB', boxes: [both], edges: [edge], sizes: [size], anchors: [[0, 20]] })[0]).toMatchObject({
      at: [0, 75],
      x: 4,
    });
    // Nowhere free: no label.
    const wall = { x: -100, y: -10, w: 200, h: 120 };
    expect(placeEdgeLabels({ direction: 'TB', boxes: [wall], edges: [edge], sizes: [size] })).toEqual([undefined]);
    // No size (a value without a shape) or no polyline: no label.
    expect(placeEdgeLabels({ direction: 'TB', boxes: [], edges: [edge, []], sizes: [undefined, size] })).toEqual([undefined, undefined]);
  });

  it('left to right puts the label above the edge, then below; prefers a place no other label holds', () => {
    const edge = [0, 0, 100, 0];
    const two = placeEdgeLabels({
      direction: 'LR',
      boxes: [],
      edges: [edge, edge],
      sizes: [size, size],
      anchors: [
        [50, 0],
        [50, 0],
      ],
    });
    expect(two[0]).toEqual({ x: 30, y: -12, w: 40, h: 10, at: [50, 0] });
    // The second label of the same edge point goes below the first, not over it.
    expect(two[1]).toEqual({ x: 30, y: 2, w: 40, h: 10, at: [50, 0] });
    expect(overlaps(two[0]!, two[1]!)).toBe(false);
  });
});
