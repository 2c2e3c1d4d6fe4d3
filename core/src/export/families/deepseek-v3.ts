/**
 * DeepSeek-V3 (and Kimi-K2, `model_type: kimi_k2` with architecture `DeepseekV3ForCausalLM`) →
 * {@link ArchSpec}, from HF transformers `src/transformers/models/deepseek_v3/`
 * (`modeling_deepseek_v3.py`, `configuration_deepseek_v3.py`; defaults as DeepseekV3Config's):
 *
 * - Multi-head Latent Attention ({@link MlaSpec}, attention-mla.ts), rope on the
 *   qk_rope_head_dim dims only (`head_dim = qk_rope_head_dim` in the config class), interleaved
 *   when `rope_interleave` (default true);
 * - softmax scale `qk_head_dim^-0.5`, times mscale(factor, mscale_all_dim)² when rope_scaling has
 *   a non-zero `mscale_all_dim` (yarn's mscale / mscale_all_dim ratio goes on cos and sin, rope.ts);
 * - dense layers below `first_k_dense_replace`, then routed experts with GLM-4-MoE's grouped
 *   sigmoid routing plus shared experts (moe-common.ts {@link sigmoidGroupMoe});
 * - the `num_nextn_predict_layers` MTP layers (index ≥ num_hidden_layers) are never referenced.
 *
 * `mlaCache: 'compressed'` selects QEfficient's compressed cache: each layer's `states`
 * (graph-interface.ts) are `compressed_kv` / `k_pe` instead of `past_key` / `past_value`.
 */
import { z } from 'zod';
import { archDims, lin, type ArchSpec, type LayerSpec, type MlaSpec } from '../blocks/arch';
import { actOf, parseWith, refuse, ropeSource } from './config';
import type { ArchOptions, FamilyRow } from './row';
import { gatedMlp, sigmoidGroupMoe } from './moe-common';
import type { StateDecl } from '../../artifacts/graph-interface';
import { ropeSpec } from '../blocks/rope';

const int = z.number().int().positive();
const count = z.number().int().nonnegative();
const num = z.number().finite();

/** DeepseekV3Config's fields. */
const deepseekV3Config = z.looseObject({
  model_type: z.enum(['deepseek_v3', 'kimi_k2']),
  vocab_size: int,
  hidden_size: int,
  intermediate_size: int,
  moe_intermediate_size: int.optional(),
  num_hidden_layers: int,
  num_attention_heads: int,
  num_key_value_heads: int.nullable().optional(),
  n_shared_experts: count.nullable().optional(),
  n_routed_experts: int.optional(),
  routed_scaling_factor: num.positive().optional(),
  kv_lora_rank: int.optional(),
  q_lora_rank: int.nullable().optional(),
  qk_rope_head_dim: int.optional(),
  v_head_dim: int.optional(),
  qk_nope_head_dim: int.optional(),
  n_group: int.nullable().optional(),
  topk_group: int.nullable().optional(),
  num_experts_per_tok: int.nullable().optional(),
  first_k_dense_replace: count.optional(),
  norm_topk_prob: z.boolean().optional(),
  hidden_act: z.string().optional(),
  max_position_embeddings: int.optional(),
  rms_norm_eps: num.positive().optional(),
  tie_word_embeddings: z.boolean().optional(),
  rope_theta: num.positive().optional(),
  rope_scaling: z.record(z.string(), z.unknown()).nullable().optional(),
  rope_parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  rope_interleave: z.boolean().optional(),
  attention_bias: z.boolean().optional(),
  // fields of the original remote code that HF's port does not read; values that would change its math are refused
  scoring_func: z.string().optional(),
  topk_method: z.string().optional(),
  moe_layer_freq: int.optional(),
  num_nextn_predict_layers: count.optional(),
});

/** HF `yarn_get_mscale`. */
function yarnMscale(scale: number, mscale: number): number {
  return scale <= 1 ? 1 : 0.1 * mscale * Math.log(scale) + 1;
}

/** DeepSeek-V3 / Kimi-K2 → {@link ArchSpec}. */
export function deepseekV3Arch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const c = parseWith(deepseekV3Config, raw, file);
  if (c.scoring_func !== undefined && c.scoring_func !== 'sigmoid')
    refuse(file, 'scoring_func', `"${c.scoring_func}" is not implemented (DeepSeek-V3 routes by sigmoid)`);
  if (c.topk_method !== undefined && c.topk_method !== 'noaux_tc')
    refuse(file, 'topk_method', `"${c.topk_method}" is not implemented (noaux_tc)`);
  if (c.moe_layer_freq !== undefined && c.moe_layer_freq !== 1)
    refuse(file, 'moe_layer_freq', `(${c.moe_layer_freq}) is not implemented (1)`);
  const H = c.hidden_size;
  const nh = c.num_attention_heads;
  // HF's MLA builds keys and values for every query head; repeat_kv with fewer kv heads would not fit
  if (c.num_key_value_heads != null && c.num_key_value_heads !== nh)
    refuse(
      file,
      'num_key_value_heads',
      `(${c.num_key_value_heads}) differs from num_attention_heads (${nh}); MLA has one key per query head`,
    );
  const nope = c.qk_nope_head_dim ?? 128;
  const ropeDim = c.qk_rope_head_dim ?? 64;
  const vDim = c.v_head_dim ?? 128;
  const kvRank = c.kv_lora_rank ?? 512;
  const qRank = c.q_lora_rank === undefined ? 1536 : c.q_lora_rank;
  if (ropeDim % 2 !== 0) refuse(file, 'qk_rope_head_dim', `(${ropeDim}) must be even`);
  const qk = nope + ropeDim;
  const bias = !!c.attention_bias;
  const eps = c.rms_norm_eps ?? 1e-6;

  const { theta, scaling } = ropeSource(c, 10000);
  const max = c.max_position_embeddings ?? 4096;
  const rope = ropeSpec(theta, ropeDim, scaling, file, { max });
  let scale = Math.pow(qk, -0.5);
  const mscaleAll = scaling?.mscale_all_dim;
  if (mscaleAll !== undefined && mscaleAll !== null && mscaleAll !== 0) {
    const factor = scaling?.factor;
    if (typeof mscaleAll !== 'number' || typeof factor !== 'number')
      refuse(file, 'rope_scaling', 'has "mscale_all_dim" but no numeric "factor" (the softmax scale needs both)');
    scale *= yarnMscale(factor, mscaleAll) ** 2;
  }

  const routing = {
    experts: c.n_routed_experts ?? 256,
    topK: c.num_experts_per_tok ?? 8,
    nGroup: c.n_group ?? 8,
    topkGroup: c.topk_group ?? 4,
    scale: c.routed_scaling_factor ?? 2.5,
    normTopK: c.norm_topk_prob ?? true,
    shared: c.n_shared_experts ?? 1,
    intermediate: c.moe_intermediate_size ?? 2048,
  };
  const firstDense = c.first_k_dense_replace ?? 3;
  const compressed = opts.mlaCache === 'compressed';
  // QEfficient's `get_dummy_pkv_cache` shapes of the two forms
  const states: StateDecl[] = compressed
    ? [
        { kind: 'compressed_kv', dims: ['batch', 1, 'ctx', kvRank] },
        { kind: 'k_pe', dims: ['batch', 1, 'ctx', ropeDim] },
      ]
    : [
        { kind: 'past_key', dims: ['batch', nh, 'ctx', qk] },
        { kind: 'past_value', dims: ['batch', nh, 'ctx', vDim] },
      ];
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    const a = `${p}.self_attn`;
    const attn: MlaSpec = {
      kind: 'mla',
      ...(qRank === null
        ? { q: lin(`${a}.q_proj.weight`, nh * qk, H) }
        : {
            qA: lin(`${a}.q_a_proj.weight`, qRank, H, bias),
            qANorm: { weight: `${a}.q_a_layernorm.weight`, size: qRank },
            qB: lin(`${a}.q_b_proj.weight`, nh * qk, qRank),
          }),
      kvA: lin(`${a}.kv_a_proj_with_mqa.weight`, kvRank + ropeDim, H, bias),
      kvANorm: { weight: `${a}.kv_a_layernorm.weight`, size: kvRank },
      kvB: lin(`${a}.kv_b_proj.weight`, nh * (nope + vDim), kvRank),
      kvLoraRank: kvRank,
      nope,
      rope: ropeDim,
      v: vDim,
      interleave: c.rope_interleave ?? true,
      cache: compressed ? 'compressed' : 'per-head',
    };
    const m = `${p}.mlp`;
    layers.push({
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn,
      o: lin(`${a}.o_proj.weight`, H, nh * vDim, bias),
      states,
      mlp: i < firstDense ? gatedMlp(H, m, c.intermediate_size) : sigmoidGroupMoe(file, m, H, routing, opts),
    });
  }
  return {
    ...archDims(c.model_type, c.vocab_size, H, { nh, nKv: nh, hd: qk }),
    norm: { kind: 'rms', eps, plusOne: false },
    act: actOf(c.hidden_act ?? 'silu', file, 'hidden_act'),
    scoreScale: { op: 'mul', value: scale },
    rope,
    embed: 'model.embed_tokens.weight',
    finalNorm: { weight: 'model.norm.weight', size: H },
    ...((c.tie_word_embeddings ?? false) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The deepseek_v3 row of the family registry (`kimi_k2`: Kimi-K2's model_type, the same DeepseekV3ForCausalLM). */
export const deepseekV3Family: FamilyRow = {
  modelType: 'deepseek_v3',
  aliases: ['kimi_k2'],
  hfClass: 'DeepseekV3ForCausalLM',
  moe: 'sigmoid-group',
  mla: true,
  build: deepseekV3Arch,
  test: {
    fixture: 'deepseek_v3',
    configs: {
      // Kimi-K2's shape in small (model_type kimi_k2, one expert group, rope_theta 50000, yarn ×32
      // with beta_fast 1, routed_scaling_factor 2.827; kimi-k2.json in ../shared/configs)
      kimi_k2: {
        model_type: 'kimi_k2',
        architectures: ['DeepseekV3ForCausalLM'],
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 64,
        moe_intermediate_size: 16,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 4,
        n_routed_experts: 8,
        n_shared_experts: 1,
        num_experts_per_tok: 2,
        n_group: 1,
        topk_group: 1,
        routed_scaling_factor: 2.827,
        norm_topk_prob: true,
        first_k_dense_replace: 1,
        kv_lora_rank: 32,
        q_lora_rank: 24,
        qk_nope_head_dim: 8,
        qk_rope_head_dim: 8,
        v_head_dim: 12,
        rms_norm_eps: 1e-6,
        max_position_embeddings: 131072,
        rope_theta: 50000,
        rope_scaling: {
          type: 'yarn',
          factor: 32,
          original_max_position_embeddings: 4096,
          beta_fast: 1,
          beta_slow: 1,
          mscale: 1,
          mscale_all_dim: 1,
        },
        num_nextn_predict_layers: 0,
        tie_word_embeddings: false,
      },
    },
  },
};
