/** Shared by the e2e suites: workspace facts, waiting on VS Code events, the CLI as a process. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import type { WeightSpecApi } from '../../../client/src/extension';

export interface Workspace {
  dir: string;
  llama: string;
  badSpec: string;
  /** A spec with the misspelt key that no test opens (workspace diagnostics). */
  closedSpec: string;
  goodKey: string;
  badKey: string;
  /** ../shared/fixtures/llama/reference.json (read in place). */
  reference: string;
}

/** The fixture workspace scripts/e2e-run.mjs built (WEIGHT_SPEC_E2E_WORKSPACE). */
export function workspace(): Workspace {
  const raw = process.env.WEIGHT_SPEC_E2E_WORKSPACE;
  if (!raw) throw new Error('WEIGHT_SPEC_E2E_WORKSPACE is not set (run through scripts/e2e-run.mjs)');
  return JSON.parse(raw) as Workspace;
}

export const REPO = process.env.WEIGHT_SPEC_E2E_REPO ?? path.resolve(__dirname, '..', '..', '..');
export const CLI = path.join(REPO, 'dist', 'cli.js');
/** The language server of the extension under test. */
export function serverPath(): string {
  const ext = vscode.extensions.getExtension('weight-spec.weight-spec');
  return path.join(ext?.extensionPath ?? REPO, 'dist', 'server.js');
}

/** Runs the bundled CLI directly (what a user would type), failing the test on a non-zero exit. */
export function cli(args: string[], cwd?: string): string {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing (node scripts/bundle.mjs)`);
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    cwd,
    env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
    timeout: 300_000,
  });
  if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** The extension's API (activating it first). */
export async function api(): Promise<WeightSpecApi> {
  const ext = vscode.extensions.getExtension('weight-spec.weight-spec');
  if (!ext) throw new Error('extension weight-spec.weight-spec is not installed');
  return (await ext.activate()) as never;
}

/**
 * Resolves with the diagnostics of `uri` once `pred` holds, driven by onDidChangeDiagnostics
 * (no polling). `timeoutMs` only bounds a broken run.
 */
export function waitForDiagnostics(
  uri: vscode.Uri,
  pred: (d: readonly vscode.Diagnostic[]) => boolean,
  timeoutMs = 60_000,
): Promise<readonly vscode.Diagnostic[]> {
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (d: readonly vscode.Diagnostic[]) => {
      done = true;
      sub.dispose();
      clearTimeout(timer);
      resolve(d);
    };
    const sub = vscode.languages.onDidChangeDiagnostics((e) => {
      if (done || !e.uris.some((u) => u.toString() === uri.toString())) return;
      const d = vscode.languages.getDiagnostics(uri);
      if (pred(d)) finish(d);
    });
    const timer = setTimeout(() => {
      sub.dispose();
      reject(
        new Error(
          `diagnostics of ${uri.fsPath} did not arrive within ${timeoutMs / 1000} s; now: ${JSON.stringify(vscode.languages.getDiagnostics(uri).map((x) => [codeOf(x), x.message]))}`,
        ),
      );
    }, timeoutMs);
    const now = vscode.languages.getDiagnostics(uri);
    if (pred(now)) finish(now);
  });
}

/** A diagnostic's code as a string. */
export function codeOf(d: vscode.Diagnostic): string | undefined {
  const c = d.code;
  if (c === undefined) return undefined;
  return typeof c === 'object' ? String(c.value) : String(c);
}

/** Hover text of a position as one string. */
export function hoverText(hovers: vscode.Hover[]): string {
  return hovers
    .flatMap((h) => h.contents)
    .map((c) => (typeof c === 'string' ? c : 'value' in c ? c.value : String(c)))
    .join('\n');
}

/** All files below `dir` (relative, sorted), following no links. */
export function listFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...listFiles(p, base));
    else out.push(path.relative(base, p));
  }
  return out.sort();
}

/** The safetensors header (dtype and shape of each key), read here independently of core. */
export function safetensorsHeader(file: string): Record<string, { dtype: string; shape: number[] }> {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const h = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<string, { dtype: string; shape: number[] }>;
  delete (h as Record<string, unknown>).__metadata__;
  return h;
}
