/**
 * The graph explorer's layer outline, a minimap for deep models: a narrow strip over the canvas
 * (down its right edge when the layout runs top to bottom, along its top when it runs left to
 * right) with a slot per section (prologue, layer 0…N−1, head), each slot showing its section as
 * a bar (wide when expanded) with its layer number, and the visible part of the graph as a
 * rectangle. Slots are equal, so a 61-layer model stays readable however many layers are open;
 * along the stack the map is linear inside each slot. Clicking or dragging in the strip centers
 * the view on that point.
 *
 * Cheap per frame: the bars are drawn only when the layout changed (GraphLayout.version), the
 * strip was resized or the theme changed; a frame only moves the viewport rectangle (an element
 * positioned by CSS), so the explorer's frame budget on the 61-layer graph is untouched.
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import type { GraphLayout, Placed } from '../../../../core/src/view/graph-layout';
import type { GraphColors } from '../../../../core/src/view/graph-svg';
import { el } from './dom';

/** The view the explorer shows: zoom, translation and the canvas's size (CSS pixels). */
export interface ViewBox {
  k: number;
  tx: number;
  ty: number;
  W: number;
  H: number;
}

/** The strip's handle: its element (added to the canvas's wrapper) and the per-frame update. */
export interface Minimap {
  element: HTMLElement;
  update(view: ViewBox, colors: GraphColors): void;
}

/** Sections fewer than this get no outline (the whole graph fits the view anyway). */
export const MINIMAP_MIN_SECTIONS = 4;
const THICK = 44;

/** A section's short name in its slot: its layer number, else its id's first letter (P, H). */
const short = (m: GraphModel, s: number) => {
  const sec = m.sections[s]!;
  return sec.layer !== undefined ? String(sec.layer) : sec.id.slice(0, 1).toUpperCase();
};

/** Builds the strip; `moveTo(x, y)` centers the view on a point of the graph. */
export function createMinimap(L: GraphLayout, model: GraphModel, moveTo: (x: number, y: number) => void): Minimap {
  const base = el('canvas', { class: 'gx-mm-base' });
  const view = el('div', { class: 'gx-mm-view' });
  const element = el(
    'div',
    { class: 'gx-minimap', title: 'Layer outline: click or drag to move the view', role: 'navigation', 'aria-label': 'Layer outline' },
    base,
    view,
  );
  const n = model.sections.length;
  let drawn = '';
  let lastRect = '';
  let len = 0;
  let lr = false;

  const along = (p: Placed) => (lr ? p.x : p.y);
  /** Where the slot of section `i` ends along the stack: where the next one starts. */
  const segEnd = (i: number) => (i + 1 < n ? along(L.placed[i + 1]!) : lr ? L.origin.x + L.width : L.origin.y + L.height);
  const slot = () => len / n;
  /** A graph coordinate along the stack → strip pixels (piecewise linear by slot). */
  const toStrip = (v: number) => {
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (along(L.placed[mid]!) <= v) lo = mid;
      else hi = mid - 1;
    }
    const a = along(L.placed[lo]!);
    const f = Math.max(0, Math.min(1, (v - a) / Math.max(1, segEnd(lo) - a)));
    return (lo + f) * slot();
  };
  /** Strip pixels → a graph coordinate along the stack. */
  const fromStrip = (px: number) => {
    const i = Math.max(0, Math.min(n - 1, Math.floor(px / slot())));
    const f = Math.max(0, Math.min(1, px / slot() - i));
    const a = along(L.placed[i]!);
    return a + f * (segEnd(i) - a);
  };
  /** Across the stack: linear over the picture's breadth. */
  const crossOrigin = () => (lr ? L.origin.y : L.origin.x);
  const crossSize = () => Math.max(1, lr ? L.height : L.width);

  const paintBase = (colors: GraphColors, w: number, h: number) => {
    const dpr = window.devicePixelRatio || 1;
    base.width = Math.max(1, Math.round(w * dpr));
    base.height = Math.max(1, Math.round(h * dpr));
    base.style.width = `${w}px`;
    base.style.height = `${h}px`;
    const ctx = base.getContext('2d')!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const s = slot();
    const cs = THICK / crossSize();
    ctx.font = '8px sans-serif';
    ctx.textBaseline = 'middle';
    // Every layer number that fits: one in `step` slots.
    const step = Math.max(1, Math.ceil((lr ? 16 : 10) / s));
    L.placed.forEach((p, i) => {
      const c0 = ((lr ? p.y : p.x) - crossOrigin()) * cs;
      const c1 = c0 + (lr ? p.h : p.w) * cs;
      const a0 = i * s + (s > 4 ? 1 : 0);
      const a1 = (i + 1) * s - (s > 4 ? 1 : 0);
      ctx.globalAlpha = p.expanded ? 0.85 : 0.45;
      ctx.fillStyle = p.expanded ? colors.layer : colors.dim;
      if (lr) ctx.fillRect(a0, c0, a1 - a0, c1 - c0);
      else ctx.fillRect(c0, a0, c1 - c0, a1 - a0);
      ctx.globalAlpha = 1;
      if (i % step) return;
      ctx.fillStyle = colors.fg;
      const t = short(model, i);
      if (lr) ctx.fillText(t, a0 + 1, THICK - 5);
      else ctx.fillText(t, 2, (a0 + a1) / 2);
    });
  };

  const update = (v: ViewBox, colors: GraphColors) => {
    lr = L.direction === 'LR';
    element.classList.toggle('lr', lr);
    const w = element.clientWidth;
    const h = element.clientHeight;
    len = lr ? w : h;
    if (!len) return;
    const key = `${L.version}|${L.direction}|${w}x${h}|${colors.layer}|${colors.dim}|${colors.fg}`;
    if (key !== drawn) {
      drawn = key;
      paintBase(colors, w, h);
      element.dataset.slot = slot().toFixed(2);
      element.dataset.direction = L.direction;
    }
    // The view's rectangle in graph coordinates, mapped into the strip.
    const [x0, y0, x1, y1] = [-v.tx / v.k, -v.ty / v.k, (v.W - v.tx) / v.k, (v.H - v.ty) / v.k];
    const cs = THICK / crossSize();
    const a0 = toStrip(lr ? x0 : y0);
    const a1 = toStrip(lr ? x1 : y1);
    const c0 = Math.max(0, ((lr ? y0 : x0) - crossOrigin()) * cs);
    const c1 = Math.min(THICK, ((lr ? y1 : x1) - crossOrigin()) * cs);
    const [l, t, rw, rh] = lr ? [a0, c0, a1 - a0, c1 - c0] : [c0, a0, c1 - c0, a1 - a0];
    const rect = `${l.toFixed(1)},${t.toFixed(1)},${Math.max(2, rw).toFixed(1)},${Math.max(2, rh).toFixed(1)}`;
    if (rect === lastRect) return;
    lastRect = rect;
    const [rl, rt, rwid, rhei] = rect.split(',');
    Object.assign(view.style, { left: `${rl}px`, top: `${rt}px`, width: `${rwid}px`, height: `${rhei}px` });
    element.dataset.view = rect;
  };

  // Click or drag: center the view on the point under the pointer.
  let dragging = false;
  const go = (e: PointerEvent) => {
    const r = element.getBoundingClientRect();
    const a = lr ? e.clientX - r.left : e.clientY - r.top;
    const c = ((lr ? e.clientY - r.top : e.clientX - r.left) / THICK) * crossSize() + crossOrigin();
    const wa = fromStrip(a);
    if (lr) moveTo(wa, c);
    else moveTo(c, wa);
  };
  element.addEventListener('pointerdown', (e) => {
    element.setPointerCapture(e.pointerId);
    dragging = true;
    go(e);
    e.preventDefault();
  });
  element.addEventListener('pointermove', (e) => dragging && go(e));
  element.addEventListener('pointerup', () => (dragging = false));
  return { element, update };
}

/**
 * The view's state on the canvas's data attributes, for tests and assistive tools: the zoom, the
 * open blocks, the direction, the first blocks' rectangles, the block at the view's center and
 * the edge labels drawn (their count and the first few).
 */
export function exposeViewState(canvas: HTMLCanvasElement, L: GraphLayout, v: ViewBox, edgeLabels: string[]): void {
  const d = canvas.dataset;
  d.zoom = v.k.toFixed(3);
  d.expanded = String(L.expanded.size);
  d.direction = L.direction;
  d.blocks = L.placed
    .slice(0, 4)
    .map((p) => [p.x, p.y, p.w, p.h].map(Math.round).join(','))
    .join(' ');
  const mid = L.direction === 'LR' ? (v.W / 2 - v.tx) / v.k : (v.H / 2 - v.ty) / v.k;
  d.center = String(L.sectionsIn(mid, mid)[0] ?? -1);
  d.edgeLabels = String(edgeLabels.length);
  d.edgeSample = edgeLabels.slice(0, 8).join(' | ');
}
