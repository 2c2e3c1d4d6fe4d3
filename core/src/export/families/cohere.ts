/**
 * Cohere (Command-R; transformers `models/cohere/modeling_cohere.py` read at
 * dbb5a504d1ba0043124f7951c0ee3473be1dbcfc, `configuration_cohere.py` at
 * 032b32abfb07ba36e8fc1a8e5251514523edce34, whose defaults count here: rope_theta 10000, tied
 * embeddings, logit_scale 0.0625):
 *
 * - CohereLayerNorm: mean-centred LayerNorm with a weight and no bias (`layer_norm_eps`,
 *   default 1e-5) for `input_layernorm` and the final `model.norm`.
 * - One norm per layer and a parallel block: h + attn(ln(h)) + mlp(ln(h)).
 * - q/k/v/o with a bias each when `attention_bias`; GQA per `num_key_value_heads` (default:
 *   num_attention_heads); head_dim is hidden_size / num_attention_heads (HF raises otherwise).
 * - Rotary over adjacent pairs (`repeat_interleave` of the frequencies, its own `rotate_half`
 *   over x[..., ::2] / x[..., 1::2]) on the whole head; scores ÷ √head_dim.
 * - Llama's gated MLP (gate/up/down, no bias, `hidden_act` default silu).
 * - logits = lm_head(h) × `logit_scale`; lm_head tied to the embedding unless
 *   `tie_word_embeddings` is false.
 * - `use_qk_norm` is refused: its q_norm / k_norm hold a LayerNorm weight per head
 *   (`[heads, head_dim]`), which the graph's shared per-head norm does not express.
 */
import { z } from 'zod';
import { archDims, lin, type ArchSpec, type LayerSpec, type NormSpec } from '../blocks/arch';
import { ropeSpec } from '../blocks/rope';
import { actOf, headDimOf, optionalDecoderFields, parseWith, refuse, ropeSource } from './config';
import type { FamilyRow } from './row';

const cohereConfig = z.looseObject({
  model_type: z.literal('cohere'),
  ...optionalDecoderFields,
  layer_norm_eps: z.number().finite().positive().optional(),
  logit_scale: z.number().finite().optional(),
  attention_bias: z.boolean().optional(),
  use_qk_norm: z.boolean().optional(),
});

/** Cohere's architecture (CohereConfig defaults where a field is absent). */
export function cohereArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(cohereConfig, raw, file);
  if (c.use_qk_norm)
    refuse(file, 'use_qk_norm', 'is true (Cohere normalizes q and k with a LayerNorm weight per head, which is not implemented)');
  const H = c.hidden_size ?? 8192;
  const nh = c.num_attention_heads ?? 64;
  const nKv = c.num_key_value_heads ?? nh;
  const I = c.intermediate_size ?? 22528;
  const hd = headDimOf(file, H, nh, nKv, c.head_dim, ', which Cohere always uses');
  const { theta, scaling } = ropeSource(c, 10000);
  const rope = ropeSpec(theta, hd, scaling, file, { max: c.max_position_embeddings ?? 8192 });
  if (rope.long) refuse(file, 'rope_scaling', 'type longrope is only implemented for phi3');
  const ln = (name: string): NormSpec => ({ weight: `${name}.weight`, size: H });
  const bias = !!c.attention_bias;
  const layers: LayerSpec[] = [];
  for (let i = 0; i < (c.num_hidden_layers ?? 40); i++) {
    const p = `model.layers.${i}`;
    const a = `${p}.self_attn`;
    layers.push({
      norm1: ln(`${p}.input_layernorm`),
      parallel: true,
      attn: {
        kind: 'separate',
        q: lin(`${a}.q_proj.weight`, nh * hd, H, bias),
        k: lin(`${a}.k_proj.weight`, nKv * hd, H, bias),
        v: lin(`${a}.v_proj.weight`, nKv * hd, H, bias),
      },
      o: lin(`${a}.o_proj.weight`, H, nh * hd, bias),
      mlp: {
        kind: 'gated',
        gate: lin(`${p}.mlp.gate_proj.weight`, I, H),
        up: lin(`${p}.mlp.up_proj.weight`, I, H),
        down: lin(`${p}.mlp.down_proj.weight`, H, I),
      },
    });
  }
  return {
    ...archDims('cohere', c.vocab_size ?? 256000, H, { nh, nKv, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_eps ?? 1e-5, plusOne: false },
    act: actOf(c.hidden_act ?? 'silu', file, 'hidden_act'),
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope: { ...rope, interleaved: true },
    embed: 'model.embed_tokens.weight',
    finalNorm: ln('model.norm'),
    ...((c.tie_word_embeddings ?? true) ? {} : { lmHead: 'lm_head.weight' }),
    logitsScale: c.logit_scale ?? 0.0625,
    layers,
  };
}

/** The cohere row of the family registry. */
export const cohereFamily: FamilyRow = {
  modelType: 'cohere',
  hfClass: 'CohereForCausalLM',
  moe: 'none',
  build: cohereArch,
  test: {
    configs: {
      // c4ai-command-r-v01's shape of config, small: MHA, no biases, tied head, theta 8e6
      cohere: {
        model_type: 'cohere',
        architectures: ['CohereForCausalLM'],
        vocab_size: 96,
        hidden_size: 64,
        intermediate_size: 96,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 4,
        hidden_act: 'silu',
        layer_norm_eps: 1e-5,
        logit_scale: 0.5,
        rope_theta: 8000000.0,
        rope_scaling: null,
        attention_bias: false,
        use_qk_norm: false,
        max_position_embeddings: 8192,
        tie_word_embeddings: true,
      },
      // the other switches: GQA, q/k/v/o biases, untied head, the default theta and logit_scale
      'cohere-gqa-bias': {
        model_type: 'cohere',
        vocab_size: 80,
        hidden_size: 48,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        attention_bias: true,
        tie_word_embeddings: false,
      },
    },
  },
};
