/**
 * The graph explorer's layout, computed incrementally: the sections (prologue, one per decoder
 * layer, head) are stacked top to bottom, a collapsed section is one block, and an expanded one
 * is laid out (layered-layout.ts) on its own nodes only when first expanded (then cached). Expanding a
 * layer of a 48-layer model therefore costs one layer's layout, and the stack is re-placed in
 * O(sections). Values from another section enter as small `ref` boxes (clicking one jumps to
 * its producer), so no edge crosses the picture; consecutive sections are joined by one arrow.
 *
 * Pure (no DOM): the webview draws what this computes; unit tests check it.
 */
import { weightLabel, type GraphModel } from './graph-data';
import { layeredLayout } from './layered-layout';

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
}

/** Where an edge's shape label sits (its left baseline): beside the middle point of its polyline. */
export function edgeLabelAt(e: LEdge): [number, number] {
  const m = Math.floor(e.pts.length / 4) * 2;
  return [e.pts[m]! + 4, e.pts[m + 1]! + 3];
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
  placed: Placed[] = [];
  width = 0;
  height = 0;

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

  /** Lays out section `s`'s interior (cached). */
  layoutOf(s: number): SectionLayout {
    const hit = this.cache.get(s);
    if (hit) return hit;
    const t0 = performance.now();
    const { boxes, links, byNode } = sectionGraph(this.model, s, this.rowOptions);
    const lay = layeredLayout({ sizes: boxes, edges: links.map(([a, b]) => [a, b]), nodesep: 18, ranksep: 26 });
    boxes.forEach((b, i) => {
      b.x = lay.x[i]! - b.w / 2;
      b.y = lay.y[i]! - b.h / 2;
    });
    const edges: LEdge[] = links.map(([, , v], i) => {
      const pts = lay.points[i]!;
      const xs = pts.filter((_, j) => j % 2 === 0);
      const ys = pts.filter((_, j) => j % 2 === 1);
      return { pts, value: v, box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)] };
    });
    const width = lay.width;
    const height = lay.height;
    const out: SectionLayout = { w: width, h: height, boxes, edges, byNode, ms: performance.now() - t0 };
    this.cache.set(s, out);
    return out;
  }

  /** Stacks the sections (laying out newly expanded ones); returns the stack. */
  place(): Placed[] {
    let y = 0;
    let w = 0;
    this.placed = this.model.sections.map((_, i) => {
      const expanded = this.expanded.has(i);
      const inner = expanded ? this.layoutOf(i) : undefined;
      const pw = inner ? Math.max(BLOCK_W, inner.w + 2 * FRAME_PAD) : BLOCK_W;
      const ph = inner ? FRAME_HEAD + inner.h + 2 * FRAME_PAD : BLOCK_H;
      const p: Placed = { index: i, x: -pw / 2, y, w: pw, h: ph, expanded };
      y += ph + SECTION_GAP;
      w = Math.max(w, pw);
      return p;
    });
    this.width = w;
    this.height = Math.max(0, y - SECTION_GAP);
    return this.placed;
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

  /** Indices of the placed sections overlapping `[y0, y1]` (binary search: the stack is sorted). */
  sectionsIn(y0: number, y1: number): number[] {
    const ps = this.placed;
    let lo = 0;
    let hi = ps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ps[mid]!.y + ps[mid]!.h < y0) lo = mid + 1;
      else hi = mid;
    }
    const out: number[] = [];
    for (let i = lo; i < ps.length && ps[i]!.y <= y1; i++) out.push(i);
    return out;
  }

  /** What is at `(x, y)`: a box of an expanded section, a section's title bar or block, or nothing. */
  hit(x: number, y: number): { section: number; box?: LBox; row?: LRow } | undefined {
    for (const s of this.sectionsIn(y, y)) {
      const p = this.placed[s]!;
      if (x < p.x || x > p.x + p.w) continue;
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

/** Op categories the explorer colors (and its legend lists), as Netron groups them. */
export const OP_CATEGORIES = ['layer', 'activation', 'normalization', 'tensor', 'other'] as const;
/** One of {@link OP_CATEGORIES}. */
export type OpCategory = (typeof OP_CATEGORIES)[number];

const CATEGORY: Record<string, OpCategory> = {};
for (const [c, ops] of [
  ['layer', 'Gemm MatMul MatMulInteger Conv ConvTranspose Attention MultiHeadAttention GroupQueryAttention Einsum'],
  ['activation', 'Sigmoid Softmax LogSoftmax Relu Gelu FastGelu Tanh Silu Erf Elu LeakyRelu HardSigmoid Softplus'],
  ['normalization', 'LayerNormalization SimplifiedLayerNormalization RMSNormalization BatchNormalization ReduceMean Sqrt Reciprocal'],
  [
    'tensor',
    'Reshape Transpose Concat Split Slice Gather GatherND GatherElements Unsqueeze Squeeze Expand Tile Shape ScatterND ScatterElements Range Identity Cast Where Flatten Pad TopK ArgMax',
  ],
] as const)
  for (const op of ops.split(' ')) CATEGORY[op] = c;

/** The category of op type `op` (`other` for arithmetic and the rest). */
export function opCategory(op: string): OpCategory {
  return CATEGORY[op] ?? 'other';
}
