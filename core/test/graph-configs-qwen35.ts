/**
 * Qwen3.5-MoE test configurations (real HF field names, configuration_qwen3_5_moe.py), in a
 * module without imports so graph-random.ts can list them at load time.
 */
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Another configuration: linear, full, linear, linear, linear; nv/nk = 3, dk 8 ≠ dv 12, kernel 3, 6 experts top-3, GQA 3. */
export const QWEN35_OTHER: Cfg = {
  architectures: ['Qwen3_5MoeForCausalLM'],
  model_type: 'qwen3_5_moe_text',
  vocab_size: 96,
  hidden_size: 48,
  num_hidden_layers: 5,
  layer_types: ['linear_attention', 'full_attention', 'linear_attention', 'linear_attention', 'linear_attention'],
  num_attention_heads: 6,
  num_key_value_heads: 2,
  head_dim: 16,
  linear_num_key_heads: 1,
  linear_num_value_heads: 3,
  linear_key_head_dim: 8,
  linear_value_head_dim: 12,
  linear_conv_kernel_dim: 3,
  num_experts: 6,
  num_experts_per_tok: 3,
  moe_intermediate_size: 20,
  shared_expert_intermediate_size: 28,
  rms_norm_eps: 1e-6,
  hidden_act: 'silu',
  max_position_embeddings: 512,
  rope_parameters: {
    rope_type: 'default',
    rope_theta: 10000,
    partial_rotary_factor: 0.5,
    mrope_section: [2, 1, 1],
    mrope_interleaved: true,
  },
  tie_word_embeddings: false,
};

/** The published multimodal layout (Qwen3_5MoeForConditionalGeneration) of a small text model: fields under text_config. */
export function multimodalConfig(text: Cfg): Cfg {
  const { architectures: _a, tie_word_embeddings: tied, ...rest } = text;
  return {
    architectures: ['Qwen3_5MoeForConditionalGeneration'],
    model_type: 'qwen3_5_moe',
    tie_word_embeddings: tied ?? false,
    text_config: { ...rest, model_type: 'qwen3_5_moe_text' },
    vision_config: { depth: 2, hidden_size: 16, model_type: 'qwen3_5_moe' },
  };
}
