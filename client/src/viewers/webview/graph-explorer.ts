/**
 * The ONNX viewer's Graph tab: the whole model as one navigable picture drawn on a canvas.
 * Layout comes from core's incremental {@link GraphLayout} (one block per decoder layer, laid
 * out when expanded); drawing culls to the viewport and drops text at small zoom, so a frame
 * stays cheap on a 4,000-node graph. Wheel zooms around the cursor, dragging pans, keys
 * navigate (see {@link KEYS}); search jumps to a node; the side panel shows the selection. The
 * layout runs top to bottom or left to right (the toolbar's picker); deep models get a layer
 * outline (graph-minimap.ts) that moves the view.
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import { neighbors } from '../../../../core/src/view/graph-data';
import { GraphSearch, type SearchHit } from '../../../../core/src/view/graph-search';
import { searchUi } from './graph-search-box';
import { GraphLayout } from '../../../../core/src/view/graph-layout';
import type { GraphImageFormat } from '../../../../core/src/view/graph-image';
import { graphSvg } from '../../../../core/src/view/graph-svg';
import { el } from './dom';
import { paintGraph, themeColors } from './graph-paint';
import { directionPicker, panelSplitter, toggleBox, type ExplorerPrefs } from './graph-controls';
import { createMinimap, exposeViewState, MINIMAP_MIN_SECTIONS } from './graph-minimap';
import { legend, selectionPanel, type PanelHooks, type Selection } from './graph-panel';

export type { ExplorerPrefs } from './graph-controls';

/** Keyboard help, shown as the canvas's tooltip. */
export const KEYS =
  'Wheel: zoom · drag: pan · click a block: expand · arrows: producer/consumer/previous/next node (pan when nothing is selected) · +/−: zoom · 0: fit · Enter: expand/collapse · Esc: clear · Ctrl+F or /: search';

/** Callbacks into the host page. */
export interface ExplorerHooks extends PanelHooks {
  /** The toggles kept in the webview's state (VS Code restores it with the view). */
  loadPrefs?(): Partial<ExplorerPrefs> | undefined;
  savePrefs?(p: ExplorerPrefs): void;
  rendered(text: string): void;
  /** The picture to save: an SVG document, or the canvas as a PNG data URL. */
  saveImage(format: GraphImageFormat, data: string): void;
}

/** The explorer's handle: the host calls `shown()` when the tab becomes visible. */
export interface Explorer {
  shown(): void;
  /** Selects `node` (expanding its block) and centers it. */
  reveal(node: number): void;
  search(q: string): SearchHit[];
  /** Saves the whole graph as laid out (SVG) or the current view (PNG). */
  exportImage(format: GraphImageFormat): void;
}

/** Builds the explorer for `model` into `host`. */
export function createExplorer(host: HTMLElement, model: GraphModel, hooks: ExplorerHooks): Explorer {
  const L = new GraphLayout(model);
  const finder = new GraphSearch(model);
  // Blocks that are not decoder layers (prologue, head) and the first layer start expanded.
  model.sections.forEach((s, i) => {
    if ((s.layer === undefined && s.nodes.length <= 400) || s.layer === 0 || model.sections.length === 1) L.expanded.add(i);
  });
  L.place();

  const canvas = el('canvas', { class: 'gx-canvas', tabindex: '0', title: KEYS, 'aria-label': 'Graph; ' + KEYS });
  const wrap = el('div', { class: 'gx-wrap' }, canvas, legend(window.innerHeight > 800));
  const panel = el('div', { class: 'gx-panel', 'aria-live': 'polite' });
  // reveal and redraw are defined below; the search calls them only after the user types.
  const search = searchUi(model, finder, { reveal: (n) => reveal(n), changed: () => redraw(), escape: () => canvas.focus() });
  const prefs: ExplorerPrefs = { attrs: true, weights: true, shapes: false, direction: 'TB', ...hooks.loadPrefs?.() };
  L.setRows(prefs);
  L.setDirection(prefs.direction === 'LR' ? 'LR' : 'TB');
  L.setLabels(prefs.shapes);
  const attrs = toggleBox('gx-attrs', 'attributes', 'Show the first attributes of each operator as rows', prefs.attrs);
  const weights = toggleBox('gx-weights', 'weights', 'Show weight inputs (their names) as rows', prefs.weights);
  const shapesBox = toggleBox('gx-shapes', 'shapes on edges', 'Label edges with dtype and shape (from 50 % zoom)', prefs.shapes);
  const shapes = shapesBox.box;
  const direction = directionPicker(L.direction);
  const btn = (label: string, title: string, fn: () => void) => {
    const b = el('button', { title }, label);
    b.addEventListener('click', fn);
    return b;
  };
  const ops = model.nodes.length;
  const note = el(
    'span',
    { class: 'summary' },
    `${ops.toLocaleString('en-US')} operators in ${model.sections.length} blocks · ${model.folded} constants folded`,
  );
  const toolbar = el(
    'div',
    { class: 'toolbar' },
    btn('Fit', 'Fit to view (0)', () => fit()),
    btn('−', 'Zoom out (−)', () => zoomAt(1 / 1.25)),
    btn('+', 'Zoom in (+)', () => zoomAt(1.25)),
    btn('Expand all', 'Expand every block', () => setAll(true)),
    btn('Collapse all', 'Collapse every block', () => setAll(false)),
    btn('SVG…', 'Export the whole graph, blocks expanded as they are, as an SVG file', () => exportImage('svg')),
    btn('PNG…', 'Export the current view as a PNG image', () => exportImage('png')),
    attrs.label,
    weights.label,
    shapesBox.label,
    direction.label,
    // Last but the note: when the toolbar wraps, its results list opens over the canvas, never over a control.
    search.element,
    note,
  );
  const gx = el('div', { class: 'gx' }, wrap);
  host.replaceChildren(toolbar, gx);
  // The layer outline: clicking it centers the view on that point of the graph.
  const minimap =
    model.sections.length >= MINIMAP_MIN_SECTIONS
      ? createMinimap(L, model, (x, y) => {
          tx = W / 2 - x * k;
          ty = H / 2 - y * k;
          redraw();
        })
      : undefined;
  if (minimap) wrap.append(minimap.element);
  panelSplitter(gx, panel, prefs.panelWidth, (w) => ((prefs.panelWidth = w), hooks.savePrefs?.({ ...prefs })));

  let colors = themeColors();
  let k = 1;
  let tx = 0;
  let ty = 0;
  let W = 0;
  let H = 0;
  let dpr = 1;
  let selected: Selection | undefined;
  let firstPaint = true;
  let draws = 0;
  const ctx = canvas.getContext('2d', { alpha: false })!;
  const font = getComputedStyle(document.body).getPropertyValue('--vscode-editor-font-family').trim() || 'monospace';

  const resize = () => {
    dpr = window.devicePixelRatio || 1;
    W = wrap.clientWidth;
    H = wrap.clientHeight;
    canvas.width = Math.max(1, Math.round(W * dpr));
    canvas.height = Math.max(1, Math.round(H * dpr));
    canvas.style.width = `${W}px`;
    canvas.style.height = `${H}px`;
  };

  const draw = () => {
    const t0 = performance.now();
    const { drawn, edgeLabels } = paintGraph({
      ctx,
      model,
      L,
      colors,
      font,
      k,
      tx,
      ty,
      W,
      H,
      dpr,
      selected,
      matches: search.matches(),
      showShapes: shapes.checked,
    });
    minimap?.update({ k, tx, ty, W, H }, colors);
    exposeViewState(canvas, L, { k, tx, ty, W, H }, edgeLabels);
    const ms = performance.now() - t0;
    // Frame costs for `npm run bench` (cleared now and then, so a long session does not collect them).
    if (++draws % 5000 === 0) performance.clearMeasures('gx-draw');
    performance.measure('gx-draw', { start: t0, duration: ms });
    if (firstPaint) {
      firstPaint = false;
      performance.mark('gx-first-paint');
    }
    lastDrawn = drawn;
  };

  let lastDrawn: string[] = [];
  /** The SVG is made from the layout (every block as expanded now); the PNG is this frame, drawn now. */
  const exportImage = (format: GraphImageFormat) => {
    if (format === 'png') {
      draw();
      hooks.saveImage('png', canvas.toDataURL('image/png'));
    } else hooks.saveImage('svg', graphSvg(L, model, { colors, font }));
  };
  let queued = false;
  const redraw = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      draw();
    });
  };
  /** What the e2e suite reads back: visible labels and the side panel's text. */
  const report = () => hooks.rendered([...lastDrawn, '--- panel ---', panel.innerText || panel.textContent || ''].join('\n'));

  const zoomAt = (f: number, cx = W / 2, cy = H / 2) => {
    const nk = Math.min(4, Math.max(0.02, k * f));
    tx = cx - ((cx - tx) * nk) / k;
    ty = cy - ((cy - ty) * nk) / k;
    k = nk;
    redraw();
  };
  const fit = () => {
    if (!W || !H) return;
    k = Math.min(2, Math.max(0.01, Math.min(W / (L.width + 40), H / (L.height + 40))));
    tx = W / 2 - (L.origin.x + L.width / 2) * k;
    ty = H / 2 - (L.origin.y + L.height / 2) * k;
    redraw();
  };
  /**
   * The start: the first block at a readable zoom, 16 px from the top (top to bottom) or the
   * left (left to right); across, centered, or from its edge when the picture is broader.
   */
  const top = () => {
    const lr = L.direction === 'LR';
    const o = L.origin;
    k = Math.max(0.6, Math.min(1, lr ? H / (L.height + 40) : W / (L.width + 40)));
    // From the edge when broader than the view: below the layer outline's strip when it runs along the top.
    const across = (size: number, view: number, from: number, edge: number) =>
      size * k + 40 <= view ? view / 2 - (from + size / 2) * k : edge - from * k;
    tx = lr ? 16 - o.x * k : across(L.width, W, o.x, 20);
    ty = lr ? across(L.height, H, o.y, minimap ? 64 : 20) : 16 - o.y * k;
  };
  const center = (r: { x: number; y: number; w: number; h: number }) => {
    if (k < 0.7) k = 1;
    const lr = L.direction === 'LR';
    tx = (lr ? W / 3 : W / 2) - (r.x + r.w / 2) * k;
    ty = (lr ? H / 2 : H / 3) - (r.y + r.h / 2) * k;
  };
  const setAll = (open: boolean) => {
    model.sections.forEach((_, i) => (open ? L.expanded.add(i) : L.expanded.delete(i)));
    L.place();
    if (selected?.kind === 'node') center(L.rectOf(selected.node));
    redraw();
  };
  const toggle = (s: number) => {
    if (L.expanded.has(s)) L.expanded.delete(s);
    else L.expanded.add(s);
    L.place();
    redraw();
  };

  const select = (sel: Selection | undefined) => {
    selected = sel;
    panel.replaceChildren(...selectionPanel(model, sel, { ...hooks, selectNode: (n) => reveal(n), toggle: (s) => toggle(s) }));
    redraw();
    requestAnimationFrame(report);
  };
  const reveal = (n: number) => {
    const s = model.nodes[n]!.section;
    if (!L.expanded.has(s)) {
      L.expanded.add(s);
      L.place();
    }
    center(L.rectOf(n));
    select({ kind: 'node', node: n });
  };

  // Pointer: drag pans; a click without movement selects (or expands a block).
  let drag: { x: number; y: number; tx: number; ty: number; moved: boolean } | undefined;
  canvas.addEventListener('pointerdown', (e) => {
    canvas.focus();
    canvas.setPointerCapture(e.pointerId);
    drag = { x: e.clientX, y: e.clientY, tx, ty, moved: false };
  });
  canvas.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x;
    const dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (!drag.moved) return;
    tx = drag.tx + dx;
    ty = drag.ty + dy;
    redraw();
  });
  canvas.addEventListener('pointerup', (e) => {
    const d = drag;
    drag = undefined;
    if (!d || d.moved) return;
    const r = canvas.getBoundingClientRect();
    const wx = (e.clientX - r.left - tx) / k;
    const wy = (e.clientY - r.top - ty) / k;
    const h = L.hit(wx, wy);
    if (!h) return select(undefined);
    if (!h.box) {
      if (!L.placed[h.section]!.expanded) toggle(h.section);
      else if (selected?.kind === 'section' && selected.section === h.section) toggle(h.section);
      return select({ kind: 'section', section: h.section });
    }
    if (h.box.kind === 'op') select({ kind: 'node', node: h.box.node });
    else if (h.box.kind === 'ref' && model.values[h.box.value]!.producer >= 0) reveal(model.values[h.box.value]!.producer);
    else select({ kind: 'value', value: h.box.value });
  });
  canvas.addEventListener(
    'wheel',
    (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      const f = Math.exp(-e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.0015));
      zoomAt(f, e.clientX - r.left, e.clientY - r.top);
    },
    { passive: false },
  );
  canvas.addEventListener('keydown', (e) => {
    const pan = (dx: number, dy: number) => ((tx += dx), (ty += dy), redraw());
    const node = selected?.kind === 'node' ? selected.node : undefined;
    const go = (n: number | undefined) => n !== undefined && n >= 0 && n < model.nodes.length && reveal(n);
    switch (e.key) {
      case '+':
      case '=':
        zoomAt(1.25);
        break;
      case '-':
      case '_':
        zoomAt(1 / 1.25);
        break;
      case '0':
        fit();
        break;
      case 'ArrowUp':
        if (node === undefined) pan(0, 60);
        else go(neighbors(model, node).up[0]);
        break;
      case 'ArrowDown':
        if (node === undefined) pan(0, -60);
        else go(neighbors(model, node).down[0]);
        break;
      case 'ArrowLeft':
        if (node === undefined) pan(60, 0);
        else go(node - 1);
        break;
      case 'ArrowRight':
        if (node === undefined) pan(-60, 0);
        else go(node + 1);
        break;
      case 'Enter':
        if (selected?.kind === 'section') toggle(selected.section);
        else if (node !== undefined) toggle(model.nodes[node]!.section);
        break;
      case 'Escape':
        select(undefined);
        break;
      case '/':
        search.box.focus();
        break;
      default:
        if (e.key === 'f' && (e.ctrlKey || e.metaKey)) search.box.focus();
        else return;
    }
    e.preventDefault();
  });

  /** A toggle changed the layout (rows, labels' room between ranks, direction): laid out again, the selection kept in view. */
  const layoutChanged = () => {
    prefs.attrs = attrs.box.checked;
    prefs.weights = weights.box.checked;
    prefs.shapes = shapes.checked;
    prefs.direction = direction.select.value === 'LR' ? 'LR' : 'TB';
    hooks.savePrefs?.({ ...prefs });
    const turned = prefs.direction !== L.direction;
    L.setRows(prefs);
    L.setLabels(prefs.shapes);
    L.setDirection(prefs.direction);
    if (selected?.kind === 'node') center(L.rectOf(selected.node));
    else if (turned) top();
    redraw();
  };
  for (const box of [attrs.box, weights.box, shapes, direction.select]) box.addEventListener('change', layoutChanged);
  new ResizeObserver(() => {
    if (!wrap.clientWidth) return;
    const first = W === 0;
    resize();
    if (first) top();
    redraw();
  }).observe(wrap);
  // VS Code marks a theme change on <body> (class vscode-light/dark, inline variables).
  new MutationObserver(() => {
    colors = themeColors();
    redraw();
  }).observe(document.body, { attributes: true, attributeFilter: ['class', 'style'] });
  select(undefined);
  return {
    shown: () => {
      resize();
      if (W && tx === 0 && ty === 0) top();
      redraw();
      requestAnimationFrame(report);
    },
    reveal,
    search: (q) => search.run(q),
    exportImage,
  };
}
