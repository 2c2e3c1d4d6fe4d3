/** Mistral (transformers `models/mistral/modeling_mistral.py`): Llama without biases, with `sliding_window`. */
import { llamaLikeRow } from './llama';

/** The mistral row of the family registry. */
export const mistralFamily = llamaLikeRow(
  {
    modelType: 'mistral',
    hfClass: 'MistralForCausalLM',
    moe: 'none',
    test: {
      configs: {
        mistral: {
          model_type: 'mistral',
          vocab_size: 96,
          hidden_size: 48,
          intermediate_size: 80,
          num_hidden_layers: 2,
          num_attention_heads: 6,
          num_key_value_heads: 2,
          head_dim: null,
          rms_norm_eps: 1e-5,
          rope_theta: 10000.0,
          sliding_window: 5,
          tie_word_embeddings: false,
          hidden_act: 'silu',
        },
      },
    },
  },
  { defaultEps: 1e-5, slidingWindow: 'read' },
);
