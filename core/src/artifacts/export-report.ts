/**
 * Reading `<export dir>/export-report.json` back (export writes it last, write-export.ts):
 * through zod, like the prepared manifest and compile.json, never through casts. Only the
 * fields readers use are typed; the rest is kept as written.
 */
import path from 'node:path';
import { z } from 'zod';
import { readJsonTextSync } from '../paths';

/** The report's file name. */
export const EXPORT_REPORT_FILE = 'export-report.json';
/** Marks a report as ours (so a re-export may replace the directory's artifacts). */
export const EXPORT_REPORT_TOOL = 'weight-spec export';

const reportSchema = z.looseObject({
  tool: z.literal(EXPORT_REPORT_TOOL),
  /** Symlinks export made in the directory (bare names). */
  links: z.array(z.string()).default([]),
  source: z.looseObject({ config: z.string().nullish(), checkpoint: z.string().nullish(), onnx: z.string().nullish() }).optional(),
  options: z.looseObject({ dtype: z.string().nullish() }).optional(),
  prepared: z.looseObject({ dir: z.string().nullish() }).optional(),
  model_id: z.string().nullish(),
});

/** The fields of export-report.json that tools read back. */
export type ExportReport = z.infer<typeof reportSchema>;

/** Reads `<dir>/export-report.json`; undefined when absent, unreadable or not written by weight-spec export. */
export function readExportReport(dir: string): ExportReport | undefined {
  try {
    const r = reportSchema.safeParse(JSON.parse(readJsonTextSync(path.join(dir, EXPORT_REPORT_FILE))));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The prepared folder an export names in its report (`prepared.dir`, else `model_id`), when it
 * is an absolute path: export links it beside the spec only once it exists (as QEfficient's
 * `link_prepared_checkpoint_dir`), so until a re-export this is how the folder is found.
 */
export function reportedPreparedDir(specDir: string): string | undefined {
  const r = readExportReport(specDir);
  const dir = r?.prepared?.dir ?? r?.model_id;
  return dir && path.isAbsolute(dir) ? dir : undefined;
}

/**
 * Where a spec file lies when the export's link to the prepared folder is not there (see
 * {@link reportedPreparedDir}): inside that folder, when its name is the path's first segment.
 * `dir` is the reported folder when the caller has already read it.
 */
export function reportedPreparedFile(
  specDir: string,
  filePath: string,
  dir: string | undefined = reportedPreparedDir(specDir),
): { dir: string; rest: string } | undefined {
  if (!dir) return undefined;
  const segs = filePath.split(/[\\/]/).filter((s) => s && s !== '.');
  if (segs.length < 2 || segs[0] !== path.basename(dir) || segs.includes('..')) return undefined;
  return { dir, rest: segs.slice(1).join('/') };
}
