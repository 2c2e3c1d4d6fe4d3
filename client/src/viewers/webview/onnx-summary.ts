/**
 * The ONNX page's Summary tab: what `weight-spec inspect` prints, navigable. A contents bar
 * with anchors to every section, links to the export's spec, its checkpoint (in the
 * safetensors viewer) and the Problems panel, and the embedded spec's problem count on top;
 * each section folds; the KV cache reads as one row per run (`past_key.{0..47}`).
 */
import { valueRuns } from '../../../../core/src/view/value-runs';
import type { OnnxPage, ValueEntry } from '../../../../core/src/view/types';
import type { LinkTarget } from '../messages';
import { bytes, dims, el, textTable } from './dom';

const plural = (n: number, w: string) => `${n.toLocaleString('en-US')} ${w}${n === 1 ? '' : 's'}`;

/** A foldable section (open) whose id is its anchor. */
function section(id: string, title: string, ...content: (Node | false | undefined)[]): HTMLDetailsElement {
  return el('details', { id, class: 'section', open: '' }, el('summary', {}, el('h2', {}, title)), ...content);
}

/** A link inside the page: opens the section it names (and its parents) and scrolls to it. */
function anchor(root: HTMLElement, id: string, text: string): HTMLAnchorElement {
  const a = el('a', { href: `#${id}` }, text);
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    const target = root.querySelector<HTMLElement>(`#${id}`);
    for (let d = target?.closest('details'); d; d = d.parentElement?.closest('details')) d.open = true;
    target?.scrollIntoView({ block: 'start' });
  });
  return a;
}

function valuesTable(values: ValueEntry[]): HTMLElement {
  const runs = valueRuns(values);
  const t = textTable(
    ['name', 'dtype', 'shape'],
    runs.map((r) => [r.label, r.dtype, dims(r.dims)]),
  );
  // A run's row names its values on hover.
  t.querySelectorAll('tbody tr').forEach((tr, i) => {
    const r = runs[i]!;
    if (r.names.length > 1) tr.setAttribute('title', `${r.names.length} values: ${r.names[0]} … ${r.names[r.names.length - 1]}`);
  });
  return t;
}

const rowsOf = (values: ValueEntry[]) => {
  const n = valueRuns(values).length;
  return n === values.length ? plural(values.length, 'value') : `${plural(values.length, 'value')} in ${plural(n, 'row')}`;
};

/** The Summary tab of `page`; `open` follows a link (the extension resolves the file). */
export function summaryTab(page: OnnxPage, open: (target: LinkTarget) => void): HTMLElement {
  const box = el('div', { class: 'onnx-summary' });
  const s = page.spec;
  const errors = s?.problems.filter((p) => p.severity === 'error').length ?? 0;

  // Contents and links first: every section is one click away.
  const nav = el('nav', { class: 'toc', 'aria-label': 'Contents' });
  const sections: [string, string][] = [
    ['model', 'Model'],
    ['inputs', `Inputs (${page.inputs.length})`],
    ['outputs', `Outputs (${page.outputs.length})`],
    ...(page.serving.length ? ([['serving', 'Serving']] as [string, string][]) : []),
    ['weights', 'Weights'],
    ['spec', 'Embedded spec'],
    ['metadata', 'Metadata'],
    ['ops', 'Op types'],
  ];
  sections.forEach(([id, t], i) => {
    if (i) nav.append(' · ');
    nav.append(anchor(box, id, t));
  });
  const links = el('div', { class: 'toc links' });
  const link = (target: LinkTarget, text: string, title: string) => {
    const a = el('a', { href: '#', title, class: `open-${target}` }, text);
    a.addEventListener('click', (ev) => {
      ev.preventDefault();
      open(target);
    });
    if (links.childNodes.length) links.append(' · ');
    links.append(a);
  };
  if (page.links?.spec) link('spec', 'Open weight_spec.json', page.links.spec);
  if (page.links?.checkpoint)
    link(
      'checkpoint',
      page.links.checkpointIs === 'source' ? 'Open the source checkpoint' : 'Open the prepared checkpoint',
      page.links.checkpoint,
    );
  link('problems', 'Show the Problems panel', 'The spec file’s problems, as the language server reports them');
  box.append(nav, links);
  if (s?.problems.length) {
    const byCode = new Map<string, number>();
    for (const p of s.problems) byCode.set(p.code, (byCode.get(p.code) ?? 0) + 1);
    box.append(
      el(
        'div',
        { class: `banner sev-${errors ? 'error' : 'warning'}` },
        `The embedded spec has ${plural(s.problems.length, 'problem')} (${plural(errors, 'error')}): ` +
          [...byCode].map(([c, n]) => (n > 1 ? `${c} ×${n}` : c)).join(', ') +
          ' — ',
        anchor(box, 'spec-problems', 'show them'),
      ),
    );
  }

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
  box.append(section('model', 'Model', textTable(['', ''], facts)));
  box.append(section('inputs', `Inputs (${rowsOf(page.inputs)})`, valuesTable(page.inputs)));
  box.append(section('outputs', `Outputs (${rowsOf(page.outputs)})`, valuesTable(page.outputs)));
  if (page.serving.length) box.append(section('serving', 'Serving features', ...page.serving.map((x) => el('div', { class: 'mono' }, x))));

  const nWeights = page.weightGroups.reduce((a, g) => a + g.weights.length, 0);
  const params = page.weightGroups.reduce((a, g) => a + g.params, 0);
  const weights = section('weights', `Weights (${nWeights}, ${params.toLocaleString('en-US')} parameters) by layer`);
  for (const g of page.weightGroups) {
    const d = el(
      'details',
      {},
      el('summary', {}, `${g.label}: ${plural(g.weights.length, 'weight')}, ${g.params.toLocaleString('en-US')} parameters`),
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
    weights.append(d);
  }
  box.append(weights);

  const spec = section('spec', 'Embedded weight spec');
  if (!s) spec.append(el('p', { class: 'summary' }, 'none (no com.qti.aisw.extdata metadata)'));
  else {
    spec.append(
      el(
        'div',
        {},
        `version ${s.version}${s.modelName ? `, model ${s.modelName}` : ''}, ${s.inputs} inputs, ${plural(s.files.length, 'file')}`,
      ),
    );
    const files = el('details', {}, el('summary', {}, `files (${s.files.length})`));
    for (const f of s.files) files.append(el('div', { class: 'mono' }, f));
    spec.append(files);
    const problems = el(
      'details',
      { id: 'spec-problems', open: '' },
      el('summary', {}, s.problems.length ? `${plural(s.problems.length, 'problem')} (${plural(errors, 'error')})` : 'no problems'),
    );
    for (const p of s.problems.slice(0, 500))
      problems.append(
        el('div', { class: `problem mono sev-${p.severity}` }, `${p.severity} ${p.code}: ${p.message}${p.path ? ` (at ${p.path})` : ''}`),
      );
    if (s.problems.length > 500) problems.append(el('div', { class: 'summary' }, `… and ${s.problems.length - 500} more`));
    spec.append(problems);
  }
  box.append(spec);
  box.append(
    section(
      'metadata',
      `Metadata (${page.metadata.length})`,
      textTable(
        ['key', 'value'],
        page.metadata.map((m) => [m.key, m.length > m.value.length ? `${m.value} (${m.length} chars)` : m.value]),
      ),
    ),
  );
  box.append(
    section(
      'ops',
      'Op types',
      textTable(
        ['op', 'count'],
        page.opTypes.map((o) => [o.op, String(o.count)]),
        [1],
      ),
    ),
  );
  return box;
}
