/**
 * The graph explorer's controls besides the canvas (graph-explorer.ts wires them): the toolbar's
 * toggles, kept in the webview's state, and the side panel's draggable edge. The panel and the
 * canvas's wrapper are flex siblings, so the canvas takes what the panel leaves and its
 * ResizeObserver redraws it at that width: it never draws under the panel.
 */
import type { LayoutDirection } from '../../../../core/src/view/graph-layout';
import { el } from './dom';

/** The toolbar's toggles (attribute rows, weight-name rows, shape labels on edges, the direction) and the panel's width. */
export interface ExplorerPrefs {
  attrs: boolean;
  weights: boolean;
  shapes: boolean;
  /** Top to bottom (the default) or left to right. */
  direction?: LayoutDirection;
  /** The side panel's width (CSS pixels), set by dragging its edge. */
  panelWidth?: number;
}

/** A labelled checkbox of the toolbar. */
export function toggleBox(id: string, label: string, title: string, on: boolean): { box: HTMLInputElement; label: HTMLLabelElement } {
  const box = el('input', { type: 'checkbox', id, ...(on ? { checked: '' } : {}) });
  return { box, label: el('label', { for: id, class: 'gx-check', title }, box, ` ${label}`) };
}

/** The toolbar's direction picker: top → bottom or left → right. */
export function directionPicker(dir: LayoutDirection): { select: HTMLSelectElement; label: HTMLLabelElement } {
  const option = (value: LayoutDirection, text: string) => el('option', { value, ...(value === dir ? { selected: '' } : {}) }, text);
  const select = el('select', { id: 'gx-direction' }, option('TB', 'top → bottom'), option('LR', 'left → right'));
  const title = 'Lay the graph out top to bottom or left to right (blocks and the ops inside them)';
  return { select, label: el('label', { for: 'gx-direction', class: 'gx-check', title }, 'layout ', select) };
}

/** The narrowest panel, and the least room it leaves the canvas. */
const MIN_PANEL = 200;
const MIN_CANVAS = 160;

/**
 * Appends a separator and `panel` to `gx` (after the canvas's wrapper): dragging the separator,
 * or Left/Right on it, sets the panel's width (`saved` gets the final one); `width` is the
 * remembered one.
 */
export function panelSplitter(gx: HTMLElement, panel: HTMLElement, width: number | undefined, saved: (w: number) => void): void {
  const split = el('div', {
    class: 'gx-split',
    role: 'separator',
    tabindex: '0',
    'aria-orientation': 'vertical',
    'aria-label': 'Side panel width (drag, or Left/Right)',
    title: 'Drag to resize the side panel',
  });
  gx.append(split, panel);
  const set = (w: number, save: boolean) => {
    // A hidden tab has no width yet: the remembered width is kept as it is then.
    const max = gx.clientWidth ? Math.max(MIN_PANEL, gx.clientWidth - MIN_CANVAS) : Infinity;
    const pw = Math.round(Math.min(max, Math.max(MIN_PANEL, w)));
    panel.style.width = `${pw}px`;
    if (save) saved(pw);
  };
  if (width) set(width, false);
  let drag: { x: number; w: number } | undefined;
  split.addEventListener('pointerdown', (e) => {
    split.setPointerCapture(e.pointerId);
    drag = { x: e.clientX, w: panel.getBoundingClientRect().width };
    e.preventDefault();
  });
  split.addEventListener('pointermove', (e) => drag && set(drag.w - (e.clientX - drag.x), false));
  split.addEventListener('pointerup', (e) => {
    if (drag) set(drag.w - (e.clientX - drag.x), true);
    drag = undefined;
  });
  split.addEventListener('keydown', (e) => {
    if (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight') return;
    e.preventDefault();
    set(panel.getBoundingClientRect().width + (e.key === 'ArrowLeft' ? 40 : -40), true);
  });
}
