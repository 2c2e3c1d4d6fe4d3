/** The `weightSpec.*` settings, read fresh on every use (so changes apply without reload). */
import * as vscode from 'vscode';
import type { Backend } from '../../core/src/editor/cli-args';
import type { PrepareDtype } from '../../core/src/formats/dtype';
import { cliToolEnv } from '../../core/src/editor/cli-process';
import type { OrtSearch } from './ort-locator';

/** Current settings (scoped to `resource` when given). */
export interface Settings {
  defaultDtype: PrepareDtype;
  maxRamGb: number;
  compileBackend: Backend;
  qaicCompilePath: string;
  onnxRuntimePath: string;
  roots: string[];
}

export function settings(resource?: vscode.Uri): Settings {
  const c = vscode.workspace.getConfiguration('weightSpec', resource);
  return {
    defaultDtype: c.get<PrepareDtype>('defaultDtype', 'float32'),
    maxRamGb: c.get<number>('maxRamGb', 0),
    compileBackend: c.get<Backend>('compileBackend', 'ort'),
    qaicCompilePath: c.get<string>('qaicCompilePath', ''),
    onnxRuntimePath: c.get<string>('onnxRuntimePath', ''),
    roots: c.get<string[]>('roots', []),
  };
}

/** Where to look for onnxruntime-node (ort-locator.ts): the setting, then the workspace (trusted only), the extension, its storage. */
export function ortSearch(context: vscode.ExtensionContext, resource?: vscode.Uri): OrtSearch {
  return {
    setting: settings(resource).onnxRuntimePath,
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    trusted: vscode.workspace.isTrusted,
    extensionDir: context.extensionPath,
    storageDir: context.globalStorageUri.fsPath,
  };
}

/**
 * The environment of every CLI child the extension starts, a command's process or a task's
 * ProcessExecution alike: core's CLI_ENV (Node mode, plain progress lines every 250 ms) plus
 * the tools the settings of `resource` name, and the onnxruntime-node package when found.
 */
export function cliEnvFor(resource: vscode.Uri | undefined, ortDir?: string): Record<string, string> {
  return cliToolEnv({ qaicCompilePath: settings(resource).qaicCompilePath, ...(ortDir ? { ortPath: ortDir } : {}) });
}
