/**
 * Whether an export directory's last compile still matches its inputs — the one answer
 * `compile` (skip or not), `run` (warn about a stale artifact), the language server's code
 * lens and the extension's status bar all use.
 *
 * Cheap first: compile.json records a stamp (size, mtime, inode) of every file the
 * fingerprint covers and the real path every spec file resolved to. When all of them still
 * hold, the compile is up to date without reading a byte of the graph or the spec. Otherwise
 * the inputs are read once (inputs.ts) and `decide` (decide.ts) compares their fingerprint
 * parts, so a `touch` or an edit is named by the part it changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathStamp } from '../file-stamp';
import { isInside } from '../paths';
import { MANIFEST_FILE } from '../artifacts/prepared-manifest';
import { decide, optionsPart, recordChange, type CompileChange, type CompileState } from './decide';
import { readCompileInputs } from './inputs';
import { COMPILE_RECORD, artifactExists, readCompileRecord, type CompileBackend, type CompileRecord, type CompileStamps } from './record';

export type { CompileChange, CompileState } from './decide';

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

/** The compile a caller is about to run, so backend, prepared directory and options count too. */
export interface CompileRequest {
  backend: CompileBackend;
  /** `--prepared`, when given. */
  prepared?: string;
  /** The backend options as they go into the fingerprint, given the prepared directory used. */
  options(preparedDir: string | undefined): unknown;
}

function realOrEmpty(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return '';
  }
}

/**
 * True when the stamps are this export's own: its graph and spec (files in `dir`), the rest in
 * the record's prepared folder. A record copied from another export folder names that
 * folder's files, whose stamps hold there and say nothing about this one's.
 */
function stampsOwn(dir: string, rec: CompileRecord): boolean {
  const s = rec.stamps!;
  const files = Object.keys(s.files);
  const here = files.filter((f) => path.dirname(f) === dir);
  return (
    here.length >= 2 &&
    files.every((f) => path.dirname(f) === dir || (rec.prepared !== undefined && isInside(rec.prepared, f))) &&
    Object.keys(s.links).every((f) => isInside(dir, f))
  );
}

function stampsHold(s: CompileStamps): boolean {
  for (const [f, st] of Object.entries(s.files)) if (pathStamp(f) !== st) return false;
  for (const [f, real] of Object.entries(s.links)) if (realOrEmpty(f) !== real) return false;
  return true;
}

/**
 * True when the record's stamps still hold for this request: same backend, artifact on disk,
 * same `--prepared` and options, and every stamped file unchanged. Stats only, reads no file.
 */
export function recordHolds(dir: string, rec: CompileRecord, req: CompileRequest | undefined): boolean {
  if ((req && req.backend !== rec.backend) || !rec.stamps || !artifactExists(rec)) return false;
  const requested = req?.prepared ? realOrEmpty(path.resolve(req.prepared)) : undefined;
  if (requested && requested !== rec.prepared) return false;
  if (req && optionsPart(rec.backend, req.options(requested ?? rec.prepared)) !== rec.inputs.options) return false;
  return stampsOwn(dir, rec) && stampsHold(rec.stamps);
}

/** Last answers by export directory, reused while no stamp involved moved. */
const memo = new Map<string, { key: string; status: CompileStatus }>();

function memoKey(dir: string, rec: CompileRecord, req: CompileRequest | undefined): string {
  const watched = rec.stamps
    ? [...Object.keys(rec.stamps.files), ...Object.keys(rec.stamps.links)]
    : [path.join(dir, 'model.onnx'), path.join(dir, 'weight_spec.json'), ...(rec.prepared ? [path.join(rec.prepared, MANIFEST_FILE)] : [])];
  const req1 = req ? JSON.stringify([req.backend, req.prepared, req.options(req.prepared)]) : '';
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
    const inputs = readCompileInputs(dir, rec, { prepared: req?.prepared, fallbackPrepared: req ? undefined : rec.prepared, quick: true });
    if (!inputs) return { ...base, changed: ['spec'] };
    if (!inputs.prepared) throw inputs.locateError;
    const d = decide(inputs, rec, {
      backend: req?.backend ?? rec.backend,
      options: req ? req.options(req.prepared ? inputs.prepared.loc.dir : undefined) : null,
      compareOptions: !!req,
    });
    return d.state === 'up-to-date' ? { ...base, state: 'up-to-date' } : { ...base, changed: d.changed };
  } catch {
    return { ...base, changed: [] };
  }
}
