/**
 * The graph explorer's search box (core's GraphSearch does the matching): results listed under
 * the box, Enter / arrows jump to the next or previous one, Escape goes back to the canvas.
 */
import type { GraphModel } from '../../../../core/src/view/graph-data';
import { clip } from '../../../../core/src/view/graph-layout';
import type { GraphSearch, SearchHit } from '../../../../core/src/view/graph-search';
import { el } from './dom';

/** What the explorer calls back: jump to a node, repaint (the matches changed), focus the canvas. */
export interface SearchHooks {
  reveal(node: number): void;
  changed(): void;
  escape(): void;
}

/** The search box's handle. */
export interface SearchUi {
  /** The box with its results list, for the toolbar. */
  element: HTMLElement;
  box: HTMLInputElement;
  /** Searches `q` (as if typed); returns the hits. */
  run(q: string): SearchHit[];
  /** The nodes the current query matches (highlighted on the canvas). */
  matches(): ReadonlySet<number>;
}

/** Builds the search box for `model`. */
export function searchUi(model: GraphModel, finder: GraphSearch, hooks: SearchHooks): SearchUi {
  const box = el('input', {
    type: 'text',
    class: 'gx-search',
    placeholder: 'Search nodes, inputs, tensors, experts',
    'aria-label': 'Search the graph',
  });
  const results = el('div', { class: 'gx-results', hidden: '' });
  let matches = new Set<number>();
  let hits: SearchHit[] = [];
  let hitAt = -1;
  let searched = '';
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
          hooks.reveal(h.node);
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
    results.hidden = !box.value.trim();
    // Opened leftwards when the box sits near the window's right edge.
    results.classList.toggle('flip', box.getBoundingClientRect().left + 520 > window.innerWidth);
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const runSearch = () => {
    searched = box.value;
    hits = finder.find(box.value);
    matches = new Set(hits.map((h) => h.node));
    hitAt = -1;
    showResults();
    hooks.changed();
  };
  box.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(runSearch, 80);
  });
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      clearTimeout(timer);
      if (searched !== box.value || hitAt < 0) runSearch();
      if (!hits.length) return;
      hitAt = (hitAt + (e.key === 'ArrowUp' ? hits.length - 1 : 1)) % hits.length;
      hooks.reveal(hits[hitAt]!.node);
      showResults();
    } else if (e.key === 'Escape') {
      results.hidden = true;
      hooks.escape();
    }
  });
  box.addEventListener('blur', () => setTimeout(() => (results.hidden = true), 150));
  box.addEventListener('focus', () => (results.hidden = !box.value.trim()));
  return {
    element: el('span', { class: 'gx-search-box' }, box, results),
    box,
    run: (q) => ((box.value = q), runSearch(), hits),
    matches: () => matches,
  };
}
