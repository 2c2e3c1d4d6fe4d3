/**
 * The ONNX page: a Summary tab (onnx-summary.ts: what `weight-spec inspect` prints, in foldable
 * sections with anchors and links) and a Graph tab that lays out one node group at a time.
 */
import type { GraphView, OnnxPage } from '../../../../core/src/view/types';
import type { LinkTarget } from '../messages';
import { bytes, el } from './dom';
import { drawGraph } from './graph-svg';
import { summaryTab } from './onnx-summary';

/** Callbacks into the host page. */
export interface OnnxHooks {
  requestGraph(group: string): void;
  rendered(view: 'page' | 'graph'): void;
  /** A summary link: the spec, the checkpoint, the Problems panel. */
  openLink(target: LinkTarget): void;
}

/** What the page keeps to receive graph views. */
export interface OnnxView {
  showGraph(view: GraphView | undefined, group: string): void;
}

/** Renders `page` into `root`. */
export function renderOnnx(root: HTMLElement, page: OnnxPage, hooks: OnnxHooks): OnnxView {
  const name = page.opened.split(/[\\/]/).pop()!;
  const tabs = { summary: el('button', { class: 'tab active' }, 'Summary'), graph: el('button', { class: 'tab' }, 'Graph') };
  const summary = summaryTab(page, (t) => hooks.openLink(t));
  const graphPane = el('div', { hidden: '' });
  const select = el(
    'select',
    { 'aria-label': 'Node group' },
    ...page.graphGroups.map((g) => el('option', { value: g.id }, `${g.label} (${g.nodes} nodes)`)),
  );
  const zoomOut = el('button', { title: 'Zoom out' }, '−');
  const zoomIn = el('button', { title: 'Zoom in' }, '+');
  const note = el('span', { class: 'summary' });
  const canvas = el('div', { class: 'graph' });
  graphPane.append(el('div', { class: 'toolbar' }, select, zoomOut, zoomIn, note), canvas);
  root.replaceChildren(
    el('h1', {}, name),
    el(
      'p',
      { class: 'summary' },
      `ONNX IR ${page.irVersion}, ${page.nodeCount} nodes${page.producer ? `, ${page.producer}` : ''} · ${bytes(page.fileSize)}`,
    ),
    el('div', { class: 'toolbar' }, tabs.summary, tabs.graph),
    summary,
    graphPane,
  );
  let scale = 1;
  let current: GraphView | undefined;
  let requested = false;
  const draw = () => {
    if (!current) return;
    canvas.replaceChildren(drawGraph(current, scale));
  };
  const show = (which: 'summary' | 'graph') => {
    tabs.summary.classList.toggle('active', which === 'summary');
    tabs.graph.classList.toggle('active', which === 'graph');
    summary.hidden = which !== 'summary';
    graphPane.hidden = which !== 'graph';
    if (which === 'graph' && !requested && page.graphGroups.length) {
      requested = true;
      note.textContent = 'laying out…';
      hooks.requestGraph(select.value);
    }
  };
  tabs.summary.addEventListener('click', () => show('summary'));
  tabs.graph.addEventListener('click', () => show('graph'));
  select.addEventListener('change', () => {
    note.textContent = 'laying out…';
    hooks.requestGraph(select.value);
  });
  zoomIn.addEventListener('click', () => ((scale = Math.min(3, scale * 1.25)), draw()));
  zoomOut.addEventListener('click', () => ((scale = Math.max(0.2, scale / 1.25)), draw()));
  hooks.rendered('page');
  return {
    showGraph(view, group) {
      if (group !== select.value) return; // an answer to an earlier choice
      current = view;
      if (!view) {
        note.textContent = `no group ${group}`;
        canvas.replaceChildren();
      } else {
        const ops = view.nodes.filter((n) => n.kind === 'op').length;
        note.textContent = `${ops} operators, ${view.nodes.length - ops} border values, ${view.edges.length} edges${view.truncated ? ` (${view.truncated} more not drawn)` : ''}`;
        // Start fitted to the pane's width (never below 40 %: labels stay readable; scroll for the rest).
        scale = 1;
        draw();
        const width = Number(canvas.querySelector('svg')?.getAttribute('width') ?? 0);
        if (width > canvas.clientWidth && canvas.clientWidth > 0) {
          scale = Math.max(0.4, canvas.clientWidth / width);
          draw();
        }
      }
      hooks.rendered('graph');
    },
  };
}
