/**
 * runPrepare: plan, skip when the directory already holds this exact plan, otherwise run the
 * tasks into a temp sibling directory and finalize it into place.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../errors';
import { defaultBudgetBytes, runTasks, type ExecutorResult, type PrepareProgress } from './executor';
import { finalizePrepared, removeLeftovers } from './finalize';
import { checkApartFromSource, checkReplaceable, lockFileOf, lockOutput } from './ownership';
import { preparedStatus } from './manifest';
import { assertWritableDir, beginWork, failpoint, makeTempSiblingDir, type WorkScope } from '../paths';
import { safetensorsSource, type BinConversion } from './bin-source';
import { planPrepare } from './planner';
import type { PrepareOptions, PreparePlan } from './types';

/** Options of {@link runPrepare}. */
export interface RunPrepareOptions extends PrepareOptions {
  onProgress?: (p: PrepareProgress) => void;
  /** Worker threads (default: cores); 0 runs in this thread. */
  workers?: number;
  /** The worker script (default: found beside the bundle). */
  workerPath?: string;
  /** Output bytes per piece of a dense task (tests make it small to exercise the pieces). */
  pieceBytes?: number;
  /**
   * Keep tensors that got ±Inf/NaN values (`--allow-overflow`), recording the count per tensor
   * in the manifest. Not part of the fingerprint: the bytes written are the same either way,
   * the flag only decides whether they are accepted.
   */
  allowOverflow?: boolean;
}

/** What a prepare run did. */
export interface PrepareResult {
  outDir: string;
  fingerprint: string;
  /** True when the directory already held this plan (nothing was done). */
  upToDate: boolean;
  plan: PreparePlan;
  budgetBytes: number;
  ms: number;
  executor?: ExecutorResult;
  /** Set when the checkpoint was `.bin` only and prepare planned from its safetensors conversion. */
  conversion?: BinConversion;
  /** Output tensors holding ±Inf/NaN values and their counts (allowed by `allowOverflow`; as recorded when up to date). */
  nonFinite: Record<string, number>;
}

/** Prepares the checkpoint (see DESIGN.md, "Prepared checkpoint"). */
export async function runPrepare(opts: RunPrepareOptions): Promise<PrepareResult> {
  const started = performance.now();
  const budgetBytes = opts.budgetBytes ?? defaultBudgetBytes();
  // a .bin-only checkpoint is converted to safetensors first (safely), as QEfficient does
  const source = await safetensorsSource(opts.checkpoint);
  const plan = await planPrepare({ ...opts, checkpoint: source.checkpoint, budgetBytes });
  // Refused before the lock is written beside it: an output folder inside (or around) the source.
  checkApartFromSource(plan.outDir, plan.source);
  assertWritableDir(plan.outDir);
  // The temp sibling and the lock live beside the output; its leftovers inside it. The scope
  // comes first, so an interrupt while the lock is being taken still removes it; the lock is
  // released before the scope ends, so no moment leaves it behind.
  const scope = beginWork(plan.outDir, [path.dirname(plan.outDir), plan.outDir], lockFileOf(plan.outDir));
  try {
    const lock = await lockOutput(plan.outDir);
    try {
      const res = await runLocked(plan, opts, budgetBytes, started, scope);
      return source.conversion ? { ...res, conversion: source.conversion } : res;
    } finally {
      await lock.release();
    }
  } finally {
    scope.end();
  }
}

async function runLocked(
  plan: PreparePlan,
  opts: RunPrepareOptions,
  budgetBytes: number,
  started: number,
  scope: WorkScope,
): Promise<PrepareResult> {
  const status = await preparedStatus(plan.outDir);
  const base = { outDir: plan.outDir, fingerprint: plan.fingerprint, plan, budgetBytes };
  if (status.state === 'prepared' && status.manifest?.fingerprint === plan.fingerprint) {
    const nonFinite = status.manifest.non_finite ?? {};
    const [worst] = Object.entries(nonFinite).sort((a, b) => b[1] - a[1]);
    // made earlier with --allow-overflow: the same bytes are accepted only with the flag again
    if (worst && !opts.allowOverflow)
      throw new PipelineError(
        `${plan.outDir}: "${worst[0]}" holds ${worst[1]} non-finite value${worst[1] === 1 ? '' : 's'} (prepared with --allow-overflow); ` +
          'pass --allow-overflow to use it',
      );
    return { ...base, upToDate: true, ms: performance.now() - started, nonFinite };
  }
  await checkReplaceable(plan.outDir, plan.source);
  await removeLeftovers(plan.outDir);
  const tmp = await makeTempSiblingDir(plan.outDir);
  try {
    const executor = await runTasks(plan.tasks, {
      outDir: tmp,
      budgetBytes,
      ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
      ...(opts.workerPath ? { workerPath: opts.workerPath } : {}),
      ...(opts.pieceBytes ? { pieceBytes: opts.pieceBytes } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      ...(opts.allowOverflow ? { allowOverflow: true } : {}),
    });
    // Every task is written, nothing is committed yet: where a Cancel test holds the job.
    await failpoint('prepare-before-commit', plan.source);
    await finalizePrepared(plan, tmp, executor.nonFinite);
    scope.committed = true;
    return { ...base, upToDate: false, ms: performance.now() - started, executor, nonFinite: executor.nonFinite };
  } catch (e) {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw e;
  }
}
