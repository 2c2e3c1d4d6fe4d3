/**
 * What the status bar shows for the active spec: not prepared / prepared / compiled / stale,
 * from files core writes (export-report.json, the prepared sentinel `.checkpoint_prepared`)
 * and core's compileStatus — the same answer compile uses to skip, so "compiled" here means
 * compile would have nothing to do. No `vscode` import: unit-tested in client/test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { compileStatus } from '../compile/status';
import { readExportReport } from '../artifacts/export-report';
import type { CompileInfo } from '../protocol';
import { preparedDirOf } from '../compile/inputs';
import { isSpecFile, specFileIn } from '../spec/file-names';
import { SENTINEL_FILE } from '../artifacts/prepared-manifest';
import { obj, readJsonLoose } from './loose-json';
export { isSpecFile } from '../spec/file-names';

export type SpecState = 'not-prepared' | 'prepared' | 'compiled' | 'stale';

/** Facts about a spec's export directory used by the status bar and the commands. */
export interface SpecInfo {
  spec: string;
  /** The spec's directory (an export directory when model.onnx / export-report.json are there). */
  dir: string;
  state: SpecState;
  isExportDir: boolean;
  /** The prepared checkpoint the spec points at. */
  preparedDir?: string;
  /** The source checkpoint export recorded (config export with a checkpoint). */
  sourceCheckpoint?: string;
  /** The dtype export used. */
  dtype?: string;
  /** The export directory's compile status (core's compileStatus, without the record). */
  compile: CompileInfo;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The prepared directory a spec names (core's {@link preparedDirOf}), read from the file; undefined when it does not parse. */
export function preparedDirOfSpec(specFile: string): string | undefined {
  const spec = obj(readJsonLoose(specFile));
  // v1's string `checkpoint_files` entries are the bare paths.
  const files = (Array.isArray(spec.files) ? spec.files : []).map((f) => ({
    path: str(obj(f).path) ?? str(f) ?? '',
    format: 'safetensors',
  }));
  return preparedDirOf(path.dirname(specFile), { files: files.filter((f) => f.path !== ''), model_id: str(spec.model_id) });
}

/** Reads the state of `specFile` from disk. Never throws. */
export function specInfo(specFile: string): SpecInfo {
  const dir = path.dirname(specFile);
  const report = readExportReport(dir);
  const isExportDir = report !== undefined || fs.existsSync(path.join(dir, 'model.onnx'));
  const preparedDir = str(report?.prepared?.dir) ?? preparedDirOfSpec(specFile);
  const sourceCheckpoint = str(report?.source?.checkpoint);
  const dtype = str(report?.options?.dtype);
  const { record: _record, ...compile } = compileStatus(dir);
  const prepared = preparedDir !== undefined && fs.existsSync(path.join(preparedDir, SENTINEL_FILE));
  const state: SpecState =
    compile.state === 'up-to-date' ? 'compiled' : compile.state === 'stale' ? 'stale' : prepared ? 'prepared' : 'not-prepared';
  return {
    spec: specFile,
    dir,
    state,
    isExportDir,
    ...(preparedDir ? { preparedDir } : {}),
    ...(sourceCheckpoint ? { sourceCheckpoint } : {}),
    ...(dtype ? { dtype } : {}),
    compile,
  };
}

/** The status-bar text and the command it opens, for a state. */
export function stateAction(state: SpecState): { label: string; command: string; tooltip: string } {
  switch (state) {
    case 'not-prepared':
      return { label: 'not prepared', command: 'weightSpec.prepare', tooltip: 'The checkpoint is not prepared yet: click to prepare it' };
    case 'prepared':
      return { label: 'prepared', command: 'weightSpec.compile', tooltip: 'Prepared: click to compile' };
    case 'compiled':
      return { label: 'compiled', command: 'weightSpec.run', tooltip: 'Compiled: click to run' };
    case 'stale':
      return {
        label: 'stale',
        command: 'weightSpec.recompile',
        tooltip: 'The compiled model is older than its inputs: click to re-run compile',
      };
  }
}

/**
 * The spec whose state the status bar shows while `file` is active (issue 50: it followed
 * spec editors only): the spec itself, or the spec of the export folder holding `file` — its
 * model.onnx in the ONNX viewer, its export-report.json. Undefined outside an export.
 */
export function specOfActiveFile(file: string): string | undefined {
  return isSpecFile(file) ? file : specFileIn(path.dirname(file));
}

/**
 * The status bar's label: the state, then the spec's errors when the language server has
 * reported any (issue 50: they were only in the tooltip), e.g. `not prepared · 2 errors`.
 */
export function statusLabel(state: SpecState, counts?: { errors: number }): string {
  const n = counts?.errors ?? 0;
  return `${stateAction(state).label}${n ? ` · ${n} error${n === 1 ? '' : 's'}` : ''}`;
}

/**
 * Why a compile of `exportDir` would fail before it starts, or undefined: the checkpoint it
 * binds is not prepared (no prepare sentinel). Asked before the editor offers to install ONNX
 * Runtime, so a first Compile on an unprepared export says "prepare first" instead of
 * offering a 290 MB download for a compile that cannot succeed. `prepared` is `--prepared`.
 */
export function compileBlocker(exportDir: string, prepared?: string): string | undefined {
  const spec = specFileIn(exportDir);
  if (!spec) return undefined; // the CLI names what is missing
  const dir = prepared ? path.resolve(exportDir, prepared) : (specInfo(spec).preparedDir ?? undefined);
  if (!dir) return undefined;
  if (fs.existsSync(path.join(dir, SENTINEL_FILE))) return undefined;
  return `${path.basename(spec)}: the checkpoint ${dir} is not prepared (no ${SENTINEL_FILE}); run Prepare first`;
}
