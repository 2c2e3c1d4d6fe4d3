/** Tiny DOM helpers for the viewers' webview: text is always set as text, never parsed as HTML. */
export { formatBytes as bytes } from '../../../../core/src/display';
export { dimsText as dims } from '../../../../core/src/view/graph-data';

type Child = Node | string | undefined | false;

/** An element with attributes (`class`, `title`, data-*, …) and children (strings become text). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  for (const c of children) if (c !== undefined && c !== false) e.append(c);
  return e;
}

/** A simple table of rows of text. `num` marks right-aligned columns. */
export function textTable(head: string[], rows: string[][], num: number[] = []): HTMLTableElement {
  const cls = (i: number): Record<string, string> => (num.includes(i) ? { class: 'num' } : {});
  return el(
    'table',
    {},
    el('thead', {}, el('tr', {}, ...head.map((h, i) => el('th', cls(i), h)))),
    el(
      'tbody',
      {},
      ...rows.map((r) => el('tr', {}, ...r.map((c, i) => el('td', { ...cls(i), class: `mono${num.includes(i) ? ' num' : ''}` }, c)))),
    ),
  );
}
