/**
 * Messages between a viewer's webview and the extension. The webview says `ready` once its
 * script runs (so no page is posted before it can be received), asks for the graph explorer's
 * model when the Graph tab opens, asks to open a spec input or a checkpoint tensor (which the
 * checkpoint viewer then scrolls to) or a tensor's values (statistics, `.npy`), and reports
 * the text it rendered (the e2e suite reads it back through a command).
 */
import type { GraphModel } from '../../../core/src/view/graph-data';
import type { GraphImageFormat } from '../../../core/src/view/graph-image';
import type { ViewerPage } from '../../../core/src/view/types';

/**
 * Extension → webview. `reveal` (with a checkpoint page, or alone to a viewer already open)
 * scrolls the tensor table to that key and highlights its row: the graph explorer's checkpoint link.
 */
export type ToWebview =
  | { type: 'page'; page: ViewerPage; reveal?: string }
  | { type: 'graph'; model: GraphModel | undefined }
  | { type: 'reveal'; key: string }
  | { type: 'tensorStats'; key: string; lines: string[]; histogram?: number[]; error?: string }
  /** The command palette's graph export: the webview answers with `saveImage`. */
  | { type: 'exportImage'; format: GraphImageFormat };

/** What a summary link opens; the extension resolves the file from the page it built. */
export type LinkTarget = 'spec' | 'checkpoint' | 'problems';

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'graph' }
  | { type: 'openSpec'; spec: string; input: number }
  | { type: 'openLink'; target: LinkTarget }
  | { type: 'openTensor'; file: string; key: string }
  /**
   * A tensor's values, on demand: statistics, or a `.npy` export (a save dialog asks where). From
   * a checkpoint row, or a weight in the graph panel (its file is the one the spec maps it to).
   */
  | { type: 'tensorStats'; key: string }
  | { type: 'exportNpy'; key: string }
  | { type: 'rendered'; text: string; view: 'page' | 'graph' }
  /** The graph explorer's picture (an SVG document, or the canvas as a PNG data URL): a save dialog asks where. */
  | { type: 'saveImage'; format: GraphImageFormat; data: string };
