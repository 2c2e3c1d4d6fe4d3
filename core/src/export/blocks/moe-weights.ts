/**
 * The prepared expert tensors of an MoE module as data (QEfficient's canonical `moe_weights`
 * layout; the graph block is moe.ts): their keys, shapes and the expert-parallel packing order.
 * No graph code, so the ArchSpec (arch.ts) reads it without an import cycle through the ops.
 */
import { moeWeightsKey, type MoeTensor } from '../../artifacts/prepared-keys';

/** Prepared expert tensors of one MoE module (keys) and their sizes. */
export interface MoeWeights {
  gate: string;
  up: string;
  down: string;
  gateBias?: string;
  upBias?: string;
  downBias?: string;
  experts: number;
  hidden: number;
  intermediate: number;
  /** Expert-parallel packing: P pipeline stages (N = E / P experts per stage). */
  stages?: number;
}

/** The prepared keys of one MoE module's experts: `<module>.moe_weights.{gate,up,down}` (and `{gate,up,down}_bias` when `biases`). */
export function canonicalMoeKeys(
  module: string,
  biases = false,
): Pick<MoeWeights, 'gate' | 'up' | 'down' | 'gateBias' | 'upBias' | 'downBias'> {
  const k = (t: MoeTensor) => moeWeightsKey(module, t);
  return {
    gate: k('gate'),
    up: k('up'),
    down: k('down'),
    ...(biases ? { gateBias: k('gate_bias'), upBias: k('up_bias'), downBias: k('down_bias') } : {}),
  };
}

/** The expert order of a packed `[N, P, …]` tensor flattened to `[E, …]`: slot n·P + p holds expert p·N + n. */
export function packedExpertOrder(experts: number, stages: number): number[] {
  const per = experts / stages;
  const order: number[] = [];
  for (let n = 0; n < per; n++) for (let p = 0; p < stages; p++) order.push(p * per + n);
  return order;
}

/** The graph inputs (prepared keys and shapes) of one MoE module's expert tensors, in declaration order. */
export function moeWeightInputs(w: MoeWeights): { name: string; shape: number[] }[] {
  const { experts: E, hidden: H, intermediate: I } = w;
  const lead = w.stages && w.stages > 1 ? [E / w.stages, w.stages] : [E];
  const out: { name: string; shape: number[] }[] = [];
  const add = (name: string | undefined, slice: number[]) => name && out.push({ name, shape: [...lead, ...slice] });
  add(w.gate, [H, I]);
  add(w.gateBias, [I]);
  add(w.up, [H, I]);
  add(w.upBias, [I]);
  add(w.down, [I, H]);
  add(w.downBias, [H]);
  return out;
}
