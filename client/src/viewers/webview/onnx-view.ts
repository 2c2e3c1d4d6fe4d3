/**
 * The ONNX page: a Summary tab (onnx-summary.ts: what `weight-spec inspect` prints, in foldable
 * sections with anchors and links) and a Graph tab holding the graph explorer (graph-explorer.ts).
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import type { GraphImageFormat } from '../../../../core/src/view/graph-image';
import type { OnnxPage } from '../../../../core/src/view/types';
import type { LinkTarget } from '../messages';
import { bytes, el } from './dom';
import { createExplorer, type Explorer } from './graph-explorer';
import type { PanelHooks } from './graph-panel';
import type { ExplorerPrefs } from './graph-explorer';
import { summaryTab } from './onnx-summary';

/** Callbacks into the host page. */
export interface OnnxHooks extends PanelHooks {
  requestGraph(): void;
  rendered(view: 'page'): void;
  /** The graph explorer's visible labels and side panel, as text (read back by the e2e suite). */
  renderedGraph(text: string): void;
  /** A summary link: the spec, the checkpoint, the Problems panel. */
  openLink(target: LinkTarget): void;
  /** The graph's picture, to be saved by the extension (a save dialog asks where). */
  saveImage(format: GraphImageFormat, data: string): void;
  loadPrefs(): Partial<ExplorerPrefs> | undefined;
  savePrefs(p: ExplorerPrefs): void;
}

/** What the page keeps to receive the graph. */
export interface OnnxView {
  showGraph(model: GraphModel | undefined): void;
  /** The palette's graph export: opens the Graph tab when needed, then saves its picture. */
  exportImage(format: GraphImageFormat): void;
}

/** Renders `page` into `root`. */
export function renderOnnx(root: HTMLElement, page: OnnxPage, hooks: OnnxHooks): OnnxView {
  const name = page.opened.split(/[\\/]/).pop()!;
  const tabs = { summary: el('button', { class: 'tab active' }, 'Summary'), graph: el('button', { class: 'tab' }, 'Graph') };
  const summary = summaryTab(page, (t) => hooks.openLink(t));
  const graphPane = el('div', { hidden: '', class: 'graph' }, el('p', { class: 'loading' }, 'Reading the graph…'));
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
  let requested = false;
  let explorer: Explorer | undefined;
  // An export asked for before the graph arrived runs once it is drawn.
  let pendingExport: GraphImageFormat | undefined;
  const show = (which: 'summary' | 'graph') => {
    tabs.summary.classList.toggle('active', which === 'summary');
    tabs.graph.classList.toggle('active', which === 'graph');
    summary.hidden = which !== 'summary';
    graphPane.hidden = which !== 'graph';
    if (which === 'graph' && !requested) {
      requested = true;
      hooks.requestGraph();
    }
    if (which === 'graph') explorer?.shown();
  };
  tabs.summary.addEventListener('click', () => show('summary'));
  tabs.graph.addEventListener('click', () => show('graph'));
  hooks.rendered('page');
  return {
    showGraph(model) {
      if (!model) {
        graphPane.replaceChildren(el('p', { class: 'summary' }, 'This file has no graph to show.'));
        hooks.renderedGraph('no graph');
        return;
      }
      explorer = createExplorer(graphPane, model, {
        openSpec: (spec, input) => hooks.openSpec(spec, input),
        openTensor: (file, key) => hooks.openTensor(file, key),
        tensorStats: (key) => hooks.tensorStats(key),
        exportNpy: (key) => hooks.exportNpy(key),
        rendered: (text) => hooks.renderedGraph(text),
        saveImage: (format, data) => hooks.saveImage(format, data),
        loadPrefs: () => hooks.loadPrefs(),
        savePrefs: (p) => hooks.savePrefs(p),
      });
      if (!graphPane.hidden) explorer.shown();
      if (pendingExport) {
        const f = pendingExport;
        pendingExport = undefined;
        // After the first frame (the PNG is the canvas as drawn).
        requestAnimationFrame(() => explorer?.exportImage(f));
      }
    },
    exportImage(format) {
      show('graph');
      if (explorer) explorer.exportImage(format);
      else pendingExport = format;
    },
  };
}
