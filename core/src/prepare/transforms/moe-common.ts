/**
 * What the MoE transforms share: a group of stacked output tensors under one module, the
 * expert-count checks, and the expert-parallel packing that is folded into the group's task
 * (`view(P, N, …).transpose(0, 1)`, N = E / P: only the order of expert slices changes, so it costs
 * nothing at run time).
 */
import { PipelineError } from '../../errors';
import type { OutputTensor, SlicePlan, SourceTensor } from '../types';

/** The stacked tensors one MoE module becomes, before packing and dtype conversion. */
export interface MoeGroup {
  /** The module that held the experts, e.g. `model.layers.3.block_sparse_moe`. */
  module: string;
  /** Transform id (`moe-stack`, `fused-split`, `mxfp4`). */
  transform: string;
  experts: number;
  /** Source keys the group consumes. */
  inputs: string[];
  /** Output tensors in file order; slots in expert order; shapes `[E, …]`. */
  tensors: OutputTensor[];
}

/** A source tensor or a planning error naming the group and the missing key. */
export function need(sources: Map<string, SourceTensor>, key: string, group: string): SourceTensor {
  const t = sources.get(key);
  if (!t)
    throw new PipelineError(
      `${group}: required tensor "${key}" is missing from the checkpoint (the grouped task cannot run without every key of its group)`,
    );
  return t;
}

/** Checks that the number of experts found agrees with config.json, when it says. */
export function checkExpertCount(found: number, configured: number | undefined, module: string): void {
  if (configured !== undefined && configured !== found) {
    throw new PipelineError(`${module}: config.json declares ${configured} experts but the checkpoint holds ${found}`);
  }
}

/** Same shape? */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * Packs every stacked tensor of `group` for expert parallelism over `stages` (P) pipeline
 * stages, N = E / P experts each (QEfficient `modeling_auto.py`; the planner has checked
 * E % P == 0): `[E, …]` → `view(P, N, …)` → `transpose(0, 1)` → `[N, P, …]`. Output slot
 * `n·P + p` holds expert `p·N + n`.
 */
export function packExpertParallel(group: MoeGroup, stages: number): MoeGroup {
  const experts = group.experts;
  if (experts % stages !== 0) {
    throw new PipelineError(`${group.module}: ${experts} experts do not split into ${stages} pipeline stages (E/P must be whole)`);
  }
  const per = experts / stages;
  const order: number[] = [];
  for (let j = 0; j < per; j++) for (let p = 0; p < stages; p++) order.push(p * per + j);
  return {
    ...group,
    tensors: group.tensors.map((t) => {
      if (t.recipe.kind !== 'slots' || t.shape[0] !== experts)
        throw new PipelineError(`${t.key}: not a stacked [E, …] tensor; cannot pack it`);
      const slots = t.recipe.slots;
      return {
        ...t,
        shape: [per, stages, ...t.shape.slice(1)],
        stages: [...t.stages, 'packed'],
        recipe: { kind: 'slots', slots: order.map((e) => slots[e]!) },
      };
    }),
  };
}

/**
 * Helper: a stacked output tensor `[E, …slice]` from per-expert slices. `transposed`: each
 * slot is the source `[out, in]` matrix of a `[in, out]` slice (QEfficient's canonical
 * orientation, `stack_expert_linears(transpose=True)`).
 */
export function stacked(
  key: string,
  stage: string,
  dtype: OutputTensor['dtype'],
  slice: number[],
  slots: SlicePlan[],
  o: { pairedWith?: string; transposed?: boolean } = {},
): OutputTensor {
  return {
    key,
    dtype,
    shape: [slots.length, ...slice],
    stages: ['source', stage],
    recipe: { kind: 'slots', slots },
    ...(o.pairedWith ? { pairedWith: o.pairedWith } : {}),
    ...(o.transposed ? { transposeSlots: true } : {}),
  };
}
