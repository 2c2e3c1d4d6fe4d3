/**
 * Phi (phi-1, phi-1.5, phi-2; transformers `models/phi/modular_phi.py`, read at b39782d, whose
 * generated `modeling_phi.py` PhiForCausalLM was read at 0faeaf3; config at 90f2781):
 *
 * - One `input_layernorm` feeds attention and MLP in parallel: h + attn(ln(h)) + mlp(ln(h)),
 *   no post-attention norm (PhiDecoderLayer).
 * - q/k/v with bias, `self_attn.dense` (with bias) as the output projection; GQA per
 *   `num_key_value_heads`.
 * - `qk_layernorm`: LayerNorm with bias over each head's head_dim, after the head split and
 *   before rope (PhiAttention.forward: `.view(hidden_shape)` then `q_layernorm`).
 * - Partial rotary: rotate_half on the first int(head_dim · partial_rotary_factor) dims.
 * - LayerNorm with bias (`layer_norm_eps`), fc1 → `gelu_new` → fc2 with biases,
 *   `final_layernorm`, `lm_head` with a bias (tied weight when `tie_word_embeddings`, bias kept).
 * - q·kᵀ in float32: "Queries and keys upcast to fp32 is required by Phi-2 to avoid overflow"
 *   (modeling_phi.py at 0faeaf3); a float32 graph is unchanged by it.
 * The dropout fields (resid_pdrop, embd_pdrop, attention_dropout) do nothing at inference.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec, type LinearSpec, type NormSpec } from '../blocks/arch';
import { actOf, headDimOf, optionalDecoderFields, parseWith, partialRope, ropeSource } from './config';
import type { FamilyRow } from './row';

const phiConfig = z.looseObject({
  model_type: z.literal('phi'),
  ...optionalDecoderFields,
  layer_norm_eps: z.number().finite().positive().optional(),
  partial_rotary_factor: z.number().finite().positive().max(1).optional(),
  qk_layernorm: z.boolean().optional(),
});

/** Phi's architecture (PhiConfig defaults where a field is absent). */
export function phiArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(phiConfig, raw, file);
  const H = c.hidden_size ?? 2048;
  const nh = c.num_attention_heads ?? 32;
  const nKv = c.num_key_value_heads ?? nh;
  const I = c.intermediate_size ?? 8192;
  // the qk LayerNorms are sized hidden_size // heads, so another head_dim would not load in HF
  const hd = headDimOf(file, H, nh, nKv, c.head_dim);
  const { theta, scaling } = ropeSource(c, 10000);
  const rope = partialRope(file, hd, c.partial_rotary_factor ?? 0.5, theta, scaling, c.max_position_embeddings);
  const biased = (name: string, out: number, inp: number): LinearSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, out, in: inp });
  const ln = (name: string, size: number): NormSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, size });
  const qk = !!c.qk_layernorm;
  const layers: LayerSpec[] = [];
  for (let i = 0; i < (c.num_hidden_layers ?? 24); i++) {
    const p = `model.layers.${i}`;
    const a = `${p}.self_attn`;
    layers.push({
      norm1: ln(`${p}.input_layernorm`, H),
      parallel: true,
      attn: {
        kind: 'separate',
        q: biased(`${a}.q_proj`, nh * hd, H),
        k: biased(`${a}.k_proj`, nKv * hd, H),
        v: biased(`${a}.v_proj`, nKv * hd, H),
      },
      ...(qk ? { qNorm: ln(`${a}.q_layernorm`, hd), kNorm: ln(`${a}.k_layernorm`, hd), qkNormOver: 'head' as const } : {}),
      o: biased(`${a}.dense`, H, nh * hd),
      mlp: { kind: 'plain', fc: biased(`${p}.mlp.fc1`, I, H), proj: biased(`${p}.mlp.fc2`, H, I) },
    });
  }
  return {
    ...archDims('phi', c.vocab_size ?? 51200, H, { nh, nKv, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_eps ?? 1e-5, plusOne: false },
    act: actOf(c.hidden_act ?? 'gelu_new', file, 'hidden_act'),
    scoresInFloat32: true,
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    embed: 'model.embed_tokens.weight',
    finalNorm: ln('model.final_layernorm', H),
    ...((c.tie_word_embeddings ?? false) ? {} : { lmHead: 'lm_head.weight' }),
    lmHeadBias: 'lm_head.bias',
    layers,
  };
}

/** The phi row of the family registry. */
export const phiFamily: FamilyRow = {
  modelType: 'phi',
  hfClass: 'PhiForCausalLM',
  moe: 'none',
  build: phiArch,
  test: {
    fixture: 'phi',
    configs: {
      // phi-2's shape of config at another head count: MHA, no qk_layernorm, partial rotary 0.5
      phi: {
        model_type: 'phi',
        vocab_size: 96,
        hidden_size: 64,
        intermediate_size: 96,
        num_hidden_layers: 2,
        num_attention_heads: 8,
        num_key_value_heads: 8,
        hidden_act: 'gelu_new',
        layer_norm_eps: 1e-5,
        partial_rotary_factor: 0.5,
        qk_layernorm: false,
        rope_theta: 10000.0,
        rope_scaling: null,
        resid_pdrop: 0.1,
        embd_pdrop: 0.1,
        tie_word_embeddings: false,
        torch_dtype: 'float16',
      },
      // GQA, qk_layernorm, rotary dim 6 of head_dim 12, tied head with its own bias, linear rope scaling
      'phi-qk-gqa': {
        model_type: 'phi',
        vocab_size: 80,
        hidden_size: 48,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        hidden_act: 'gelu_new',
        layer_norm_eps: 1e-5,
        partial_rotary_factor: 0.5,
        qk_layernorm: true,
        rope_theta: 5000.0,
        rope_scaling: { rope_type: 'linear', factor: 2.0 },
        tie_word_embeddings: true,
      },
    },
  },
};
