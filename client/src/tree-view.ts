/**
 * The "Weight Spec" view (its own activity-bar container): each export folder of the workspace with its
 * graph(s), spec, prepared checkpoint (expanding to the checkpoint's tensors by layer) and
 * compile state. Prepare / Compile / Run / Inspect sit on the items (package.json
 * `view/item/context`, keyed by `contextValue`). Items carry `fsPath`, so the commands take
 * them as they take an explorer Uri. Refreshed by the workspace index (the one file watcher).
 */
import path from 'node:path';
import * as vscode from 'vscode';
import { stateAction } from '../../core/src/editor/spec-state';
import { Checkpoint } from '../../core/src/formats/safetensors/checkpoint';
import { layerNumberOf } from '../../core/src/foundation/layer-number';
import { readRegularFileSync } from '../../core/src/paths/file-kind';
import { linkSpecs } from '../../core/src/view/spec-links';
import type { SpecLink } from '../../core/src/view/types';
import { OPEN_SPEC_INPUT_COMMAND } from './viewers';
import type { ExportEntry, WorkspaceIndex } from './workspace-index';

export const TREE_VIEW_ID = 'weightSpec.exports';

/** A node of the tree. `fsPath` is what a command run on the item works on. */
export type TreeNode =
  | { kind: 'export'; fsPath: string; entry: ExportEntry }
  | { kind: 'graph'; fsPath: string }
  | { kind: 'spec'; fsPath: string }
  | { kind: 'checkpoint'; fsPath: string; entry: ExportEntry; dir: string | undefined; prepared: boolean }
  | { kind: 'compile'; fsPath: string; entry: ExportEntry }
  | { kind: 'layer'; fsPath: string; label: string; tensors: TensorRow[] }
  | { kind: 'tensor'; fsPath: string; key: string; dtype: string; shape: number[]; use?: SpecLink }
  | { kind: 'message'; fsPath: string; text: string };

/** A tensor of the checkpoint, and the export's spec input that reads it (if one does). */
interface TensorRow {
  key: string;
  dtype: string;
  shape: number[];
  file: string;
  use?: SpecLink;
}

const COMPILE_TEXT: Record<string, string> = { 'never-compiled': 'never compiled', 'up-to-date': 'up to date', stale: 'stale' };

export class ExportTree implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly sub: vscode.Disposable;

  constructor(private readonly index: WorkspaceIndex) {
    this.sub = index.onDidChange(() => this.changed.fire(undefined));
  }

  async getChildren(node?: TreeNode): Promise<TreeNode[]> {
    if (!node) {
      await this.index.ready;
      return this.index.exports().map((entry) => ({ kind: 'export', fsPath: entry.spec, entry }));
    }
    switch (node.kind) {
      case 'export': {
        const e = node.entry;
        const dir = e.info.preparedDir ?? e.info.sourceCheckpoint;
        return [
          ...e.graphs.map((g): TreeNode => ({ kind: 'graph', fsPath: g })),
          { kind: 'spec', fsPath: e.spec },
          { kind: 'checkpoint', fsPath: e.spec, entry: e, dir, prepared: e.info.state !== 'not-prepared' },
          { kind: 'compile', fsPath: e.spec, entry: e },
        ];
      }
      case 'checkpoint':
        return node.dir ? tensorsByLayer(node.dir, node.entry.spec) : [];
      case 'layer':
        return node.tensors.map((t) => ({ kind: 'tensor', fsPath: t.file, key: t.key, dtype: t.dtype, shape: t.shape, use: t.use }));
      default:
        return [];
    }
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const None = vscode.TreeItemCollapsibleState.None;
    const Collapsed = vscode.TreeItemCollapsibleState.Collapsed;
    switch (node.kind) {
      case 'export': {
        const e = node.entry;
        // The path below the workspace folder; a workspace folder itself goes by its name.
        const folder = vscode.workspace.getWorkspaceFolder(vscode.Uri.file(e.dir));
        const rel = folder && folder.uri.fsPath === e.dir ? folder.name : vscode.workspace.asRelativePath(e.dir, false);
        const item = new vscode.TreeItem(rel, vscode.TreeItemCollapsibleState.Expanded);
        item.description = stateAction(e.info.state).label;
        item.tooltip = `${e.dir}\n${stateAction(e.info.state).tooltip}`;
        item.iconPath = new vscode.ThemeIcon('package');
        item.contextValue = `weightSpec.export.${e.info.state}`;
        item.id = `export:${e.dir}`;
        return item;
      }
      case 'graph':
      case 'spec': {
        const item = new vscode.TreeItem(path.basename(node.fsPath), None);
        item.resourceUri = vscode.Uri.file(node.fsPath);
        item.description = node.kind === 'graph' ? 'graph' : 'weight spec';
        item.command = { title: 'Open', command: 'vscode.open', arguments: [item.resourceUri] };
        item.contextValue = `weightSpec.${node.kind}`;
        item.iconPath = new vscode.ThemeIcon(node.kind === 'graph' ? 'type-hierarchy' : 'json');
        return item;
      }
      case 'checkpoint': {
        const item = new vscode.TreeItem('checkpoint', node.dir ? Collapsed : None);
        const where = node.dir ? path.basename(node.dir) : 'unknown';
        item.description = `${node.prepared ? 'prepared' : 'not prepared'} · ${where}`;
        item.tooltip = node.dir
          ? `${node.prepared ? 'prepared checkpoint' : 'source checkpoint (not prepared yet)'}: ${node.dir}`
          : 'the spec names no checkpoint folder';
        item.iconPath = new vscode.ThemeIcon(node.prepared ? 'pass' : 'circle-outline');
        item.contextValue = node.prepared ? 'weightSpec.checkpoint.prepared' : 'weightSpec.checkpoint.not-prepared';
        item.id = `checkpoint:${node.entry.dir}:${node.dir ?? ''}`;
        return item;
      }
      case 'compile': {
        const c = node.entry.info.compile;
        const item = new vscode.TreeItem('compile', None);
        item.description = `${COMPILE_TEXT[c.state] ?? c.state}${c.changed?.length ? `: ${c.changed.join(', ')} changed` : ''}${c.backend ? ` (${c.backend})` : ''}`;
        item.tooltip = c.artifact ? `artifact: ${c.artifact}` : 'not compiled yet';
        item.iconPath = new vscode.ThemeIcon(c.state === 'up-to-date' ? 'check-all' : c.state === 'stale' ? 'warning' : 'gear');
        item.contextValue = `weightSpec.compile.${c.state}`;
        return item;
      }
      case 'layer': {
        const item = new vscode.TreeItem(node.label, Collapsed);
        item.description = `${node.tensors.length} tensors`;
        item.iconPath = new vscode.ThemeIcon('layers');
        return item;
      }
      case 'tensor': {
        const item = new vscode.TreeItem(node.key, None);
        item.description = `${node.dtype} [${node.shape.join(', ')}]`;
        item.tooltip = `${node.key}: ${node.dtype} [${node.shape.join(', ')}] in ${node.fsPath}${
          node.use ? `\nused by inputs[${node.use.input}] (${node.use.name}) of ${node.use.spec}` : '\nread by no input of the spec'
        }`;
        item.iconPath = new vscode.ThemeIcon('symbol-field');
        item.contextValue = 'weightSpec.tensor';
        // A click goes to the spec entry that reads it ("used by", as the checkpoint viewer's links).
        if (node.use)
          item.command = { title: 'Go to Spec Entry', command: OPEN_SPEC_INPUT_COMMAND, arguments: [node.use.spec, node.use.input] };
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text, None);
        item.iconPath = new vscode.ThemeIcon('error');
        return item;
      }
    }
  }

  dispose(): void {
    this.sub.dispose();
    this.changed.dispose();
  }
}

/** The spec's text as the editor holds it (unsaved edits included), else as on disk; undefined when unreadable. */
function specText(spec: string): string | undefined {
  const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && d.uri.fsPath === spec);
  if (open) return open.getText();
  try {
    return readRegularFileSync(spec, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The checkpoint's tensors grouped by layer (headers only, through core), each with the input
 * of `spec` that reads it; or one message node saying why not.
 */
async function tensorsByLayer(dir: string, spec: string): Promise<TreeNode[]> {
  let ck: Checkpoint;
  try {
    ck = await Checkpoint.open(dir);
  } catch (e) {
    return [{ kind: 'message', fsPath: dir, text: e instanceof Error ? e.message : String(e) }];
  }
  const text = specText(spec);
  const { links } = text === undefined ? { links: {} as Record<string, SpecLink[]> } : linkSpecs(ck, [{ file: spec, text }]);
  const groups = new Map<number, TensorRow[]>();
  for (const [file, h] of ck.headers) {
    for (const t of h.tensors.values()) {
      const layer = layerNumberOf(t.key) ?? -1;
      let g = groups.get(layer);
      if (!g) groups.set(layer, (g = []));
      const use = links[t.key]?.[0];
      g.push({ key: t.key, dtype: t.dtype, shape: t.shape, file, ...(use ? { use } : {}) });
    }
  }
  return [...groups.entries()]
    .sort((a, b) => (a[0] === -1 ? 1 : b[0] === -1 ? -1 : a[0] - b[0]))
    .map(([layer, tensors]) => ({
      kind: 'layer' as const,
      fsPath: dir,
      label: layer === -1 ? 'other' : `layer ${layer}`,
      tensors: tensors.sort((a, b) => a.key.localeCompare(b.key)),
    }));
}
