/**
 * The graph explorer's side panel and legend, built as text-only DOM. The panel shows the
 * selection: an operator (op type, name, attributes, inputs and outputs with dtype and shape;
 * for a weight input its weight_spec.json entry and checkpoint tensor, with links that open
 * them and the tensor's values — statistics and `.npy` export, as the checkpoint viewer computes
 * them), a graph input or output, or a block (a decoder layer).
 */
import type { GraphModel, GxValue } from '../../../../core/src/view/graph-data';
import { weightLabel } from '../../../../core/src/view/graph-data';
import { OP_CATEGORIES, slotName } from '../../../../core/src/view/graph-layout';
import { opDoc } from '../../../../core/src/view/onnx-op-docs';
import { statsNodes, type StatsAnswer } from './checkpoint-view';
import { dims, el } from './dom';

/** What is selected. */
export type Selection = { kind: 'node'; node: number } | { kind: 'value'; value: number } | { kind: 'section'; section: number };

/** Links from the panel out to the extension. */
export interface PanelHooks {
  openSpec(spec: string, input: number): void;
  openTensor(file: string, key: string): void;
  /** Asks for a checkpoint tensor's statistics (answered through {@link showPanelStats}); the extension finds its file. */
  tensorStats(key: string): void;
  exportNpy(key: string): void;
}

/** The statistics box of each key asked for, where its answer goes (a later panel's box replaces an earlier one). */
const statsBoxes = new Map<string, HTMLElement>();

/** Shows a tensor's statistics in the panel that asked (ignored when that panel is gone). */
export function showPanelStats(a: StatsAnswer): void {
  const box = statsBoxes.get(a.key);
  if (!box?.isConnected) return;
  box.replaceChildren(...statsNodes(a));
}

/** The values row of a weight: Statistics (into a box below it) and `.npy` export. */
function valuesRow(key: string, nav: Nav): HTMLElement[] {
  const box = el('div', { class: 'gx-stats tensor-values' });
  const stats = link(
    'Statistics',
    () => {
      statsBoxes.set(key, box);
      box.replaceChildren(el('span', { class: 'summary' }, 'reading…'));
      nav.tensorStats(key);
    },
    'min, max, mean, std, NaN/inf, histogram and first values, read from the file',
  );
  const npy = link('Export .npy…', () => nav.exportNpy(key), 'Save the values as a NumPy .npy (float32)');
  return [el('div', { class: 'gx-values' }, 'values: ', stats, ' · ', npy), box];
}

/** Panel-internal navigation. */
interface Nav extends PanelHooks {
  selectNode(n: number): void;
  toggle(section: number): void;
}

const CATEGORY_TEXT: Record<(typeof OP_CATEGORIES)[number], string> = {
  layer: 'layer (Gemm, MatMul)',
  activation: 'activation (Softmax, Sigmoid)',
  normalization: 'normalization (ReduceMean, Sqrt)',
  tensor: 'tensor and shape ops',
  other: 'arithmetic and other',
};

/** The legend (folded to one line until opened): op-category swatches, value kinds and row colors. */
export function legend(open: boolean): HTMLElement {
  const item = (cls: string, text: string) => el('div', { class: 'gx-legend-item' }, el('span', { class: `gx-swatch ${cls}` }), text);
  return el(
    'details',
    { class: 'gx-legend', 'aria-label': 'Legend', ...(open ? { open: '' } : {}) },
    el('summary', {}, 'Legend'),
    ...OP_CATEGORIES.map((c) => item(`cat-${c}`, CATEGORY_TEXT[c])),
    item('pill', 'graph input or output'),
    item('ref', '↗ value from another block (click: go to it)'),
    item('row-weight', 'weight input (row)'),
    item('row-const', 'folded constant (row)'),
    item('block', '▸ collapsed block (click: expand)'),
  );
}

/** Dtype and shape; an inferred one says so (the file does not state it), an unknown one says that. */
const typeText = (v: GxValue) =>
  (v.dims ? `${v.dtype ?? ''} ${dims(v.dims)}`.trim() : (v.dtype ?? 'shape not recorded in the file')) +
  (v.inferred ? (v.dims ? ' (inferred)' : ' (shape unknown)') : '');

function link(text: string, fn: () => void, title = ''): HTMLElement {
  const a = el('a', { class: 'link', tabindex: '0', role: 'link', ...(title ? { title } : {}) }, text);
  a.addEventListener('click', fn);
  a.addEventListener('keydown', (e) => e.key === 'Enter' && fn());
  return a;
}

/** The rows of one value: name, type, and what it links to. */
function valueBlock(m: GraphModel, v: number, slot: string, nav: Nav, self?: number): HTMLElement {
  const val = m.values[v]!;
  const box = el('div', { class: 'gx-value' });
  const name = val.kind === 'weight' ? weightLabel(val.name) : val.name;
  box.append(el('div', {}, el('span', { class: 'gx-slot' }, slot), ' ', el('span', { class: 'mono' }, name)));
  box.append(el('div', { class: 'summary' }, `${val.kind} · ${val.kind === 'const' ? (val.text ?? '') : typeText(val)}`));
  if (val.producer >= 0 && val.producer !== self) {
    const p = m.nodes[val.producer]!;
    box.append(
      el(
        'div',
        {},
        'from ',
        link(p.name || p.op, () => nav.selectNode(val.producer)),
      ),
    );
  }
  const others = val.consumers.filter((c) => c !== self);
  if (others.length) {
    const to = el('div', {}, `to${others.length > 8 ? ` (${others.length})` : ''} `);
    others.slice(0, 8).forEach((c, i) =>
      to.append(
        i ? ', ' : '',
        link(m.nodes[c]!.name || m.nodes[c]!.op, () => nav.selectNode(c)),
      ),
    );
    box.append(to);
  }
  const src = m.sources[val.name];
  if (val.kind === 'weight' && src && m.spec) {
    box.append(
      el(
        'div',
        {},
        'spec: ',
        link(`inputs[${src.input}] of ${m.spec.split(/[\\/]/).pop()}`, () => nav.openSpec(m.spec!, src.input), m.spec),
      ),
      el(
        'div',
        {},
        'checkpoint: ',
        src.file ? link(`${src.key}`, () => nav.openTensor(src.file!, src.key), src.file) : el('span', { class: 'mono' }, src.key),
        src.file ? el('span', { class: 'summary' }, ` in ${src.file.split(/[\\/]/).slice(-2).join('/')}`) : undefined,
      ),
      ...(src.file ? valuesRow(src.key, nav) : []),
      el('pre', { class: 'gx-entry mono' }, src.entry),
    );
  } else if (val.kind === 'weight') box.append(el('div', { class: 'summary' }, 'no weight_spec.json beside the model maps this input'));
  return box;
}

/** The panel's content for `sel`. */
export function selectionPanel(m: GraphModel, sel: Selection | undefined, nav: Nav): HTMLElement[] {
  if (!sel)
    return [
      el('h3', {}, 'Nothing selected'),
      el('p', { class: 'summary' }, 'Click an operator, an input or a block. Search jumps to a node; arrows walk the graph.'),
    ];
  if (sel.kind === 'section') {
    const s = m.sections[sel.section]!;
    const b = el('button', {}, 'Expand / collapse');
    b.addEventListener('click', () => nav.toggle(sel.section));
    return [
      el('h3', {}, s.label),
      el('div', {}, `${s.nodes.length} operators, ${s.weights} weight inputs`),
      el('div', { class: 'summary' }, s.ops),
      b,
    ];
  }
  if (sel.kind === 'value') {
    const v = m.values[sel.value]!;
    return [
      el('h3', {}, v.kind === 'output' ? 'Graph output' : v.kind === 'input' ? 'Graph input' : 'Value'),
      valueBlock(m, sel.value, '', nav),
    ];
  }
  const n = m.nodes[sel.node]!;
  const doc = opDoc(n.op, n.domain);
  const out: HTMLElement[] = [
    el('h3', {}, n.domain ? `${n.domain}:${n.op}` : n.op),
    // ONNX's own first line for the op, as Netron shows it, and its page (VS Code opens http links outside the webview).
    ...(doc
      ? [
          el(
            'div',
            { class: 'gx-doc' },
            el('span', {}, doc.doc),
            ' ',
            el('a', { href: doc.url, class: 'gx-doc-link', title: doc.url }, `${doc.domain} v${doc.since} ↗`),
          ),
        ]
      : []),
    el('div', { class: 'mono gx-name' }, n.name || '(unnamed)'),
    el('div', { class: 'summary' }, m.sections[n.section]!.label),
  ];
  if (n.attrs.length) {
    out.push(el('h4', {}, `Attributes (${n.attrs.length})`));
    for (const a of n.attrs)
      out.push(el('div', { class: 'gx-value' }, el('span', { class: 'gx-slot' }, a.name), ' ', el('span', { class: 'mono' }, a.value)));
  }
  out.push(el('h4', {}, `Inputs (${n.inputs.length})`));
  n.inputs.forEach((v, i) =>
    out.push(
      v < 0 ? el('div', { class: 'summary' }, `${slotName(n.op, i)}: (omitted)`) : valueBlock(m, v, slotName(n.op, i), nav, sel.node),
    ),
  );
  out.push(el('h4', {}, `Outputs (${n.outputs.length})`));
  n.outputs.forEach((v, i) => v >= 0 && out.push(valueBlock(m, v, `out${i}`, nav, sel.node)));
  return out;
}
