/**
 * Per-expert MoE stacking: Mixtral `…block_sparse_moe.experts.N.{w1,w3,w2}.weight` and
 * Qwen-MoE `…mlp.experts.N.{gate_proj,up_proj,down_proj}.weight` and Grok-1
 * `…moe_block.experts.N.{linear,linear_v,linear_1}.weight` become
 * `<module>.moe_weights.{gate,up,down}` in QEfficient's canonical orientation
 * (`QEfficient/transformers/moe/weights.py` `stack_expert_linears`): each expert's `[out, in]`
 * weight transposed to `[in, out]`, stacked over experts in expert order (never file order) —
 * gate/up `[E, H, I]`, down `[E, I, H]`.
 */
import { PipelineError } from '../../errors';
import { isFloat } from '../../formats/dtype';
import type { SourceTensor } from '../types';
import { EXPERT_ROLE, PER_EXPERT_KEY, moeWeightsKey } from '../../artifacts/prepared-keys';
import { checkExpertCount, need, sameShape, stacked, type MoeGroup } from './moe-common';

/** Finds the per-expert groups among `sources`; `configured` is config.json's expert count. */
export function planMoeStack(sources: Map<string, SourceTensor>, configured?: number): MoeGroup[] {
  const modules = new Map<string, { experts: Set<number>; names: Map<string, Set<string>> }>();
  for (const key of sources.keys()) {
    const m = PER_EXPERT_KEY.exec(key);
    if (!m) continue;
    const mod = modules.get(m[1]!) ?? { experts: new Set(), names: new Map() };
    modules.set(m[1]!, mod);
    mod.experts.add(Number(m[2]));
    const role = EXPERT_ROLE[m[3]!]!;
    const set = mod.names.get(role) ?? new Set<string>();
    set.add(m[3]!);
    mod.names.set(role, set);
  }
  const groups: MoeGroup[] = [];
  for (const [module, mod] of modules) {
    const count = Math.max(...mod.experts) + 1;
    checkExpertCount(count, configured, module);
    const inputs: string[] = [];
    const tensors = (['gate', 'up', 'down'] as const).map((role) => {
      const names = mod.names.get(role);
      if (!names)
        throw new PipelineError(
          `${module}: required tensor "${module}.experts.0.${role === 'gate' ? 'w1' : role === 'up' ? 'w3' : 'w2'}.weight" (or ${role}_proj) is missing from the checkpoint (the grouped task cannot run without every key of its group)`,
        );
      if (names.size > 1) throw new PipelineError(`${module}: experts mix ${[...names].join(' and ')} names for the ${role} projection`);
      const name = [...names][0]!;
      const keys = Array.from({ length: count }, (_, e) => `${module}.experts.${e}.${name}.weight`);
      const first = need(sources, keys[0]!, module);
      for (const k of keys) {
        const t = need(sources, k, module);
        if (!isFloat(t.dtype)) throw new PipelineError(`${k}: dtype ${t.dtype} is not a float type; cannot stack it`);
        if (t.dtype !== first.dtype || !sameShape(t.shape, first.shape) || t.shape.length !== 2) {
          throw new PipelineError(
            `${k}: ${t.dtype} ${JSON.stringify(t.shape)} differs from ${keys[0]} (${first.dtype} ${JSON.stringify(first.shape)}); experts must agree`,
          );
        }
        inputs.push(k);
      }
      const [out, inp] = first.shape as [number, number];
      return stacked(
        moeWeightsKey(module, role),
        'stacked',
        first.dtype,
        [inp, out],
        keys.map((src) => ({ kind: 'whole' as const, src })),
        { transposed: true },
      );
    });
    const [g, u, d] = tensors;
    if (!sameShape(g!.shape, u!.shape) || g!.shape[1] !== d!.shape[2] || g!.shape[2] !== d!.shape[1]) {
      const src = (t: typeof g) => JSON.stringify([...t!.shape.slice(1)].reverse());
      throw new PipelineError(
        `${module}: expert shapes gate ${src(g)}, up ${src(u)}, down ${src(d)} do not form an MLP ([I, H], [I, H], [H, I])`,
      );
    }
    groups.push({ module, transform: 'moe-stack', experts: count, inputs, tensors });
  }
  return groups;
}
