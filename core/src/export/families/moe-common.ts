/**
 * What the MoE families share (each family lives in its own file: `gpt-oss.ts`, `glm4-moe.ts`,
 * `granitemoe.ts`, `deepseek-v3.ts`): rope from `rope_scaling` / `rope_parameters`, heads, separate
 * q/k/v projections, the Llama-shaped rest of an {@link ArchSpec}, the expert-parallel stages, the
 * top-k check, and the grouped-sigmoid routed-experts block of GLM-4-MoE and DeepSeek-V3.
 */
import { archDims, lin, type ArchSpec, type LayerSpec, type MlpSpec } from '../blocks/arch';
import type { ArchOptions } from './row';
import { actOf, checkExpertParallel, refuse, type LlamaLikeConfig } from './config';
import { canonicalMoeKeys } from '../blocks/moe';
import { ropeSpec, type RopeScaling } from '../blocks/rope';

/** Rope from `rope_scaling` / `rope_parameters` (newer HF configs carry rope_theta inside). */
export function ropeOf(c: LlamaLikeConfig, rotaryDim: number, file: string, defaultTheta: number) {
  const params = (c.rope_parameters ?? null) as RopeScaling | null;
  const scaling = (c.rope_scaling ?? params) as RopeScaling | null;
  const theta = c.rope_theta ?? (typeof params?.rope_theta === 'number' ? params.rope_theta : defaultTheta);
  return ropeSpec(theta, rotaryDim, scaling, file, c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {});
}

/** Heads and head_dim of a Llama-named config (GQA checked). */
export function heads(c: LlamaLikeConfig, file: string, defaultHeadDim: number) {
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? nh;
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  return { nh, nKv, hd: c.head_dim ?? defaultHeadDim };
}

/** Separate q/k/v projections `<p>.self_attn.{q,k,v}_proj` (with `bias`). */
export function attnProj(p: string, H: number, nh: number, nKv: number, hd: number, bias: boolean): LayerSpec['attn'] {
  return {
    kind: 'separate',
    q: lin(`${p}.self_attn.q_proj.weight`, nh * hd, H, bias),
    k: lin(`${p}.self_attn.k_proj.weight`, nKv * hd, H, bias),
    v: lin(`${p}.self_attn.v_proj.weight`, nKv * hd, H, bias),
  };
}

/** `{stages}` for expert-parallel packing (checked against the expert count), else nothing. */
export function expertStages(file: string, experts: number, opts: ArchOptions): { stages?: number } {
  if (!opts.expertParallel) return {};
  checkExpertParallel(file, experts, opts.expertParallel.stages);
  return { stages: opts.expertParallel.stages };
}

/** The Llama-shaped rest of an {@link ArchSpec} (RMSNorm eps 1e-5, head_dim^-0.5, embed/norm/lm_head keys, untied by default). */
export function rmsDecoder(
  modelType: string,
  c: LlamaLikeConfig,
  file: string,
  h: { nh: number; nKv: number; hd: number },
  rope: ArchSpec['rope'],
  layers: LayerSpec[],
): ArchSpec {
  return {
    ...archDims(modelType, c.vocab_size, c.hidden_size, h),
    norm: { kind: 'rms', eps: c.rms_norm_eps ?? 1e-5, plusOne: false },
    act: actOf(c.hidden_act ?? 'silu', file, 'hidden_act'),
    scoreScale: { op: 'mul', value: Math.pow(h.hd, -0.5) },
    ...(rope ? { rope } : {}),
    embed: 'model.embed_tokens.weight',
    finalNorm: { weight: 'model.norm.weight', size: c.hidden_size },
    ...((c.tie_word_embeddings ?? false) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The top-k of a router, required and at most the expert count. */
export function checkTopK(file: string, topK: number | undefined, experts: number): number {
  if (!topK) return refuse(file, 'num_experts_per_tok', 'is required');
  if (topK > experts) refuse(file, 'num_experts_per_tok', `(${topK}) exceeds the expert count (${experts})`);
  return topK;
}

/** A gated MLP `<prefix>.{gate,up,down}_proj` without biases (dense layers and shared experts). */
export const gatedMlp = (H: number, prefix: string, inter: number) => ({
  kind: 'gated' as const,
  gate: lin(`${prefix}.gate_proj.weight`, inter, H),
  up: lin(`${prefix}.up_proj.weight`, inter, H),
  down: lin(`${prefix}.down_proj.weight`, H, inter),
});

/** The resolved routing fields of {@link sigmoidGroupMoe} (each family states its own config defaults). */
export interface SigmoidGroupRouting {
  experts: number;
  topK: number | undefined;
  nGroup: number;
  topkGroup: number;
  scale: number;
  normTopK: boolean;
  /** n_shared_experts: the shared MLP has `intermediate · shared` features (none when 0). */
  shared: number;
  intermediate: number;
}

/**
 * The routed-experts block of GLM-4-MoE (`Glm4MoeMoE`) and DeepSeek-V3 (`DeepseekV3MoE`), one
 * routing in both HF files: router `<m>.gate.weight` and `<m>.gate.e_score_correction_bias`,
 * grouped sigmoid routing (see moe-routing.ts), experts in the prepared `moe_weights` layout,
 * plus `<m>.shared_experts`. Group counts that the routing cannot honour are refused.
 */
export function sigmoidGroupMoe(file: string, m: string, H: number, r: SigmoidGroupRouting, opts: ArchOptions): MlpSpec {
  const E = r.experts;
  const topK = checkTopK(file, r.topK, E);
  const { nGroup, topkGroup } = r;
  if (E % nGroup !== 0) refuse(file, 'n_group', `(${nGroup}) does not divide n_routed_experts (${E})`);
  if (nGroup > 1 && E / nGroup < 2) refuse(file, 'n_group', `leaves ${E / nGroup} expert per group; the group score needs the top 2`);
  if (topkGroup > nGroup) refuse(file, 'topk_group', `(${topkGroup}) exceeds n_group (${nGroup})`);
  if (topK > (E / nGroup) * topkGroup) refuse(file, 'num_experts_per_tok', `(${topK}) exceeds the experts of the topk_group groups`);
  return {
    kind: 'moe',
    router: `${m}.gate.weight`,
    routing: 'sigmoid-group',
    group: { correctionBias: `${m}.gate.e_score_correction_bias`, nGroup, topkGroup, scale: r.scale },
    weights: { ...canonicalMoeKeys(m), experts: E, hidden: H, intermediate: r.intermediate, ...expertStages(file, E, opts) },
    topK,
    normTopK: r.normTopK,
    ...(r.shared > 0 ? { shared: gatedMlp(H, `${m}.shared_experts`, r.intermediate * r.shared) } : {}),
  };
}
