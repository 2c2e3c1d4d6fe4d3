/**
 * What a spec file is called — the one definition behind the language's file patterns
 * (package.json `filenames`/`filenamePatterns`), the extension's explorer menus, tasks and
 * tree, and compile's lookup of an export directory's spec: `weight_spec.json`, or
 * `<stem>.weight_spec.json` beside `<stem>.onnx`.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The spec file an export writes. */
export const SPEC_FILE = 'weight_spec.json';
/** The suffix of a named spec (`<stem>.weight_spec.json`). */
export const SPEC_SUFFIX = '.weight_spec.json';
/** A glob matching both names at any depth (VS Code's findFiles and file watchers). */
export const SPEC_GLOB = `**/{${SPEC_FILE},*${SPEC_SUFFIX}}`;

/** True for weight_spec.json and *.weight_spec.json. */
export function isSpecFile(file: string): boolean {
  const b = path.basename(file);
  return b === SPEC_FILE || b.endsWith(SPEC_SUFFIX);
}

/**
 * The spec of directory `dir`: its weight_spec.json, else its single `*.weight_spec.json`
 * (undefined when there is none, or several and no weight_spec.json to prefer).
 */
export function specFileIn(dir: string): string | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  if (names.includes(SPEC_FILE)) return path.join(dir, SPEC_FILE);
  const named = names.filter((n) => n.endsWith(SPEC_SUFFIX));
  return named.length === 1 ? path.join(dir, named[0]!) : undefined;
}

/** The manifest a VLM export writes beside its two graph folders (export-vlm.ts's VLM_MANIFEST). */
export const VLM_MANIFEST_FILE = 'vlm.json';
/** A VLM export's graph folders, in the order run uses them. */
export const VLM_GRAPHS = ['vision', 'language'] as const;

/** The manifest a Whisper export writes beside its two graph folders (export/whisper/export-whisper.ts). */
export const WHISPER_MANIFEST_FILE = 'whisper.json';
/** A Whisper export's graph folders, in the order run uses them. */
export const WHISPER_GRAPHS = ['encoder', 'decoder'] as const;

/**
 * The graph folders of an export made of two graphs — a VLM (`vlm.json` + `vision/` +
 * `language/`) or Whisper (`whisper.json` + `encoder/` + `decoder/`) — that hold a spec, as
 * `[name, folder]`; undefined when `dir` is neither.
 */
export function exportGraphDirs(dir: string): [string, string][] | undefined {
  if (fs.existsSync(path.join(dir, WHISPER_MANIFEST_FILE)))
    return WHISPER_GRAPHS.map((g): [string, string] => [g, path.join(dir, g)]).filter(([, d]) => specFileIn(d) !== undefined);
  return vlmGraphDirs(dir);
}

/**
 * The graph folders of a VLM export directory (`vlm.json` + `vision/` + `language/`) that hold a
 * spec, as `[name, folder]`; undefined when `dir` is not a VLM export.
 */
export function vlmGraphDirs(dir: string): [string, string][] | undefined {
  if (!fs.existsSync(path.join(dir, VLM_MANIFEST_FILE))) return undefined;
  return VLM_GRAPHS.map((g): [string, string] => [g, path.join(dir, g)]).filter(([, d]) => specFileIn(d) !== undefined);
}
