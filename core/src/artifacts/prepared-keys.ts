/**
 * The keys prepare writes and the exporters, check and the viewers read: QEfficient's canonical
 * stacked experts `<module>.moe_weights.{gate,up,down}` (+ `_bias`), built here and nowhere
 * else, and the one pattern of a checkpoint's per-expert linear weight. Data only: no I/O.
 */

/** The role of a stacked expert tensor. */
export type MoeRole = 'gate' | 'up' | 'down';

/** The stacked tensor suffixes prepare writes under a module: the three roles and their biases. */
export type MoeTensor = MoeRole | 'gate_bias' | 'up_bias' | 'down_bias';

/** `<module>.moe_weights`: the prefix of one MoE module's stacked expert tensors. */
export function moeWeightsPrefix(module: string): string {
  return `${module}.moe_weights`;
}

/** The prepared key of one stacked expert tensor: `<module>.moe_weights.<tensor>`. */
export function moeWeightsKey(module: string, tensor: MoeTensor): string {
  return `${moeWeightsPrefix(module)}.${tensor}`;
}

/** Matches a prepared stacked key; groups: module, role, `_bias` or undefined. */
export const MOE_WEIGHTS_KEY = /^(.*)\.moe_weights\.(gate|up|down)(_bias)?$/;

/** Matches a checkpoint's fused experts (gpt-oss, Qwen3.5-MoE, transformers 5): groups: module, `gate_up_proj` or `down_proj`. */
export const FUSED_EXPERTS_KEY = /^(.*)\.experts\.(gate_up_proj|down_proj)$/;

/** Matches one expert's linear weight; groups: module, expert index, projection name. */
export const PER_EXPERT_KEY = /^(.*)\.experts\.(\d+)\.(w1|w2|w3|gate_proj|up_proj|down_proj|linear|linear_v|linear_1)\.weight$/;

/** The canonical role of each per-expert projection name (also how export --onnx places a per-expert key). */
export const EXPERT_ROLE: Readonly<Record<string, 'gate' | 'up' | 'down'>> = {
  w1: 'gate',
  w3: 'up',
  w2: 'down',
  gate_proj: 'gate',
  up_proj: 'up',
  down_proj: 'down',
  // Grok-1 (hpcai-tech MoeMLP): linear_1(gelu(linear(h)) · linear_v(h))
  linear: 'gate',
  linear_v: 'up',
  linear_1: 'down',
};

/**
 * The prepared keys (and graph inputs) of one Linear's stacked LoRA adapters, QEfficient's
 * `LinearMultiLoRA` parameter names: `<module>.lora_a_weights` `[N+1, 1, in, R]` and
 * `<module>.lora_b_weights` `[N+1, 1, R, out]` (prepare/lora-plan.ts writes them, the graph's
 * blocks/lora.ts reads them).
 */
export function loraKeys(module: string): { a: string; b: string } {
  return { a: `${module}.lora_a_weights`, b: `${module}.lora_b_weights` };
}
