/**
 * A layered (Sugiyama-style) layout of a DAG, top to bottom or left to right, small and fast enough to run when a
 * block is expanded: longest-path ranks (sources pulled down next to their first consumer),
 * dummy nodes on edges that span ranks, barycenter ordering sweeps, and x positions from
 * neighbor averages with overlap removal. dagre (used before) took 0.3–2 s for one 100-node
 * decoder layer on a busy machine; this takes a few milliseconds, with no overlaps by
 * construction. Cycles (not valid in ONNX) are broken by ignoring edges against the input order.
 *
 * Left to right is the same layout transposed (boxes keep their own size: it is laid out with
 * width and height swapped, then x and y swapped back). Edge labels live in the gap between
 * ranks, as ELK places them: the gap after an edge's source rank grows to hold its label, so a
 * label centered there on its edge crosses no box.
 */

/** Which way ranks advance: down the y axis (`TB`) or along x (`LR`). */
export type LayoutDirection = 'TB' | 'LR';

/** Room left between an edge label and the ranks around it. */
export const LABEL_GAP = 3;

/** Input: box sizes and edges (indices into `sizes`). */
export interface LayeredInput {
  sizes: { w: number; h: number }[];
  edges: [number, number][];
  nodesep?: number;
  ranksep?: number;
  direction?: LayoutDirection;
  /** Per edge (`edges` order): its label's size, or undefined for none. */
  labels?: ({ w: number; h: number } | undefined)[];
}

/** Output: box centers, each edge's polyline (flat x,y pairs) and the drawing's size. */
export interface LayeredOutput {
  x: number[];
  y: number[];
  points: number[][];
  width: number;
  height: number;
  /**
   * Per labelled edge: the label's anchor, the point of the edge's polyline in the middle of the
   * gap after its source's rank (a gap as deep as the label plus {@link LABEL_GAP} each side).
   */
  labelAt: ([number, number] | undefined)[];
}

const SWEEPS = 6;

/** Lays out `g`; see the module comment. */
export function layeredLayout(g: LayeredInput): LayeredOutput {
  if (g.direction !== 'LR') return topDown(g);
  const swap = (s: { w: number; h: number }) => ({ w: s.h, h: s.w });
  const t = topDown({ ...g, sizes: g.sizes.map(swap), labels: g.labels?.map((l) => l && swap(l)) });
  return {
    x: t.y,
    y: t.x,
    points: t.points.map((p) => p.map((_, i) => p[i ^ 1]!)),
    width: t.height,
    height: t.width,
    labelAt: t.labelAt.map((a) => a && [a[1], a[0]]),
  };
}

function topDown(g: LayeredInput): LayeredOutput {
  const n = g.sizes.length;
  const nodesep = g.nodesep ?? 18;
  const ranksep = g.ranksep ?? 26;
  const DUMMY_SEP = 6;
  // [from, to, index in g.edges]
  const edges = g.edges.flatMap(([a, b], i) => (a !== b && a < n && b < n ? [[a, b, i] as const] : []));
  const succ: number[][] = Array.from({ length: n }, () => []);
  const pred: number[][] = Array.from({ length: n }, () => []);
  for (const [a, b] of edges) {
    succ[a]!.push(b);
    pred[b]!.push(a);
  }
  // Ranks: Kahn's order; an edge into an already-ranked node (a cycle) is ignored.
  const indeg = pred.map((p) => p.length);
  const order: number[] = [];
  const queue = indeg.flatMap((d, i) => (d === 0 ? [i] : []));
  const done = new Uint8Array(n);
  while (order.length < n) {
    if (!queue.length) queue.push(done.findIndex((d) => !d)); // a cycle: start anywhere
    const v = queue.shift()!;
    if (done[v]) continue;
    done[v] = 1;
    order.push(v);
    for (const w of succ[v]!) if (--indeg[w]! === 0) queue.push(w);
  }
  const pos = new Int32Array(n);
  order.forEach((v, i) => (pos[v] = i));
  const fwd = edges.filter(([a, b]) => pos[a]! < pos[b]!);
  const rank = new Int32Array(n);
  for (const v of order) for (const p of pred[v]!) if (pos[p]! < pos[v]!) rank[v] = Math.max(rank[v]!, rank[p]! + 1);
  // A source (an input, a value from another block) sits just above its first consumer.
  for (const v of order) if (!pred[v]!.length && succ[v]!.length) rank[v] = Math.max(0, Math.min(...succ[v]!.map((w) => rank[w]!)) - 1);
  const maxRank = n ? Math.max(...rank) : 0;
  // Dummy nodes: one per rank an edge crosses.
  const w: number[] = g.sizes.map((s) => s.w);
  const h: number[] = g.sizes.map((s) => s.h);
  const rk: number[] = Array.from(rank);
  const up: number[][] = Array.from({ length: n }, () => []);
  const down: number[][] = Array.from({ length: n }, () => []);
  const chains: number[][] = [];
  // The gap after rank r is as deep as the deepest label of an edge leaving r needs.
  const gapOf: number[] = Array.from({ length: maxRank + 1 }, () => ranksep);
  for (const [a, b, i] of fwd) {
    const l = g.labels?.[i];
    if (l && rk[a]! < rk[b]!) gapOf[rk[a]!] = Math.max(gapOf[rk[a]!]!, l.h + 2 * LABEL_GAP);
    const chain = [a];
    let prev = a;
    for (let r = rk[a]! + 1; r < rk[b]!; r++) {
      const d = w.length;
      w.push(0);
      h.push(0);
      rk.push(r);
      up.push([prev]);
      down.push([]);
      down[prev]!.push(d);
      chain.push(d);
      prev = d;
    }
    down[prev]!.push(b);
    up[b]!.push(prev);
    chain.push(b);
    chains.push(chain);
  }
  const total = w.length;
  const layers: number[][] = Array.from({ length: maxRank + 1 }, () => []);
  // Initial order: depth-first from the sources, so connected nodes start close.
  const seen = new Uint8Array(total);
  const visit = (v: number) => {
    const stack = [v];
    while (stack.length) {
      const x = stack.pop()!;
      if (seen[x]) continue;
      seen[x] = 1;
      layers[rk[x]!]!.push(x);
      for (let i = down[x]!.length - 1; i >= 0; i--) stack.push(down[x]![i]!);
    }
  };
  for (const v of order) if (!up[v]!.length) visit(v);
  for (let v = 0; v < total; v++) if (!seen[v]) visit(v);
  const idx = new Float64Array(total);
  const renumber = () => layers.forEach((l) => l.forEach((v, i) => (idx[v] = i)));
  renumber();
  for (let s = 0; s < SWEEPS; s++) {
    const downward = s % 2 === 0;
    const range = downward ? layers.slice(1) : layers.slice(0, -1).reverse();
    for (const l of range) {
      const bary = new Map<number, number>();
      for (const v of l) {
        const nb = downward ? up[v]! : down[v]!;
        bary.set(v, nb.length ? nb.reduce((a, u) => a + idx[u]!, 0) / nb.length : idx[v]!);
      }
      l.sort((a, b) => bary.get(a)! - bary.get(b)! || idx[a]! - idx[b]!);
      l.forEach((v, i) => (idx[v] = i));
    }
  }
  // x: pack each layer, then pull toward neighbors' average (both directions) keeping separation.
  const x = new Float64Array(total);
  const gap = (a: number, b: number) => (w[a]! + w[b]!) / 2 + (w[a]! && w[b]! ? nodesep : DUMMY_SEP);
  for (const l of layers) {
    let cx = 0;
    l.forEach((v, i) => {
      if (i) cx += gap(l[i - 1]!, v);
      x[v] = cx;
    });
    const mid = cx / 2;
    for (const v of l) x[v]! -= mid;
  }
  const place = (l: number[], want: (v: number) => number) => {
    const d = l.map(want);
    const a = d.slice();
    for (let i = 1; i < l.length; i++) a[i] = Math.max(d[i]!, a[i - 1]! + gap(l[i - 1]!, l[i]!));
    const b = d.slice();
    for (let i = l.length - 2; i >= 0; i--) b[i] = Math.min(d[i]!, b[i + 1]! - gap(l[i]!, l[i + 1]!));
    l.forEach((v, i) => (x[v] = (a[i]! + b[i]!) / 2));
  };
  const avg = (nb: number[], v: number) => (nb.length ? nb.reduce((s, u) => s + x[u]!, 0) / nb.length : x[v]!);
  for (let s = 0; s < 4; s++) {
    for (const l of layers.slice(1)) place(l, (v) => avg(up[v]!, v));
    for (const l of layers.slice(0, -1).reverse()) place(l, (v) => avg(down[v]!, v));
  }
  // y: each rank as tall as its tallest box; gaps as labels need.
  const ry: number[] = [];
  const gapMid: number[] = [];
  let cy = 0;
  layers.forEach((l, r) => {
    const rh = Math.max(0, ...l.map((v) => h[v]!));
    ry.push(cy + rh / 2);
    gapMid.push(cy + rh + gapOf[r]! / 2);
    cy += rh + gapOf[r]!;
  });
  const lastGap = gapOf[maxRank] ?? ranksep;
  let minX = Infinity;
  let maxX = -Infinity;
  for (let v = 0; v < total; v++) {
    minX = Math.min(minX, x[v]! - w[v]! / 2);
    maxX = Math.max(maxX, x[v]! + w[v]! / 2);
  }
  if (!total) minX = maxX = 0;
  const X = (v: number) => x[v]! - minX;
  const points = chains.map((c) => {
    const a = c[0]!;
    const b = c[c.length - 1]!;
    const p = [X(a), ry[rk[a]!]! + h[a]! / 2];
    for (const d of c.slice(1, -1)) p.push(X(d), ry[rk[d]!]!);
    p.push(X(b), ry[rk[b]!]! - h[b]! / 2);
    return p;
  });
  // Edges in `g.edges` order (a dropped back edge gets no points).
  const out: number[][] = g.edges.map(() => []);
  const labelAt: ([number, number] | undefined)[] = g.edges.map(() => undefined);
  fwd.forEach(([a, , i], j) => {
    const p = (out[i] = points[j]!);
    if (!g.labels?.[i] || p[3]! <= p[1]!) return;
    // The first segment crosses the gap after a's rank: the point at the gap's middle.
    const mid = gapMid[rk[a]!]!;
    const t = (mid - p[1]!) / (p[3]! - p[1]!);
    labelAt[i] = [p[0]! + t * (p[2]! - p[0]!), mid];
  });
  return {
    x: Array.from({ length: n }, (_, v) => X(v)),
    y: Array.from({ length: n }, (_, v) => ry[rk[v]!]!),
    points: out,
    width: maxX - minX,
    height: Math.max(0, cy - lastGap),
    labelAt,
  };
}
