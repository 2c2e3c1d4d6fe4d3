/**
 * "Weight Spec: Create Demo Model": writes the demo's tiny Llama checkpoint (core's
 * `writeTinyLlama`: real HF config and key names, seeded random bf16 weights, about 100 KB,
 * and its word-level tokenizer.json)
 * into `<folder>/tiny-llama`, so the Getting Started walkthrough can run export → prepare →
 * compile → run without a model at hand. A folder that already exists is never written into.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { writeTinyLlama } from '../../core/src/demo/tiny-model';
import { writeTinyTokenizer } from '../../core/src/demo/tiny-tokenizer';
import { targetPath } from './targets';

/** The command; resolves to the new model folder (undefined when the user backed out). */
export async function createDemoModel(arg: unknown): Promise<{ ok: boolean; out?: string; errorLine?: string } | undefined> {
  let parent = targetPath(arg, false) ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  if (!parent) {
    const picked = await vscode.window.showOpenDialog({
      title: 'Folder for the demo model',
      canSelectFiles: false,
      canSelectFolders: true,
      canSelectMany: false,
    });
    parent = picked?.[0]?.fsPath;
  }
  if (!parent) return undefined;
  const out = path.join(parent, 'tiny-llama');
  if (fs.existsSync(out)) {
    const msg = `${out} already exists; the demo model is written only into a new folder`;
    void vscode.window.showErrorMessage(`Weight Spec: ${msg}.`);
    return { ok: false, errorLine: `weight-spec: ${msg}` };
  }
  await writeTinyLlama(out);
  writeTinyTokenizer(out); // so Run Prompt has text in, text out
  const config = vscode.Uri.file(path.join(out, 'config.json'));
  await vscode.commands.executeCommand('revealInExplorer', config).then(undefined, () => undefined);
  void vscode.window.showInformationMessage(
    `Weight Spec: a tiny Llama (2 layers, random weights) is in ${path.basename(parent)}/tiny-llama. Next: Export Weight-Free ONNX… on its config.json.`,
  );
  return { ok: true, out };
}
