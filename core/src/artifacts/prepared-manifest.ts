/**
 * The prepared checkpoint's manifest `.checkpoint_prepared.json` (strict: unknown fields are
 * an error) and sentinel `.checkpoint_prepared` (written last; it holds the plan fingerprint):
 * the one reader and writer, through the zod schema. prepare/finalize.ts writes it,
 * prepare/manifest.ts (`preparedStatus`), compile and check read it.
 */
import path from 'node:path';
import { z } from 'zod';
import { FormatError, oneLine } from '../errors';
import { PREPARE_DTYPES } from '../formats/dtype';
import { atomicWriteFile, readJsonText } from '../paths';
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
    text = await readJsonText(file);
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

/** Writes a manifest into `dir` atomically (validated first: a manifest prepare could not read back is never written). */
export async function writePreparedManifest(dir: string, manifest: PreparedManifest): Promise<void> {
  const file = path.join(dir, MANIFEST_FILE);
  parsePreparedManifest(manifest, file);
  await atomicWriteFile(file, JSON.stringify(manifest, null, 2) + '\n');
}
