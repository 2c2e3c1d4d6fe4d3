/**
 * MoE families with their own attention or routing, each from its HF modeling file
 * (huggingface/transformers `src/transformers/models/<family>/modeling_<family>.py`):
 *
 * - GPT-OSS (`modeling_gpt_oss.py`): q/k/v/o biases, per-head attention sinks, `layer_types`
 *   alternating sliding/full attention, yarn rope, router with bias and softmax over the top-k
 *   logits, experts with biases and the clamped SwiGLU. The checkpoint's MXFP4 experts are
 *   dequantized by prepare into `mlp.moe_weights.{gate,up,down}` (+ `_bias`).
 * - GLM-4-MoE (`modeling_glm4_moe.py`): partial rotary (half-split), q/k/v bias without o bias,
 *   optional per-head q/k norm, `first_k_dense_replace` dense layers, then routed experts with
 *   grouped sigmoid routing plus shared experts. The `num_nextn_predict_layers` MTP layers
 *   (layer index ≥ num_hidden_layers) are not part of the causal LM and are never referenced.
 * - GraniteMoE (`modeling_granitemoe.py`): Granite's attention and four multipliers (from
 *   families/granite.ts) with a sparse MoE in every layer: router `block_sparse_moe.router.layer`,
 *   softmax over the top-k logits, fused experts `input_linear [E, 2I, H]` (gate = first I rows)
 *   and `output_linear [E, H, I]`, which prepare splits into the canonical `moe_weights`.
 */
import { z } from 'zod';
import { archDims, lin, type ArchSpec, type LayerSpec, type MlpSpec } from '../blocks/arch';
import type { ArchOptions, FamilyRow } from './row';
import { actOf, checkExpertParallel, llamaLike, parseWith, refuse, type LlamaLikeConfig } from './config';
import { canonicalMoeKeys } from '../blocks/moe';
import { graniteArch } from './granite';
import { ropeSpec, type RopeScaling } from '../blocks/rope';

const int = z.number().int().positive();
const num = z.number().finite();

/** GptOssConfig's fields (defaults as in `configuration_gpt_oss.py`). */
const gptOssConfig = llamaLike.extend({
  model_type: z.literal('gpt_oss'),
  num_local_experts: int,
  experts_per_token: int.optional(),
  sliding_window: int.nullable().optional(),
  layer_types: z.array(z.string()).optional(),
  swiglu_limit: num.positive().optional(),
  swiglu_alpha: num.positive().optional(),
});

/** Glm4MoeConfig's fields (defaults as in `configuration_glm4_moe.py`). */
const glm4MoeConfig = llamaLike.extend({
  model_type: z.literal('glm4_moe'),
  use_qk_norm: z.boolean().optional(),
  moe_intermediate_size: int,
  n_routed_experts: int,
  n_shared_experts: z.number().int().nonnegative().optional(),
  n_group: int.optional(),
  topk_group: int.optional(),
  norm_topk_prob: z.boolean().optional(),
  routed_scaling_factor: num.positive().optional(),
  first_k_dense_replace: z.number().int().nonnegative().optional(),
  num_nextn_predict_layers: z.number().int().nonnegative().optional(),
});

/** Rope from `rope_scaling` / `rope_parameters` (newer HF configs carry rope_theta inside). */
function ropeOf(c: LlamaLikeConfig, rotaryDim: number, file: string, defaultTheta: number) {
  const params = (c.rope_parameters ?? null) as RopeScaling | null;
  const scaling = (c.rope_scaling ?? params) as RopeScaling | null;
  const theta = c.rope_theta ?? (typeof params?.rope_theta === 'number' ? params.rope_theta : defaultTheta);
  return ropeSpec(theta, rotaryDim, scaling, file, c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {});
}

function heads(c: LlamaLikeConfig, file: string, defaultHeadDim: number) {
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? nh;
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  return { nh, nKv, hd: c.head_dim ?? defaultHeadDim };
}

function attnProj(p: string, H: number, nh: number, nKv: number, hd: number, bias: boolean): LayerSpec['attn'] {
  return {
    kind: 'separate',
    q: lin(`${p}.self_attn.q_proj.weight`, nh * hd, H, bias),
    k: lin(`${p}.self_attn.k_proj.weight`, nKv * hd, H, bias),
    v: lin(`${p}.self_attn.v_proj.weight`, nKv * hd, H, bias),
  };
}

/** `{stages}` for expert-parallel packing (checked against the expert count), else nothing. */
function expertStages(file: string, experts: number, opts: ArchOptions): { stages?: number } {
  if (!opts.expertParallel) return {};
  checkExpertParallel(file, experts, opts.expertParallel.stages);
  return { stages: opts.expertParallel.stages };
}

/** The Llama-shaped rest of an {@link ArchSpec} (RMSNorm eps 1e-5, head_dim^-0.5, embed/norm/lm_head keys, untied by default). */
function rmsDecoder(
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

function checkTopK(file: string, topK: number | undefined, experts: number): number {
  if (!topK) return refuse(file, 'num_experts_per_tok', 'is required');
  if (topK > experts) refuse(file, 'num_experts_per_tok', `(${topK}) exceeds the expert count (${experts})`);
  return topK;
}

const GPT_OSS_DEFAULT_ROPE = {
  rope_type: 'yarn',
  factor: 32.0,
  beta_fast: 32.0,
  beta_slow: 1.0,
  truncate: false,
  original_max_position_embeddings: 4096,
};

/** GPT-OSS → {@link ArchSpec}. */
export function gptOssArch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const c = parseWith(gptOssConfig, raw, file);
  const H = c.hidden_size;
  const { nh, nKv, hd } = heads(c, file, 64);
  const E = c.num_local_experts;
  const topK = checkTopK(file, c.num_experts_per_tok ?? c.experts_per_token, E);
  const I = c.intermediate_size;
  if (c.sliding_window === null && (c.layer_types ?? ['sliding_attention']).includes('sliding_attention')) {
    refuse(file, 'sliding_window', 'is null but layer_types has sliding_attention layers');
  }
  const window = c.sliding_window ?? 128;
  const stages = expertStages(file, E, opts);
  // HF GptOssConfig: layer_types defaults to sliding on even layers, full on odd ones
  const types =
    c.layer_types ?? Array.from({ length: c.num_hidden_layers }, (_, i) => ((i + 1) % 2 ? 'sliding_attention' : 'full_attention'));
  if (types.length !== c.num_hidden_layers) refuse(file, 'layer_types', `has ${types.length} entries for ${c.num_hidden_layers} layers`);
  const bad = types.find((t) => t !== 'sliding_attention' && t !== 'full_attention');
  if (bad !== undefined) refuse(file, 'layer_types', `entry "${bad}" is not implemented (sliding_attention, full_attention)`);
  const bias = c.attention_bias ?? true;
  const layers: LayerSpec[] = types.map((type, i) => {
    const p = `model.layers.${i}`;
    const m = `${p}.mlp`;
    const mlp: MlpSpec = {
      kind: 'moe',
      router: `${m}.router.weight`,
      routerBias: `${m}.router.bias`,
      routing: 'topk-softmax',
      weights: { ...canonicalMoeKeys(m, true), experts: E, hidden: H, intermediate: I, ...stages },
      topK,
      normTopK: false,
      clampedSwiglu: { limit: c.swiglu_limit ?? 7, alpha: c.swiglu_alpha ?? 1.702 },
    };
    return {
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn: attnProj(p, H, nh, nKv, hd, bias),
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd, bias),
      sinks: `${p}.self_attn.sinks`,
      ...(type === 'sliding_attention' ? { slidingWindow: window } : {}),
      mlp,
    };
  });
  // GptOssConfig's default rope_scaling (absent from config.json ≠ null): yarn ×32 over 4096 positions
  const rope = ropeOf(
    c.rope_scaling === undefined && c.rope_parameters === undefined ? { ...c, rope_scaling: GPT_OSS_DEFAULT_ROPE } : c,
    hd,
    file,
    150000,
  );
  return rmsDecoder('gpt_oss', c, file, { nh, nKv, hd }, rope, layers);
}

/** GLM-4-MoE → {@link ArchSpec}. */
export function glm4MoeArch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const c = parseWith(glm4MoeConfig, raw, file);
  const H = c.hidden_size;
  const { nh, nKv, hd } = heads(c, file, Math.floor(H / c.num_attention_heads));
  const partial =
    c.partial_rotary_factor ??
    (typeof c.rope_parameters?.partial_rotary_factor === 'number' ? c.rope_parameters.partial_rotary_factor : 0.5);
  const rotaryDim = Math.floor(hd * partial);
  if (rotaryDim % 2 !== 0 || rotaryDim === 0)
    refuse(file, 'partial_rotary_factor', `gives rotary dim ${rotaryDim} (must be even and positive)`);
  const firstDense = c.first_k_dense_replace ?? 1;
  const routing = {
    experts: c.n_routed_experts,
    topK: c.num_experts_per_tok,
    nGroup: c.n_group ?? 1,
    topkGroup: c.topk_group ?? 1,
    scale: c.routed_scaling_factor ?? 1,
    normTopK: c.norm_topk_prob ?? true,
    shared: c.n_shared_experts ?? 1,
    intermediate: c.moe_intermediate_size,
  };
  const qk = !!c.use_qk_norm;
  const bias = !!c.attention_bias;
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    const m = `${p}.mlp`;
    const mlp: MlpSpec = i < firstDense ? gatedMlp(H, m, c.intermediate_size) : sigmoidGroupMoe(file, m, H, routing, opts);
    layers.push({
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn: attnProj(p, H, nh, nKv, hd, bias),
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd),
      ...(qk
        ? { qNorm: { weight: `${p}.self_attn.q_norm.weight`, size: hd }, kNorm: { weight: `${p}.self_attn.k_norm.weight`, size: hd } }
        : {}),
      mlp,
    });
  }
  return rmsDecoder('glm4_moe', c, file, { nh, nKv, hd }, ropeOf(c, rotaryDim, file, 10000), layers);
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

/** GraniteMoeConfig's MoE fields (num_local_experts 8 and num_experts_per_tok 2 by default). */
const graniteMoeConfig = z.looseObject({
  model_type: z.literal('granitemoe'),
  hidden_size: int,
  intermediate_size: int,
  num_local_experts: int.optional(),
  num_experts_per_tok: int.optional(),
  position_embedding_type: z.string().optional(),
});

/** GraniteMoE → {@link ArchSpec}: Granite's layers with the MLP replaced by the sparse MoE block. */
export function graniteMoeArch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const c = parseWith(graniteMoeConfig, raw, file);
  if (c.position_embedding_type !== undefined && c.position_embedding_type !== 'rope') {
    refuse(file, 'position_embedding_type', `"${c.position_embedding_type}" is not implemented (rope)`);
  }
  const E = c.num_local_experts ?? 8;
  const topK = checkTopK(file, c.num_experts_per_tok ?? 2, E);
  const stages = expertStages(file, E, opts);
  const base = graniteArch({ ...(raw as Record<string, unknown>), model_type: 'granite', mlp_bias: false }, file);
  return {
    ...base,
    modelType: 'granitemoe',
    layers: base.layers.map((l, i) => {
      const m = `model.layers.${i}.block_sparse_moe`;
      const mlp: MlpSpec = {
        kind: 'moe',
        router: `${m}.router.layer.weight`,
        routing: 'topk-softmax',
        weights: { ...canonicalMoeKeys(m), experts: E, hidden: c.hidden_size, intermediate: c.intermediate_size, ...stages },
        topK,
        normTopK: false,
      };
      return { ...l, mlp };
    }),
  };
}

/** The gpt_oss row of the family registry. */
export const gptOssFamily: FamilyRow = {
  modelType: 'gpt_oss',
  hfClass: 'GptOssForCausalLM',
  moe: 'topk-softmax',
  build: gptOssArch,
  test: { fixture: 'gpt_oss_full' },
};

/** The glm4_moe row of the family registry. */
export const glm4MoeFamily: FamilyRow = {
  modelType: 'glm4_moe',
  hfClass: 'Glm4MoeForCausalLM',
  moe: 'sigmoid-group',
  build: glm4MoeArch,
  test: { fixture: 'glm4_moe' },
};

/** The granitemoe row of the family registry. */
export const graniteMoeFamily: FamilyRow = {
  modelType: 'granitemoe',
  hfClass: 'GraniteMoeForCausalLM',
  moe: 'topk-softmax',
  build: graniteMoeArch,
  test: {
    configs: {
      // GraniteMoE: the granite multipliers, 5 experts top-2, GQA, untied
      granitemoe: {
        model_type: 'granitemoe',
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 24,
        num_hidden_layers: 2,
        num_attention_heads: 6,
        num_key_value_heads: 2,
        rms_norm_eps: 1e-6,
        rope_theta: 10000.0,
        embedding_multiplier: 12.0,
        attention_multiplier: 0.05,
        residual_multiplier: 0.22,
        logits_scaling: 8.0,
        num_local_experts: 5,
        num_experts_per_tok: 2,
        tie_word_embeddings: false,
        hidden_act: 'silu',
      },
    },
  },
};
