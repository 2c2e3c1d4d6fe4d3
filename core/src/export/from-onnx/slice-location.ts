/**
 * Where a slice of a source checkpoint tensor (resolve's `content-slice`: one expert of a
 * stacked tensor, a block of rows of a fused weight) lands in the prepared layout: the whole
 * key's {@link PreparedLoc} narrowed to that expert (a Gather) and to those rows, which are
 * axis 0 of the prepared matrix, or its last axis where prepare transposed the expert
 * (canonical MoE orientation). A fused gate/up that prepare split (GraniteMoE `input_linear`)
 * is read from the prepared half that holds the rows, so no Concat is rebuilt.
 */
import { PipelineError } from '../../errors';
import type { SliceOf } from '../../resolve';
import type { PreparedLoc } from './prepared-location';

/** A block along one axis of the (gathered) prepared tensor. */
export interface AxisSlice {
  axis: number;
  start: number;
  end: number;
}

/** Narrows `loc` (the prepared location of the whole key) to `s`. */
export function sliceLocation(key: string, loc: PreparedLoc, s: SliceOf): { loc: PreparedLoc; slice?: AxisSlice } {
  let out = loc;
  if (s.expert !== undefined) {
    if (loc.expert !== undefined || loc.shape.length !== 3 || s.expert >= loc.shape[0]!) {
      throw new PipelineError(
        `${key}: expert ${s.expert} of it has no stacked prepared tensor to gather from (${loc.key} ${JSON.stringify(loc.shape)})`,
      );
    }
    out = { ...loc, expert: s.expert };
  }
  if (!s.rows) return { loc: out };
  const matrix = out.expert !== undefined ? out.shape.slice(1) : out.shape;
  if (matrix.length !== 2)
    throw new PipelineError(`${key}: a block of rows of it has no 2-D prepared matrix (${out.key} ${JSON.stringify(out.shape)})`);
  const axis = out.transposed ? 1 : 0;
  let start = s.rows.start;
  let end = start + s.rows.length;
  // a split fused gate/up: the rows of one half are the whole prepared gate (or up)
  const n = matrix[1]!;
  if (out.concat && axis === 1 && (end <= n || start >= n)) {
    const part =
      end <= n ? out : { ...out.concat, ...(out.expert !== undefined ? { expert: out.expert } : {}), transposed: out.transposed };
    if (start >= n) [start, end] = [start - n, end - n];
    out = { ...part, concat: undefined };
    if (start === 0 && end === n) return { loc: out };
  }
  return { loc: out, slice: { axis, start, end } };
}
