/**
 * The ONNX page: a Summary tab with what `weight-spec inspect` prints (model facts, runtime
 * inputs and outputs with symbolic dims, weights by layer, the embedded spec and its problems,
 * metadata, op types) and a Graph tab holding the graph explorer (graph-explorer.ts).
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import type { OnnxPage } from '../../../../core/src/view/types';
import { bytes, dims, el, textTable } from './dom';
import { createExplorer, type Explorer } from './graph-explorer';
import type { PanelHooks } from './graph-panel';

/** Callbacks into the host page. */
export interface OnnxHooks extends PanelHooks {
  requestGraph(): void;
  rendered(view: 'page'): void;
  /** The graph explorer's visible labels and side panel, as text (read back by the e2e suite). */
  renderedGraph(text: string): void;
}

/** What the page keeps to receive the graph. */
export interface OnnxView {
  showGraph(model: GraphModel | undefined): void;
}

function summaryTab(page: OnnxPage): HTMLElement {
  const box = el('div');
  const facts: string[][] = [
    ['IR version', String(page.irVersion)],
    ['producer', page.producer ?? '(none)'],
    ['graph', page.graphName ?? '(unnamed)'],
    ['opsets', page.opsets.map((o) => `${o.domain} ${o.version}`).join(', ') || '(none)'],
    ['nodes', String(page.nodeCount)],
    ['file size', `${bytes(page.fileSize)} (${page.fileSize} bytes)`],
    [
      'weights',
      page.weightsAre === 'inputs'
        ? 'graph inputs (weight-free)'
        : page.weightsAre === 'initializers'
          ? 'initializers in the file'
          : 'none',
    ],
  ];
  box.append(el('h2', {}, 'Model'), textTable(['', ''], facts));
  const values = (title: string, vs: OnnxPage['inputs']) => {
    box.append(
      el('h2', {}, `${title} (${vs.length})`),
      textTable(
        ['name', 'dtype', 'shape'],
        vs.map((v) => [v.name, v.dtype, dims(v.dims)]),
      ),
    );
  };
  values('Inputs', page.inputs);
  values('Outputs', page.outputs);
  if (page.serving.length) {
    box.append(el('h2', {}, 'Serving features'));
    for (const s of page.serving) box.append(el('div', { class: 'mono' }, s));
  }
  const nWeights = page.weightGroups.reduce((s, g) => s + g.weights.length, 0);
  const params = page.weightGroups.reduce((s, g) => s + g.params, 0);
  box.append(el('h2', {}, `Weights (${nWeights}, ${params.toLocaleString('en-US')} parameters) by layer`));
  for (const g of page.weightGroups) {
    const d = el(
      'details',
      {},
      el(
        'summary',
        {},
        `${g.label}: ${g.weights.length} weight${g.weights.length === 1 ? '' : 's'}, ${g.params.toLocaleString('en-US')} parameters`,
      ),
    );
    // Rows are built when opened: a 48-layer MoE has thousands.
    d.addEventListener('toggle', () => {
      if (d.open && d.children.length === 1)
        d.append(
          textTable(
            ['name', 'dtype', 'shape'],
            g.weights.map((w) => [w.name, w.dtype, dims(w.dims)]),
          ),
        );
    });
    box.append(d);
  }
  box.append(el('h2', {}, 'Embedded weight spec'));
  if (!page.spec) box.append(el('p', { class: 'summary' }, 'none (no com.qti.aisw.extdata metadata)'));
  else {
    const s = page.spec;
    box.append(
      el(
        'div',
        {},
        `version ${s.version}${s.modelName ? `, model ${s.modelName}` : ''}, ${s.inputs} inputs, ${s.files.length} file${s.files.length === 1 ? '' : 's'}`,
      ),
    );
    const files = el('details', {}, el('summary', {}, `files (${s.files.length})`));
    for (const f of s.files) files.append(el('div', { class: 'mono' }, f));
    box.append(files);
    const errors = s.problems.filter((p) => p.severity === 'error').length;
    box.append(
      el(
        'div',
        {},
        s.problems.length
          ? `${s.problems.length} problem${s.problems.length === 1 ? '' : 's'} (${errors} error${errors === 1 ? '' : 's'}):`
          : 'no problems',
      ),
    );
    for (const p of s.problems.slice(0, 500)) {
      box.append(
        el('div', { class: `problem mono sev-${p.severity}` }, `${p.severity} ${p.code} ${p.path ? `at ${p.path}: ` : ''}${p.message}`),
      );
    }
    if (s.problems.length > 500) box.append(el('div', { class: 'summary' }, `… and ${s.problems.length - 500} more`));
  }
  box.append(
    el('h2', {}, `Metadata (${page.metadata.length})`),
    textTable(
      ['key', 'value'],
      page.metadata.map((m) => [m.key, m.length > m.value.length ? `${m.value} (${m.length} chars)` : m.value]),
    ),
  );
  box.append(
    el('h2', {}, 'Op types'),
    textTable(
      ['op', 'count'],
      page.opTypes.map((o) => [o.op, String(o.count)]),
      [1],
    ),
  );
  return box;
}

/** Renders `page` into `root`. */
export function renderOnnx(root: HTMLElement, page: OnnxPage, hooks: OnnxHooks): OnnxView {
  const name = page.opened.split(/[\\/]/).pop()!;
  const tabs = { summary: el('button', { class: 'tab active' }, 'Summary'), graph: el('button', { class: 'tab' }, 'Graph') };
  const summary = summaryTab(page);
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
        rendered: (text) => hooks.renderedGraph(text),
      });
      if (!graphPane.hidden) explorer.shown();
    },
  };
}
