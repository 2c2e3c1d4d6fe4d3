/**
 * GLM-4-MoE (`modeling_glm4_moe.py`, huggingface/transformers `src/transformers/models/glm4_moe/`):
 * partial rotary (half-split), q/k/v bias without o bias, optional per-head q/k norm,
 * `first_k_dense_replace` dense layers, then routed experts with grouped sigmoid routing plus
 * shared experts. The `num_nextn_predict_layers` MTP layers (layer index ≥ num_hidden_layers)
 * are not part of the causal LM and are never referenced.
 */
import { z } from 'zod';
import { lin, type ArchSpec, type LayerSpec, type MlpSpec } from '../blocks/arch';
import type { ArchOptions, FamilyRow } from './row';
import { llamaLike, parseWith, refuse } from './config';
import { attnProj, gatedMlp, heads, rmsDecoder, ropeOf, sigmoidGroupMoe } from './moe-common';

const int = z.number().int().positive();
const num = z.number().finite();

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

/** The glm4_moe row of the family registry. */
export const glm4MoeFamily: FamilyRow = {
  modelType: 'glm4_moe',
  hfClass: 'Glm4MoeForCausalLM',
  moe: 'sigmoid-group',
  build: glm4MoeArch,
  test: { fixture: 'glm4_moe' },
};
