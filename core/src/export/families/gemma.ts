/** Gemma (transformers `models/gemma/modeling_gemma.py`): (1 + w) RMSNorm, embeddings × √hidden, gelu-tanh, tied head, head_dim 256. */
import { llamaLikeRow, type LlamaQuirks } from './llama';

/** Gemma's quirks (GemmaConfig: rms_norm_eps 1e-6, head_dim 256); Gemma-2 starts from them. */
export const GEMMA_QUIRKS: LlamaQuirks = { defaultHeadDim: 256, defaultEps: 1e-6, slidingWindow: 'ignore', gemma: true };

/** The gemma row of the family registry. */
export const gemmaFamily = llamaLikeRow(
  {
    modelType: 'gemma',
    hfClass: 'GemmaForCausalLM',
    moe: 'none',
    test: {
      configs: {
        gemma: {
          model_type: 'gemma',
          vocab_size: 96,
          hidden_size: 48,
          intermediate_size: 96,
          num_hidden_layers: 2,
          num_attention_heads: 2,
          num_key_value_heads: 1,
          head_dim: 32,
          rms_norm_eps: 1e-6,
          rope_theta: 10000.0,
          hidden_act: 'gelu',
          hidden_activation: 'gelu_pytorch_tanh',
        },
      },
    },
  },
  GEMMA_QUIRKS,
);
