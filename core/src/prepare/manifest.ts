/**
 * The prepared checkpoint's manifest `.checkpoint_prepared.json` (strict: unknown fields
 * are an error) and sentinel `.checkpoint_prepared` (written last; it holds the plan
 * fingerprint). {@link preparedStatus} is what the language server, compile and the
 * no-op check of prepare use to tell prepared / stale / not prepared; {@link preparedMismatch}
 * whether the folder holds what its name and the export say (check and compile);
 * {@link preparedForCompile} is compile's one call into prepare, over the files it read.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { movedRef } from '../hub/hf-cache';
import { FormatError, PipelineError, oneLine } from '../errors';
import { MAX_REF_BYTES, printable, readRegularFile } from '../paths';
import {
  MANIFEST_FILE,
  SENTINEL_FILE,
  parsePreparedManifestText,
  readPreparedManifest,
  type PreparedManifest,
} from '../artifacts/prepared-manifest';
import { isQeffPreparedName, parsePreparedFolderName } from '../artifacts/prepared-folder';
import { EXPORT_REPORT_FILE, readExportReport } from '../artifacts/export-report';

export {
  MANIFEST_FILE,
  MANIFEST_VERSION,
  SENTINEL_FILE,
  parsePreparedManifest,
  parsePreparedManifestText,
  readPreparedManifest,
  type PreparedManifest,
} from '../artifacts/prepared-manifest';

/** State of a prepared directory. */
export interface PreparedStatus {
  state: 'prepared' | 'stale' | 'not-prepared';
  /** Why it is not `prepared` (one line). */
  reason?: string;
  manifest?: PreparedManifest;
}

/**
 * Checks a prepared directory: sentinel present and equal to the manifest's fingerprint,
 * every output file present with its recorded size (else `not-prepared`), every source
 * file unchanged in size and mtime (else `stale`).
 */
export async function preparedStatus(dir: string): Promise<PreparedStatus> {
  let sentinel: string | undefined;
  try {
    sentinel = await readRegularFile(path.join(dir, SENTINEL_FILE), 'utf8', MAX_REF_BYTES);
  } catch {
    sentinel = undefined;
  }
  return preparedStatusOf(dir, sentinel, () => readPreparedManifest(dir));
}

/**
 * {@link preparedStatus} over a sentinel and a manifest already read (compile reads each
 * once): `sentinel` is its text (undefined when absent), `manifest` gives the validated manifest or throws.
 */
export async function preparedStatusOf(
  dir: string,
  sentinelText: string | undefined,
  manifestOf: () => PreparedManifest | Promise<PreparedManifest>,
): Promise<PreparedStatus> {
  if (sentinelText === undefined)
    return { state: 'not-prepared', reason: `${dir} has no ${SENTINEL_FILE} sentinel (prepare never finished there)` };
  const sentinel = sentinelText.trim();
  let manifest: PreparedManifest;
  try {
    manifest = await manifestOf();
  } catch (e) {
    return { state: 'not-prepared', reason: oneLine(e) };
  }
  if (sentinel !== manifest.fingerprint)
    return { state: 'not-prepared', reason: `${path.join(dir, SENTINEL_FILE)} does not match the manifest's fingerprint`, manifest };
  for (const f of manifest.output_files) {
    const st = await fs.stat(path.join(dir, f.path)).catch(() => undefined);
    if (!st || st.size !== f.size)
      return {
        state: 'not-prepared',
        reason: `${path.join(dir, f.path)} is ${st ? `${st.size} bytes, manifest says ${f.size}` : 'missing'}`,
        manifest,
      };
  }
  const moved = manifest.hub && movedRef({ ...manifest.hub, dir: manifest.source });
  if (moved)
    return {
      state: 'stale',
      reason: `${manifest.hub!.id}: ${manifest.hub!.revision} moved from ${manifest.hub!.commit.slice(0, 12)} to ${moved.slice(0, 12)} since prepare (a newer download of the model)`,
      manifest,
    };
  for (const f of manifest.source_files) {
    const abs = path.resolve(manifest.source, f.path);
    const st = await fs.stat(abs).catch(() => undefined);
    if (!st) return { state: 'stale', reason: `source ${abs} no longer exists`, manifest };
    if (st.size !== f.size) return { state: 'stale', reason: `source ${abs} changed size (${f.size} → ${st.size} bytes)`, manifest };
    if (Math.abs(st.mtimeMs - f.mtime_ms) > 1e-3) return { state: 'stale', reason: `source ${abs} was modified after prepare`, manifest };
  }
  return { state: 'prepared', manifest };
}

/** True when `dir` is a complete prepared checkpoint whose sources are unchanged. */
export async function isPreparedUpToDate(dir: string): Promise<boolean> {
  return (await preparedStatus(dir)).state === 'prepared';
}

/**
 * A directory QEfficient prepared: named `<name>-qeff-prepared-<dtype>`, with its sentinel
 * `.checkpoint_prepared` and no manifest of ours (QEfficient's prepare writes its own; issue #21
 * point 5). Its sentinel is the proof a prepare made it, as ours is.
 */
export function isQeffPrepared(dir: string): boolean {
  return (
    isQeffPreparedName(path.basename(dir)) &&
    fsSync.existsSync(path.join(dir, SENTINEL_FILE)) &&
    !fsSync.existsSync(path.join(dir, MANIFEST_FILE))
  );
}

// Provenance. Does a prepared folder hold what its name and the export say? prepare names its
// default folder `<name>-prepared-<dtype>-<first 10 hex of the plan fingerprint>`, and export
// records the source checkpoint and that folder in export-report.json. A folder replaced by
// another prepare (issue #28: a repository's report steered Prepare into the user's folder with
// other weights) keeps its name but its manifest records another source and fingerprint;
// `check` and `compile` say so as an error instead of binding the other weights.

function realOf(p: string): string {
  try {
    return fsSync.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * Why a prepared folder cannot serve an export's adapters (`exported`: the adapter folders its
 * report records, in id order; prepare/lora-plan.ts stacks them), or undefined: the manifest's `lora-stack` task must stack the
 * same folders in the same order, or id k would pick another adapter's weights.
 */
function loraMismatch(exported: unknown, tasks: readonly { transform: string; params: Record<string, unknown> }[]): string | undefined {
  const want = Array.isArray(exported) ? exported.filter((d): d is string => typeof d === 'string') : [];
  const task = tasks.find((t) => t.transform === 'lora-stack');
  const adapters = task?.params.adapters;
  const have = Array.isArray(adapters) ? adapters.map((a) => String((a as { dir?: unknown }).dir)) : [];
  if (want.length === 0) return undefined; // a plain export ignores the stacked adapters
  const real = (d: string) => realOf(d);
  if (want.length === have.length && want.every((d, i) => real(d) === real(have[i]!))) return undefined;
  const list = (ds: string[]) => (ds.length ? ds.map((d, i) => `${i + 1} = ${d}`).join(', ') : 'none');
  return `stacks the LoRA adapters ${list(have)}, but the export serves ${list(want)}; prepare again with the export's --lora folders, in its order`;
}

/**
 * One line when `preparedDir`'s manifest disagrees with its folder name's fingerprint, or
 * with the source checkpoint the report of `exportDir` records for that folder; else undefined.
 */
export function preparedMismatch(exportDir: string, preparedDir: string, manifest: PreparedManifest): string | undefined {
  const shown = printable(preparedDir);
  // prepare names its folder with the first 10 hex of the plan fingerprint
  const parsed = parsePreparedFolderName(path.basename(preparedDir));
  const named = parsed && parsed.hash.length === 10 ? parsed.hash : undefined;
  if (named && !manifest.fingerprint.startsWith(named)) {
    return (
      `${shown}: its manifest's fingerprint ${manifest.fingerprint.slice(0, 10)} is not the ${named} its name says ` +
      `(prepared from ${printable(manifest.source)}: another prepare replaced this folder); re-run weight-spec prepare`
    );
  }
  const report = readExportReport(exportDir);
  // a LoRA export binds adapter k to slot k: the folder must stack the same adapters in the same order
  const lora = loraMismatch(report?.source?.lora, manifest.tasks);
  if (lora) return `${shown}: ${lora}`;
  const source = report?.source?.checkpoint;
  const dir = report?.prepared?.dir;
  if (!source || !dir || realOf(path.resolve(exportDir, dir)) !== realOf(preparedDir)) return undefined;
  if (realOf(path.resolve(exportDir, source)) !== realOf(manifest.source)) {
    return (
      `${shown}: prepared from ${printable(manifest.source)}, but ${printable(path.join(exportDir, EXPORT_REPORT_FILE))} ` +
      `says this export's source is ${printable(source)}; re-run weight-spec prepare --checkpoint ${printable(source)}`
    );
  }
  return undefined;
}

/** A prepared folder's manifest and sentinel as compile read them (each once). */
export interface PreparedRead {
  /** The manifest's bytes, or the reason it could not be read. */
  manifest: { bytes: Buffer } | { error: unknown };
  /** The sentinel's text, undefined when it could not be read. */
  sentinel?: string;
}

/** The manifest compile read, validated (FormatError as the manifest's reader words it). */
function manifestOfRead(dir: string, read: PreparedRead): PreparedManifest {
  const file = path.join(dir, MANIFEST_FILE);
  if ('bytes' in read.manifest) return parsePreparedManifestText(read.manifest.bytes.toString('utf8'), file);
  const e = read.manifest.error;
  if (e instanceof FormatError && e.detail === 'file does not exist')
    throw new FormatError(file, 'does not exist (not a prepared checkpoint)');
  throw e instanceof FormatError ? e : new FormatError(file, `cannot read (${oneLine(e)})`);
}

/**
 * compile's check of the prepared folder it binds, over the manifest and sentinel it read: an
 * unfinished or damaged prepare is an error; a prepare whose source checkpoint changed since
 * is a warning (the prepared files are still self-consistent). A folder prepare never made
 * (no sentinel: a plain checkpoint, `/`, an absolute model_id) is refused when `required`
 * (the ort backend writes its artifact there; qaic reads a --prepared folder).
 * Returns the source checkpoint (named in dtype errors).
 */
export async function preparedForCompile(
  exportDir: string,
  dir: string,
  read: PreparedRead,
  o: { required: boolean; log: (line: string) => void },
): Promise<string | undefined> {
  const plain = !fsSync.existsSync(path.join(dir, MANIFEST_FILE)) && !fsSync.existsSync(path.join(dir, SENTINEL_FILE));
  if (plain && !o.required) return undefined;
  if (plain) {
    throw new PipelineError(
      `${printable(dir)}: not a prepared checkpoint (no ${SENTINEL_FILE}); compile writes only into folders prepare made: ` +
        `run weight-spec prepare --checkpoint ${printable(dir)} --dtype <dtype> and compile with --prepared <its output>`,
    );
  }
  if (isQeffPrepared(dir)) {
    o.log(`compile: ${dir} was prepared by QEfficient (sentinel, no manifest): bound as it is`);
    return undefined;
  }
  const st = await preparedStatusOf(dir, read.sentinel, () => manifestOfRead(dir, read));
  if (st.state === 'not-prepared') throw new PipelineError(`${st.reason}; run weight-spec prepare again`);
  const mismatch = st.manifest && preparedMismatch(exportDir, dir, st.manifest);
  if (mismatch) throw new PipelineError(mismatch);
  if (st.state === 'stale') o.log(`compile: warning: ${dir} is stale (${st.reason}); run weight-spec prepare again to pick up the change`);
  return st.manifest?.source;
}
