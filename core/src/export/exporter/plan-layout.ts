/**
 * Adapts the prepare planner to the export's {@link LayoutPlanner}: the prepared layout of a
 * real checkpoint at the export's dtype (headers only — prepare need not have run). The spec
 * then points at the directory a plain `weight-spec prepare --checkpoint <dir> --dtype <d>`
 * writes (`compile --prepared` binds another copy).
 */
import path from 'node:path';
import { planPrepare } from '../../prepare';
import type { LayoutPlanner } from './layout';
import type { PlannedTensor } from './layout';

/** Plans the prepared layout of the checkpoint in `checkpointDir`. */
export const planLayout: LayoutPlanner = async (checkpointDir, dtype, o = {}) => {
  const ep = o.expertParallel ? { moeFlavour: 'expert_parallel' as const, pipelineStages: o.expertParallel.stages } : {};
  const plan = await planPrepare({ checkpoint: checkpointDir, dtype, ...ep, ...(o.keepQuantized ? { keepQuantized: true } : {}) });
  const dir = path.resolve(plan.outDir);
  const tensors = new Map<string, PlannedTensor>();
  for (const [key, t] of plan.outputs) {
    const file = path.isAbsolute(t.file) ? path.relative(dir, t.file).split(path.sep).join('/') : t.file;
    tensors.set(key, { file, dtype: t.dtype, shape: t.shape });
  }
  return { dir, tensors, source: 'plan' };
};
