/**
 * StableLM (stablelm-3b-4e1t, stablelm-2; transformers `models/stablelm/modeling_stablelm.py`
 * read at 00dcc6dda6f6d8e69541a6b51f97986a80242367, `configuration_stablelm.py` at
 * 05cd1ec14dbe16127778060fb68c34105873015c):
 *
 * - LayerNorm with bias (`layer_norm_eps`, default 1e-5) for `input_layernorm`,
 *   `post_attention_layernorm` and the final `model.norm`.
 * - q/k/v with a bias when `use_qkv_bias`, `o_proj` never; GQA per `num_key_value_heads`;
 *   head_dim is hidden_size / num_attention_heads (HF raises otherwise).
 * - Partial rotary: rotate_half on the first int(head_dim · partial_rotary_factor) dims
 *   (default 0.25), the rest passed through; scores ÷ √head_dim.
 * - Mistral's gated MLP (gate/up/down, no bias, `hidden_act` default silu).
 * - `use_parallel_residual`: h + attn(ln1(h)) + mlp(ln1(h)) and no `post_attention_layernorm`
 *   (GPTNeoXLayer's form); else the sequential pre-norm block.
 * - `lm_head` without bias, tied to the embedding when `tie_word_embeddings` (default false).
 * - `qk_layernorm` is refused: StableLmLayerNormPerHead holds one bias-free LayerNorm per head
 *   (`q_layernorm.norms.{h}.weight`), a distinct weight per head that the shared per-head norm
 *   of the graph blocks (Qwen3, Phi) does not express.
 * The dropout fields do nothing at inference.
 */
import { z } from 'zod';
import { archDims, lin, type ArchSpec, type LayerSpec, type NormSpec } from '../blocks/arch';
import { actOf, headDimOf, optionalDecoderFields, parseWith, partialRope, refuse, ropeSource } from './config';
import type { FamilyRow } from './row';

const stablelmConfig = z.looseObject({
  model_type: z.literal('stablelm'),
  ...optionalDecoderFields,
  layer_norm_eps: z.number().finite().positive().optional(),
  partial_rotary_factor: z.number().finite().positive().max(1).optional(),
  use_qkv_bias: z.boolean().optional(),
  qk_layernorm: z.boolean().optional(),
  use_parallel_residual: z.boolean().optional(),
});

/** StableLM's architecture (StableLmConfig defaults where a field is absent). */
export function stablelmArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(stablelmConfig, raw, file);
  const H = c.hidden_size ?? 2560;
  const nh = c.num_attention_heads ?? 32;
  const nKv = c.num_key_value_heads ?? 32;
  const I = c.intermediate_size ?? 6912;
  const hd = headDimOf(file, H, nh, nKv, c.head_dim, ', which StableLM always uses');
  if (c.qk_layernorm)
    refuse(file, 'qk_layernorm', 'is true (StableLM normalizes each head with its own LayerNorm weight, which is not implemented)');
  const { theta, scaling } = ropeSource(c, 10000);
  const rope = partialRope(file, hd, c.partial_rotary_factor ?? 0.25, theta, scaling, c.max_position_embeddings);
  const ln = (name: string): NormSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const qkvBias = !!c.use_qkv_bias;
  const parallel = !!c.use_parallel_residual;
  const layers: LayerSpec[] = [];
  for (let i = 0; i < (c.num_hidden_layers ?? 32); i++) {
    const p = `model.layers.${i}`;
    const a = `${p}.self_attn`;
    layers.push({
      norm1: ln(`${p}.input_layernorm`),
      // parallel: the MLP reads input_layernorm's output (no post_attention_layernorm exists)
      ...(parallel ? { parallel: true } : { norm2: ln(`${p}.post_attention_layernorm`) }),
      attn: {
        kind: 'separate',
        q: lin(`${a}.q_proj.weight`, nh * hd, H, qkvBias),
        k: lin(`${a}.k_proj.weight`, nKv * hd, H, qkvBias),
        v: lin(`${a}.v_proj.weight`, nKv * hd, H, qkvBias),
      },
      o: lin(`${a}.o_proj.weight`, H, nh * hd),
      mlp: {
        kind: 'gated',
        gate: lin(`${p}.mlp.gate_proj.weight`, I, H),
        up: lin(`${p}.mlp.up_proj.weight`, I, H),
        down: lin(`${p}.mlp.down_proj.weight`, H, I),
      },
    });
  }
  return {
    ...archDims('stablelm', c.vocab_size ?? 50304, H, { nh, nKv, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_eps ?? 1e-5, plusOne: false },
    act: actOf(c.hidden_act ?? 'silu', file, 'hidden_act'),
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    embed: 'model.embed_tokens.weight',
    finalNorm: ln('model.norm'),
    ...((c.tie_word_embeddings ?? false) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The stablelm row of the family registry. */
export const stablelmFamily: FamilyRow = {
  modelType: 'stablelm',
  hfClass: 'StableLmForCausalLM',
  moe: 'none',
  build: stablelmArch,
  test: {
    configs: {
      // stablelm-3b-4e1t's shape of config, small: partial rotary 0.25 (rotary dim 4 of 16), MHA,
      // no qkv bias, sequential residual, untied head
      stablelm: {
        model_type: 'stablelm',
        architectures: ['StableLmForCausalLM'],
        vocab_size: 96,
        hidden_size: 64,
        intermediate_size: 96,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 4,
        hidden_act: 'silu',
        layer_norm_eps: 1e-5,
        partial_rotary_factor: 0.25,
        rope_theta: 10000,
        rope_scaling: null,
        use_qkv_bias: false,
        qk_layernorm: false,
        use_parallel_residual: false,
        max_position_embeddings: 4096,
        tie_word_embeddings: false,
      },
      // stablelm-2's switches: qkv bias, parallel residual, GQA, tied head, rotary dim 6 of 12
      'stablelm-parallel-bias': {
        model_type: 'stablelm',
        vocab_size: 80,
        hidden_size: 48,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        hidden_act: 'silu',
        layer_norm_eps: 1e-5,
        partial_rotary_factor: 0.5,
        rope_theta: 5000,
        use_qkv_bias: true,
        use_parallel_residual: true,
        tie_word_embeddings: true,
      },
    },
  },
};
