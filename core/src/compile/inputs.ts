/**
 * Everything a compile decision depends on, read once (issue #29, step 4), in the one step
 * `compile()` takes to read (docs/ARCHITECTURE.md "Compile flow"): `<export dir>/compile.json`
 * with its trust check, the record's stamps (stats only: an unchanged compile ends there), the
 * export's graph and spec, the prepared folder the spec binds to (located here), its manifest
 * and sentinel, and the stats that stand for the weights. The fingerprint's parts are computed
 * where their bytes are; `decide` (decide.ts) judges them without touching the disk, and the
 * prepared check and the backends take their bytes from here. This module calls no other
 * module of compile, prepare or run: only the readers of floors 0–3.
 *
 * Locating: the spec's `files[].path` are relative to the export directory (QEfficient
 * symlinks the prepared directory there; the link is followed). The prepared directory is
 * `--prepared` when given, else the directory holding the first spec file, else the spec's
 * `model_id` (QEfficient's absolute prepared directory). A spec file that does not resolve
 * inside the prepared directory is looked up there by its path below the prepared directory's
 * name, then by its base name — so a spec written for one prepared copy binds to another.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError, UsageError } from '../errors';
import { pathStamp } from '../file-stamp';
import { sha256 } from '../foundation/sha256';
import { isInside, readJsonTextSync, readRegularFileSync, resolveReadPath } from '../paths';
import { specFromText, type WeightSpec } from '../spec';
import { specFileIn } from '../spec/file-names';
import { pyJsonDumps } from '../spec/py-json';
import { MANIFEST_FILE, SENTINEL_FILE } from '../artifacts/prepared-manifest';
import { specFileResolver } from '../artifacts/spec-files';
import { artifactExists, artifactTrusted } from '../artifacts/compile-artifact';
import { readCompileRecordFile, type CompileBackend, type CompileRecord, type CompileStamps } from '../artifacts/compile-record';
import type { DecideInputs } from './decide';

/** The export directory's two inputs, read once. */
export interface ExportInputs {
  exportDir: string;
  onnxPath: string;
  onnxBytes: Uint8Array;
  specPath: string;
  specText: string;
  spec: WeightSpec;
  /** Stamps (file-stamp.ts pathStamp) of the graph and the spec, taken before reading them. */
  stamps: { onnx: string; spec: string };
}

/** Where the weights are. `files[i]` is the real path of spec file i, `rel[i]` its path from `dir`. */
export interface PreparedLocation {
  dir: string;
  files: string[];
  rel: string[];
}

/**
 * Reads `<export dir>/model.onnx` (or the single `.onnx` there) and its `weight_spec.json`.
 * With `quick`, the spec is only `JSON.parse`d (files and model_id are all that locating the
 * weights needs) — the up-to-date check then costs no schema validation; it returns
 * undefined when the text is not a plain v5-shaped spec, and the caller does the full read.
 */
export function readExportInputs(exportDirArg: string, quick?: false): ExportInputs;
export function readExportInputs(exportDirArg: string, quick: true): ExportInputs | undefined;
export function readExportInputs(exportDirArg: string, quick = false): ExportInputs | undefined {
  const exportDir = path.resolve(exportDirArg);
  let st: fs.Stats;
  try {
    st = fs.statSync(exportDir);
  } catch {
    throw new UsageError(`${exportDirArg}: no such export directory`);
  }
  if (!st.isDirectory()) throw new UsageError(`${exportDirArg}: not a directory (give the export directory)`);
  let onnxPath = path.join(exportDir, 'model.onnx');
  if (!fs.existsSync(onnxPath)) {
    const onnx = fs.readdirSync(exportDir).filter((n) => n.endsWith('.onnx') && !n.includes('.qaic.'));
    if (onnx.length !== 1) {
      throw new PipelineError(
        `${exportDir}: no model.onnx (${onnx.length === 0 ? 'no .onnx file' : `several .onnx files: ${onnx.join(', ')}`})`,
      );
    }
    onnxPath = path.join(exportDir, onnx[0]!);
  }
  const specPath = specFileIn(exportDir);
  if (!specPath) throw new PipelineError(`${exportDir}: no weight_spec.json or single *.weight_spec.json (export the model first)`);
  const stamps = { onnx: pathStamp(onnxPath), spec: pathStamp(specPath) };
  const specText = readJsonTextSync(specPath);
  const spec = quick ? quickSpec(specText) : specFromText(specText, specPath);
  if (!spec) return undefined;
  return { exportDir, onnxPath, onnxBytes: readRegularFileSync(onnxPath), specPath, specText, spec, stamps };
}

/** The spec's `files` and `model_id` by plain JSON.parse, or undefined when it does not look like v4+. */
function quickSpec(text: string): WeightSpec | undefined {
  try {
    const raw = JSON.parse(text) as Partial<WeightSpec>;
    if (typeof raw.version !== 'number' || raw.version < 4 || !Array.isArray(raw.files) || !Array.isArray(raw.inputs)) return undefined;
    if (!raw.files.every((f) => f && typeof f.path === 'string' && typeof f.format === 'string')) return undefined;
    return { version: raw.version, files: raw.files, inputs: [], model_id: typeof raw.model_id === 'string' ? raw.model_id : undefined };
  } catch {
    return undefined;
  }
}

function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/**
 * The prepared directory a spec names, whether or not a prepare has made it yet — the one
 * lookup behind compile, the editor's state and Prepare's default output: the folder its first
 * file resolves into (a prepared link followed), else QEfficient's absolute `model_id` when it
 * exists, else the first file's folder as written.
 */
export function preparedDirOf(exportDir: string, spec: Pick<WeightSpec, 'files' | 'model_id'>): string | undefined {
  const first = spec.files[0]?.path;
  const abs = first ? path.resolve(exportDir, first) : undefined;
  // The one resolver of a spec's files: its own path, else inside the folder the export's report names.
  const found = first ? specFileResolver(exportDir).file(first) : undefined;
  const real = found?.exists ? realOrUndefined(found.abs) : undefined;
  if (real) return path.dirname(real);
  // QEfficient's model_id is the absolute prepared directory; used only when the relative paths do not resolve.
  if (spec.model_id && path.isAbsolute(spec.model_id) && realOrUndefined(spec.model_id)) return realOrUndefined(spec.model_id);
  return abs ? path.dirname(abs) : spec.model_id;
}

/** Resolves the prepared directory and every spec file in it. */
export function locatePrepared(inp: ExportInputs, preparedArg?: string): PreparedLocation {
  const { spec, exportDir, specPath } = inp;
  if (spec.files.length === 0) throw new PipelineError(`${specPath}: the spec lists no files`);
  const resolved = spec.files.map((f) => {
    const rp = resolveReadPath(exportDir, f.path, preparedArg ? [path.resolve(preparedArg)] : []);
    return rp.exists ? rp.real : undefined;
  });
  let dir: string;
  if (preparedArg) {
    const real = realOrUndefined(path.resolve(preparedArg));
    if (!real || !fs.statSync(real).isDirectory()) throw new UsageError(`${preparedArg}: no such prepared directory`);
    dir = real;
  } else if (resolved[0]) {
    dir = path.dirname(resolved[0]);
  } else {
    const named = preparedDirOf(exportDir, spec);
    const real = named && realOrUndefined(named);
    if (!real)
      throw new PipelineError(
        `${specPath}: file "${spec.files[0]!.path}" does not exist (run weight-spec prepare first, or pass --prepared)`,
      );
    dir = real;
  }
  const files: string[] = [];
  const rel: string[] = [];
  spec.files.forEach((f, i) => {
    let real = resolved[i];
    if (!real || !isInside(dir, real)) {
      // Not inside the chosen prepared directory: find the same file name there.
      const segs = f.path.split(/[\\/]/).filter((s) => s && s !== '.');
      const candidates = [segs.slice(1).join('/'), segs[segs.length - 1] ?? ''].filter(Boolean);
      real = undefined;
      for (const c of candidates) {
        if (c.split('/').includes('..')) continue;
        const r = realOrUndefined(path.join(dir, c));
        if (r && isInside(dir, r)) {
          real = r;
          break;
        }
        // prepare links an unchanged shard to its source: across filesystems a relative symlink
        // (prepare/links.ts); it is kept as the link so the binder knows to hard-link the target
        if (r && fs.lstatSync(path.join(dir, c)).isSymbolicLink() && !path.isAbsolute(fs.readlinkSync(path.join(dir, c)))) {
          real = path.join(dir, c);
          break;
        }
      }
      if (!real) {
        throw new PipelineError(`${specPath}: file "${f.path}" is not in the prepared directory ${dir}`);
      }
    }
    if (f.format && f.format !== 'safetensors')
      throw new PipelineError(`${specPath}: file "${f.path}" has format "${f.format}" (only safetensors can be bound)`);
    files.push(real);
    rel.push(path.relative(dir, real).split(path.sep).join('/'));
  });
  return { dir, files, rel };
}

/** The compile asked about: its backend and options, so they count too (compile's, or a status check's). */
export interface CompileRequest {
  backend: CompileBackend;
  /** `--prepared`, when given. */
  prepared?: string;
  /** The backend options as they go into the fingerprint (plain JSON, stable key order; the driver's profile). */
  options: unknown;
  /** True when the real `--prepared` folder goes into the options as `prepared` (qaic given --prepared). */
  preparedInOptions?: boolean;
}

/** Bump when the artifact layout changes, so old compiles are redone. */
export const COMPILE_FORMAT = 'weight-spec-compile/2';

/** The options part of the fingerprint: format version, backend and backend options. */
export function optionsPart(backend: string, options: unknown): string {
  return sha256(JSON.stringify({ format: COMPILE_FORMAT, backend, options }));
}

/** The request's options given the prepared folder used. */
function optionsFor(req: Pick<CompileRequest, 'options' | 'preparedInOptions'>, preparedDir: string | undefined): unknown {
  return req.preparedInOptions ? { ...(req.options as Record<string, unknown>), prepared: preparedDir } : req.options;
}

/**
 * Reads the record, or `undefined` when absent, unreadable or naming an artifact compile did
 * not make (artifacts/compile-artifact.ts `artifactTrusted`; a broken record just means "recompile").
 */
export function readCompileRecord(exportDir: string): CompileRecord | undefined {
  const rec = readCompileRecordFile(exportDir);
  return rec && artifactTrusted(exportDir, rec) ? rec : undefined;
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
  if (req && optionsPart(rec.backend, optionsFor(req, requested ?? rec.prepared)) !== rec.inputs.options) return false;
  return stampsOwn(dir, rec) && stampsHold(rec.stamps);
}

/** The prepared folder as read: its location, manifest and sentinel (each read once). */
export interface PreparedFacts {
  loc: PreparedLocation;
  /** The manifest's bytes, or the reason it could not be read. */
  manifest: { bytes: Buffer } | { error: unknown };
  /** The sentinel's text, undefined when it cannot be read. */
  sentinel?: string;
}

/** What {@link readCompileInputs} read: the decision's whole input. */
export interface CompileInputs extends DecideInputs {
  exportDir: string;
  export: ExportInputs;
  /** Undefined when the prepared folder could not be located (`locateError` says why). */
  prepared?: PreparedFacts;
  locateError?: unknown;
  /** Stamps of every file the parts cover, for the record ({@link recordHolds} compares them next time). */
  stamps: CompileStamps;
}

/** The compile asked about (its options part), which prepared folder to read, and how strictly to read the spec. */
export interface InputsRequest extends CompileRequest {
  /** Tried when the spec's own paths do not locate a folder (status without a request: the record's). */
  fallbackPrepared?: string;
  /** Parse the spec with JSON.parse only (the status check); undefined inputs when it does not look like a spec. */
  quick?: boolean;
}

function readOrError(file: string): { bytes: Buffer } | { error: unknown } {
  try {
    return { bytes: readRegularFileSync(file) };
  } catch (e) {
    return { error: e };
  }
}

function locate(inp: ExportInputs, req: InputsRequest): PreparedLocation {
  if (req.prepared || !req.fallbackPrepared) return locatePrepared(inp, req.prepared);
  try {
    return locatePrepared(inp);
  } catch {
    return locatePrepared(inp, req.fallbackPrepared);
  }
}

/**
 * The prepared part of the fingerprint: the folder, its manifest's hash, whether the sentinel
 * is there, and size/mtime/inode of every bound file (weight bytes are never read).
 */
function preparedPart(loc: PreparedLocation, manifest: PreparedFacts['manifest']): string {
  const files = loc.files.map((f, i) => {
    const st = fs.statSync(f);
    return { rel: loc.rel[i], size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
  });
  const state = {
    dir: loc.dir,
    manifest: 'bytes' in manifest ? sha256(manifest.bytes) : null,
    sentinel: fs.existsSync(path.join(loc.dir, SENTINEL_FILE)),
    files,
  };
  return sha256(JSON.stringify(state));
}

/**
 * The hash of a spec's content: its JSON re-serialized compactly with sorted keys, so
 * whitespace, key order and a trailing newline do not count. Text that does not parse is
 * hashed as it is (compile reports the parse error anyway).
 */
export function specContentHash(text: string): string {
  let canonical: string;
  try {
    canonical = pyJsonDumps(JSON.parse(text), { separators: [',', ':'], sortKeys: true });
  } catch {
    canonical = text;
  }
  return sha256(`spec-content:${canonical}`);
}

/**
 * Reads the compile's inputs once. A folder that cannot be located leaves `prepared` undefined
 * and its parts as an empty folder's (a qaic dry run needs no weights); the caller decides
 * whether that is an error.
 */
export function readCompileInputs(exportDir: string, record: CompileRecord | undefined, req: InputsRequest): CompileInputs | undefined {
  const inp = req.quick ? readExportInputs(exportDir, true) : readExportInputs(exportDir);
  if (!inp) return undefined;
  let loc: PreparedLocation | undefined;
  let locateError: unknown;
  try {
    loc = locate(inp, req);
  } catch (e) {
    locateError = e;
  }
  const where = loc ?? { dir: '', files: [], rel: [] };
  const manifest = readOrError(path.join(where.dir, MANIFEST_FILE));
  const sentinel = readOrError(path.join(where.dir, SENTINEL_FILE));
  // The graph by its bytes plus mtime (`touch model.onnx` recompiles); the spec by what it says.
  const parts = {
    graph: sha256(`${sha256(inp.onnxBytes)}:${fs.statSync(inp.onnxPath).mtimeMs}`),
    spec: specContentHash(inp.specText),
    prepared: preparedPart(where, manifest),
    options: optionsPart(req.backend, optionsFor(req, loc?.dir)),
  };
  const files: Record<string, string> = { [inp.onnxPath]: inp.stamps.onnx, [inp.specPath]: inp.stamps.spec };
  for (const f of [path.join(where.dir, MANIFEST_FILE), path.join(where.dir, SENTINEL_FILE), ...where.files]) files[f] = pathStamp(f);
  const links: Record<string, string> = {};
  for (const f of inp.spec.files) {
    const abs = path.resolve(inp.exportDir, f.path);
    links[abs] = realOrEmpty(abs);
  }
  return {
    exportDir: inp.exportDir,
    export: inp,
    ...(loc
      ? { prepared: { loc, manifest, ...('bytes' in sentinel ? { sentinel: sentinel.bytes.toString('utf8') } : {}) } }
      : { locateError }),
    parts,
    stamps: { files, links },
    artifactPresent: !!record && artifactExists(record),
  };
}

/** What compile's read step found: an unchanged compile (stamps hold), or the inputs read. */
export type CompileRead =
  { prev: CompileRecord; upToDate: true } | { prev: CompileRecord | undefined; upToDate: false; inputs: CompileInputs };

/**
 * compile's read step: the record (trusted), its stamps when `skip` (not forced, not a dry
 * run): all holding, the compile is up to date without a byte of the graph or the spec read;
 * else the inputs, read once.
 */
export function readForCompile(exportDir: string, req: CompileRequest, skip: boolean): CompileRead {
  const dir = path.resolve(exportDir);
  const prev = readCompileRecord(dir);
  if (prev && skip && recordHolds(dir, prev, req)) return { prev, upToDate: true };
  return { prev, upToDate: false, inputs: readCompileInputs(exportDir, prev, req)! };
}
