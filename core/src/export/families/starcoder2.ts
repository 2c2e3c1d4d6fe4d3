/**
 * StarCoder2 (transformers `models/starcoder2/modular_starcoder2.py`, read at ae005ce, built on
 * Mistral's attention and decoder layer; config at 77efc55):
 *
 * - Mistral's sequential block with LayerNorm (with bias, `norm_epsilon`) as input_layernorm,
 *   post_attention_layernorm and the final `model.norm`.
 * - GQA q/k/v/o and the MLP `c_fc` → act → `c_proj`, every one with a bias when `use_bias`
 *   (default true).
 * - rope on the whole head (`rope_theta`, rope_scaling as the Llama family reads it), scores ×
 *   head_dim^-0.5.
 * - `sliding_window`: query i sees key j when i − W < j ≤ i (Mistral's mask), in prefill and
 *   across the prefill/decode boundary of the KV cache (attention.ts builds it from positions).
 * - `gelu_pytorch_tanh` (hidden_act); head tied to the embeddings unless tie_word_embeddings is
 *   false (PretrainedConfig's default: tied); no lm_head bias (MistralForCausalLM).
 * The dropout fields (attention_dropout, residual_dropout, embedding_dropout) do nothing at
 * inference; `norm_type` / `mlp_type` are not read by HF's Starcoder2 either.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec, type LinearSpec, type NormSpec } from '../blocks/arch';
import { actOf, optionalDecoderFields, parseWith, refuse, ropeSource } from './config';
import type { FamilyRow } from './row';
import { ropeSpec } from '../blocks/rope';

const starcoder2Config = z.looseObject({
  model_type: z.literal('starcoder2'),
  ...optionalDecoderFields,
  norm_epsilon: z.number().finite().positive().optional(),
  sliding_window: z.number().int().positive().nullable().optional(),
  use_bias: z.boolean().optional(),
});

/** StarCoder2's architecture (Starcoder2Config defaults where a field is absent). */
export function starcoder2Arch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(starcoder2Config, raw, file);
  const H = c.hidden_size ?? 3072;
  const nh = c.num_attention_heads ?? 24;
  const nKv = c.num_key_value_heads ?? 2;
  const I = c.intermediate_size ?? 12288;
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  if (c.head_dim == null && H % nh !== 0)
    refuse(file, 'hidden_size', `(${H}) is not divisible by num_attention_heads (${nh}) and head_dim is not given`);
  // MistralAttention: getattr(config, "head_dim", None) or hidden_size // num_attention_heads
  const hd = c.head_dim ?? H / nh;
  const { theta, scaling } = ropeSource(c, 10000);
  const rope = ropeSpec(theta, hd, scaling, file, {
    ...(c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {}),
  });
  if (rope.long) refuse(file, 'rope_scaling', 'type longrope is only implemented for phi3');
  const bias = c.use_bias ?? true;
  const lin = (name: string, out: number, inp: number): LinearSpec => ({
    weight: `${name}.weight`,
    out,
    in: inp,
    ...(bias ? { bias: `${name}.bias` } : {}),
  });
  const ln = (name: string): NormSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < (c.num_hidden_layers ?? 30); i++) {
    const p = `model.layers.${i}`;
    const a = `${p}.self_attn`;
    layers.push({
      norm1: ln(`${p}.input_layernorm`),
      norm2: ln(`${p}.post_attention_layernorm`),
      attn: { kind: 'separate', q: lin(`${a}.q_proj`, nh * hd, H), k: lin(`${a}.k_proj`, nKv * hd, H), v: lin(`${a}.v_proj`, nKv * hd, H) },
      o: lin(`${a}.o_proj`, H, nh * hd),
      mlp: { kind: 'plain', fc: lin(`${p}.mlp.c_fc`, I, H), proj: lin(`${p}.mlp.c_proj`, H, I) },
    });
  }
  return {
    ...archDims('starcoder2', c.vocab_size ?? 49152, H, { nh, nKv, hd }),
    norm: { kind: 'layer', eps: c.norm_epsilon ?? 1e-5, plusOne: false },
    act: actOf(c.hidden_act ?? 'gelu_pytorch_tanh', file, 'hidden_act'),
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    ...(c.sliding_window != null ? { slidingWindow: c.sliding_window } : {}),
    embed: 'model.embed_tokens.weight',
    finalNorm: ln('model.norm'),
    ...((c.tie_word_embeddings ?? true) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The starcoder2 row of the family registry. */
export const starcoder2Family: FamilyRow = {
  modelType: 'starcoder2',
  hfClass: 'Starcoder2ForCausalLM',
  moe: 'none',
  build: starcoder2Arch,
  test: {
    fixture: 'starcoder2',
    configs: {
      // GQA with biases; a window of 3 is shorter than the 7-token prompt the tests prefill
      starcoder2: {
        model_type: 'starcoder2',
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 80,
        num_hidden_layers: 2,
        num_attention_heads: 6,
        num_key_value_heads: 2,
        hidden_act: 'gelu_pytorch_tanh',
        norm_epsilon: 1e-5,
        rope_theta: 100000.0,
        sliding_window: 3,
        use_bias: true,
        attention_dropout: 0.1,
        residual_dropout: 0.1,
        embedding_dropout: 0.1,
      },
      // no biases, MQA, no window, untied head
      'starcoder2-nobias': {
        model_type: 'starcoder2',
        vocab_size: 80,
        hidden_size: 32,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 1,
        norm_epsilon: 1e-6,
        sliding_window: null,
        use_bias: false,
        tie_word_embeddings: false,
      },
    },
  },
};
