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
import { z } from 'zod';
import { FormatError, oneLine } from '../errors';
import { PREPARE_DTYPES } from '../formats/dtype';
import { readRegularFile } from '../paths';
import { parseOrThrow } from '../zod-issue';

/** Manifest file name (QEfficient's). */
export const MANIFEST_FILE = '.checkpoint_prepared.json';
/** Sentinel file name, written last. */
export const SENTINEL_FILE = '.checkpoint_prepared';
/** Manifest format version. */
export const MANIFEST_VERSION = 1;

const fileFact = z.strictObject({ path: z.string().min(1), size: z.number().int().nonnegative(), mtime_ms: z.number() });
const manifestSchema = z.strictObject({
  version: z.literal(MANIFEST_VERSION),
  tool: z.literal('weight-spec'),
  source: z.string().min(1),
  /** The Hub id, revision and snapshot commit when the source is a snapshot of the HF cache (hub/hf-cache.ts). */
  hub: z.strictObject({ id: z.string(), revision: z.string(), commit: z.string() }).optional(),
  target_dtype: z.enum(PREPARE_DTYPES),
  fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  moe_prefill_flavour: z.literal('expert_parallel').nullable(),
  expert_parallel: z
    .strictObject({ pipeline_stages: z.number().int().positive(), parallel_experts: z.number().int().positive() })
    .nullable(),
  source_files: z.array(fileFact),
  transforms: z.array(z.strictObject({ id: z.string(), tasks: z.number().int().nonnegative(), params: z.record(z.string(), z.unknown()) })),
  tasks: z.array(
    z.strictObject({
      id: z.string(),
      transform: z.string(),
      params: z.record(z.string(), z.unknown()),
      file: z.string(),
      inputs: z.array(z.string()),
      outputs: z.array(z.string()),
    }),
  ),
  output_files: z.array(z.strictObject({ path: z.string().min(1), size: z.number().int().nonnegative() })),
  sidecars: z.array(z.string()),
  /** Every other file prepare wrote (index, sidecars) with its size: what a re-run may replace. */
  written_files: z.array(z.strictObject({ path: z.string().min(1), size: z.number().int().nonnegative() })).optional(),
  /** Output tensors kept with ±Inf/NaN values (`--allow-overflow`: narrowing overflow, FP8 NaN codes) → how many. */
  non_finite: z.record(z.string(), z.number().int().positive()).optional(),
  created_at: z.string(),
});

/** The manifest, as written. */
export type PreparedManifest = z.infer<typeof manifestSchema>;

/** Validates manifest data (throws FormatError naming `file` and the first problem). */
export function parsePreparedManifest(value: unknown, file: string): PreparedManifest {
  return parseOrThrow(manifestSchema, value, file, 'invalid prepared manifest');
}

/** Reads and validates `<dir>/.checkpoint_prepared.json` (FormatError when absent or invalid). */
export async function readPreparedManifest(dir: string): Promise<PreparedManifest> {
  const file = path.join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readRegularFile(file, 'utf8');
  } catch (e) {
    if (e instanceof FormatError && e.detail === 'file does not exist')
      throw new FormatError(file, 'does not exist (not a prepared checkpoint)');
    throw e instanceof FormatError ? e : new FormatError(file, `cannot read (${oneLine(e)})`);
  }
  return parsePreparedManifestText(text, file);
}

/** Validates a manifest's text as read from `file` (FormatError when it is not JSON or not a manifest). */
export function parsePreparedManifestText(text: string, file: string): PreparedManifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new FormatError(file, `is not valid JSON (${oneLine(e)})`);
  }
  return parsePreparedManifest(value, file);
}

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
    /-qeff-prepared-[A-Za-z0-9_]+$/.test(path.basename(dir)) &&
    fsSync.existsSync(path.join(dir, SENTINEL_FILE)) &&
    !fsSync.existsSync(path.join(dir, MANIFEST_FILE))
  );
}
