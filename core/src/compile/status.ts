/**
 * Whether an export directory's last compile still matches its inputs — the one answer
 * `compile` (skip or not), `run` (warn about a stale artifact), the language server's code
 * lens and the extension's status bar all use.
 *
 * Cheap first: compile.json records a stamp (size, mtime, inode) of every file the
 * fingerprint covers and the real path every spec file resolved to. When all of them still
 * hold, the compile is up to date without reading a byte of the graph or the spec. Otherwise
 * the fingerprint parts are recomputed (fingerprint.ts) and compared, so a `touch` or an
 * edit is named by the part it changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isInside } from '../paths';
import { MANIFEST_FILE, SENTINEL_FILE } from '../prepare/manifest';
import { computeFingerprint, optionsPart, stampOf } from './fingerprint';
import { locatePrepared, readExportInputs, type ExportInputs, type PreparedLocation } from './locate';
import { COMPILE_RECORD, readCompileRecord, type CompileBackend, type CompileRecord, type CompileStamps } from './record';

/** State of the last compile of an export directory. */
export type CompileState = 'never-compiled' | 'up-to-date' | 'stale';

/** What made a compile stale: a fingerprint part, another backend, or a deleted artifact. */
export type CompileChange = 'graph' | 'spec' | 'prepared' | 'options' | 'backend' | 'artifact';

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
 * The stamps a compile records. The graph's and the spec's are taken before they were read
 * (ExportInputs.stamps), so an edit racing the compile shows as a mismatch, never as a match.
 */
export function inputStamps(inp: ExportInputs, loc: PreparedLocation): CompileStamps {
  const files: Record<string, string> = { [inp.onnxPath]: inp.stamps.onnx, [inp.specPath]: inp.stamps.spec };
  for (const f of [path.join(loc.dir, MANIFEST_FILE), path.join(loc.dir, SENTINEL_FILE), ...loc.files]) files[f] = stampOf(f);
  const links: Record<string, string> = {};
  for (const f of inp.spec.files) {
    const abs = path.resolve(inp.exportDir, f.path);
    links[abs] = realOrEmpty(abs);
  }
  return { files, links };
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
  for (const [f, st] of Object.entries(s.files)) if (stampOf(f) !== st) return false;
  for (const [f, real] of Object.entries(s.links)) if (realOrEmpty(f) !== real) return false;
  return true;
}

/** True when the record's artifact is still on disk. */
export function artifactExists(rec: CompileRecord): boolean {
  if (rec.backend === 'ort') return !!rec.artifacts.model && fs.existsSync(rec.artifacts.model);
  return !!rec.artifacts.qpc && fs.existsSync(path.join(rec.artifacts.qpc, 'programqpc.bin'));
}

/** Last answers by export directory, reused while no stamp involved moved. */
const memo = new Map<string, { key: string; status: CompileStatus }>();

function memoKey(dir: string, rec: CompileRecord, req: CompileRequest | undefined): string {
  const watched = rec.stamps
    ? [...Object.keys(rec.stamps.files), ...Object.keys(rec.stamps.links)]
    : [path.join(dir, 'model.onnx'), path.join(dir, 'weight_spec.json'), ...(rec.prepared ? [path.join(rec.prepared, MANIFEST_FILE)] : [])];
  const req1 = req ? JSON.stringify([req.backend, req.prepared, req.options(req.prepared)]) : '';
  return [
    stampOf(path.join(dir, COMPILE_RECORD)),
    ...watched.map(stampOf),
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
  const artifact = rec.artifacts.model ?? rec.artifacts.qpc;
  const base: CompileStatus = {
    state: 'stale',
    record: rec,
    backend: rec.backend,
    ...(artifact ? { artifact } : {}),
    createdAt: rec.createdAt,
  };
  const key = memoKey(dir, rec, req);
  const hit = memo.get(dir);
  if (hit && hit.key === key) return hit.status;
  const status = evaluate(dir, rec, base, req);
  memo.set(dir, { key, status });
  return status;
}

/**
 * The prepared checkpoint as the compile would locate it: `--prepared` when the request has
 * it; without a request, by the spec's own paths as a plain `compile` does, falling back to
 * the recorded directory (a compile that needed `--prepared`).
 */
function locateAsCompile(inp: ExportInputs, req: CompileRequest | undefined, rec: CompileRecord): PreparedLocation {
  if (req) return locatePrepared(inp, req.prepared);
  try {
    return locatePrepared(inp);
  } catch (e) {
    if (!rec.prepared) throw e;
    return locatePrepared(inp, rec.prepared);
  }
}

function evaluate(dir: string, rec: CompileRecord, base: CompileStatus, req: CompileRequest | undefined): CompileStatus {
  if (req && req.backend !== rec.backend) return { ...base, changed: ['backend'] };
  if (!artifactExists(rec)) return { ...base, changed: ['artifact'] };
  const requested = req?.prepared ? realOrEmpty(path.resolve(req.prepared)) : undefined;
  const sameOptions = (d: string | undefined) => !req || optionsPart(rec.backend, req.options(d)) === rec.inputs.options;
  if (
    rec.stamps &&
    stampsOwn(dir, rec) &&
    (!requested || requested === rec.prepared) &&
    sameOptions(requested ?? rec.prepared) &&
    stampsHold(rec.stamps)
  ) {
    return { ...base, state: 'up-to-date' };
  }
  try {
    const inp = readExportInputs(dir, true);
    if (!inp) return { ...base, changed: ['spec'] };
    const loc = locateAsCompile(inp, req, rec);
    const fp = computeFingerprint(inp, loc, rec.backend, req ? req.options(req.prepared ? loc.dir : undefined) : null);
    const parts = req ? (['graph', 'spec', 'prepared', 'options'] as const) : (['graph', 'spec', 'prepared'] as const);
    const changed: CompileChange[] = parts.filter((k) => rec.inputs[k] !== fp.parts[k]);
    return changed.length === 0 ? { ...base, state: 'up-to-date' } : { ...base, changed };
  } catch {
    return { ...base, changed: [] };
  }
}
