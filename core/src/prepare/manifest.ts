/**
 * The prepared checkpoint's manifest `.checkpoint_prepared.json` (strict: unknown fields
 * are an error) and sentinel `.checkpoint_prepared` (written last; it holds the plan
 * fingerprint). {@link preparedStatus} is what the language server, compile and the
 * no-op check of prepare use to tell prepared / stale / not prepared.
 */
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { movedRef } from '../hub/hf-cache';
import { oneLine } from '../errors';
import { readRegularFile } from '../paths';
import { MANIFEST_FILE, SENTINEL_FILE, readPreparedManifest, type PreparedManifest } from '../artifacts/prepared-manifest';
import { isQeffPreparedName } from '../artifacts/prepared-folder';

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
    sentinel = await readRegularFile(path.join(dir, SENTINEL_FILE), 'utf8');
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
