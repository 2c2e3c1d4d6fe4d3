/**
 * Painting one frame of the Graph tab (graph-explorer.ts keeps the view state and the events):
 * the theme's colors, the blocks in view (expanded ones with their edges, boxes and, zoomed in,
 * shape labels where the layout placed them, over no box), culled to the viewport, in the
 * layout's direction; text is dropped at small zoom and far-out boxes are batched into one path
 * per color, so a frame stays cheap on a 4,000-node graph.
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import { LABEL_BASELINE } from '../../../../core/src/view/edge-labels';
import { FRAME_HEAD, GraphLayout, HEAD_H, ROW_H, SECTION_GAP, clip, opCategory, type LBox } from '../../../../core/src/view/graph-layout';
import type { GraphColors } from '../../../../core/src/view/graph-svg';
import type { Selection } from './graph-panel';

/** The explorer's colors, read from VS Code's theme variables. */
export type Colors = GraphColors;

/** The current theme's {@link Colors} (VS Code marks a theme change on <body>; the explorer reads them again). */
export function themeColors(): Colors {
  const css = getComputedStyle(document.body);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    bg: v('--vscode-editor-background', '#1e1e1e'),
    fg: v('--vscode-foreground', '#cccccc'),
    dim: v('--vscode-descriptionForeground', '#999999'),
    border: v('--vscode-panel-border', '#555555'),
    widget: v('--vscode-editorWidget-background', '#252526'),
    focus: v('--vscode-focusBorder', '#007fd4'),
    badge: v('--vscode-badge-background', '#4d4d4d'),
    badgeFg: v('--vscode-badge-foreground', '#ffffff'),
    match: v('--vscode-editor-findMatchHighlightBackground', 'rgba(234,92,0,0.33)'),
    edge: v('--vscode-editorLineNumber-foreground', '#858585'),
    layer: v('--vscode-charts-blue', '#3794ff'),
    activation: v('--vscode-charts-red', '#f14c4c'),
    normalization: v('--vscode-charts-green', '#89d185'),
    tensor: v('--vscode-charts-orange', '#d18616'),
    other: v('--vscode-charts-purple', '#b180d7'),
    weight: v('--vscode-charts-green', '#89d185'),
    const: v('--vscode-charts-yellow', '#cca700'),
  };
}

/** What one frame is painted from: the canvas, the model and its layout, the theme, the view transform and what is selected or matched. */
export interface PaintView {
  ctx: CanvasRenderingContext2D;
  model: GraphModel;
  L: GraphLayout;
  colors: Colors;
  font: string;
  /** Zoom and translation (CSS pixels), the canvas's size and its device pixel ratio. */
  k: number;
  tx: number;
  ty: number;
  W: number;
  H: number;
  dpr: number;
  selected: Selection | undefined;
  matches: ReadonlySet<number>;
  /** The "shapes" box is checked (labels are drawn from 50 % zoom). */
  showShapes: boolean;
}

/** Adds to the current path an arrow head at `(x, y)` pointing away from `(fx, fy)`. */
function arrowHead(ctx: CanvasRenderingContext2D, fx: number, fy: number, x: number, y: number, len = 7, half = 3.5): void {
  const d = Math.hypot(x - fx, y - fy) || 1;
  const [ux, uy] = [(x - fx) / d, (y - fy) / d];
  ctx.moveTo(x - ux * len - uy * half, y - uy * len + ux * half);
  ctx.lineTo(x - ux * len + uy * half, y - uy * len - ux * half);
  ctx.lineTo(x, y);
  ctx.closePath();
}

/** Paints one frame; returns the labels drawn (what the e2e suite reads) and the edge labels. */
export function paintGraph(view: PaintView): { drawn: string[]; edgeLabels: string[] } {
  const { ctx, model, L, colors, font, k, tx, ty, W, H, dpr, selected, matches } = view;
  const fillRound = (x: number, y: number, w: number, h: number, r: number, fill: string, stroke?: string, lw = 1) => {
    ctx.beginPath();
    ctx.roundRect(x, y, w, h, r);
    ctx.fillStyle = fill;
    ctx.fill();
    if (stroke) {
      ctx.lineWidth = lw / k;
      ctx.strokeStyle = stroke;
      ctx.stroke();
    }
  };

  const drawBox = (b: LBox, sel: boolean) => {
    const showText = k * 11 >= 4;
    if (b.kind === 'op') {
      const node = model.nodes[b.node]!;
      fillRound(b.x, b.y, b.w, b.h, 4, colors.widget, sel ? colors.focus : colors.border, sel ? 3 : 1);
      ctx.globalAlpha = 0.55;
      ctx.fillStyle = colors[opCategory(node.op)];
      ctx.fillRect(b.x, b.y, b.w, HEAD_H);
      ctx.globalAlpha = 1;
      if (matches.has(b.node)) fillRound(b.x - 3, b.y - 3, b.w + 6, b.h + 6, 6, colors.match);
      if (!showText) return;
      ctx.fillStyle = colors.fg;
      ctx.font = `600 11px ${font}`;
      ctx.fillText(b.title, b.x + b.w / 2 - (b.title.length * 6.6) / 2, b.y + 15);
      if (k < 0.45) return;
      ctx.font = `10px ${font}`;
      b.rows.forEach((r, i) => {
        ctx.fillStyle = r.kind === 'weight' ? colors.weight : r.kind === 'const' ? colors.const : colors.dim;
        ctx.fillText(r.text, b.x + 8, b.y + HEAD_H + i * ROW_H + 11);
      });
    } else {
      const fill = b.kind === 'ref' ? colors.widget : colors.badge;
      fillRound(b.x, b.y, b.w, b.h, b.h / 2, fill, sel ? colors.focus : colors.border, sel ? 3 : 1);
      if (!showText) return;
      ctx.fillStyle = b.kind === 'ref' ? colors.dim : colors.badgeFg;
      ctx.font = `11px ${font}`;
      ctx.fillText((b.kind === 'ref' ? '↗ ' : '') + b.title, b.x + 10, b.y + 15);
    }
  };

  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = colors.bg;
  ctx.fillRect(0, 0, W, H);
  ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * tx, dpr * ty);
  const x0 = -tx / k;
  const y0 = -ty / k;
  const x1 = (W - tx) / k;
  const y1 = (H - ty) / k;
  const drawn: string[] = [];
  const showShapes = view.showShapes && k >= 0.5;
  // Edge labels drawn (for tests: their count and the first few).
  const edgeLabels: string[] = [];
  ctx.textBaseline = 'alphabetic';
  const lr = L.direction === 'LR';
  for (const s of L.sectionsIn(lr ? x0 - SECTION_GAP : y0 - SECTION_GAP, lr ? x1 : y1)) {
    const p = L.placed[s]!;
    const sec = model.sections[s]!;
    if (s > 0) {
      const [ax, ay, bx, by] = L.sectionArrow(s);
      ctx.strokeStyle = colors.edge;
      ctx.lineWidth = 1.5 / k;
      ctx.beginPath();
      ctx.moveTo(ax, ay);
      ctx.lineTo(lr ? bx - 4 : bx, lr ? by : by - 4);
      ctx.stroke();
      ctx.fillStyle = colors.edge;
      ctx.beginPath();
      arrowHead(ctx, ax, ay, bx, by, 8, 4);
      ctx.fill();
    }
    if (p.x > x1 || p.x + p.w < x0 || p.y > y1 || p.y + p.h < y0) continue;
    const isSel = selected?.kind === 'section' && selected.section === s;
    if (!p.expanded) {
      fillRound(p.x, p.y, p.w, p.h, 6, colors.widget, isSel ? colors.focus : colors.layer, isSel ? 3 : 1.5);
      if (k * 11 >= 4) {
        ctx.fillStyle = colors.fg;
        ctx.font = `600 12px ${font}`;
        ctx.fillText(`▸ ${sec.label}`, p.x + 12, p.y + 20);
        ctx.font = `10px ${font}`;
        ctx.fillStyle = colors.dim;
        ctx.fillText(clip(`${sec.nodes.length} ops · ${sec.weights} weights · ${sec.ops}`, 64), p.x + 12, p.y + 40);
      }
      drawn.push(sec.label);
      continue;
    }
    fillRound(p.x, p.y, p.w, p.h, 8, colors.bg, isSel ? colors.focus : colors.border, isSel ? 3 : 1);
    ctx.globalAlpha = 0.35;
    ctx.fillStyle = colors.badge;
    ctx.fillRect(p.x, p.y, p.w, FRAME_HEAD);
    ctx.globalAlpha = 1;
    if (k * 11 >= 3) {
      ctx.fillStyle = colors.fg;
      ctx.font = `600 12px ${font}`;
      ctx.fillText(`▾ ${sec.label} · ${sec.nodes.length} ops`, p.x + 10, p.y + 17);
    }
    const lay = L.layoutOf(s);
    const o = L.interior(s);
    ctx.save();
    ctx.translate(o.x, o.y);
    const [ix0, iy0, ix1, iy1] = [x0 - o.x, y0 - o.y, x1 - o.x, y1 - o.y];
    ctx.strokeStyle = colors.edge;
    ctx.lineWidth = 1 / k;
    ctx.beginPath();
    for (const e of lay.edges) {
      const [a, b, c, d] = e.box;
      if (c < ix0 || a > ix1 || d < iy0 || b > iy1 || e.pts.length < 4) continue;
      ctx.moveTo(e.pts[0]!, e.pts[1]!);
      for (let i = 2; i < e.pts.length; i += 2) ctx.lineTo(e.pts[i]!, e.pts[i + 1]!);
    }
    ctx.stroke();
    ctx.fillStyle = colors.edge;
    ctx.font = `9px ${font}`;
    // Arrow heads in one path (none below 30 %: they are sub-pixel there).
    if (k >= 0.3) ctx.beginPath();
    for (const e of lay.edges) {
      const [a, b, c, d] = e.box;
      if (c < ix0 || a > ix1 || d < iy0 || b > iy1 || e.pts.length < 4) continue;
      const n = e.pts.length;
      if (k >= 0.3) arrowHead(ctx, e.pts[n - 4]!, e.pts[n - 3]!, e.pts[n - 2]!, e.pts[n - 1]!);
      const l = e.label;
      if (showShapes && l) {
        ctx.fillText(l.text, l.x + 1, l.y + LABEL_BASELINE);
        edgeLabels.push(l.text);
      }
    }
    if (k >= 0.3) ctx.fill();
    const coarse = k * 11 < 4;
    const batches = new Map<string, LBox[]>();
    for (const b of lay.boxes) {
      if (b.x > ix1 || b.x + b.w < ix0 || b.y > iy1 || b.y + b.h < iy0) continue;
      if (coarse) {
        // Far out: plain rectangles, one path per color.
        const c = b.kind === 'op' ? colors[opCategory(model.nodes[b.node]!.op)] : colors.badge;
        const list = batches.get(c);
        if (list) list.push(b);
        else batches.set(c, [b]);
        continue;
      }
      const sel =
        (selected?.kind === 'node' && b.node === selected.node) || (selected?.kind === 'value' && b.node < 0 && b.value === selected.value);
      drawBox(b, sel);
      if (drawn.length < 400) drawn.push(b.title);
    }
    for (const [c, list] of batches) {
      ctx.fillStyle = c;
      ctx.beginPath();
      for (const b of list) ctx.rect(b.x, b.y, b.w, b.h);
      ctx.fill();
    }
    ctx.restore();
  }
  return { drawn, edgeLabels };
}
