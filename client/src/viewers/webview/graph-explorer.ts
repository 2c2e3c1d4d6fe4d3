/**
 * The ONNX viewer's Graph tab: the whole model as one navigable picture drawn on a canvas.
 * Layout comes from core's incremental {@link GraphLayout} (one block per decoder layer, laid
 * out when expanded); drawing culls to the viewport and drops text at small zoom, so a frame
 * stays cheap on a 4,000-node graph. Wheel zooms around the cursor, dragging pans, keys
 * navigate (see {@link KEYS}); search jumps to a node; the side panel shows the selection.
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import { neighbors } from '../../../../core/src/view/graph-data';
import { GraphSearch, type SearchHit } from '../../../../core/src/view/graph-search';
import { FRAME_HEAD, GraphLayout, HEAD_H, ROW_H, SECTION_GAP, clip, opCategory, type LBox } from '../../../../core/src/view/graph-layout';
import { dims, el } from './dom';
import { legend, selectionPanel, type PanelHooks, type Selection } from './graph-panel';

/** Keyboard help, shown as the canvas's tooltip. */
export const KEYS =
  'Wheel: zoom · drag: pan · click a block: expand · arrows: producer/consumer/previous/next node (pan when nothing is selected) · +/−: zoom · 0: fit · Enter: expand/collapse · Esc: clear · Ctrl+F or /: search';

/** Callbacks into the host page. */
export interface ExplorerHooks extends PanelHooks {
  rendered(text: string): void;
}

type Colors = Record<
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

function themeColors(): Colors {
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

/** The explorer's handle: the host calls `shown()` when the tab becomes visible. */
export interface Explorer {
  shown(): void;
  /** Selects `node` (expanding its block) and centers it. */
  reveal(node: number): void;
  search(q: string): SearchHit[];
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
  const searchBox = el('input', {
    type: 'text',
    class: 'gx-search',
    placeholder: 'Search nodes, inputs, tensors',
    'aria-label': 'Search the graph',
  });
  const results = el('div', { class: 'gx-results', hidden: '' });
  const shapes = el('input', { type: 'checkbox', id: 'gx-shapes' });
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
    el('span', { class: 'gx-search-box' }, searchBox, results),
    btn('Fit', 'Fit to view (0)', () => fit()),
    btn('−', 'Zoom out (−)', () => zoomAt(1 / 1.25)),
    btn('+', 'Zoom in (+)', () => zoomAt(1.25)),
    btn('Expand all', 'Expand every block', () => setAll(true)),
    btn('Collapse all', 'Collapse every block', () => setAll(false)),
    el('label', { for: 'gx-shapes', class: 'gx-check' }, shapes, ' shapes on edges'),
    note,
  );
  host.replaceChildren(toolbar, el('div', { class: 'gx' }, wrap, panel));

  let colors = themeColors();
  let k = 1;
  let tx = 0;
  let ty = 0;
  let W = 0;
  let H = 0;
  let dpr = 1;
  let selected: Selection | undefined;
  let matches = new Set<number>();
  let hits: SearchHit[] = [];
  let hitAt = -1;
  let searched = '';
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

  const draw = () => {
    const t0 = performance.now();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = colors.bg;
    ctx.fillRect(0, 0, W, H);
    ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * tx, dpr * ty);
    const x0 = -tx / k;
    const y0 = -ty / k;
    const x1 = (W - tx) / k;
    const y1 = (H - ty) / k;
    const drawn: string[] = [];
    const showShapes = shapes.checked && k >= 0.5;
    // Edge labels drawn (for tests: their count and the first few).
    const edgeLabels: string[] = [];
    ctx.textBaseline = 'alphabetic';
    for (const s of L.sectionsIn(y0 - SECTION_GAP, y1)) {
      const p = L.placed[s]!;
      const sec = model.sections[s]!;
      if (s > 0) {
        ctx.strokeStyle = colors.edge;
        ctx.lineWidth = 1.5 / k;
        ctx.beginPath();
        ctx.moveTo(0, p.y - SECTION_GAP);
        ctx.lineTo(0, p.y - 4);
        ctx.stroke();
        ctx.fillStyle = colors.edge;
        ctx.beginPath();
        ctx.moveTo(-4, p.y - 8);
        ctx.lineTo(4, p.y - 8);
        ctx.lineTo(0, p.y);
        ctx.fill();
      }
      if (p.x > x1 || p.x + p.w < x0) continue;
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
        if (k >= 0.3) {
          const ex = e.pts[n - 2]!;
          const ey = e.pts[n - 1]!;
          ctx.moveTo(ex - 3.5, ey - 7);
          ctx.lineTo(ex + 3.5, ey - 7);
          ctx.lineTo(ex, ey);
          ctx.closePath();
        }
        if (showShapes) {
          const v = model.values[e.value]!;
          const m = Math.floor(n / 4) * 2;
          if (v.dims) {
            const label = `${v.dtype ?? ''}${dims(v.dims)}`;
            ctx.fillText(label, e.pts[m]! + 4, e.pts[m + 1]! + 3);
            edgeLabels.push(label);
          }
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
          (selected?.kind === 'node' && b.node === selected.node) ||
          (selected?.kind === 'value' && b.node < 0 && b.value === selected.value);
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
    // State for tests and assistive tools: the zoom and the open blocks.
    canvas.dataset.zoom = k.toFixed(3);
    canvas.dataset.expanded = String(L.expanded.size);
    canvas.dataset.edgeLabels = String(edgeLabels.length);
    canvas.dataset.edgeSample = edgeLabels.slice(0, 8).join(' | ');
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
    tx = W / 2;
    ty = (H - L.height * k) / 2;
    redraw();
  };
  /** The start: the top of the picture at a readable zoom, centered, or from its left edge when wider. */
  const top = () => {
    k = Math.max(0.6, Math.min(1, W / (L.width + 40)));
    tx = L.width * k + 40 <= W ? W / 2 : 20 + (L.width / 2) * k;
    ty = 16;
  };
  const center = (r: { x: number; y: number; w: number; h: number }) => {
    if (k < 0.7) k = 1;
    tx = W / 2 - (r.x + r.w / 2) * k;
    ty = H / 3 - (r.y + r.h / 2) * k;
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
        searchBox.focus();
        break;
      default:
        if (e.key === 'f' && (e.ctrlKey || e.metaKey)) searchBox.focus();
        else return;
    }
    e.preventDefault();
  });

  // Search: results listed under the box; Enter jumps to the next one.
  const showResults = () => {
    results.replaceChildren(
      ...hits.slice(0, 50).map((h, i) => {
        const row = el(
          'div',
          { class: `gx-hit${i === hitAt ? ' active' : ''}` },
          el('span', { class: 'mono' }, clip(h.name, 70)),
          el('span', { class: 'summary' }, ` ${h.what} · ${model.sections[model.nodes[h.node]!.section]!.label}`),
        );
        row.addEventListener('mousedown', (ev) => {
          ev.preventDefault();
          hitAt = i;
          reveal(h.node);
          showResults();
        });
        return row;
      }),
      el(
        'div',
        { class: 'summary gx-hit-count' },
        hits.length ? `${hits.length}${hits.length === 100 ? '+' : ''} matches · Enter: next` : 'no match',
      ),
    );
    results.hidden = !searchBox.value.trim();
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const runSearch = () => {
    searched = searchBox.value;
    hits = finder.find(searchBox.value);
    matches = new Set(hits.map((h) => h.node));
    hitAt = -1;
    showResults();
    redraw();
  };
  searchBox.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(runSearch, 80);
  });
  searchBox.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      clearTimeout(timer);
      if (searched !== searchBox.value || hitAt < 0) runSearch();
      if (!hits.length) return;
      hitAt = (hitAt + (e.key === 'ArrowUp' ? hits.length - 1 : 1)) % hits.length;
      reveal(hits[hitAt]!.node);
      showResults();
    } else if (e.key === 'Escape') {
      results.hidden = true;
      canvas.focus();
    }
  });
  searchBox.addEventListener('blur', () => setTimeout(() => (results.hidden = true), 150));
  searchBox.addEventListener('focus', () => (results.hidden = !searchBox.value.trim()));
  shapes.addEventListener('change', redraw);
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
    search: (q) => ((searchBox.value = q), runSearch(), hits),
  };
}
