/**
 * The graph explorer's picture as an SVG document, made from the layout (not a screenshot of
 * the canvas): every placed section, collapsed ones as blocks and expanded ones as they are laid
 * out, with their operator boxes (title, rows), input/output/ref pills, edges with arrow heads
 * and, when the layout placed them (`L.setLabels(true)`: the "shapes" toggle), the edges' shape
 * labels. The drawing follows graph-paint.ts (the canvas) at full detail and in the layout's
 * direction (top to bottom or left to right), so the file is the whole graph a user expanded,
 * readable at any zoom.
 *
 * Pure (no DOM): the webview calls it on its own layout and posts the text to the extension,
 * which saves it; unit tests parse it.
 */
import type { GraphModel } from './graph-data';
import { LABEL_BASELINE } from './edge-labels';
import { FRAME_HEAD, HEAD_H, ROW_H, clip, opCategory, type GraphLayout, type LBox } from './graph-layout';

/** The explorer's colors (the webview reads them from VS Code's theme; the SVG takes them as given). */
export type GraphColors = Record<
  | 'bg'
  | 'fg'
  | 'dim'
  | 'border'
  | 'widget'
  | 'focus'
  | 'badge'
  | 'badgeFg'
  | 'match'
  | 'edge'
  | 'layer'
  | 'activation'
  | 'normalization'
  | 'tensor'
  | 'other'
  | 'weight'
  | 'const',
  string
>;

/** VS Code's Light+ colors: an SVG made without a theme (and the fallback of an unreadable one). */
export const LIGHT_COLORS: GraphColors = {
  bg: '#ffffff',
  fg: '#3b3b3b',
  dim: '#717171',
  border: '#c8c8c8',
  widget: '#f3f3f3',
  focus: '#0090f1',
  badge: '#c4c4c4',
  badgeFg: '#333333',
  match: 'rgba(234,92,0,0.33)',
  edge: '#6e7681',
  layer: '#1a85ff',
  activation: '#e51400',
  normalization: '#388a34',
  tensor: '#d18616',
  other: '#652d90',
  weight: '#388a34',
  const: '#bf8803',
};

/** What the SVG shows besides the layout. */
export interface GraphSvgOptions {
  colors?: GraphColors;
  /** The font family (the editor's, in the webview). */
  font?: string;
}

/** `s` safe as XML text or an attribute value (also drops the control characters XML 1.0 forbids). */
export function xmlEscape(s: string): string {
  return s
    .replace(/[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const n = (x: number) => String(Math.round(x * 10) / 10);
const attrs = (a: Record<string, string | number>) =>
  Object.entries(a)
    .map(([k, v]) => ` ${k}="${typeof v === 'number' ? n(v) : xmlEscape(v)}"`)
    .join('');
const text = (x: number, y: number, s: string, a: Record<string, string | number> = {}) =>
  `<text${attrs({ x, y, ...a })}>${xmlEscape(s)}</text>`;

/**
 * The whole placed graph of `L` (call `L.place()` first) as a standalone SVG document: sections
 * as they are expanded now, every box and edge of the expanded ones.
 */
export function graphSvg(L: GraphLayout, model: GraphModel, opts: GraphSvgOptions = {}): string {
  const c = opts.colors ?? LIGHT_COLORS;
  const pad = 20;
  const x0 = L.origin.x - pad;
  const y0 = L.origin.y - pad;
  const w = L.width + 2 * pad;
  const h = L.height + 2 * pad;
  const out: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<svg xmlns="http://www.w3.org/2000/svg"${attrs({ width: w, height: h, viewBox: `${n(x0)} ${n(y0)} ${n(w)} ${n(h)}` })}` +
      `${attrs({ 'font-family': opts.font || 'monospace', 'font-size': 11 })}>`,
    `<title>${xmlEscape(model.file.split(/[\\/]/).pop() ?? model.file)}</title>`,
    `<defs><marker id="arrow" viewBox="0 0 7 7" refX="7" refY="3.5" markerWidth="7" markerHeight="7" markerUnits="userSpaceOnUse" orient="auto">` +
      `<path d="M0,0 L7,3.5 L0,7 z"${attrs({ fill: c.edge })}/></marker></defs>`,
    `<rect${attrs({ x: x0, y: y0, width: w, height: h, fill: c.bg })}/>`,
  ];
  const box = (b: LBox) => {
    if (b.kind === 'op') {
      const node = model.nodes[b.node]!;
      out.push(
        `<g class="op"${attrs({ 'data-node': node.name })}>`,
        `<title>${xmlEscape(node.name || node.op)}</title>`,
        `<rect${attrs({ x: b.x, y: b.y, width: b.w, height: b.h, rx: 4, fill: c.widget, stroke: c.border })}/>`,
        `<rect${attrs({ x: b.x, y: b.y, width: b.w, height: HEAD_H, fill: c[opCategory(node.op)], 'fill-opacity': 0.55 })}/>`,
        text(b.x + b.w / 2, b.y + 15, b.title, { 'text-anchor': 'middle', 'font-weight': 600, fill: c.fg }),
      );
      b.rows.forEach((r, i) =>
        out.push(
          text(b.x + 8, b.y + HEAD_H + i * ROW_H + 11, r.text, {
            class: `row ${r.kind}`,
            'font-size': 10,
            fill: r.kind === 'weight' ? c.weight : r.kind === 'const' ? c.const : c.dim,
          }),
        ),
      );
      out.push('</g>');
    } else {
      const ref = b.kind === 'ref';
      out.push(
        `<g${attrs({ class: b.kind })}>`,
        `<rect${attrs({ x: b.x, y: b.y, width: b.w, height: b.h, rx: b.h / 2, fill: ref ? c.widget : c.badge, stroke: c.border })}/>`,
        text(b.x + 10, b.y + 15, (ref ? '↗ ' : '') + b.title, { fill: ref ? c.dim : c.badgeFg }),
        '</g>',
      );
    }
  };
  for (const p of L.placed) {
    const sec = model.sections[p.index]!;
    if (p.index > 0) {
      const [x1, y1, x2, y2] = L.sectionArrow(p.index);
      out.push(`<line${attrs({ x1, y1, x2, y2, stroke: c.edge, 'stroke-width': 1.5, 'marker-end': 'url(#arrow)' })}/>`);
    }
    out.push(`<g${attrs({ class: p.expanded ? 'section' : 'section collapsed', 'data-section': sec.id })}>`);
    if (!p.expanded) {
      out.push(
        `<rect${attrs({ x: p.x, y: p.y, width: p.w, height: p.h, rx: 6, fill: c.widget, stroke: c.layer, 'stroke-width': 1.5 })}/>`,
        text(p.x + 12, p.y + 20, `▸ ${sec.label}`, { 'font-size': 12, 'font-weight': 600, fill: c.fg }),
        text(p.x + 12, p.y + 40, clip(`${sec.nodes.length} ops · ${sec.weights} weights · ${sec.ops}`, 64), {
          'font-size': 10,
          fill: c.dim,
        }),
        '</g>',
      );
      continue;
    }
    out.push(
      `<rect${attrs({ x: p.x, y: p.y, width: p.w, height: p.h, rx: 8, fill: c.bg, stroke: c.border })}/>`,
      `<rect${attrs({ x: p.x, y: p.y, width: p.w, height: FRAME_HEAD, fill: c.badge, 'fill-opacity': 0.35 })}/>`,
      text(p.x + 10, p.y + 17, `▾ ${sec.label} · ${sec.nodes.length} ops`, { 'font-size': 12, 'font-weight': 600, fill: c.fg }),
    );
    const lay = L.layoutOf(p.index);
    const o = L.interior(p.index);
    out.push(`<g${attrs({ transform: `translate(${n(o.x)},${n(o.y)})` })}>`);
    for (const e of lay.edges) {
      if (e.pts.length < 4) continue;
      const xy: string[] = [];
      for (let i = 0; i + 1 < e.pts.length; i += 2) xy.push(`${n(e.pts[i]!)},${n(e.pts[i + 1]!)}`);
      out.push(
        `<polyline class="edge"${attrs({ points: xy.join(' '), fill: 'none', stroke: c.edge, 'marker-end': 'url(#arrow)', 'data-value': model.values[e.value]!.name })}/>`,
      );
      const l = e.label;
      if (l) out.push(text(l.x + 1, l.y + LABEL_BASELINE, l.text, { class: 'shape', 'font-size': 9, fill: c.edge }));
    }
    for (const b of lay.boxes) box(b);
    out.push('</g>', '</g>');
  }
  out.push('</svg>', '');
  return out.join('\n');
}
