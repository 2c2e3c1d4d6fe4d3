/**
 * What the status bar shows for the active spec: not prepared / prepared / compiled / stale,
 * read cheaply from files core writes (export-report.json, the prepared sentinel
 * `.checkpoint_prepared`, compile.json). No `vscode` import: unit-tested in client/test.
 * "stale" means compile.json is older than the spec, the graph or the prepared sentinel, or its
 * artifact is gone — compile itself decides by fingerprint; this is the editor's quick view.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CompileState } from '../../core/src/protocol';

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
  compileRecord?: { backend?: string; model?: string; createdAt?: string };
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

function mtime(file: string): number | undefined {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
}

const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The prepared directory a spec's first file lives in (its `files[0].path`'s folder), if any. */
export function preparedDirOfSpec(specFile: string): string | undefined {
  const spec = obj(readJson(specFile));
  const files = Array.isArray(spec.files) ? spec.files : [];
  const first = files.length ? str(obj(files[0]).path) ?? str(files[0]) : undefined;
  if (first) return path.resolve(path.dirname(specFile), path.dirname(first));
  return str(spec.model_id);
}

/** Reads the state of `specFile` from disk. Never throws. */
export function specInfo(specFile: string): SpecInfo {
  const dir = path.dirname(specFile);
  const report = obj(readJson(path.join(dir, 'export-report.json')));
  const isExportDir = report.tool === 'weight-spec export' || fs.existsSync(path.join(dir, 'model.onnx'));
  const preparedDir = str(obj(report.prepared).dir) ?? preparedDirOfSpec(specFile);
  const sourceCheckpoint = str(obj(report.source).checkpoint);
  const dtype = str(obj(report.options).dtype);
  const info: SpecInfo = { spec: specFile, dir, state: 'not-prepared', isExportDir, ...(preparedDir ? { preparedDir } : {}), ...(sourceCheckpoint ? { sourceCheckpoint } : {}), ...(dtype ? { dtype } : {}) };
  const sentinel = preparedDir ? mtime(path.join(preparedDir, '.checkpoint_prepared')) : undefined;
  const recordFile = path.join(dir, 'compile.json');
  const recordTime = mtime(recordFile);
  if (recordTime !== undefined) {
    const rec = obj(readJson(recordFile));
    const artifacts = obj(rec.artifacts);
    const model = str(artifacts.model) ?? str(artifacts.qpc);
    info.compileRecord = { ...(str(rec.backend) ? { backend: str(rec.backend) } : {}), ...(model ? { model } : {}), ...(str(rec.createdAt) ? { createdAt: str(rec.createdAt) } : {}) };
    const inputs = [mtime(specFile), mtime(path.join(dir, 'model.onnx')), sentinel].filter((t): t is number => t !== undefined);
    const newer = inputs.some((t) => t > recordTime + 1);
    const gone = model !== undefined && !fs.existsSync(model);
    info.state = newer || gone || sentinel === undefined ? 'stale' : 'compiled';
    return info;
  }
  info.state = sentinel !== undefined ? 'prepared' : 'not-prepared';
  return info;
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
      return { label: 'stale', command: 'weightSpec.recompile', tooltip: 'The compiled model is older than its inputs: click to re-run compile' };
  }
}

/** True for weight_spec.json and *.weight_spec.json. */
export function isSpecFile(file: string): boolean {
  const b = path.basename(file);
  return b === 'weight_spec.json' || b.endsWith('.weight_spec.json');
}

/**
 * Combines the on-disk view with the language server's compile state (by fingerprint, from
 * `weightSpec/specState`), which wins when there is one.
 */
export function mergeState(disk: SpecInfo, server: { compile: { state: CompileState } } | undefined): SpecState {
  if (!server) return disk.state;
  switch (server.compile.state) {
    case 'up-to-date':
      return 'compiled';
    case 'stale':
      return 'stale';
    default:
      return disk.state === 'not-prepared' ? 'not-prepared' : 'prepared';
  }
}
