/**
 * Whether an export directory's last compile still matches its inputs — the one answer
 * `compile` (skip or not), `run` (warn about a stale artifact), the language server's code
 * lens and the extension's status bar all use.
 *
 * Cheap first: compile.json records a stamp (size, mtime, inode) of every file the
 * fingerprint covers and the real path every spec file resolved to. When all of them still
 * hold, the compile is up to date without reading a byte of the graph or the spec
 * (inputs.ts `recordHolds`, the check compile's read step makes too). Otherwise the inputs
 * are read once (inputs.ts) and `decide` (decide.ts) compares their fingerprint parts, so a
 * `touch` or an edit is named by the part it changed.
 */
import path from 'node:path';
import { pathStamp } from '../file-stamp';
import { MANIFEST_FILE } from '../artifacts/prepared-manifest';
import { artifactExists } from '../artifacts/compile-artifact';
import { COMPILE_RECORD, type CompileBackend, type CompileRecord } from '../artifacts/compile-record';
import { decide, recordChange, type CompileChange, type CompileState } from './decide';
import { readCompileInputs, readCompileRecord, recordHolds, type CompileRequest } from './inputs';

export type { CompileChange, CompileState } from './decide';
export type { CompileRequest } from './inputs';

/** The answer of {@link compileStatus}. */
export interface CompileStatus {
  state: CompileState;
  /** The record read from compile.json (absent when never compiled). */
  record?: CompileRecord;
  backend?: CompileBackend;
  /** The compiled artifact (absolute path): the bound ONNX (ort) or the qpc directory (qaic). */
  artifact?: string;
  createdAt?: string;
  /** When stale: what changed (empty when the inputs could not be read at all). */
  changed?: CompileChange[];
}

/** Last answers by export directory, reused while no stamp involved moved. */
const memo = new Map<string, { key: string; status: CompileStatus }>();

function memoKey(dir: string, rec: CompileRecord, req: CompileRequest | undefined): string {
  const watched = rec.stamps
    ? [...Object.keys(rec.stamps.files), ...Object.keys(rec.stamps.links)]
    : [path.join(dir, 'model.onnx'), path.join(dir, 'weight_spec.json'), ...(rec.prepared ? [path.join(rec.prepared, MANIFEST_FILE)] : [])];
  const req1 = req ? JSON.stringify([req.backend, req.prepared, req.options, !!req.preparedInOptions]) : '';
  return [
    pathStamp(path.join(dir, COMPILE_RECORD)),
    ...watched.map(pathStamp),
    rec.artifacts.model ?? rec.artifacts.qpc ?? '',
    artifactExists(rec),
    req1,
  ].join('|');
}

/**
 * The compile state of `exportDir`. Without `req`, the graph, the spec and the prepared
 * checkpoint the record names are compared; with it, also the backend, `--prepared` and the
 * options. Never throws: unreadable inputs are "stale" (compile then reports why).
 */
export function compileStatus(exportDir: string, req?: CompileRequest): CompileStatus {
  const dir = path.resolve(exportDir);
  const rec = readCompileRecord(dir);
  if (!rec) return { state: 'never-compiled' };
  const key = memoKey(dir, rec, req);
  const hit = memo.get(dir);
  if (hit && hit.key === key) return hit.status;
  const status = evaluate(dir, rec, req);
  memo.set(dir, { key, status });
  return status;
}

function evaluate(dir: string, rec: CompileRecord, req: CompileRequest | undefined): CompileStatus {
  const artifact = rec.artifacts.model ?? rec.artifacts.qpc;
  const base: CompileStatus = {
    state: 'stale',
    record: rec,
    backend: rec.backend,
    ...(artifact ? { artifact } : {}),
    createdAt: rec.createdAt,
  };
  const early = recordChange(rec, req?.backend ?? rec.backend, artifactExists(rec));
  if (early) return { ...base, changed: [early] };
  if (recordHolds(dir, rec, req)) return { ...base, state: 'up-to-date' };
  try {
    // Located as compile would: `--prepared` when asked; else by the spec's own paths, falling
    // back to the recorded folder (a compile that needed `--prepared`).
    // Without a request the options are not compared (their part is the record backend's for null).
    const asked = req ?? { backend: rec.backend, options: null, fallbackPrepared: rec.prepared };
    const inputs = readCompileInputs(dir, rec, { ...asked, quick: true });
    if (!inputs) return { ...base, changed: ['spec'] };
    if (!inputs.prepared) throw inputs.locateError;
    const d = decide(inputs, rec, { backend: asked.backend, compareOptions: !!req });
    return d.state === 'up-to-date' ? { ...base, state: 'up-to-date' } : { ...base, changed: d.changed };
  } catch {
    return { ...base, changed: [] };
  }
}
