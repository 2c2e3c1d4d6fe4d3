/**
 * Prepared-checkpoint checks: a spec that points into a prepared directory (one with a
 * `.checkpoint_prepared.json` manifest, or named like one) needs it to be
 * complete and current. What "complete and current" means is prepare's own
 * {@link preparedStatus} (sentinel written last and equal to the manifest's fingerprint,
 * outputs present, sources unchanged in size and mtime), so the checker, compile and
 * prepare's no-op test cannot disagree.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { MANIFEST_FILE, isQeffPrepared, preparedMismatch, preparedStatus } from '../prepare';
import { report, type CheckContext } from './context';
import { looksPreparedName } from '../artifacts/prepared-folder';

/** Manifest of a prepared checkpoint (QEfficient's name). */
export const PREPARED_MANIFEST = MANIFEST_FILE;

/**
 * True when `file` lies in a directory named like a prepared checkpoint: QEfficient's
 * `<name>-qeff-prepared-<dtype>` or prepare's `<name>-prepared-<dtype>-<hash>`.
 */
export function looksPrepared(file: string): boolean {
  const dir = path.basename(path.dirname(file));
  return looksPreparedName(dir);
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Reports `prepared-incomplete` / `prepared-mismatch` (the manifest records another source or
 * fingerprint than the folder name and the export's report say) / `prepared-stale` once per
 * prepared directory the spec uses.
 */
export async function checkPrepared(ctx: CheckContext): Promise<void> {
  const seen = new Set<string>();
  for (const [i, state] of ctx.files.entries()) {
    if (!state.abs || !state.header || state.planned) continue; // planned: reported as not prepared yet
    const dir = path.dirname(state.abs);
    if (seen.has(dir)) continue;
    seen.add(dir);
    const prepared = looksPrepared(state.abs) || (await exists(path.join(dir, PREPARED_MANIFEST)));
    if (!prepared) continue; // an ordinary checkpoint
    // QEfficient's prepare (sentinel, no manifest of ours): its sentinel is the proof, as compile takes it
    if (isQeffPrepared(dir)) continue;
    const status = await preparedStatus(dir);
    const at = ctx.sources.files[i]!.path;
    const shown = ctx.spec.files[i]!.path;
    if (status.state === 'not-prepared') {
      report(
        ctx,
        'prepared-incomplete',
        at,
        `the prepared checkpoint is incomplete (${status.reason ?? 'unknown reason'}); run Prepare (weight-spec prepare) again: ${shown}`,
      );
    } else if (status.manifest && preparedMismatch(ctx.specDir, dir, status.manifest)) {
      report(ctx, 'prepared-mismatch', at, `${preparedMismatch(ctx.specDir, dir, status.manifest)}: ${shown}`);
    } else if (status.state === 'stale') {
      report(
        ctx,
        'prepared-stale',
        at,
        `the prepared checkpoint is stale (${status.reason ?? 'its source changed'}); run Prepare (weight-spec prepare) again: ${shown}`,
      );
    }
  }
}
