/**
 * Messages between a viewer's webview and the extension. The webview says `ready` once its
 * script runs (so no page is posted before it can be received), asks for one graph group at a
 * time, and reports the text it rendered (the e2e suite reads it back through a command).
 */
import type { GraphView, ViewerPage } from '../../../core/src/view/types';

/** Extension → webview. */
export type ToWebview = { type: 'page'; page: ViewerPage } | { type: 'graph'; view: GraphView | undefined; group: string };

/** What a summary link opens; the extension resolves the file from the page it built. */
export type LinkTarget = 'spec' | 'checkpoint' | 'problems';

/** Webview → extension. */
export type FromWebview =
  | { type: 'ready' }
  | { type: 'graph'; group: string }
  | { type: 'openSpec'; spec: string; input: number }
  | { type: 'openLink'; target: LinkTarget }
  | { type: 'rendered'; text: string; view: 'page' | 'graph' };
