/**
 * Entry point of the viewers' webview (bundled to dist/viewer.js for the browser): tells the
 * extension it is ready, renders the page it receives, and reports the rendered text back.
 */
import type { FromWebview, ToWebview } from '../messages';
import { renderCheckpoint, type CheckpointView } from './checkpoint-view';
import { el } from './dom';
import type { ExplorerPrefs } from './graph-explorer';
import { showPanelStats } from './graph-panel';
import { renderOnnx, type OnnxView } from './onnx-view';

declare function acquireVsCodeApi(): { postMessage(m: FromWebview): void; getState(): unknown; setState(s: unknown): void };

/** What the webview keeps in VS Code's state: the graph explorer's toggles. */
interface State {
  gx?: Partial<ExplorerPrefs>;
}

const vscode = acquireVsCodeApi();
const app = document.getElementById('app')!;
let onnx: OnnxView | undefined;
let checkpoint: CheckpointView | undefined;

/** The text a user sees (what the e2e suite checks), capped so a 20,000-row page stays cheap. */
const rendered = (view: 'page' | 'graph', node: HTMLElement = app) =>
  vscode.postMessage({ type: 'rendered', view, text: (node.innerText || node.textContent || '').slice(0, 200_000) });

window.addEventListener('message', (ev: MessageEvent<ToWebview>) => {
  const m = ev.data;
  if (m.type === 'page') {
    const page = m.page;
    onnx = undefined;
    checkpoint = undefined;
    if (page.kind === 'error') {
      app.replaceChildren(el('div', { class: 'error-line' }, page.message));
      rendered('page');
    } else if (page.kind === 'checkpoint') {
      checkpoint = renderCheckpoint(app, page, {
        openLink: (spec, input) => vscode.postMessage({ type: 'openSpec', spec, input }),
        rendered: () => rendered('page'),
        tensorStats: (key) => vscode.postMessage({ type: 'tensorStats', key }),
        exportNpy: (key) => vscode.postMessage({ type: 'exportNpy', key }),
      });
      if (m.reveal !== undefined) checkpoint.reveal(m.reveal);
    } else {
      onnx = renderOnnx(app, page, {
        requestGraph: () => vscode.postMessage({ type: 'graph' }),
        rendered: () => rendered('page'),
        renderedGraph: (text) => vscode.postMessage({ type: 'rendered', view: 'graph', text }),
        openSpec: (spec, input) => vscode.postMessage({ type: 'openSpec', spec, input }),
        openTensor: (file, key) => vscode.postMessage({ type: 'openTensor', file, key }),
        tensorStats: (key) => vscode.postMessage({ type: 'tensorStats', key }),
        exportNpy: (key) => vscode.postMessage({ type: 'exportNpy', key }),
        openLink: (target) => vscode.postMessage({ type: 'openLink', target }),
        saveImage: (format, data) => vscode.postMessage({ type: 'saveImage', format, data }),
        loadPrefs: () => (vscode.getState() as State | undefined)?.gx,
        savePrefs: (gx) => vscode.setState({ ...(vscode.getState() as State | undefined), gx } satisfies State),
      });
    }
  } else if (m.type === 'graph') {
    onnx?.showGraph(m.model);
  } else if (m.type === 'reveal') {
    checkpoint?.reveal(m.key);
  } else if (m.type === 'exportImage') {
    onnx?.exportImage(m.format);
  } else if (m.type === 'tensorStats') {
    checkpoint?.showStats(m);
    if (onnx) showPanelStats(m);
  }
});
vscode.postMessage({ type: 'ready' });
