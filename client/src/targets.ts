/**
 * Turns a command's first argument (a Uri from the explorer or a code lens, a file: URI string,
 * or a plain path) into a file-system path, and finds the folders the commands work on.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import { readJsonTextSync } from '../../core/src/paths';
import { isSpecFile, specFileIn, VLM_MANIFEST_FILE, WHISPER_GRAPHS, WHISPER_MANIFEST_FILE } from '../../core/src/spec/file-names';

/** The path behind `arg`, else the active editor's file, else undefined. */
export function targetPath(arg: unknown, useActiveEditor = true): string | undefined {
  if (arg instanceof vscode.Uri) return arg.fsPath;
  if (arg && typeof arg === 'object' && 'fsPath' in arg && typeof (arg as { fsPath: unknown }).fsPath === 'string') {
    return (arg as { fsPath: string }).fsPath;
  }
  if (typeof arg === 'string' && arg !== '') {
    return /^[a-z][\w+.-]*:/i.test(arg) && !/^[a-z]:[\\/]/i.test(arg) ? vscode.Uri.parse(arg).fsPath : path.resolve(arg);
  }
  if (useActiveEditor) {
    const doc = vscode.window.activeTextEditor?.document;
    if (doc && doc.uri.scheme === 'file') return doc.uri.fsPath;
  }
  return undefined;
}

/** The options object passed as second argument (not an explorer multi-select array). */
export function optionsArg<T extends object>(arg: unknown): Partial<T> {
  return arg && typeof arg === 'object' && !Array.isArray(arg) && !(arg instanceof vscode.Uri) ? (arg as Partial<T>) : {};
}

export function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The export directory for a spec, a model.onnx or a folder. */
export function exportDirOf(p: string): string {
  if (isDir(p)) return p;
  return path.dirname(p);
}

/** The spec file of an export directory (or `p` itself when it is a spec). */
export function specOf(p: string): string | undefined {
  if (isSpecFile(p)) return p;
  return specFileIn(exportDirOf(p));
}

/** The two specs of a VLM export folder (`vlm.json` + `vision/` + `language/`) or a Whisper one (`whisper.json` + `encoder/` + `decoder/`), else undefined. */
export function vlmSpecs(dir: string): string[] | undefined {
  if (fs.existsSync(path.join(dir, WHISPER_MANIFEST_FILE))) return WHISPER_GRAPHS.map((g) => path.join(dir, g, 'weight_spec.json'));
  if (!fs.existsSync(path.join(dir, VLM_MANIFEST_FILE))) return undefined;
  return ['vision', 'language'].map((g) => path.join(dir, g, 'weight_spec.json'));
}

/** Asks for one folder. */
export async function pickFolder(title: string, defaultPath?: string): Promise<string | undefined> {
  const r = await vscode.window.showOpenDialog({
    title,
    canSelectFiles: false,
    canSelectFolders: true,
    canSelectMany: false,
    ...(defaultPath ? { defaultUri: vscode.Uri.file(defaultPath) } : {}),
  });
  return r?.[0]?.fsPath;
}

/** Asks for one file with the given extensions. */
export async function pickFile(title: string, filters: Record<string, string[]>, defaultPath?: string): Promise<string | undefined> {
  const r = await vscode.window.showOpenDialog({
    title,
    canSelectFiles: true,
    canSelectFolders: false,
    canSelectMany: false,
    filters,
    ...(defaultPath ? { defaultUri: vscode.Uri.file(defaultPath) } : {}),
  });
  return r?.[0]?.fsPath;
}

/** Reads config.json beside a checkpoint, if any. */
export function readConfig(dir: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(readJsonTextSync(path.join(dir, 'config.json'))) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
