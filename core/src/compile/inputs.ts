/**
 * Everything a compile decision depends on, read once (issue #29, step 4): the export's graph
 * and spec (locate.ts), the prepared folder the spec binds to, its manifest and sentinel, and
 * the stats that stand for the weights. {@link readCompileInputs} is the only place the compile
 * flow reads these files; `decide` (decide.ts) judges them without touching the disk, and the
 * backends and the prepared check take their bytes from here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, oneLine } from '../errors';
import { readRegularFileSync } from '../paths';
import { MANIFEST_FILE, SENTINEL_FILE, parsePreparedManifestText, type PreparedManifest } from '../artifacts/prepared-manifest';
import { sha256 } from '../foundation/sha256';
import { pyJsonDumps } from '../spec/py-json';
import type { DecideInputs } from './decide';
import { locatePrepared, readExportInputs, type ExportInputs, type PreparedLocation } from './locate';
import { artifactExists, type CompileRecord, type CompileStamps } from './record';
import { pathStamp } from '../file-stamp';

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
  /** Stamps of every file the parts cover, for the record (status.ts compares them next time). */
  stamps: CompileStamps;
}

/** Which prepared folder to read, and how strictly to read the spec. */
export interface InputsRequest {
  /** `--prepared`, when given. */
  prepared?: string;
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

function realOrEmpty(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return '';
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

/** The manifest of facts read by {@link readCompileInputs}, validated (FormatError as prepare's reader words it). */
export function manifestOf(p: PreparedFacts): PreparedManifest {
  const file = path.join(p.loc.dir, MANIFEST_FILE);
  if ('bytes' in p.manifest) return parsePreparedManifestText(p.manifest.bytes.toString('utf8'), file);
  const e = p.manifest.error;
  if (e instanceof FormatError && e.detail === 'file does not exist')
    throw new FormatError(file, 'does not exist (not a prepared checkpoint)');
  throw e instanceof FormatError ? e : new FormatError(file, `cannot read (${oneLine(e)})`);
}
