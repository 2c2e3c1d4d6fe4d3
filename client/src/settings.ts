/** The `weightSpec.*` settings, read fresh on every use (so changes apply without reload). */
import * as vscode from 'vscode';
import type { Backend, Dtype } from './cli-args';

/** Current settings (scoped to `resource` when given). */
export interface Settings {
  defaultDtype: Dtype;
  maxRamGb: number;
  compileBackend: Backend;
  qaicCompilePath: string;
  onnxRuntimePath: string;
  roots: string[];
}

export function settings(resource?: vscode.Uri): Settings {
  const c = vscode.workspace.getConfiguration('weightSpec', resource);
  return {
    defaultDtype: c.get<Dtype>('defaultDtype', 'float32'),
    maxRamGb: c.get<number>('maxRamGb', 0),
    compileBackend: c.get<Backend>('compileBackend', 'ort'),
    qaicCompilePath: c.get<string>('qaicCompilePath', ''),
    onnxRuntimePath: c.get<string>('onnxRuntimePath', ''),
    roots: c.get<string[]>('roots', []),
  };
}
