/**
 * Where the graph explorer's edge shape labels go (the "shapes" toggle): on the edge's polyline,
 * at a point where the label's box covers no node box. The layered layout (layered-layout.ts)
 * offers the first place, in the middle of the gap between ranks that it made deep enough for
 * the label (ELK's idea: labels live between ranks); the middles of the edge's other segments
 * follow, each with the label on either side of the edge. A place that also misses the labels
 * placed before is preferred; an edge with no place free of nodes gets no label (a label is
 * never drawn over a box).
 *
 * Pure (no DOM): the canvas and the SVG export draw what this returns; unit tests check it on a
 * real export in both directions.
 */
import type { LayoutDirection } from './layered-layout';

/** An axis-aligned rectangle. */
export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** A placed label: its rectangle and the point of the edge it sits beside. */
export interface PlacedLabel extends Rect {
  at: [number, number];
}

/** Width of one character of the 9 px label font (graph-layout's CHAR_W scaled from 11 px). */
export const LABEL_CHAR_W = 5.4;
/** Height of a label's box; its text's baseline is {@link LABEL_BASELINE} below the top. */
export const LABEL_H = 11;
export const LABEL_BASELINE = 9;

/** The box a label of `text` needs. */
export function labelSize(text: string): { w: number; h: number } {
  return { w: Math.ceil(text.length * LABEL_CHAR_W) + 2, h: LABEL_H };
}

/** True when `a` and `b` share interior area (touching edges do not count). */
export function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * A label's boxes beside point `at` of an edge: top to bottom (edges run down), right then left
 * of the edge, centered on the point's height; left to right (edges run across), above then
 * below it, centered on the point.
 */
function beside(at: [number, number], s: { w: number; h: number }, dir: LayoutDirection): Rect[] {
  const [x, y] = at;
  return dir === 'LR'
    ? [
        { x: x - s.w / 2, y: y - s.h - 2, w: s.w, h: s.h },
        { x: x - s.w / 2, y: y + 2, w: s.w, h: s.h },
      ]
    : [
        { x: x + 4, y: y - s.h / 2, w: s.w, h: s.h },
        { x: x - 4 - s.w, y: y - s.h / 2, w: s.w, h: s.h },
      ];
}

/** What {@link placeEdgeLabels} places: edges as polylines (flat x,y pairs) among node boxes. */
export interface LabelInput {
  direction: LayoutDirection;
  /** Every node box (labels must miss them all). */
  boxes: readonly Rect[];
  /** Each edge's polyline. */
  edges: readonly (readonly number[])[];
  /** Per edge: the size of its label, or undefined when it has none. */
  sizes: readonly ({ w: number; h: number } | undefined)[];
  /** Per edge: the layout's preferred point (in a gap between ranks), tried first. */
  anchors?: readonly ([number, number] | undefined)[];
}

/** Rectangles bucketed by a coarse grid, so a test looks only at its neighbors (a layer holds ~200 labels). */
class RectGrid {
  private cells = new Map<number, Rect[]>();
  constructor(private readonly size = 96) {}
  private each(r: Rect, fn: (key: number) => boolean | void): boolean {
    const [i0, i1] = [Math.floor(r.x / this.size), Math.floor((r.x + r.w) / this.size)];
    const [j0, j1] = [Math.floor(r.y / this.size), Math.floor((r.y + r.h) / this.size)];
    for (let i = i0; i <= i1; i++) for (let j = j0; j <= j1; j++) if (fn(i * 1_000_003 + j)) return true;
    return false;
  }
  add(r: Rect): void {
    this.each(r, (k) => void (this.cells.get(k) ?? this.cells.set(k, []).get(k)!).push(r));
  }
  /** True when `r` overlaps no rectangle added. */
  free(r: Rect): boolean {
    return !this.each(r, (k) => this.cells.get(k)?.some((b) => overlaps(r, b)));
  }
}

/** Places each edge's label (see the module comment); undefined where an edge has none or no free place. */
export function placeEdgeLabels(g: LabelInput): (PlacedLabel | undefined)[] {
  const boxes = new RectGrid();
  for (const b of g.boxes) boxes.add(b);
  const placed = new RectGrid();
  return g.edges.map((pts, i) => {
    const size = g.sizes[i];
    if (!size || pts.length < 4) return undefined;
    const points: [number, number][] = [];
    const anchor = g.anchors?.[i];
    if (anchor) points.push(anchor);
    for (let j = 0; j + 3 < pts.length; j += 2) points.push([(pts[j]! + pts[j + 2]!) / 2, (pts[j + 1]! + pts[j + 3]!) / 2]);
    let fallback: PlacedLabel | undefined;
    for (const at of points)
      for (const r of beside(at, size, g.direction)) {
        if (!boxes.free(r)) continue;
        const label = { ...r, at };
        if (placed.free(r)) {
          placed.add(label);
          return label;
        }
        fallback ??= label;
      }
    if (fallback) placed.add(fallback);
    return fallback;
  });
}
