/**
 * `compile`: binds an export directory's weight-free graph to its prepared weights.
 *
 * - `ort` (default): a bound ONNX whose initializers are external data pointing straight into
 *   the prepared safetensors files (bind-ort.ts), runnable by `run`.
 * - `qaic`: QEfficient's qaic-compile command (qaic.ts, qaic-command.ts).
 *
 * Incremental: the input fingerprint (fingerprint.ts) is stored in `<export dir>/compile.json`;
 * an unchanged fingerprint with its artifact still on disk returns at once (`upToDate`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError } from '../errors';
import { MANIFEST_FILE, SENTINEL_FILE, isQeffPrepared, preparedStatus } from '../prepare/manifest';
import { preparedMismatch } from '../prepare/provenance';
import { beginWork, failpoint, printable, type WorkScope } from '../paths';
import { loadOrt } from '../ort/loader';
import { ortSessionOptions } from '../ort/session-options';
import { bindOrt } from './bind-ort';
import { changedParts, computeFingerprint, type Fingerprint } from './fingerprint';
import { locatePrepared, readExportInputs, type ExportInputs, type PreparedLocation } from './locate';
import type { QaicOptions } from './qaic-command';
import { planQaic, runQaic } from './qaic';
import { artifactTrusted, forgetArtifact, noteArtifact, writeCompileRecord, type CompileRecord } from './record';
import { artifactExists, compileStatus, inputStamps } from './status';

export { COMPILE_RECORD, readCompileRecord, type CompileRecord } from './record';
export { compileStatus, type CompileChange, type CompileState, type CompileStatus } from './status';
export { buildQaicPlan, shellLine, QAIC_COMPILER, type QaicOptions, type QaicPlan } from './qaic-command';
export { parseWireModel, type WireModel, type WireValueInfo } from '../formats/onnx/wire-model';

/** Options of {@link compile}. */
export interface CompileOptions {
  backend: 'ort' | 'qaic';
  /** Prepared checkpoint directory (overrides the spec's files / model_id). */
  prepared?: string;
  /** qaic: print the command, write and run nothing. */
  dryRun?: boolean;
  /** ort: hard-link the shards into `<export dir>/compiled/` instead of writing into the prepared directory. */
  links?: boolean;
  /** ort: keep node names, value names and every Constant node in the bound model (default: slimmed). */
  keepNames?: boolean;
  /** ort: load the bound model once in ONNX Runtime so a refusal shows at compile time (default true). */
  verify?: boolean;
  /** Recompile even when the fingerprint is unchanged. */
  force?: boolean;
  qaic?: QaicOptions;
  /** Where progress and compiler output go (default: nowhere). */
  log?: (line: string) => void;
  stderr?: NodeJS.WritableStream;
  env?: NodeJS.ProcessEnv;
}

/** What {@link compile} did. */
export interface CompileResult {
  record: CompileRecord;
  /** True when nothing changed and the previous artifact was kept. */
  upToDate: boolean;
  /** What changed since the previous compile (empty when up to date or when there was none). */
  changed: string[];
  /** qaic: the command line (always set for the qaic backend, also in dry runs). */
  command?: string[];
  /** qaic: the files written beside the qpc directory (specializations.json, custom_io.yaml), with their text. */
  files?: { path: string; text: string }[];
  dryRun?: boolean;
  ms: number;
}

/**
 * Checks the prepared directory with prepare's own status: an unfinished or damaged prepare
 * is an error; a prepare whose source checkpoint changed since is a warning (the prepared
 * files are still self-consistent). A folder prepare never made (no sentinel: a plain
 * checkpoint, `/`, an absolute model_id) is refused when `required` (the ort backend writes
 * its artifact there; qaic reads a --prepared folder).
 * Returns the source checkpoint (named in dtype errors).
 */
async function checkPrepared(
  exportDir: string,
  loc: PreparedLocation,
  log: (line: string) => void,
  required: boolean,
): Promise<string | undefined> {
  const plain = !fs.existsSync(path.join(loc.dir, MANIFEST_FILE)) && !fs.existsSync(path.join(loc.dir, SENTINEL_FILE));
  if (plain && !required) return undefined;
  if (plain) {
    throw new PipelineError(
      `${printable(loc.dir)}: not a prepared checkpoint (no ${SENTINEL_FILE}); compile writes only into folders prepare made: ` +
        `run weight-spec prepare --checkpoint ${printable(loc.dir)} --dtype <dtype> and compile with --prepared <its output>`,
    );
  }
  if (isQeffPrepared(loc.dir)) {
    log(`compile: ${loc.dir} was prepared by QEfficient (sentinel, no manifest): bound as it is`);
    return undefined;
  }
  const st = await preparedStatus(loc.dir);
  if (st.state === 'not-prepared') throw new PipelineError(`${st.reason}; run weight-spec prepare again`);
  const mismatch = st.manifest && preparedMismatch(exportDir, loc.dir, st.manifest);
  if (mismatch) throw new PipelineError(mismatch);
  if (st.state === 'stale')
    log(`compile: warning: ${loc.dir} is stale (${st.reason}); run weight-spec prepare again to pick up the change`);
  return st.manifest?.source;
}

/**
 * Deletes the previous ORT artifact when compile made it for this export (artifactTrusted:
 * in `<export>/compiled/`, or listed for this export in its prepared folder) and it is not the
 * new one.
 */
async function dropOldArtifact(exportDir: string, prev: CompileRecord | undefined, now: CompileRecord): Promise<void> {
  const old = prev?.backend === 'ort' ? prev.artifacts.model : undefined;
  if (!old || !prev || old === now.artifacts.model || !artifactTrusted(exportDir, prev)) return;
  fs.rmSync(old, { force: true });
  await forgetArtifact(old);
}

async function compileOrt(
  inp: ExportInputs,
  loc: PreparedLocation,
  fp: Fingerprint,
  o: { links: boolean; keepNames: boolean; source?: string },
): Promise<CompileRecord> {
  const stem = (inp.spec.model_name || path.basename(inp.exportDir)).replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80);
  const b = await bindOrt(inp, loc, {
    fileName: `compiled-${stem}-${fp.value.slice(0, 12)}.onnx`,
    fallbackDir: path.join(inp.exportDir, 'compiled'),
    links: o.links,
    keepNames: o.keepNames,
    source: o.source,
  });
  return {
    version: 1,
    backend: 'ort',
    fingerprint: fp.value,
    inputs: fp.parts,
    artifacts: { model: b.model },
    prepared: loc.dir,
    stats: { weightBytes: b.weightBytes, artifactBytes: b.artifactBytes, initializers: b.initializers },
    createdAt: new Date().toISOString(),
  };
}

/**
 * Creates (and releases) one ORT session on the bound model: ORT checks every external-data
 * location and shape there. Without onnxruntime-node the artifact is kept unverified.
 */
async function verifyOrt(
  model: string,
  graph: { onnxPath: string; slimmed: boolean },
  env: NodeJS.ProcessEnv | undefined,
  log: (l: string) => void,
): Promise<boolean> {
  let ort;
  try {
    ort = loadOrt(undefined, env);
  } catch (e) {
    log(`compile: not verified (${(e as Error).message})`);
    return false;
  }
  try {
    const s = await ort.InferenceSession.create(model, ortSessionOptions());
    await s.release?.();
    return true;
  } catch (e) {
    fs.rmSync(model, { force: true });
    // The fault is in the exported graph (the binder only adds initializers); say so, and how
    // to see the graph's own value names where the bound model has shortened them.
    const names = graph.slimmed ? ' (value names are shortened in the bound model; compile --keep-names keeps the exported ones)' : '';
    throw new PipelineError(
      `${graph.onnxPath}: ONNX Runtime refuses the graph bound to its weights: ${(e as Error).message.split('\n')[0]}${names}`,
    );
  }
}

/** Compiles `exportDir` (see the module comment). */
export async function compile(exportDir: string, opts: CompileOptions): Promise<CompileResult> {
  // The record's temporaries go to the export, the artifact's to <export>/compiled or the
  // prepared directory (added once located): an interrupt removes exactly these.
  const scope = opts.dryRun ? undefined : beginWork(exportDir, [exportDir, path.join(exportDir, 'compiled')]);
  try {
    return await compileScoped(exportDir, opts, scope);
  } finally {
    scope?.end();
  }
}

async function compileScoped(exportDir: string, opts: CompileOptions, scope: WorkScope | undefined): Promise<CompileResult> {
  const t0 = performance.now();
  const log = opts.log ?? (() => undefined);
  const backend = opts.backend;
  const optionsOf = (preparedDir: string | undefined) =>
    backend === 'qaic'
      ? { qaic: opts.qaic ?? {}, prepared: opts.prepared ? preparedDir : undefined }
      : { links: !!opts.links, keepNames: !!opts.keepNames };
  // Fast path: stamps (or, failing them, the fingerprint) unchanged → no schema validation, no graph parse.
  const status = compileStatus(exportDir, { backend, prepared: opts.prepared, options: optionsOf });
  const prev = status.record;
  if (status.state === 'up-to-date' && prev && !opts.force && !opts.dryRun) {
    return { record: prev, upToDate: true, changed: [], command: prev.command, ms: performance.now() - t0 };
  }
  const inp = readExportInputs(exportDir);
  let loc: PreparedLocation | undefined;
  try {
    loc = locatePrepared(inp, opts.prepared);
  } catch (e) {
    // A dry run only prints the command; it needs no prepared weights.
    if (!(backend === 'qaic' && opts.dryRun)) throw e;
  }
  const source = loc && !opts.dryRun ? await checkPrepared(inp.exportDir, loc, log, backend === 'ort' || !!opts.prepared) : undefined;
  if (loc) scope?.addDir(loc.dir);
  await failpoint('compile-writing');
  const options = optionsOf(loc?.dir);
  const where = loc ?? { dir: '', files: [], rel: [] };
  const fp: Fingerprint = computeFingerprint(inp, where, backend, options);
  const stamps = inputStamps(inp, where);
  const changed = changedParts(prev, fp);
  if (opts.force && prev && changed.length === 0) changed.push('forced');
  const done = (record: CompileRecord, upToDate: boolean, extra: Partial<CompileResult> = {}): CompileResult => ({
    record,
    upToDate,
    changed: upToDate ? [] : changed,
    ms: performance.now() - t0,
    ...extra,
  });

  if (backend === 'qaic') {
    const job = planQaic(inp, opts.prepared ? loc : undefined, opts.qaic ?? {}, fp.value, opts.env);
    const record: CompileRecord = {
      version: 1,
      backend: 'qaic',
      fingerprint: fp.value,
      inputs: fp.parts,
      artifacts: { qpc: job.plan.qpcDir, compileDir: job.plan.compileDir, onnx: job.onnx },
      prepared: loc?.dir,
      command: job.plan.command,
      stamps,
      createdAt: new Date().toISOString(),
    };
    for (const w of job.plan.warnings) log(w);
    const files = [
      ...(job.plan.specializationsFile ? [{ path: job.plan.specializationsFile, text: job.plan.specializationsText! }] : []),
      ...(job.plan.customIoFile ? [{ path: job.plan.customIoFile, text: job.plan.customIoText! }] : []),
    ];
    if (opts.dryRun) return done(record, false, { command: job.plan.command, files, dryRun: true });
    if (!opts.force && prev?.backend === 'qaic' && prev.fingerprint === fp.value && artifactExists(prev)) {
      return done(prev, true, { command: prev.command });
    }
    await runQaic(job, opts.stderr ?? process.stderr, log);
    await writeCompileRecord(inp.exportDir, record);
    return done(record, false, { command: job.plan.command });
  }

  if (!loc) throw new PipelineError(`${inp.exportDir}: no prepared weights found`);
  if (!opts.force && prev?.backend === 'ort' && prev.fingerprint === fp.value && artifactExists(prev)) return done(prev, true);
  const record = await compileOrt(inp, loc, fp, { links: !!opts.links, keepNames: !!opts.keepNames, source });
  record.stamps = stamps;
  if (opts.verify !== false)
    record.verified = await verifyOrt(record.artifacts.model!, { onnxPath: inp.onnxPath, slimmed: !opts.keepNames }, opts.env, log);
  if (path.dirname(record.artifacts.model!) !== path.join(inp.exportDir, 'compiled'))
    await noteArtifact(record.artifacts.model!, inp.exportDir);
  await writeCompileRecord(inp.exportDir, record);
  await dropOldArtifact(inp.exportDir, prev, record);
  return done(record, false);
}
