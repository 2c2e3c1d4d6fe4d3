/**
 * runPrepare: plan, skip when the directory already holds this exact plan, otherwise run the
 * tasks into a temp sibling directory and finalize it into place.
 */
import fs from 'node:fs/promises';
import { defaultBudgetBytes, runTasks, type ExecutorResult, type PrepareProgress } from './executor';
import { checkReplaceable, finalizePrepared, removeLeftovers } from './finalize';
import { preparedStatus } from './manifest';
import { makeTempSiblingDir } from '../paths';
import { planPrepare } from './planner';
import type { PrepareOptions, PreparePlan } from './types';

/** Options of {@link runPrepare}. */
export interface RunPrepareOptions extends PrepareOptions {
  onProgress?: (p: PrepareProgress) => void;
  /** Worker threads (default: cores); 0 runs in this thread. */
  workers?: number;
  /** The worker script (default: found beside the bundle). */
  workerPath?: string;
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
}

/** Prepares the checkpoint (see DESIGN.md, "Prepared checkpoint"). */
export async function runPrepare(opts: RunPrepareOptions): Promise<PrepareResult> {
  const started = performance.now();
  const budgetBytes = opts.budgetBytes ?? defaultBudgetBytes();
  const plan = await planPrepare({ ...opts, budgetBytes });
  const status = await preparedStatus(plan.outDir);
  const base = { outDir: plan.outDir, fingerprint: plan.fingerprint, plan, budgetBytes };
  if (status.state === 'prepared' && status.manifest?.fingerprint === plan.fingerprint) {
    return { ...base, upToDate: true, ms: performance.now() - started };
  }
  await checkReplaceable(plan.outDir);
  await removeLeftovers(plan.outDir);
  const tmp = await makeTempSiblingDir(plan.outDir);
  try {
    const executor = await runTasks(plan.tasks, {
      outDir: tmp,
      budgetBytes,
      ...(opts.workers !== undefined ? { workers: opts.workers } : {}),
      ...(opts.workerPath ? { workerPath: opts.workerPath } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
    await finalizePrepared(plan, tmp);
    return { ...base, upToDate: false, ms: performance.now() - started, executor };
  } catch (e) {
    await fs.rm(tmp, { recursive: true, force: true }).catch(() => undefined);
    throw e;
  }
}
