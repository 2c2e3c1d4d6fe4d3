/**
 * Read-only viewers for model files (custom editors, package.json `contributes.customEditors`):
 * `weightSpec.safetensorsViewer` (default for *.safetensors) and `weightSpec.onnxViewer`
 * (default for *.onnx too: VS Code itself only offers a binary-file warning). Pages come from core/src/view.
 */
import * as vscode from 'vscode';
import { exportActiveGraph, openSpecInput, openTensor, ViewerProvider, renderedText } from './provider';
import { CLIENT_COMMANDS } from '../../../core/src/protocol';
import { ONNX_VIEW_TYPE, SAFETENSORS_VIEW_TYPE } from './view-types';

export { ONNX_VIEW_TYPE, SAFETENSORS_VIEW_TYPE };
/** Not in the command palette: the e2e suite reads what a viewer rendered through it. */
export const RENDERED_TEXT_COMMAND = 'weightSpec.viewers.renderedText';
/** The ONNX viewer's graph exports (palette entries while an ONNX viewer is active; package.json). */
export const EXPORT_GRAPH_COMMANDS = { svg: 'weightSpec.graph.exportSvg', png: 'weightSpec.graph.exportPng' } as const;
/** Not in the command palette: `(spec: string, input: number)` opens the spec at `inputs[input]`'s key (the tree's tensors). */
export const OPEN_SPEC_INPUT_COMMAND = 'weightSpec.openSpecInput';

/** Registers both viewers (one call from extension.ts). */
export function registerViewers(context: vscode.ExtensionContext): void {
  const provider = new ViewerProvider(context);
  const opts = { webviewOptions: { retainContextWhenHidden: true }, supportsMultipleEditorsPerDocument: true };
  context.subscriptions.push(
    vscode.window.registerCustomEditorProvider(SAFETENSORS_VIEW_TYPE, provider, opts),
    vscode.window.registerCustomEditorProvider(ONNX_VIEW_TYPE, provider, opts),
    vscode.commands.registerCommand(RENDERED_TEXT_COMMAND, (file: string) => renderedText.get(file)),
    ...(['svg', 'png'] as const).map((format) =>
      vscode.commands.registerCommand(EXPORT_GRAPH_COMMANDS[format], () => {
        if (!exportActiveGraph(format))
          void vscode.window.showInformationMessage('Open an ONNX file in the ONNX viewer to export its graph.');
      }),
    ),
    vscode.commands.registerCommand(OPEN_SPEC_INPUT_COMMAND, (spec: unknown, input: unknown) =>
      typeof spec === 'string' && typeof input === 'number' ? openSpecInput(spec, input) : undefined,
    ),
    // the hover's shard links (server/src/definition.ts tensorLinkTarget)
    vscode.commands.registerCommand(CLIENT_COMMANDS.openTensor, (file: unknown, key: unknown) =>
      typeof file === 'string' && typeof key === 'string' ? openTensor(file, key) : undefined,
    ),
  );
}
