/**
 * Finite LoRA adapters served from one graph, as QEfficient's `LinearMultiLoRA.forward` does
 * (`QEfficient/peft/lora/layers.py`, quic/efficient-transformers
 * ebf55e8159c8b87bff6d8028541b824244b16c81): each targeted Linear adds
 *
 *   `x · A[lora_ids[b]] · B[lora_ids[b]]`
 *
 * for batch row b, where `A` `[N+1, 1, in, R]` and `B` `[N+1, 1, R, out]` are the stacked
 * adapters prepare writes (`prepare/lora-plan.ts`: slot 0 zeros = the base model, PEFT's
 * scaling already folded into B) and `lora_ids` `[batch, 1]` int64 is QEfficient's input.
 * QEfficient gathers the slots with its `CtxGatherCB` custom op over `lora_ids`; a plain
 * `Gather` on axis 0 selects the same `[batch, 1, ·, ·]` slices. Hidden states travel as
 * `[batch·seq, in]` here, so x is viewed as `[batch, 1, seq, in]` for the two batched MatMuls.
 */
import type { LinearSpec } from './arch';
import type { WeightInput } from './weight-inputs';
import { reshape, weight, type Ctx } from './ops';
import { loraKeys } from '../../artifacts/prepared-keys';

/** The stacked adapters a graph serves. */
export interface LoraGraph {
  /** Slots: the adapters + 1 (slot 0 = base). */
  slots: number;
  /** R, the stacked rank. */
  rank: number;
  /** Targeted Linears by weight name (`<module>.weight`). */
  modules: ReadonlyMap<string, { module: string; in: number; out: number; /** the adapter file naming it */ by: string }>;
}

/** The stacked adapter inputs of every targeted module, in module order. */
export function loraWeightInputs(l: LoraGraph): WeightInput[] {
  return [...l.modules.values()].flatMap((m) => {
    const n = loraKeys(m.module);
    return [
      { name: n.a, shape: [l.slots, 1, m.in, l.rank] },
      { name: n.b, shape: [l.slots, 1, l.rank, m.out] },
    ];
  });
}

/**
 * The hook `linear` calls after each Gemm (`Ctx.afterLinear`): adds the selected adapter's
 * term to a targeted Linear, returns the others' output unchanged. `used` lists the modules
 * that got their term, so the export can refuse an adapter of a module the graph does not
 * build as a plain Linear.
 */
export function loraHook(c: Ctx, l: LoraGraph, loraIds: string): { hook: NonNullable<Ctx['afterLinear']>; used: Set<string> } {
  const g = c.g;
  const used = new Set<string>();
  let shared: { ids: string; batch: string } | undefined;
  const hook = (x: string, lin: LinearSpec, y: string): string => {
    const m = l.modules.get(lin.weight);
    if (!m || lin.conv1d) return y;
    used.add(lin.weight);
    shared ??= g.within('lora', () => ({
      ids: reshape(c, loraIds, [-1]), // [B]
      batch: g.op('Slice', [g.op('Shape', [loraIds]), g.ints([0]), g.ints([1])]), // [1] = B
    }));
    const { ids, batch } = shared;
    return g.within('lora', () => {
      const n = loraKeys(m.module);
      const a = g.op('Gather', [weight(c, n.a, [l.slots, 1, m.in, l.rank]), ids], { axis: 0 }); // [B,1,in,R]
      const b = g.op('Gather', [weight(c, n.b, [l.slots, 1, l.rank, m.out]), ids], { axis: 0 }); // [B,1,R,out]
      const x4 = g.op('Reshape', [x, g.op('Concat', [batch, g.ints([1, -1, m.in])], { axis: 0 })]); // [B,1,S,in]
      const delta = g.op('MatMul', [g.op('MatMul', [x4, a]), b]); // [B,1,S,out]
      return g.op('Add', [y, reshape(c, delta, [-1, m.out])]);
    });
  };
  return { hook, used };
}
