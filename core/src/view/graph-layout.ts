/**
 * The graph explorer's layout, computed incrementally: the sections (prologue, one per decoder
 * layer, head) are stacked top to bottom (or left to right: {@link GraphLayout.setDirection}), a collapsed section is one block, and an expanded one
 * is laid out (layered-layout.ts) on its own nodes only when first expanded (then cached). Expanding a
 * layer of a 48-layer model therefore costs one layer's layout, and the stack is re-placed in
 * O(sections). Values from another section enter as small `ref` boxes (clicking one jumps to
 * its producer), so no edge crosses the picture; consecutive sections are joined by one arrow.
 *
 * Pure (no DOM): the webview draws what this computes; unit tests check it.
 */
import { shapeLabel, weightLabel, type GraphModel } from './graph-data';
import { labelSize, placeEdgeLabels, type PlacedLabel } from './edge-labels';
import { layeredLayout, type LayoutDirection } from './layered-layout';

export type { LayoutDirection } from './layered-layout';
// Kept importable from here (the explorer's panel and legend read them with the layout).
export { OP_CATEGORIES, opCategory, type OpCategory } from './op-category';

/** Approximate width of one character of the 11 px editor font. */
export const CHAR_W = 6.6;
export const ROW_H = 15;
export const HEAD_H = 22;
/** Section frame: title bar height and inner padding. */
export const FRAME_HEAD = 26;
export const FRAME_PAD = 14;
export const BLOCK_W = 420;
export const BLOCK_H = 54;
export const SECTION_GAP = 30;
/** Longest row text laid out (longer text is cut with `…`). */
export const MAX_CHARS = 56;

/** A line inside an operator's box: a folded constant, a weight input or an attribute. */
export interface LRow {
  kind: 'const' | 'weight' | 'attr';
  text: string;
  /** The value (const or weight) the row shows, or -1 for an attribute. */
  value: number;
}

/** A drawn box, relative to its section's interior. */
export interface LBox {
  kind: 'op' | 'input' | 'output' | 'ref';
  x: number;
  y: number;
  w: number;
  h: number;
  /** The operator (kind `op`), else -1. */
  node: number;
  /** The value of an input, output or ref box, else -1. */
  value: number;
  title: string;
  rows: LRow[];
}

/** An edge as a polyline (flat x,y pairs) with its bounding box, relative to the interior. */
export interface LEdge {
  pts: number[];
  value: number;
  box: [number, number, number, number];
  /** Its shape label's box (edge-labels.ts: on the edge, over no node), when labels are on and it has one. */
  label?: PlacedLabel & { text: string };
}

/** One section's interior layout. */
export interface SectionLayout {
  w: number;
  h: number;
  boxes: LBox[];
  edges: LEdge[];
  /** Node → index in `boxes`. */
  byNode: Map<number, number>;
  ms: number;
}

/** A section's place in the stack. */
export interface Placed {
  index: number;
  x: number;
  y: number;
  w: number;
  h: number;
  expanded: boolean;
}

/** Input names of common ops (rows read `shape = int64[2] [1, -1]` rather than `in1 = …`). */
const SLOTS: Record<string, string[]> = {
  Reshape: ['data', 'shape'],
  Gemm: ['A', 'B', 'C'],
  MatMul: ['A', 'B'],
  Gather: ['data', 'indices'],
  GatherND: ['data', 'indices'],
  Slice: ['data', 'starts', 'ends', 'axes', 'steps'],
  Unsqueeze: ['data', 'axes'],
  Squeeze: ['data', 'axes'],
  Expand: ['input', 'shape'],
  TopK: ['X', 'K'],
  ReduceSum: ['data', 'axes'],
  ReduceMean: ['data', 'axes'],
  Split: ['input', 'split'],
  Where: ['condition', 'X', 'Y'],
  ScatterND: ['data', 'indices', 'updates'],
  ScatterElements: ['data', 'indices', 'updates'],
  Range: ['start', 'limit', 'delta'],
  Tile: ['input', 'repeats'],
  Pow: ['X', 'Y'],
  Add: ['A', 'B'],
  Sub: ['A', 'B'],
  Mul: ['A', 'B'],
  Div: ['A', 'B'],
};

/** The name of input `i` of `op`. */
export function slotName(op: string, i: number): string {
  return SLOTS[op]?.[i] ?? `in${i}`;
}

/** `s` cut to `n` characters with a trailing `…`. */
export function clip(s: string, n = MAX_CHARS): string {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

/** Display text of a row. */
export function rowText(label: string, text: string): string {
  return clip(`${label} = ${text}`);
}

const textW = (chars: number) => Math.ceil(chars * CHAR_W) + 20;

/** Which rows operator boxes hold (the explorer's toggles); folded constants are always shown. */
export interface RowOptions {
  /** Attribute rows (`perm = [0, 2, 1, 3]`), the first four of each op. */
  attrs: boolean;
  /** Weight-input rows (`B = layers.3.self_attn.v_proj.weight`). */
  weights: boolean;
}

const ALL_ROWS: RowOptions = { attrs: true, weights: true };

/**
 * What section `s` of `m` lays out: a box per op (its weight and constant rows, up to four
 * attributes) and per value stub (graph inputs and outputs, refs to other sections), and a link
 * per data edge (from box, to box, value). The explorer's layered layout places them; the layout
 * bench (bench/graph-layout.bench.mjs) hands the same graph to other layout libraries.
 */
export function sectionGraph(
  m: GraphModel,
  s: number,
  show: RowOptions = ALL_ROWS,
): { boxes: LBox[]; links: [number, number, number][]; byNode: Map<number, number> } {
  const sec = m.sections[s]!;
  const inSection = new Set(sec.nodes);
  const boxes: LBox[] = [];
  const byNode = new Map<number, number>();
  const stubs = new Map<string, number>();
  const links: [number, number, number][] = []; // from box, to box, value
  const stub = (kind: LBox['kind'], v: number): number => {
    const key = `${kind}:${v}`;
    let b = stubs.get(key);
    if (b === undefined) {
      const val = m.values[v]!;
      const title = clip(val.kind === 'weight' ? weightLabel(val.name) : val.name);
      boxes.push({ kind, x: 0, y: 0, w: textW(title.length), h: HEAD_H, node: -1, value: v, title, rows: [] });
      stubs.set(key, (b = boxes.length - 1));
    }
    return b;
  };
  for (const n of sec.nodes) {
    const node = m.nodes[n]!;
    const rows: LRow[] = [];
    node.inputs.forEach((v, i) => {
      const val = v >= 0 ? m.values[v] : undefined;
      if (val?.kind === 'const') rows.push({ kind: 'const', value: v, text: rowText(slotName(node.op, i), val.text ?? '') });
      else if (val?.kind === 'weight' && show.weights)
        rows.push({ kind: 'weight', value: v, text: rowText(slotName(node.op, i), weightLabel(val.name)) });
    });
    if (show.attrs) for (const a of node.attrs.slice(0, 4)) rows.push({ kind: 'attr', value: -1, text: rowText(a.name, a.value) });
    const title = node.domain ? `${node.domain}:${node.op}` : node.op;
    const w = textW(Math.max(title.length, ...rows.map((r) => r.text.length)));
    boxes.push({ kind: 'op', x: 0, y: 0, w: Math.max(64, w), h: HEAD_H + rows.length * ROW_H, node: n, value: -1, title, rows });
    byNode.set(n, boxes.length - 1);
  }
  for (const n of sec.nodes) {
    const node = m.nodes[n]!;
    const to = byNode.get(n)!;
    for (const v of new Set(node.inputs)) {
      if (v < 0) continue;
      const val = m.values[v]!;
      if (val.kind === 'const' || val.kind === 'weight') continue;
      if (val.producer >= 0 && inSection.has(val.producer)) links.push([byNode.get(val.producer)!, to, v]);
      else links.push([stub(val.kind === 'input' ? 'input' : 'ref', v), to, v]);
    }
    for (const v of node.outputs) if (v >= 0 && m.values[v]!.kind === 'output') links.push([byNode.get(n)!, stub('output', v), v]);
  }
  return { boxes, links, byNode };
}

/** The incremental layout of a {@link GraphModel}. */
export class GraphLayout {
  readonly expanded = new Set<number>();
  private cache = new Map<number, SectionLayout>();
  private rowOptions: RowOptions = { ...ALL_ROWS };
  private dir: LayoutDirection = 'TB';
  private labelsOn = false;
  placed: Placed[] = [];
  width = 0;
  height = 0;
  /** Counts {@link place} calls: a drawing made from the stack (the minimap) is stale when it changed. */
  version = 0;

  constructor(readonly model: GraphModel) {}

  /** The rows shown now. */
  get rows(): RowOptions {
    return { ...this.rowOptions };
  }

  /**
   * Shows or hides attribute and weight rows. Boxes change height, so the cached layouts are
   * dropped: the expanded sections are laid out again now (the stack is re-placed), the others
   * when next expanded.
   */
  setRows(o: RowOptions): void {
    if (o.attrs === this.rowOptions.attrs && o.weights === this.rowOptions.weights) return;
    this.rowOptions = { attrs: o.attrs, weights: o.weights };
    this.cache.clear();
    this.place();
  }

  /** Which way the sections and each section's ranks advance. */
  get direction(): LayoutDirection {
    return this.dir;
  }

  /** Lays the graph out top to bottom or left to right (the expanded sections again now). */
  setDirection(d: LayoutDirection): void {
    if (d === this.dir) return;
    this.dir = d;
    this.cache.clear();
    this.place();
  }

  /** Edge shape labels are placed (and the gaps between ranks made deep enough for them). */
  get labels(): boolean {
    return this.labelsOn;
  }

  /** Turns edge shape labels on or off; the expanded sections are laid out again now. */
  setLabels(on: boolean): void {
    if (on === this.labelsOn) return;
    this.labelsOn = on;
    this.cache.clear();
    this.place();
  }

  /** Lays out section `s`'s interior (cached). */
  layoutOf(s: number): SectionLayout {
    const hit = this.cache.get(s);
    if (hit) return hit;
    const t0 = performance.now();
    const { boxes, links, byNode } = sectionGraph(this.model, s, this.rowOptions);
    const texts = links.map(([, , v]) => (this.labelsOn ? shapeLabel(this.model.values[v]!) : undefined));
    const sizes = texts.map((t) => (t ? labelSize(t) : undefined));
    const direction = this.dir;
    const edgePairs = links.map(([a, b]): [number, number] => [a, b]);
    const lay = layeredLayout({ sizes: boxes, edges: edgePairs, nodesep: 18, ranksep: 26, direction, labels: sizes });
    boxes.forEach((b, i) => {
      b.x = lay.x[i]! - b.w / 2;
      b.y = lay.y[i]! - b.h / 2;
    });
    const labels = this.labelsOn ? placeEdgeLabels({ direction, boxes, edges: lay.points, sizes, anchors: lay.labelAt }) : [];
    // A label beside the outermost edge may stick out of the boxes' extent: grow the interior to hold it.
    let [x0, y0, x1, y1] = [0, 0, lay.width, lay.height];
    for (const l of labels)
      if (l) [x0, y0, x1, y1] = [Math.min(x0, l.x), Math.min(y0, l.y), Math.max(x1, l.x + l.w), Math.max(y1, l.y + l.h)];
    const edges: LEdge[] = links.map(([, , v], i) => {
      const pts = lay.points[i]!.map((c, j) => c - (j % 2 ? y0 : x0));
      const xs = pts.filter((_, j) => j % 2 === 0);
      const ys = pts.filter((_, j) => j % 2 === 1);
      const e: LEdge = { pts, value: v, box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] };
      const l = labels[i];
      if (l) e.label = { x: l.x - x0, y: l.y - y0, w: l.w, h: l.h, at: [l.at[0] - x0, l.at[1] - y0], text: texts[i]! };
      return e;
    });
    for (const b of boxes) [b.x, b.y] = [b.x - x0, b.y - y0];
    const out: SectionLayout = { w: x1 - x0, h: y1 - y0, boxes, edges, byNode, ms: performance.now() - t0 };
    this.cache.set(s, out);
    return out;
  }

  /**
   * Stacks the sections (laying out newly expanded ones) along the direction: top to bottom
   * centered on x = 0, or left to right centered on y = 0. Returns the stack.
   */
  place(): Placed[] {
    const lr = this.dir === 'LR';
    let at = 0;
    let across = 0;
    this.placed = this.model.sections.map((_, i) => {
      const expanded = this.expanded.has(i);
      const inner = expanded ? this.layoutOf(i) : undefined;
      const pw = inner ? Math.max(BLOCK_W, inner.w + 2 * FRAME_PAD) : BLOCK_W;
      const ph = inner ? FRAME_HEAD + inner.h + 2 * FRAME_PAD : BLOCK_H;
      const p: Placed = lr
        ? { index: i, x: at, y: -ph / 2, w: pw, h: ph, expanded }
        : { index: i, x: -pw / 2, y: at, w: pw, h: ph, expanded };
      at += (lr ? pw : ph) + SECTION_GAP;
      across = Math.max(across, lr ? ph : pw);
      return p;
    });
    const along = Math.max(0, at - SECTION_GAP);
    [this.width, this.height] = lr ? [along, across] : [across, along];
    this.version++;
    return this.placed;
  }

  /** The top-left corner of the whole picture (`width` × `height` from there). */
  get origin(): { x: number; y: number } {
    return this.dir === 'LR' ? { x: 0, y: -this.height / 2 } : { x: -this.width / 2, y: 0 };
  }

  /** The arrow into section `s` from the one before (x1, y1, x2, y2): down the x = 0 axis, or along y = 0. */
  sectionArrow(s: number): [number, number, number, number] {
    const p = this.placed[s]!;
    return this.dir === 'LR' ? [p.x - SECTION_GAP, 0, p.x, 0] : [0, p.y - SECTION_GAP, 0, p.y];
  }

  /** Origin of section `s`'s interior (boxes are relative to it). */
  interior(s: number): { x: number; y: number } {
    const p = this.placed[s]!;
    const inner = this.cache.get(s);
    return { x: p.x + (p.w - (inner?.w ?? 0)) / 2, y: p.y + FRAME_HEAD + FRAME_PAD };
  }

  /** The absolute rectangle of node `n` (its block when its section is collapsed). */
  rectOf(n: number): { x: number; y: number; w: number; h: number } {
    const s = this.model.nodes[n]!.section;
    const p = this.placed[s]!;
    if (!p.expanded) return p;
    const b = this.layoutOf(s).boxes[this.layoutOf(s).byNode.get(n)!]!;
    const o = this.interior(s);
    return { x: o.x + b.x, y: o.y + b.y, w: b.w, h: b.h };
  }

  /**
   * Indices of the placed sections whose extent along the stack (y top to bottom, x left to
   * right) overlaps `[a0, a1]` (binary search: the stack is sorted).
   */
  sectionsIn(a0: number, a1: number): number[] {
    const ps = this.placed;
    const lr = this.dir === 'LR';
    const start = (p: Placed) => (lr ? p.x : p.y);
    const end = (p: Placed) => (lr ? p.x + p.w : p.y + p.h);
    let lo = 0;
    let hi = ps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (end(ps[mid]!) < a0) lo = mid + 1;
      else hi = mid;
    }
    const out: number[] = [];
    for (let i = lo; i < ps.length && start(ps[i]!) <= a1; i++) out.push(i);
    return out;
  }

  /** The sections overlapping the rectangle `[x0, x1] × [y0, y1]`, in stack order. */
  sectionsInView(x0: number, y0: number, x1: number, y1: number): number[] {
    const lr = this.dir === 'LR';
    return this.sectionsIn(lr ? x0 : y0, lr ? x1 : y1).filter((s) => {
      const p = this.placed[s]!;
      return lr ? p.y <= y1 && p.y + p.h >= y0 : p.x <= x1 && p.x + p.w >= x0;
    });
  }

  /** What is at `(x, y)`: a box of an expanded section, a section's title bar or block, or nothing. */
  hit(x: number, y: number): { section: number; box?: LBox; row?: LRow } | undefined {
    for (const s of this.sectionsInView(x, y, x, y)) {
      const p = this.placed[s]!;
      if (!p.expanded || y < p.y + FRAME_HEAD) return { section: s };
      const o = this.interior(s);
      for (const b of this.layoutOf(s).boxes) {
        const bx = x - o.x - b.x;
        const by = y - o.y - b.y;
        if (bx < 0 || by < 0 || bx > b.w || by > b.h) continue;
        const r = Math.floor((by - HEAD_H) / ROW_H);
        return { section: s, box: b, ...(by >= HEAD_H && b.rows[r] ? { row: b.rows[r] } : {}) };
      }
      return undefined;
    }
    return undefined;
  }
}
