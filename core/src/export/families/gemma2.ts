/**
 * Gemma-2 (transformers `models/gemma2/modeling_gemma2.py`, read at 006e869): Gemma's (1 + w)
 * RMSNorm, √hidden embedding scale and tied head, plus four norms per layer (input,
 * post_attention, pre_feedforward, post_feedforward — each branch normalized before its
 * residual add), score scale `query_pre_attn_scalar^-0.5` (not head_dim), attention logits
 * soft-capped before the mask, final logits soft-capped after the head, and a sliding window
 * on the even layers (`layer_idx % 2 == 0`, or per `layer_types` in newer configs) where a token
 * sees itself and the window − 1 before it (`tril(…, diagonal=-sliding_window)` masked).
 */
import { z } from 'zod';
import type { ArchSpec } from '../blocks/arch';
import { llamaLike, parseWith, refuse } from './config';
import { GEMMA_QUIRKS } from './gemma';
import { llamaLikeArch } from './llama';
import type { FamilyRow } from './row';

const capField = z.number().finite().positive().nullable().optional();
const gemma2Config = llamaLike.extend({
  query_pre_attn_scalar: z.number().finite().positive().optional(),
  attn_logit_softcapping: capField,
  final_logit_softcapping: capField,
  layer_types: z.array(z.string()).optional(),
});

/** Layer kinds a `layer_types` list may hold (HF's names). */
const LAYER_TYPES = ['sliding_attention', 'full_attention'];

/** Gemma-2's architecture from its config (Gemma2Config defaults where a field is absent). */
export function gemma2Arch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(gemma2Config, raw, file);
  const base = llamaLikeArch('gemma', GEMMA_QUIRKS, c, file);
  const L = c.num_hidden_layers;
  const types = c.layer_types;
  if (types) {
    if (types.length !== L) refuse(file, 'layer_types', `has ${types.length} entries for ${L} layers`);
    const bad = types.find((t) => !LAYER_TYPES.includes(t));
    if (bad !== undefined) refuse(file, 'layer_types', `entry "${bad}" is not one of ${LAYER_TYPES.join(', ')}`);
  }
  const window = c.sliding_window === undefined ? 4096 : c.sliding_window;
  const cap = (v: number | null | undefined, dflt: number) => (v === undefined ? dflt : (v ?? undefined));
  const attnSoftcap = cap(c.attn_logit_softcapping, 50);
  const finalSoftcap = cap(c.final_logit_softcapping, 30);
  return {
    ...base,
    modelType: 'gemma2',
    scoreScale: { op: 'mul', value: Math.pow(c.query_pre_attn_scalar ?? 256, -0.5) },
    ...(attnSoftcap !== undefined ? { attnSoftcap } : {}),
    ...(finalSoftcap !== undefined ? { finalSoftcap } : {}),
    layers: base.layers.map((l, i) => {
      const p = `model.layers.${i}`;
      const sliding = types ? types[i] === 'sliding_attention' : i % 2 === 0;
      return {
        ...l,
        postAttnNorm: { weight: `${p}.post_attention_layernorm.weight`, size: c.hidden_size },
        norm2: { weight: `${p}.pre_feedforward_layernorm.weight`, size: c.hidden_size },
        postMlpNorm: { weight: `${p}.post_feedforward_layernorm.weight`, size: c.hidden_size },
        ...(sliding && window != null ? { slidingWindow: window } : {}),
      };
    }),
  };
}

/** The gemma2 row of the family registry. */
export const gemma2Family: FamilyRow = {
  modelType: 'gemma2',
  hfClass: 'Gemma2ForCausalLM',
  moe: 'none',
  build: gemma2Arch,
  test: {
    fixture: 'gemma2',
    configs: {
      // window 3 on layers 0 and 2, scalar 24 ≠ head_dim 16, both soft-caps low enough to bite
      gemma2: {
        model_type: 'gemma2',
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 64,
        num_hidden_layers: 3,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 16,
        query_pre_attn_scalar: 24,
        rms_norm_eps: 1e-6,
        rope_theta: 10000.0,
        sliding_window: 3,
        attn_logit_softcapping: 2.0,
        final_logit_softcapping: 3.0,
        hidden_activation: 'gelu_pytorch_tanh',
        hidden_act: 'gelu_pytorch_tanh',
      },
    },
  },
};
