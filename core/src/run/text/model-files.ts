/**
 * Where `run --prompt` / `--chat` find the model's text files (tokenizer.json,
 * tokenizer_config.json, chat_template.jinja or a processor's chat_template.json,
 * generation_config.json) and how they are read:
 * beside the model's config.json, which the export names in its report (`source.config`, or
 * `source.checkpoint` for `export --onnx`) or a VLM export in vlm.json; else the prepared
 * folder (prepare copies the tokenizer files there, as QEfficient does); `--tokenizer <dir>`
 * overrides. Every file is read through the one read path (regular files only) and parsed
 * with one line naming the file on failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, PipelineError } from '../../errors';
import { readRegularFileSync } from '../../paths';
import { readExportReport } from '../../artifacts/export-report';
import { specFilesFolder } from '../../artifacts/spec-files';
import { readVlmManifest } from '../../artifacts/vlm-manifest';
import { VLM_MANIFEST_FILE, WHISPER_GRAPHS, WHISPER_MANIFEST_FILE } from '../../spec/file-names';

/** The tokenizer's file: what `run --prompt` needs. */
export const TOKENIZER_FILE = 'tokenizer.json';
/** Special tokens, chat template and decoding options (optional). */
export const TOKENIZER_CONFIG_FILE = 'tokenizer_config.json';
/** A chat template kept as its own file (newer checkpoints), used when tokenizer_config.json has none. */
export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';
/** A processor's chat template (VLM checkpoints: `{"chat_template": "…"}`), the last place looked. */
export const CHAT_TEMPLATE_JSON_FILE = 'chat_template.json';
/** Where generate() reads eos_token_id (config.json's is the fallback, as transformers does). */
export const GENERATION_CONFIG_FILE = 'generation_config.json';

/** Reads `file` as JSON (an object), one line naming the file when it is not. */
export function readJsonObject(file: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(readRegularFileSync(file, 'utf8'));
  } catch (e) {
    if (e instanceof SyntaxError) throw new FormatError(file, `not valid JSON: ${e.message.split('\n')[0]}`);
    throw e;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new FormatError(file, 'is not a JSON object');
  return v as Record<string, unknown>;
}

/** The folders that may hold the model's tokenizer for a run target, best first (existing ones only). */
export function modelDirsOf(target: string): string[] {
  const abs = path.resolve(target);
  const dirs: (string | undefined)[] = [];
  let st: fs.Stats | undefined;
  try {
    st = fs.statSync(abs);
  } catch {
    st = undefined;
  }
  if (st?.isFile()) {
    // a compiled .onnx: the bound model lives in the prepared folder, which holds the tokenizer's copies
    dirs.push(path.dirname(abs));
  } else if (st?.isDirectory()) {
    if (fs.existsSync(path.join(abs, VLM_MANIFEST_FILE))) {
      const m = readVlmManifest(abs);
      dirs.push(path.dirname(path.resolve(abs, m.config)));
      for (const g of [m.graphs.language, m.graphs.vision]) dirs.push(...reportDirs(path.join(abs, g)));
    } else if (fs.existsSync(path.join(abs, WHISPER_MANIFEST_FILE))) {
      // a Whisper export: each graph folder's report names the model folder
      for (const g of [...WHISPER_GRAPHS].reverse()) dirs.push(...reportDirs(path.join(abs, g)));
    } else dirs.push(...reportDirs(abs));
  }
  const seen = new Set<string>();
  return dirs.filter((d): d is string => d !== undefined && !seen.has(d) && (seen.add(d), fs.existsSync(d)));
}

/** The model folders an export's report names: config.json's folder, the checkpoint, the prepared folder. */
function reportDirs(exportDir: string): (string | undefined)[] {
  const r = readExportReport(exportDir);
  const config = r?.source?.config;
  return [
    config ? path.dirname(path.resolve(exportDir, config)) : undefined,
    r?.source?.checkpoint ? path.resolve(exportDir, r.source.checkpoint) : undefined,
    // the folder the spec's files lie in (its link, else the report's prepared folder)
    specFilesFolder(exportDir),
  ];
}

/** The model's text files, as read. */
export interface TextModelFiles {
  /** The folder they were read from. */
  dir: string;
  /** tokenizer.json (its path and content). */
  tokenizerFile: string;
  tokenizer: Record<string, unknown>;
  /** tokenizer_config.json (`{}` when absent) and its path when present. */
  config: Record<string, unknown>;
  configFile?: string;
  /** The chat template's text and the file it came from, when the model has one. */
  chatTemplate?: { text: string; file: string };
}

/** Why a folder cannot give the tokenizer: the files it has instead. */
function missingTokenizer(dirs: string[], given: boolean): PipelineError {
  const where = dirs[0];
  if (!where)
    return new PipelineError(
      `run --prompt / --chat need the model's ${TOKENIZER_FILE}, and the export's report names no model folder; give --tokenizer <dir> (or use --input-ids)`,
    );
  const has = (f: string) => dirs.find((d) => fs.existsSync(path.join(d, f)));
  const sp = has('tokenizer.model');
  const slow = has('vocab.json');
  const instead = sp
    ? ` (${path.join(sp, 'tokenizer.model')} is a SentencePiece model, which is not read here: save the tokenizer with transformers' save_pretrained to get ${TOKENIZER_FILE})`
    : slow
      ? ` (${path.join(slow, 'vocab.json')} + merges.txt are a slow tokenizer's files: save it with transformers' save_pretrained to get ${TOKENIZER_FILE})`
      : '';
  return new PipelineError(
    `${path.join(where, TOKENIZER_FILE)}: not found${given ? '' : ` (nor in ${dirs.slice(1).join(', ') || 'any other folder the export names'})`}; run --prompt / --chat need it${instead}; --input-ids works without it`,
  );
}

/**
 * The model's tokenizer files when there are any: `--tokenizer <dir>` must hold them (one line
 * otherwise, as {@link readTextModelFiles}); without it, undefined when no folder the export names
 * has tokenizer.json (a run that can print ids alone, such as Whisper's, goes on without text).
 */
export function optionalTextModelFiles(target: string, tokenizerDir?: string): TextModelFiles | undefined {
  if (tokenizerDir === undefined && !modelDirsOf(target).some((d) => fs.existsSync(path.join(d, TOKENIZER_FILE)))) return undefined;
  return readTextModelFiles(target, tokenizerDir);
}

/**
 * Reads the text files from `tokenizerDir` (`--tokenizer`) or from the first folder of
 * {@link modelDirsOf} that holds tokenizer.json.
 */
export function readTextModelFiles(target: string, tokenizerDir?: string): TextModelFiles {
  const dirs = tokenizerDir !== undefined ? [path.resolve(tokenizerDir)] : modelDirsOf(target);
  const dir = dirs.find((d) => fs.existsSync(path.join(d, TOKENIZER_FILE)));
  if (!dir) throw missingTokenizer(dirs, tokenizerDir !== undefined);
  const tokenizerFile = path.join(dir, TOKENIZER_FILE);
  const tokenizer = readJsonObject(tokenizerFile);
  const cfgFile = path.join(dir, TOKENIZER_CONFIG_FILE);
  const hasCfg = fs.existsSync(cfgFile);
  const config = hasCfg ? readJsonObject(cfgFile) : {};
  const files: TextModelFiles = { dir, tokenizerFile, tokenizer, config, ...(hasCfg ? { configFile: cfgFile } : {}) };
  const t = config.chat_template;
  const jinja = path.join(dir, CHAT_TEMPLATE_FILE);
  if (typeof t === 'string') files.chatTemplate = { text: t, file: cfgFile };
  else if (Array.isArray(t)) {
    // the named-template form: [{name, template}], "default" being the one apply_chat_template uses
    const named = t.find((x: { name?: unknown }) => x?.name === 'default') as { template?: unknown } | undefined;
    if (typeof named?.template === 'string') files.chatTemplate = { text: named.template, file: cfgFile };
  } else if (fs.existsSync(jinja)) files.chatTemplate = { text: readRegularFileSync(jinja, 'utf8'), file: jinja };
  else if (fs.existsSync(path.join(dir, CHAT_TEMPLATE_JSON_FILE))) {
    const file = path.join(dir, CHAT_TEMPLATE_JSON_FILE);
    const text = readJsonObject(file).chat_template;
    if (typeof text !== 'string') throw new FormatError(file, '"chat_template" is not a string');
    files.chatTemplate = { text, file };
  }
  return files;
}

/** Token ids of an `eos_token_id` value (one id or a list); undefined when it is neither. */
function idList(v: unknown): number[] | undefined {
  if (Number.isInteger(v)) return [v as number];
  if (Array.isArray(v) && v.every((x) => Number.isInteger(x))) return v as number[];
  return undefined;
}

/**
 * The ids that end a generation: generation_config.json's `eos_token_id` (one id or a list)
 * beside config.json in `dirs`, else config.json's own (or its `text_config`'s), as
 * transformers builds the generation config when the file is absent. Empty when none says.
 */
export function eosTokenIds(dirs: string[]): { ids: number[]; file?: string } {
  for (const name of [GENERATION_CONFIG_FILE, 'config.json']) {
    for (const d of dirs) {
      const file = path.join(d, name);
      if (!fs.existsSync(file)) continue;
      const j = readJsonObject(file);
      const text = j.text_config as Record<string, unknown> | undefined;
      const ids = idList(j.eos_token_id) ?? idList(text?.eos_token_id);
      if (ids) return { ids, file };
      if (name === GENERATION_CONFIG_FILE) break;
    }
  }
  return { ids: [] };
}
