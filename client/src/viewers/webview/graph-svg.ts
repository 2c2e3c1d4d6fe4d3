/**
 * Lays out one node group with dagre (@dagrejs/dagre, top to bottom) and draws it as SVG:
 * operators as boxes, the group's border values (runtime inputs, weights, values from or to
 * other groups) as filled or dashed boxes, edges as dagre's polylines with arrow heads.
 */
import dagre from '@dagrejs/dagre';
import type { GraphView } from '../../../../core/src/view/types';

const SVG = 'http://www.w3.org/2000/svg';
const CHAR_W = 6.6;

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** The laid-out drawing of `view` (width/height in px), to be put in a scrolling container. */
export function drawGraph(view: GraphView, scale = 1): SVGSVGElement {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 28, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of view.nodes) g.setNode(n.id, { width: Math.max(48, n.label.length * CHAR_W + 16), height: 24 });
  for (const e of view.edges) g.setEdge(e.from, e.to);
  dagre.layout(g);
  const { width = 0, height = 0 } = g.graph();
  const root = svg('svg', { width: width * scale, height: height * scale, viewBox: `0 0 ${width} ${height}`, role: 'img' });
  const defs = svg('defs');
  const marker = svg('marker', {
    id: 'arrow',
    viewBox: '0 0 10 10',
    refX: 10,
    refY: 5,
    markerWidth: 7,
    markerHeight: 7,
    orient: 'auto-start-reverse',
  });
  marker.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }));
  defs.append(marker);
  root.append(defs);
  for (const e of g.edges()) {
    const pts: { x: number; y: number }[] = g.edge(e).points ?? [];
    if (!pts.length) continue;
    root.append(
      svg('path', { d: pts.map((p, i) => `${i ? 'L' : 'M'} ${p.x.toFixed(1)} ${p.y.toFixed(1)}`).join(' '), 'marker-end': 'url(#arrow)' }),
    );
  }
  const byId = new Map(view.nodes.map((n) => [n.id, n]));
  for (const id of g.nodes()) {
    const n = byId.get(id)!;
    const box = g.node(id);
    const grp = svg('g', {
      class: `node-${n.kind}`,
      transform: `translate(${(box.x - box.width / 2).toFixed(1)}, ${(box.y - box.height / 2).toFixed(1)})`,
    });
    const title = svg('title');
    title.textContent = n.title;
    grp.append(title, svg('rect', { width: box.width, height: box.height, rx: n.kind === 'op' ? 4 : 10 }));
    const text = svg('text', { x: box.width / 2, y: 16, 'text-anchor': 'middle' });
    text.textContent = n.label;
    grp.append(text);
    root.append(grp);
  }
  return root;
}
