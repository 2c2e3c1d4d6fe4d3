/**
 * OLMo-2 (transformers `models/olmo2/modeling_olmo2.py`, read at 000c33f): no input norm — the
 * attention and MLP outputs are RMS-normalized (post_attention_layernorm,
 * post_feedforward_layernorm) before each residual add; q_norm / k_norm run over the whole
 * q / k projection before the head split; Olmo2RMSNorm multiplies by the weight in float32
 * before casting back.
 */
import type { ArchSpec } from '../blocks/arch';
import { llamaLike, parseWith, refuse } from './config';
import { LLAMA_QUIRKS, llamaLikeArch } from './llama';
import type { FamilyRow } from './row';

/** OLMo-2's architecture (Olmo2Config defaults: rms_norm_eps 1e-5, untied). */
export function olmo2Arch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(llamaLike, raw, file);
  if (c.mlp_bias) refuse(file, 'mlp_bias', 'is true but OLMo-2 MLPs have no bias');
  const base = llamaLikeArch('llama', LLAMA_QUIRKS, { ...c, rms_norm_eps: c.rms_norm_eps ?? 1e-5 }, file);
  const { nHeads, nKv, headDim } = base;
  return {
    ...base,
    modelType: 'olmo2',
    norm: { ...base.norm, weightInFloat32: true },
    layers: base.layers.map(({ norm1: _n1, norm2: _n2, ...l }, i) => {
      const p = `model.layers.${i}`;
      return {
        ...l,
        postAttnNorm: { weight: `${p}.post_attention_layernorm.weight`, size: c.hidden_size },
        postMlpNorm: { weight: `${p}.post_feedforward_layernorm.weight`, size: c.hidden_size },
        qNorm: { weight: `${p}.self_attn.q_norm.weight`, size: nHeads * headDim },
        kNorm: { weight: `${p}.self_attn.k_norm.weight`, size: nKv * headDim },
        qkNormOver: 'projection' as const,
      };
    }),
  };
}

/** The olmo2 row of the family registry. */
export const olmo2Family: FamilyRow = {
  modelType: 'olmo2',
  hfClass: 'Olmo2ForCausalLM',
  moe: 'none',
  build: olmo2Arch,
  test: {
    configs: {
      olmo2: {
        model_type: 'olmo2',
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 80,
        num_hidden_layers: 2,
        num_attention_heads: 6,
        num_key_value_heads: 3,
        rms_norm_eps: 1e-6,
        rope_theta: 500000.0,
        attention_bias: false,
        tie_word_embeddings: false,
        hidden_act: 'silu',
      },
    },
  },
};
