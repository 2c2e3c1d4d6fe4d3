/** Qwen3-MoE (transformers `models/qwen3_moe/modeling_qwen3_moe.py`): Qwen3 attention, sparse layers per `decoder_sparse_step` / `mlp_only_layers`. */
import { llamaLikeRow } from './llama';

/** The qwen3_moe row of the family registry. */
export const qwen3MoeFamily = llamaLikeRow(
  {
    modelType: 'qwen3_moe',
    hfClass: 'Qwen3MoeForCausalLM',
    moe: 'softmax',
    test: {
      configs: {
        qwen3_moe: {
          model_type: 'qwen3_moe',
          vocab_size: 96,
          hidden_size: 32,
          intermediate_size: 64,
          moe_intermediate_size: 24,
          num_hidden_layers: 2,
          num_attention_heads: 4,
          num_key_value_heads: 2,
          head_dim: 8,
          rms_norm_eps: 1e-6,
          rope_theta: 1000000.0,
          num_experts: 6,
          num_experts_per_tok: 2,
          norm_topk_prob: true,
          decoder_sparse_step: 1,
          mlp_only_layers: [],
          tie_word_embeddings: false,
          hidden_act: 'silu',
        },
        // dense layer 0 (mlp_only_layers), norm_topk_prob off, MQA
        'qwen3_moe-mixed': {
          model_type: 'qwen3_moe',
          vocab_size: 64,
          hidden_size: 32,
          intermediate_size: 40,
          moe_intermediate_size: 16,
          num_hidden_layers: 3,
          num_attention_heads: 4,
          num_key_value_heads: 1,
          head_dim: 8,
          rms_norm_eps: 1e-6,
          rope_theta: 10000.0,
          num_experts: 5,
          num_experts_per_tok: 3,
          norm_topk_prob: false,
          decoder_sparse_step: 1,
          mlp_only_layers: [0],
          tie_word_embeddings: true,
          hidden_act: 'silu',
        },
      },
    },
  },
  {
    defaultHeadDim: 128,
    defaultEps: 1e-6,
    slidingWindow: 'refuse-flag',
    qkNorm: true,
    moe: { expertsField: 'num_experts', block: 'mlp', intermediate: 'moe_intermediate_size', layers: 'step', normTopK: 'config' },
  },
);
