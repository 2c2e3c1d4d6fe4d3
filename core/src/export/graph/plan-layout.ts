/**
 * Adapts the prepare planner to the export's {@link LayoutPlanner}: the prepared layout of a
 * real checkpoint at the export's dtype.
 */
import { PipelineError } from '../../errors';
import type { LayoutPlanner } from './export-config';

/** Plans the prepared layout of the checkpoint in `checkpointDir`. */
export const planLayout: LayoutPlanner = async (checkpointDir) => {
  throw new PipelineError(`${checkpointDir}: planning the prepared layout of a checkpoint needs the prepare planner, which is not available yet`);
};
