/** Phi-3 (transformers `models/phi3/modeling_phi3.py`): fused qkv_proj and gate_up_proj, partial rotary, LongRoPE. */
import { llamaLikeRow } from './llama';

/** The phi3 row of the family registry. */
export const phi3Family = llamaLikeRow(
  {
    modelType: 'phi3',
    hfClass: 'Phi3ForCausalLM',
    moe: 'none',
    test: {
      fixture: 'phi3',
      configs: {
        // LongRoPE and partial rotary dims: 11 tokens > original_max 8 → the long factors
        'phi3-longrope': {
          model_type: 'phi3',
          vocab_size: 96,
          hidden_size: 32,
          intermediate_size: 48,
          num_hidden_layers: 2,
          num_attention_heads: 2,
          num_key_value_heads: 1,
          rms_norm_eps: 1e-5,
          rope_theta: 10000.0,
          partial_rotary_factor: 0.5,
          max_position_embeddings: 64,
          original_max_position_embeddings: 8,
          rope_scaling: { type: 'longrope', short_factor: [1.0, 1.3, 1.9, 2.5], long_factor: [1.5, 2.0, 4.0, 9.0] },
          tie_word_embeddings: false,
          hidden_act: 'silu',
        },
      },
    },
  },
  { defaultEps: 1e-5, slidingWindow: 'read', phi3Rope: true, phi3Fused: true },
);
