/**
 * GraniteMoE (`modeling_granitemoe.py`, huggingface/transformers `src/transformers/models/granitemoe/`):
 * Granite's attention and four multipliers (from granite.ts) with a sparse MoE in every layer:
 * router `block_sparse_moe.router.layer`, softmax over the top-k logits, fused experts
 * `input_linear [E, 2I, H]` (gate = first I rows) and `output_linear [E, H, I]`, which prepare
 * splits into the canonical `moe_weights`.
 */
import { z } from 'zod';
import type { ArchSpec, MlpSpec } from '../blocks/arch';
import type { ArchOptions, FamilyRow } from './row';
import { parseWith, refuse } from './config';
import { canonicalMoeKeys } from '../blocks/moe';
import { graniteArch } from './granite';
import { checkTopK, expertStages } from './moe-common';

const int = z.number().int().positive();

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
