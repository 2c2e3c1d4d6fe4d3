/**
 * What the editor's Prepare and Compile (the extension's and the language server's
 * `workspace/executeCommand`) take from files in the workspace, judged by the trust rule of
 * paths/trust.ts: `--checkpoint` and `--out` of Prepare come from `export-report.json`
 * (`source.checkpoint`, `prepared.dir`) or the spec's `files[0].path`; Compile writes into the
 * prepared folder the spec names and deletes what `compile.json` names. Each such path must
 * lie inside the workspace roots or the export folder. The server refuses anything else with
 * the verdict's one line; the extension asks the user first ({@link outsideConfirmation}).
 * No `vscode` import: unit-tested in core/test/safety/workspace-trust.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { EXPORT_REPORT_FILE, readExportReport } from '../artifacts/export-report';
import { COMPILE_RECORD } from '../artifacts/compile-record';
import { judgeFilePath, printable, type FilePathVerdict } from '../paths';
import { specFileIn } from '../spec/file-names';
import { obj, readJsonLoose } from './loose-json';
import { specFilePathsOf } from '../artifacts/spec-files';

export type { FilePathVerdict } from '../paths';

/** Prepare's inputs as the export recorded them, each judged. */
export interface PrepareTargets {
  /** `--checkpoint`: the report's `source.checkpoint` (absent when the export recorded none). */
  checkpoint?: FilePathVerdict;
  /** `--out`: the report's `prepared.dir`, else the folder of the spec's first file. */
  out?: FilePathVerdict;
  /** The verdicts that are outside the workspace (empty: nothing to ask or refuse). */
  outside: FilePathVerdict[];
  /**
   * Where Prepare's folder picker opens when no checkpoint is recorded: the model folder (the
   * folder of the report's `source.config`), only when inside the workspace; else undefined
   * and the picker opens at the export folder. Never asked about: it only starts a picker.
   */
  pickFrom?: string;
}

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

function isFolder(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Prepare's `--checkpoint` and `--out` for `specFile`, judged against `roots` (see the module comment). */
export function prepareTargets(specFile: string, roots: readonly string[]): PrepareTargets {
  const dir = path.dirname(path.resolve(specFile));
  const reportFile = path.join(dir, EXPORT_REPORT_FILE);
  const report = readExportReport(dir);
  const out: PrepareTargets = { outside: [] };
  if (nonEmpty(report?.source?.checkpoint))
    out.checkpoint = judgeFilePath(reportFile, 'source.checkpoint', report.source.checkpoint, roots);
  if (nonEmpty(report?.prepared?.dir)) out.out = judgeFilePath(reportFile, 'prepared.dir', report.prepared.dir, roots);
  else {
    const first = specFilePathsOf(specFile)[0];
    if (first) out.out = judgeFilePath(specFile, 'files[0].path', path.dirname(first), roots);
  }
  out.outside = [out.checkpoint, out.out].filter((v): v is FilePathVerdict => !!v && !v.inside);
  if (nonEmpty(report?.source?.config)) {
    const config = judgeFilePath(reportFile, 'source.config', report.source.config, roots);
    // A config file's folder, or the folder itself (export takes either).
    const model = config.inside ? (isFolder(config.abs) ? config.abs : path.dirname(config.abs)) : undefined;
    if (model && isFolder(model)) out.pickFrom = model;
  }
  return out;
}

/**
 * The paths a compile of `exportDir` would write into or delete that files in it name: the
 * report's `prepared.dir`, every folder of the spec's `files[].path` (the ort artifact is
 * written there), compile.json's `prepared` and `artifacts.*` (the previous artifact is
 * deleted), and an absolute `model_id` when the spec's first file does not resolve (compile
 * then writes there). Returns the verdicts outside the workspace.
 */
export function compileOutside(exportDir: string, roots: readonly string[]): FilePathVerdict[] {
  const dir = path.resolve(exportDir);
  const verdicts: FilePathVerdict[] = [];
  const report = readExportReport(dir);
  if (nonEmpty(report?.prepared?.dir))
    verdicts.push(judgeFilePath(path.join(dir, EXPORT_REPORT_FILE), 'prepared.dir', report.prepared.dir, roots));
  const spec = specFileIn(dir);
  const files = spec ? specFilePathsOf(spec) : [];
  if (spec) files.forEach((p, i) => verdicts.push(judgeFilePath(spec, `files[${i}].path`, p, roots)));
  const recFile = path.join(dir, COMPILE_RECORD);
  const rec = obj(readJsonLoose(recFile));
  if (rec.prepared !== undefined) verdicts.push(judgeFilePath(recFile, 'prepared', rec.prepared, roots));
  for (const [k, v] of Object.entries(obj(rec.artifacts))) verdicts.push(judgeFilePath(recFile, `artifacts.${k}`, v, roots));
  // QEfficient's absolute model_id is compile's prepared folder when the first file does not
  // resolve (compile/inputs.ts preparedDirOf): then it is where compile writes.
  const modelId = spec ? obj(readJsonLoose(spec)).model_id : undefined;
  if (spec && typeof modelId === 'string' && path.isAbsolute(modelId) && !(files[0] && fs.existsSync(path.resolve(dir, files[0]))))
    verdicts.push(judgeFilePath(spec, 'model_id', modelId, roots));
  return verdicts.filter((v) => !v.inside);
}

/** The modal the extension shows before using paths outside the workspace: a title and a detail. */
export function outsideConfirmation(action: string, outside: readonly FilePathVerdict[]): { message: string; detail: string } | undefined {
  if (outside.length === 0) return undefined;
  return {
    message: `${action}: ${outside.length === 1 ? 'a path' : `${outside.length} paths`} from files in this workspace lead outside it. Use them?`,
    detail: [
      ...outside.map((v) => `${printable(path.basename(v.file))} "${v.field}" → ${printable(v.abs)}`),
      '',
      'A repository you did not write can name your own folders here (for example your prepared weights, which Prepare replaces). ' +
        'Allow only when you made this export yourself.',
    ].join('\n'),
  };
}

/** The one-line refusal of the server (no one to ask): the first verdict's message. */
export function outsideRefusal(outside: readonly FilePathVerdict[]): string | undefined {
  const first = outside[0];
  if (!first) return undefined;
  const more = outside.length > 1 ? ` (and ${outside.length - 1} more)` : '';
  return `${first.message}${more}; add the folder to weightSpec.roots to allow it`;
}
