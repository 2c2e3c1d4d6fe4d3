/**
 * Granite (transformers `models/granite/modeling_granite.py`, read at 00aca81): Llama's layers
 * with four multipliers — embeddings × `embedding_multiplier`, attention scores ×
 * `attention_multiplier` (replacing 1/√head_dim), each branch × `residual_multiplier` before
 * its residual add, logits ÷ `logits_scaling`. head_dim is always hidden / heads.
 */
import { z } from 'zod';
import type { ArchSpec } from '../blocks/arch';
import { llamaLike, parseWith } from './config';
import { LLAMA_QUIRKS, llamaLikeArch } from './llama';
import type { FamilyRow } from './row';

const mult = z.number().finite().optional();
const graniteConfig = llamaLike.extend({
  embedding_multiplier: mult,
  attention_multiplier: mult,
  residual_multiplier: mult,
  logits_scaling: z
    .number()
    .finite()
    .refine((v) => v !== 0, 'must not be 0')
    .optional(),
});

/** Granite's architecture (GraniteConfig defaults: multipliers 1, rms_norm_eps 1e-6, untied). */
export function graniteArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(graniteConfig, raw, file);
  const base = llamaLikeArch('llama', LLAMA_QUIRKS, { ...c, head_dim: null, rms_norm_eps: c.rms_norm_eps ?? 1e-6 }, file);
  const emb = c.embedding_multiplier ?? 1;
  const res = c.residual_multiplier ?? 1;
  const logits = c.logits_scaling ?? 1;
  return {
    ...base,
    modelType: 'granite',
    scoreScale: { op: 'mul', value: c.attention_multiplier ?? 1 },
    ...(emb !== 1 ? { embedScale: emb } : {}),
    ...(logits !== 1 ? { logitsDivide: logits } : {}),
    layers: res === 1 ? base.layers : base.layers.map((l) => ({ ...l, residualScale: res })),
  };
}

/** The granite row of the family registry. */
export const graniteFamily: FamilyRow = {
  modelType: 'granite',
  hfClass: 'GraniteForCausalLM',
  moe: 'none',
  build: graniteArch,
  test: {
    configs: {
      granite: {
        model_type: 'granite',
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 80,
        num_hidden_layers: 2,
        num_attention_heads: 6,
        num_key_value_heads: 2,
        rms_norm_eps: 1e-6,
        rope_theta: 10000.0,
        embedding_multiplier: 12.0,
        attention_multiplier: 0.05,
        residual_multiplier: 0.22,
        logits_scaling: 8.0,
        attention_bias: true,
        mlp_bias: true,
        tie_word_embeddings: true,
        hidden_act: 'silu',
      },
    },
  },
};
