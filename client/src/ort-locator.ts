/**
 * Finds onnxruntime-node at run time (it is native and ~290 MB, so the .vsix never holds it):
 * the `weightSpec.onnxRuntimePath` setting, then `node_modules` of each workspace folder (only
 * in a trusted workspace: loading it runs the workspace's native code), then
 * the extension's own folder (a development checkout), then the copy installed once into the
 * extension's global storage. The CLI gets the result as WEIGHT_SPEC_ORT_PATH. No `vscode`
 * import: unit-tested in client/test.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { readJsonTextSync } from '../../core/src/paths';

/** The version installed into global storage (the one core is tested with). */
export const ORT_VERSION = '1.30.0';
export const ORT_PACKAGE = 'onnxruntime-node';

/** Where to look. */
export interface OrtSearch {
  setting?: string;
  workspaceFolders: readonly string[];
  /** The workspace is trusted; without trust its node_modules are never searched. */
  trusted: boolean;
  extensionDir?: string;
  storageDir: string;
}

/** A found package directory and where it came from. */
export interface OrtLocation {
  dir: string;
  source: 'setting' | 'workspace' | 'extension' | 'storage';
  version?: string;
}

/** The package directory when `p` is one (or its package.json, entry file, or a node_modules holding it). */
export function ortPackageDir(p: string): string | undefined {
  const candidates = [p, path.join(p, ORT_PACKAGE), path.join(p, 'node_modules', ORT_PACKAGE)];
  // An entry file inside the package (…/onnxruntime-node/dist/index.js): walk up to its package.json.
  for (let d = p, i = 0; i < 4; i++, d = path.dirname(d)) candidates.push(d);
  for (const c of candidates) {
    try {
      const pkg = JSON.parse(readJsonTextSync(path.join(c, 'package.json'))) as { name?: string };
      if (pkg.name === ORT_PACKAGE) return c;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

function version(dir: string): string | undefined {
  try {
    return (JSON.parse(readJsonTextSync(path.join(dir, 'package.json'))) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/** The storage folder npm installs into. */
export function storagePrefix(storageDir: string): string {
  return path.join(storageDir, 'onnxruntime');
}

/**
 * Returns the first location found, or `{ error }` when the setting names a folder that holds
 * no onnxruntime-node (a wrong setting is reported, not silently skipped).
 */
export function locateOrt(s: OrtSearch): OrtLocation | { error: string } | undefined {
  if (s.setting && s.setting.trim() !== '') {
    const dir = ortPackageDir(path.resolve(s.setting));
    if (!dir) return { error: `weightSpec.onnxRuntimePath: ${s.setting} holds no ${ORT_PACKAGE} package` };
    return { dir, source: 'setting', ...withVersion(dir) };
  }
  for (const w of s.trusted ? s.workspaceFolders : []) {
    const dir = path.join(w, 'node_modules', ORT_PACKAGE);
    if (ortPackageDir(dir) === dir) return { dir, source: 'workspace', ...withVersion(dir) };
  }
  if (s.extensionDir) {
    const dir = path.join(s.extensionDir, 'node_modules', ORT_PACKAGE);
    if (ortPackageDir(dir) === dir) return { dir, source: 'extension', ...withVersion(dir) };
  }
  const dir = path.join(storagePrefix(s.storageDir), 'node_modules', ORT_PACKAGE);
  if (ortPackageDir(dir) === dir) return { dir, source: 'storage', ...withVersion(dir) };
  return undefined;
}

function withVersion(dir: string): { version?: string } {
  const v = version(dir);
  return v ? { version: v } : {};
}

/** The buttons of the install prompt (runner.ts `ensureOrt`). */
export const ORT_PROMPT = { install: 'Install', settings: 'Open Settings' } as const;

/**
 * The log line when the install prompt ends without Install: the user picked Open Settings, or
 * closed the prompt unanswered (VS Code resolves a dismissed message as undefined). The prompt
 * has no "decline" button, so "declined" was wrong for an unanswered prompt (issue 50).
 */
export function ortPromptNote(pick: string | undefined): string {
  return pick === ORT_PROMPT.settings
    ? `ONNX Runtime is missing: the weightSpec.onnxRuntimePath setting was opened; run again once it points at ${ORT_PACKAGE}`
    : `ONNX Runtime is missing: the install prompt was closed without an answer; run again to be asked again, or set weightSpec.onnxRuntimePath`;
}

/**
 * Installs onnxruntime-node into global storage with npm (CUDA download skipped, as the
 * project's own install does). `onLine` receives npm's output; abort kills npm.
 */
export function installOrt(
  storageDir: string,
  opts: { npm?: string; onLine?: (l: string) => void; signal?: AbortSignal } = {},
): Promise<string> {
  const prefix = storagePrefix(storageDir);
  fs.mkdirSync(prefix, { recursive: true });
  return new Promise((resolve, reject) => {
    const child = spawn(
      opts.npm ?? 'npm',
      ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', `${ORT_PACKAGE}@${ORT_VERSION}`],
      {
        env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', npm_config_onnxruntime_node_install: 'skip' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const onAbort = () => child.kill('SIGTERM');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    for (const s of [child.stdout, child.stderr]) {
      s.setEncoding('utf8').on('data', (c: string) =>
        c
          .split(/\r?\n/)
          .filter(Boolean)
          .forEach((l) => opts.onLine?.(l)),
      );
    }
    child.on('error', (e) => reject(new Error(`could not run npm to install ${ORT_PACKAGE}: ${e.message}`)));
    child.on('close', (code) => {
      opts.signal?.removeEventListener('abort', onAbort);
      const dir = path.join(prefix, 'node_modules', ORT_PACKAGE);
      if (code === 0 && ortPackageDir(dir) === dir) resolve(dir);
      else
        reject(
          new Error(
            opts.signal?.aborted ? `${ORT_PACKAGE} install cancelled` : `npm install ${ORT_PACKAGE}@${ORT_VERSION} failed (exit ${code})`,
          ),
        );
    });
  });
}
