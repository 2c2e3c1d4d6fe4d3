/**
 * The read-only custom editor behind both viewers: builds the page in core (headers only) and
 * posts it to the webview, answers the graph tab's request with the explorer's model of the kept
 * graph index, opens a spec at an input or a checkpoint shard when a link is clicked, and rebuilds when the file changes on disk.
 */
import path from 'node:path';
import * as vscode from 'vscode';
import {
  buildViewerPage,
  exportNpy,
  graphModelOf,
  saveGraphImage,
  specInputKeyRange,
  statsLines,
  tensorFileOf,
  tensorStats,
  type GraphImageFormat,
  type GraphIndex,
  type GraphModel,
  type SpecText,
  type ViewerPage,
} from '../../../core/src/view';
import { readJsonText } from '../../../core/src/paths';
import { settings } from '../settings';
import { viewerHtml } from './html';
import { SAFETENSORS_VIEW_TYPE } from './view-types';
import type { FromWebview, ToWebview } from './messages';

/** Spec files of the workspace, whose inputs a checkpoint page links to. */
const SPEC_GLOB = '**/{weight_spec.json,*.weight_spec.json}';
/** At most this many specs are read for links (a workspace of exports stays quick to open). */
const MAX_SPECS = 200;

/** What the last render of each open viewer showed (for the e2e suite). */
export const renderedText = new Map<string, { page?: string; graph?: string }>();

/** A spec not open in an editor: a local file through the read policy, another scheme (a remote's file system) through VS Code's. */
async function specText(u: vscode.Uri): Promise<string> {
  if (u.scheme === 'file') return readJsonText(u.fsPath);
  // eslint-disable-next-line no-restricted-syntax -- a virtual file system's file: VS Code's provider reads it, no FIFO can block here
  return new TextDecoder().decode(await vscode.workspace.fs.readFile(u));
}

async function workspaceSpecs(): Promise<SpecText[]> {
  const uris = await vscode.workspace.findFiles(SPEC_GLOB, '**/node_modules/**', MAX_SPECS);
  const open = new Map(vscode.workspace.textDocuments.map((d) => [d.uri.fsPath, d]));
  const out: SpecText[] = [];
  for (const u of uris) {
    const doc = open.get(u.fsPath);
    try {
      out.push({ file: u.fsPath, text: doc ? doc.getText() : await specText(u) });
    } catch {
      // A spec that vanished between the search and the read has no links to give.
    }
  }
  return out;
}

/** The key each checkpoint viewer about to open scrolls to (by file path), taken by its first page. */
const pendingReveal = new Map<string, string>();
/** Opens of checkpoint viewers under way (by file path): a second link waits for the first. */
const opening = new Map<string, Promise<void>>();
/** The open checkpoint viewers (by file path): each scrolls its table to a key. */
const revealers = new Map<string, Set<(key: string) => void>>();

/**
 * Opens spec `spec` with `inputs[input]`'s key selected (a "used by" link of the checkpoint
 * viewer, a tensor of the Weight Spec tree); the text as the editor holds it, unsaved edits included.
 */
export async function openSpecInput(spec: string, input: number, viewColumn?: vscode.ViewColumn): Promise<void> {
  const d = await vscode.workspace.openTextDocument(vscode.Uri.file(spec));
  const r = specInputKeyRange(d.getText(), spec, input);
  const selection = r ? new vscode.Range(d.positionAt(r.start), d.positionAt(r.end)) : undefined;
  await vscode.window.showTextDocument(d, { ...(viewColumn ? { viewColumn } : {}), ...(selection ? { selection } : {}) });
}

/**
 * Opens a checkpoint shard in the safetensors viewer scrolled to `key`, its row highlighted (a
 * not-yet-prepared shard is named in a message). A viewer of the shard that is already open is
 * revealed where it is and told to scroll.
 */
export async function openTensor(file: string, key: string): Promise<void> {
  try {
    await vscode.workspace.fs.stat(vscode.Uri.file(file));
  } catch {
    void vscode.window.showWarningMessage(`Tensor ${key} is not on disk yet: ${file} does not exist (run Prepare).`);
    return;
  }
  // A viewer of the shard is open, or being opened by an earlier link (a double click sends two):
  // it scrolls there. Opening "beside" again would put a second viewer in a new group whenever
  // that viewer's own group is the active one.
  await opening.get(file);
  const open = revealers.get(file);
  if (open?.size) {
    for (const r of open) r(key);
    return;
  }
  pendingReveal.set(file, key);
  const run = Promise.resolve(
    vscode.commands.executeCommand('vscode.openWith', vscode.Uri.file(file), SAFETENSORS_VIEW_TYPE, vscode.ViewColumn.Beside),
  );
  // waiters only need it settled; this call reports a failure
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  opening.set(file, settled);
  try {
    await run;
  } finally {
    if (opening.get(file) === settled) opening.delete(file);
  }
  // No new viewer took the key: one was open already.
  if (pendingReveal.get(file) === key) {
    pendingReveal.delete(file);
    for (const r of revealers.get(file) ?? []) r(key);
  }
}

/**
 * Go to Definition opens `file` itself (a spec key's shard): its viewer, about to open or open
 * already, scrolls to `key`.
 */
export function revealTensorOnOpen(file: string, key: string): void {
  pendingReveal.set(file, key);
  for (const r of revealers.get(file) ?? []) r(key);
}

/** A tensor's statistics for the webview, or the one-line reason there are none. */
async function statsMessage(file: string, key: string): Promise<ToWebview> {
  try {
    const s = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: `Reading ${key}` }, () =>
      tensorStats(file, key),
    );
    return { type: 'tensorStats', key, lines: statsLines(s), histogram: s.histogram.counts };
  } catch (e) {
    return { type: 'tensorStats', key, lines: [], error: e instanceof Error ? e.message : String(e) };
  }
}

/** Asks where, then writes `key` of `file` as `.npy` (the save dialog has confirmed any replace). */
async function exportTensor(file: string, key: string): Promise<void> {
  const target = await vscode.window.showSaveDialog({
    defaultUri: vscode.Uri.file(path.join(path.dirname(file), `${key.replace(/[^\w.-]+/g, '_')}.npy`)),
    filters: { NumPy: ['npy'] },
    title: `Export ${key} as .npy (float32)`,
  });
  if (!target) return;
  try {
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Exporting ${key}`, cancellable: true },
      (_p, token) => {
        const ac = new AbortController();
        token.onCancellationRequested(() => ac.abort());
        return exportNpy(file, key, target.fsPath, { replace: true, signal: ac.signal });
      },
    );
    void vscode.window.showInformationMessage(`${key}: wrote ${r.out} (${r.bytes.toLocaleString('en-US')} bytes)`);
  } catch (e) {
    void vscode.window.showErrorMessage(e instanceof Error ? e.message : String(e));
  }
}

/** Asks where, then saves the graph explorer's picture of `file` (the save dialog has confirmed any replace). */
async function saveImage(file: string, format: GraphImageFormat, data: string): Promise<void> {
  const base = path.basename(file).replace(/\.onnx$/i, '');
  const target = await vscode.window.showSaveDialog({
    defaultUri: vscode.Uri.file(path.join(path.dirname(file), `${base}-graph.${format}`)),
    filters: format === 'svg' ? { 'SVG image': ['svg'] } : { 'PNG image': ['png'] },
    title: format === 'svg' ? 'Export the whole graph as SVG' : 'Export the current view as PNG',
  });
  if (!target) return;
  try {
    const n = await saveGraphImage(target.fsPath, format, data, { replace: true });
    void vscode.window.showInformationMessage(`Saved the graph as ${target.fsPath} (${n.toLocaleString('en-US')} bytes)`);
  } catch (e) {
    void vscode.window.showErrorMessage(e instanceof Error ? e.message : String(e));
  }
}

/** The ONNX viewers' webviews (the command palette's graph export asks the active one). */
const onnxPanels = new Set<vscode.WebviewPanel>();

/** Asks the active ONNX viewer for its graph's picture (the webview answers with `saveImage`); false when none is active. */
export function exportActiveGraph(format: GraphImageFormat): boolean {
  const panel = [...onnxPanels].find((p) => p.active) ?? (onnxPanels.size === 1 ? [...onnxPanels][0] : undefined);
  if (!panel) return false;
  void panel.webview.postMessage({ type: 'exportImage', format } satisfies ToWebview);
  return true;
}

/** One provider instance serves one view type (safetensors or ONNX). */
export class ViewerProvider implements vscode.CustomReadonlyEditorProvider {
  constructor(private readonly context: vscode.ExtensionContext) {}

  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => renderedText.delete(uri.fsPath) };
  }

  async resolveCustomEditor(doc: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    const dist = vscode.Uri.joinPath(this.context.extensionUri, 'dist');
    const webview = panel.webview;
    webview.options = { enableScripts: true, localResourceRoots: [dist] };
    webview.html = viewerHtml({
      cspSource: webview.cspSource,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'viewer.js')).toString(),
      title: path.basename(doc.uri.fsPath),
    });
    const file = doc.uri.fsPath;
    if (file.toLowerCase().endsWith('.onnx')) onnxPanels.add(panel);
    let graph: GraphIndex | undefined;
    let shown: ViewerPage | undefined;
    // The graph explorer's model as posted: its weights' files (through the spec) answer the panel's values.
    let model: GraphModel | undefined;
    let ready = false;
    // Messages wait for `ready` in order (a page, then a reveal).
    const pending: ToWebview[] = [];
    const post = (m: ToWebview) => {
      if (ready) void webview.postMessage(m);
      else pending.push(m);
    };
    // A checkpoint link of the graph explorer opened this viewer: its first page scrolls to the key.
    let reveal = pendingReveal.get(file);
    pendingReveal.delete(file);
    const load = async () => {
      const onnx = file.toLowerCase().endsWith('.onnx');
      const roots = [...(vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath), ...settings(doc.uri).roots];
      const result = await buildViewerPage(file, { roots, ...(onnx ? {} : { specs: await workspaceSpecs() }) });
      graph = result.graph;
      shown = result.page;
      model = undefined;
      post({ type: 'page', page: result.page, ...(reveal !== undefined ? { reveal } : {}) });
      reveal = undefined;
    };
    const revealer = (key: string) => {
      // In its own group: reveal() without a column shows the panel in the active group, which
      // opens the same viewer there a second time when the link was clicked in another group.
      panel.reveal(panel.viewColumn, true);
      post({ type: 'reveal', key });
    };
    if (!revealers.has(file)) revealers.set(file, new Set());
    revealers.get(file)!.add(revealer);
    const subs: vscode.Disposable[] = [];
    subs.push(
      webview.onDidReceiveMessage(async (m: FromWebview) => {
        switch (m.type) {
          case 'ready':
            ready = true;
            for (const p of pending.splice(0)) void webview.postMessage(p);
            break;
          case 'graph':
            model = graph ? graphModelOf(graph, file, graph.values) : undefined;
            post({ type: 'graph', model });
            break;
          case 'openTensor':
            await openTensor(m.file, m.key);
            break;
          case 'openSpec':
            await openSpecInput(m.spec, m.input, vscode.ViewColumn.Beside);
            break;
          case 'openLink': {
            // Paths come from the page built here, never from the webview.
            const links = shown?.kind === 'onnx' ? shown.links : undefined;
            if (m.target === 'problems') await vscode.commands.executeCommand('workbench.actions.view.problems');
            else if (m.target === 'spec' && links?.spec)
              await vscode.window.showTextDocument(vscode.Uri.file(links.spec), { viewColumn: vscode.ViewColumn.Beside });
            else if (m.target === 'checkpoint' && links?.checkpoint)
              await vscode.commands.executeCommand('vscode.open', vscode.Uri.file(links.checkpoint), vscode.ViewColumn.Beside);
            break;
          }
          case 'tensorStats':
          case 'exportNpy': {
            // The file comes from the page (or the graph's spec sources) built here; the webview names only the key.
            const tf =
              shown?.kind === 'checkpoint'
                ? tensorFileOf(shown, m.key)
                : Object.values(model?.sources ?? {}).find((s) => s.key === m.key && s.file)?.file;
            if (!tf) break;
            if (m.type === 'tensorStats') post(await statsMessage(tf, m.key));
            else await exportTensor(tf, m.key);
            break;
          }
          case 'saveImage':
            if (m.format === 'svg' || m.format === 'png') await saveImage(file, m.format, String(m.data));
            break;
          case 'rendered':
            renderedText.set(file, { ...renderedText.get(file), [m.view]: m.text });
            break;
        }
      }),
    );
    // Re-read when the file is rewritten (a new export, a finished prepare).
    const watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(vscode.Uri.file(path.dirname(file)), path.basename(file)),
    );
    subs.push(
      watcher,
      watcher.onDidChange(() => void load()),
      watcher.onDidCreate(() => void load()),
    );
    panel.onDidDispose(() => {
      subs.forEach((s) => s.dispose());
      revealers.get(file)?.delete(revealer);
      onnxPanels.delete(panel);
    });
    await load();
  }
}
