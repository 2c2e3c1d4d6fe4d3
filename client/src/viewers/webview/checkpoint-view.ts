/**
 * The safetensors page: shards, a sortable and filterable tensor table with a total, and links
 * from keys to the spec inputs that use them. The table is virtualized (only the rows in view
 * exist in the DOM), so 20,000 tensors scroll and sort without delay. Keys are cut in the
 * middle to their column's width (the full key on hover and on copy), shards show the part of
 * their names that differs, and the table scrolls sideways in a narrow pane. A click on a row
 * selects it for its values: statistics with a histogram, or a `.npy` export, each computed by
 * the extension from the file only when asked.
 */
import { middleEllipsis, shardLabels } from '../../../../core/src/view/table-text';
import { compileTensorFilter, FILTER_PLACEHOLDER } from '../../../../core/src/view/tensor-filter';
import type { CheckpointPage, TensorEntry } from '../../../../core/src/view/types';
import { bytes, el } from './dom';

const ROW = 22;
type Col = 'key' | 'dtype' | 'shape' | 'bytes' | 'shard' | 'used';
const COLS: { id: Col; label: string }[] = [
  { id: 'key', label: 'key' },
  { id: 'dtype', label: 'dtype' },
  { id: 'shape', label: 'shape' },
  { id: 'bytes', label: 'bytes' },
  { id: 'shard', label: 'shard' },
  { id: 'used', label: 'used by' },
];

/** Callbacks into the host page. */
export interface CheckpointHooks {
  openLink(spec: string, input: number): void;
  rendered(): void;
  /** Asks the extension for a tensor's statistics (answered through {@link CheckpointView.showStats}). */
  tensorStats(key: string): void;
  exportNpy(key: string): void;
}

/** The extension's answer to {@link CheckpointHooks.tensorStats}. */
export interface StatsAnswer {
  key: string;
  lines: string[];
  histogram?: number[];
  error?: string;
}

/** The lines (or the error) and histogram bars of a {@link StatsAnswer}: the checkpoint viewer's and the graph panel's. */
export function statsNodes(a: StatsAnswer): HTMLElement[] {
  const out = [
    ...(a.error ? [el('div', { class: 'error-line' }, a.error)] : []),
    ...a.lines.map((l) => el('div', { class: 'mono stats-line' }, l)),
  ];
  const h = a.histogram ?? [];
  const top = Math.max(1, ...h);
  if (h.length) {
    const bars = el('div', { class: 'histogram', title: 'histogram of the finite values, min to max' });
    for (const c of h) {
      const b = el('span', { title: String(c) });
      b.style.height = `${Math.max(c ? 2 : 0, Math.round((c / top) * 100))}%`;
      bars.append(b);
    }
    out.push(bars);
  }
  return out;
}

/** What the page keeps of the table. */
export interface CheckpointView {
  /** Scrolls to the row of `key` (clearing a filter that hides it) and highlights it. */
  reveal(key: string): void;
  /** Shows a tensor's statistics (ignored when another row is selected by now). */
  showStats(a: StatsAnswer): void;
}

/** Renders `page` into `root`. */
export function renderCheckpoint(root: HTMLElement, page: CheckpointPage, hooks: CheckpointHooks): CheckpointView {
  const name = page.opened.split(/[\\/]/).pop()!;
  const shardNames = page.files.map((f) => f.name);
  const shardShown = shardLabels(shardNames);
  const shape = (t: TensorEntry) => `[${t.shape.join(', ')}]`;
  const used = (t: TensorEntry) => page.links[t.key]?.length ?? 0;
  root.replaceChildren(
    el('h1', {}, name),
    el(
      'p',
      { class: 'summary' },
      `${page.tensors.length} tensors, ${bytes(page.totalBytes)} (${page.totalBytes} bytes) in ${page.files.length} file${page.files.length === 1 ? '' : 's'}` +
        ` · ${page.layout === 'index' ? 'sharded checkpoint (model.safetensors.index.json)' : page.layout === 'single' ? 'single file' : 'folder of shards'}` +
        ` · ${page.dir}`,
    ),
  );
  if (page.files.length > 1) {
    const details = el('details', {}, el('summary', {}, `Shards (${page.files.length})`));
    for (const f of page.files) details.append(el('div', { class: 'mono' }, `${f.name}: ${f.tensors} tensors, ${bytes(f.bytes)}`));
    root.append(details);
  }
  if (page.linkedSpecs.length)
    root.append(el('p', { class: 'summary' }, `Used by ${page.linkedSpecs.map((s) => s.split(/[\\/]/).slice(-2).join('/')).join(', ')}`));
  if (page.metadata) root.append(el('p', { class: 'summary mono' }, `__metadata__ ${JSON.stringify(page.metadata)}`));

  const filter = el('input', {
    type: 'text',
    placeholder: FILTER_PLACEHOLDER,
    title: FILTER_PLACEHOLDER,
    'aria-label': 'Filter tensors',
  });
  const shardSel = el(
    'select',
    { 'aria-label': 'Shard' },
    el('option', { value: '-1' }, 'all shards'),
    ...shardNames.map((n, i) => el('option', { value: String(i) }, n)),
  );
  const count = el('span', { class: 'summary' });
  root.append(el('div', { class: 'toolbar' }, filter, page.files.length > 1 && shardSel, count));
  const values = el('div', { class: 'tensor-values' }, el('span', { class: 'summary' }, 'Click a row for its values.'));
  root.append(values);
  // The row whose values the panel offers.
  let selected: string | undefined;
  function select(k: string): void {
    selected = k;
    const statsBtn = el('button', { title: 'min, max, mean, std, NaN/inf, histogram and first values, read from the file' }, 'Statistics');
    const npyBtn = el('button', { title: 'Save the values as a NumPy .npy (float32)' }, 'Export .npy…');
    statsBtn.addEventListener('click', () => {
      values.replaceChildren(el('span', { class: 'mono' }, k), el('span', { class: 'summary' }, ' reading…'));
      hooks.tensorStats(k);
    });
    npyBtn.addEventListener('click', () => hooks.exportNpy(k));
    values.replaceChildren(el('div', { class: 'toolbar' }, el('span', { class: 'mono' }, k), statsBtn, npyBtn));
    hooks.rendered();
  }

  const head = el('div', { class: 'vt-head' });
  // Keys are cut to this many characters (measured from the key column and the font).
  let keyChars = 80;
  const body = el('div', { class: 'vt-body' });
  const spacer = el('div');
  body.append(spacer);
  const foot = el('div', { class: 'vt-foot mono' });
  root.append(el('div', { class: 'vt' }, el('div', { class: 'vt-inner' }, head, body, foot)));

  let sortCol: Col | undefined;
  // The row a link asked for (highlighted until another is asked for).
  let revealed: string | undefined;
  let asc = true;
  let rows: TensorEntry[] = page.tensors;
  const headCells = COLS.map((c) => {
    const s = el('span', { role: 'button', title: `Sort by ${c.label}`, ...(c.id === 'bytes' ? { class: 'num' } : {}) }, c.label);
    s.addEventListener('click', () => {
      asc = sortCol === c.id ? !asc : true;
      sortCol = c.id;
      update();
    });
    return s;
  });
  head.append(...headCells);

  const key = (c: Col): ((t: TensorEntry) => string | number) => {
    switch (c) {
      case 'key':
        return (t) => t.key;
      case 'dtype':
        return (t) => t.dtype;
      case 'shape':
        return (t) => t.shape.reduce((a, b) => a * b, 1);
      case 'bytes':
        return (t) => t.bytes;
      case 'shard':
        return (t) => t.shard;
      case 'used':
        return used;
    }
  };

  function update(): void {
    const query = compileTensorFilter(filter.value);
    const shard = Number(shardSel.value);
    rows = page.tensors.filter((t) => {
      if (shard >= 0 && t.shard !== shard) return false;
      return query.empty || query.test({ key: t.key, dtype: t.dtype, shard: shardNames[t.shard]!, shape: t.shape });
    });
    if (sortCol) {
      const k = key(sortCol);
      const dir = asc ? 1 : -1;
      rows = rows.slice().sort((a, b) => {
        const x = k(a);
        const y = k(b);
        return (x < y ? -1 : x > y ? 1 : 0) * dir;
      });
    }
    headCells.forEach((h, i) => {
      h.classList.toggle('sorted', COLS[i]!.id === sortCol);
      h.classList.toggle('asc', COLS[i]!.id === sortCol && asc);
    });
    const total = rows.reduce((s, t) => s + t.bytes, 0);
    count.textContent = query.error ?? (rows.length === page.tensors.length ? '' : `${rows.length} of ${page.tensors.length} shown`);
    count.classList.toggle('sev-error', query.error !== undefined);
    foot.textContent = `total: ${rows.length} tensor${rows.length === 1 ? '' : 's'}, ${total} bytes (${bytes(total)})`;
    spacer.style.height = `${rows.length * ROW}px`;
    body.scrollTop = 0;
    paint();
    hooks.rendered();
  }

  function row(t: TensorEntry, i: number): HTMLElement {
    const r = el('div', {
      class: t.key === revealed ? 'vt-row mono revealed' : 'vt-row mono',
      ...(t.key === revealed ? { 'aria-current': 'true' } : {}),
    });
    r.style.top = `${i * ROW}px`;
    r.addEventListener('click', (ev) => {
      if (!(ev.target as Element).closest('a')) select(t.key);
    });
    const links = page.links[t.key] ?? [];
    const usedBy = el('span');
    links.forEach((l, j) => {
      const a = el('a', { title: `${l.spec} inputs[${l.input}]` }, l.name === t.key ? `inputs[${l.input}]` : l.name);
      a.addEventListener('click', () => hooks.openLink(l.spec, l.input));
      if (j) usedBy.append(', ');
      usedBy.append(a);
    });
    r.append(
      el('span', { title: t.key, 'data-full': t.key, class: 'key' }, middleEllipsis(t.key, keyChars)),
      el('span', {}, t.dtype),
      el('span', { title: shape(t) }, shape(t)),
      el('span', { class: 'num', title: `${t.bytes.toLocaleString('en-US')} bytes` }, bytes(t.bytes)),
      el('span', { title: shardNames[t.shard]! }, shardShown[t.shard]!),
      usedBy,
    );
    return r;
  }

  /** Characters that fit the key column (monospace: one width for all). */
  function measure(): void {
    const probe = el('span', { class: 'mono' }, 'x'.repeat(40));
    probe.style.visibility = 'hidden';
    probe.style.position = 'absolute';
    body.append(probe);
    const charW = probe.getBoundingClientRect().width / 40 || 7;
    probe.remove();
    const colW = headCells[0]!.getBoundingClientRect().width;
    if (colW > 0) keyChars = Math.max(12, Math.floor(colW / charW));
  }

  function paint(): void {
    const first = Math.max(0, Math.floor(body.scrollTop / ROW) - 10);
    const last = Math.min(rows.length, Math.ceil((body.scrollTop + body.clientHeight) / ROW) + 10);
    const frag = document.createDocumentFragment();
    frag.append(spacer);
    for (let i = first; i < last; i++) frag.append(row(rows[i]!, i));
    body.replaceChildren(frag);
  }

  let queued = false;
  body.addEventListener('scroll', () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      paint();
    });
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  filter.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(update, 120);
  });
  shardSel.addEventListener('change', update);
  // A resized pane re-cuts the keys to the new column width.
  new ResizeObserver(() => {
    const before = keyChars;
    measure();
    if (keyChars !== before) paint();
  }).observe(head);
  // Copying copies whole keys, not the cut text on screen: one key's text gives that key,
  // a selection across rows gives their cells (tab-separated), keys whole.
  body.addEventListener('copy', (ev) => {
    const sel = document.getSelection();
    if (!sel || sel.isCollapsed || !ev.clipboardData) return;
    const cell = (n: Node | null) => (n instanceof Element ? n : n?.parentElement)?.closest<HTMLElement>('.key');
    const one = cell(sel.anchorNode);
    const text =
      one && one === cell(sel.focusNode)
        ? one.dataset.full
        : [...body.querySelectorAll('.vt-row')]
            .filter((r) => sel.containsNode(r, true))
            .map((r) => [...r.children].map((c) => (c as HTMLElement).dataset.full ?? c.textContent ?? '').join('\t'))
            .join('\n');
    if (!text) return;
    ev.clipboardData.setData('text/plain', text);
    ev.preventDefault();
  });
  measure();
  update();

  return {
    showStats(a) {
      if (a.key !== selected) return;
      select(a.key);
      values.append(...statsNodes(a));
      hooks.rendered();
    },
    reveal(k) {
      revealed = k;
      let i = rows.findIndex((t) => t.key === k);
      if (i < 0 && (filter.value || shardSel.value !== '-1')) {
        filter.value = '';
        shardSel.value = '-1';
        update();
        i = rows.findIndex((t) => t.key === k);
      }
      if (i < 0) {
        count.textContent = `${k} is not in this checkpoint`;
        count.classList.add('sev-error');
      } else {
        // The row a third of the way down, so what comes before it shows too.
        body.scrollTop = Math.max(0, i * ROW - Math.floor(body.clientHeight / 3));
        paint();
      }
      hooks.rendered();
    },
  };
}
