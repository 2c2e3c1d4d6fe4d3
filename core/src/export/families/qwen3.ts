/** Qwen3 (transformers `models/qwen3/modeling_qwen3.py`): per-head q_norm / k_norm, head_dim 128 by default. */
import { llamaLikeRow } from './llama';

/** The qwen3 row of the family registry. */
export const qwen3Family = llamaLikeRow(
  {
    modelType: 'qwen3',
    hfClass: 'Qwen3ForCausalLM',
    moe: 'none',
    test: {
      configs: {
        qwen3: {
          model_type: 'qwen3',
          vocab_size: 96,
          hidden_size: 32,
          intermediate_size: 64,
          num_hidden_layers: 2,
          num_attention_heads: 4,
          num_key_value_heads: 1,
          head_dim: 16,
          rms_norm_eps: 1e-6,
          rope_theta: 1000000.0,
          attention_bias: false,
          tie_word_embeddings: true,
          hidden_act: 'silu',
        },
      },
    },
  },
  { defaultHeadDim: 128, defaultEps: 1e-6, slidingWindow: 'refuse-flag', qkNorm: true },
);
