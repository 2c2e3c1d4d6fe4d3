/**
 * Small Grok-1 and Llama 4 configurations beyond the fixtures (real HF / hpcai-tech field
 * names), judged against the float64 references of graph-reference-grok1.ts and
 * graph-reference-llama4.ts by graph-families.test.ts: Grok-1 without `model_type` and with
 * top-3 routing; Llama 4 with another `no_rope_layers` pattern and `interleave_moe_layer_step`,
 * with the derived patterns, and as the multimodal `Llama4ForConditionalGeneration` layout.
 */

const llama4Text = {
  model_type: 'llama4_text',
  vocab_size: 96,
  hidden_size: 32,
  head_dim: 8,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 24,
  intermediate_size_mlp: 40,
  num_local_experts: 4,
  rms_norm_eps: 1e-5,
  rope_theta: 10000.0,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  max_position_embeddings: 64,
};

/** Grok-1 and Llama 4 entries of SYNTHETIC_CONFIGS. */
export const GROK_LLAMA4_SYNTHETIC_CONFIGS: Record<string, Record<string, unknown>> = {
  // no model_type: the architecture names it; top-3 of 6 experts (QEfficient's block would take 2)
  'grok1-top3': {
    architectures: ['Grok1ModelForCausalLM'],
    vocab_size: 96,
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    attn_output_multiplier: 0.3,
    embedding_multiplier_scale: 3.0,
    output_multiplier_scale: 0.7,
    max_attn_value: 4.0,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: true,
    num_experts_per_tok: 3,
    num_experts: 6,
  },
  // NoPE on layers 1 and 4, MoE every third layer (2 and 5), chunks of 3, top-2 sigmoid routing
  'llama4-nope-step3': {
    ...llama4Text,
    num_hidden_layers: 6,
    no_rope_layers: [1, 0, 1, 1, 0, 1],
    interleave_moe_layer_step: 3,
    num_experts_per_tok: 2,
    attention_chunk_size: 3,
    attn_temperature_tuning: true,
    floor_scale: 2,
    attn_scale: 0.3,
    use_qk_norm: true,
    rope_scaling: { rope_type: 'llama3', factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_max_position_embeddings: 16 },
  },
  // no_rope_layers [] (derived: NoPE every 4th layer), every layer MoE, no q/k norm, no tuning, plain rope
  'llama4-derived': {
    ...llama4Text,
    num_hidden_layers: 5,
    no_rope_layers: [],
    num_experts_per_tok: 1,
    attention_chunk_size: 5,
    attn_temperature_tuning: false,
    use_qk_norm: false,
  },
  // Llama4ForConditionalGeneration: text_config, keys under language_model.
  'llama4-multimodal': {
    model_type: 'llama4',
    architectures: ['Llama4ForConditionalGeneration'],
    text_config: {
      ...llama4Text,
      num_hidden_layers: 4,
      interleave_moe_layer_step: 2,
      num_experts_per_tok: 1,
      attention_chunk_size: 4,
      floor_scale: 3,
      attn_scale: 0.5,
    },
    vision_config: { model_type: 'llama4_vision_model', hidden_size: 16 },
  },
};
