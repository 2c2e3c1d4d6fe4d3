/**
 * Random HF-layout checkpoints for Phi, StarCoder2 and GPT-J (key names and shapes from their
 * modeling files, written out here independently of the graph builder), and small configs that
 * exercise each family's traps: Phi with another head count and GQA, qk_layernorm, partial
 * rotary and a tied head that keeps its bias; StarCoder2 with GQA, biases, a sliding window
 * shorter than the prompt, and use_bias false with MQA and an untied head; GPT-J with a
 * rotary_dim below head_dim, n_inner null (4×) and an explicit n_inner.
 */

type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Put = (k: string, shape: number[], scale: number, center?: number) => void;

/** Fills `put` with the family's tensors; false if `cfg` is not one of this file's families. */
export function randomClassicTensors(cfg: Cfg, put: Put): boolean {
  const t = cfg.model_type as string;
  if (t === 'gptj') return (gptj(cfg, put), true);
  if (t !== 'phi' && t !== 'starcoder2') return false;
  const H: number = cfg.hidden_size,
    nh: number = cfg.num_attention_heads,
    nkv: number = cfg.num_key_value_heads ?? nh,
    I: number = cfg.intermediate_size;
  const hd = H / nh;
  const phi = t === 'phi';
  const bias = phi || (cfg.use_bias ?? true);
  const lin = (k: string, out: number, inp: number, withBias = bias) => {
    put(`${k}.weight`, [out, inp], 1 / Math.sqrt(inp));
    if (withBias) put(`${k}.bias`, [out], 0.1);
  };
  const ln = (k: string, n: number) => {
    put(`${k}.weight`, [n], 0.1, 1);
    put(`${k}.bias`, [n], 0.1); // nn.LayerNorm always has a bias
  };
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`,
      a = `${p}.self_attn`;
    ln(`${p}.input_layernorm`, H);
    lin(`${a}.q_proj`, nh * hd, H);
    lin(`${a}.k_proj`, nkv * hd, H);
    lin(`${a}.v_proj`, nkv * hd, H);
    if (phi) {
      lin(`${a}.dense`, H, nh * hd);
      if (cfg.qk_layernorm) {
        ln(`${a}.q_layernorm`, hd);
        ln(`${a}.k_layernorm`, hd);
      }
      lin(`${p}.mlp.fc1`, I, H);
      lin(`${p}.mlp.fc2`, H, I);
    } else {
      lin(`${a}.o_proj`, H, nh * hd);
      ln(`${p}.post_attention_layernorm`, H);
      lin(`${p}.mlp.c_fc`, I, H);
      lin(`${p}.mlp.c_proj`, H, I);
    }
  }
  ln(phi ? 'model.final_layernorm' : 'model.norm', H);
  const tied = cfg.tie_word_embeddings ?? !phi; // PhiConfig unties, Starcoder2 keeps PretrainedConfig's tie
  if (!tied) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
  if (phi) put('lm_head.bias', [cfg.vocab_size], 0.1); // PhiForCausalLM: bias=True, tied or not
  return true;
}

/** GPTJForCausalLM: transformer.wte, h.{i}.ln_1 / attn.{q,k,v,out}_proj (no bias) / mlp.fc_in, fc_out, ln_f, lm_head (+ bias). */
function gptj(cfg: Cfg, put: Put): void {
  const H: number = cfg.n_embd,
    I: number = cfg.n_inner ?? 4 * H;
  put('transformer.wte.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.n_layer; l++) {
    const p = `transformer.h.${l}`;
    put(`${p}.ln_1.weight`, [H], 0.1, 1);
    put(`${p}.ln_1.bias`, [H], 0.1);
    for (const n of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) put(`${p}.attn.${n}.weight`, [H, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.fc_in.weight`, [I, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.fc_in.bias`, [I], 0.1);
    put(`${p}.mlp.fc_out.weight`, [H, I], 1 / Math.sqrt(I));
    put(`${p}.mlp.fc_out.bias`, [H], 0.1);
  }
  put('transformer.ln_f.weight', [H], 0.1, 1);
  put('transformer.ln_f.bias', [H], 0.1);
  if (!(cfg.tie_word_embeddings ?? false)) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
  put('lm_head.bias', [cfg.vocab_size], 0.1);
}

/** Small configs (real HF field names) for the classic families. */
export const CLASSIC_SYNTHETIC_CONFIGS: Record<string, Record<string, unknown>> = {
  // phi-2's shape of config at another head count: MHA, no qk_layernorm, partial rotary 0.5
  phi: {
    model_type: 'phi',
    vocab_size: 96,
    hidden_size: 64,
    intermediate_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 8,
    num_key_value_heads: 8,
    hidden_act: 'gelu_new',
    layer_norm_eps: 1e-5,
    partial_rotary_factor: 0.5,
    qk_layernorm: false,
    rope_theta: 10000.0,
    rope_scaling: null,
    resid_pdrop: 0.1,
    embd_pdrop: 0.1,
    tie_word_embeddings: false,
    torch_dtype: 'float16',
  },
  // GQA, qk_layernorm, rotary dim 6 of head_dim 12, tied head with its own bias, linear rope scaling
  'phi-qk-gqa': {
    model_type: 'phi',
    vocab_size: 80,
    hidden_size: 48,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    hidden_act: 'gelu_new',
    layer_norm_eps: 1e-5,
    partial_rotary_factor: 0.5,
    qk_layernorm: true,
    rope_theta: 5000.0,
    rope_scaling: { rope_type: 'linear', factor: 2.0 },
    tie_word_embeddings: true,
  },
  // GQA with biases; a window of 3 is shorter than the 7-token prompt the tests prefill
  starcoder2: {
    model_type: 'starcoder2',
    vocab_size: 96,
    hidden_size: 48,
    intermediate_size: 80,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_key_value_heads: 2,
    hidden_act: 'gelu_pytorch_tanh',
    norm_epsilon: 1e-5,
    rope_theta: 100000.0,
    sliding_window: 3,
    use_bias: true,
    attention_dropout: 0.1,
    residual_dropout: 0.1,
    embedding_dropout: 0.1,
  },
  // no biases, MQA, no window, untied head
  'starcoder2-nobias': {
    model_type: 'starcoder2',
    vocab_size: 80,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    norm_epsilon: 1e-6,
    sliding_window: null,
    use_bias: false,
    tie_word_embeddings: false,
  },
  // gpt-j-6b's shape of config, small: rotary_dim 8 of head_dim 12, n_inner null (4×)
  gptj: {
    model_type: 'gptj',
    vocab_size: 96,
    n_embd: 48,
    n_layer: 2,
    n_head: 4,
    n_positions: 64,
    rotary_dim: 8,
    n_inner: null,
    activation_function: 'gelu_new',
    layer_norm_epsilon: 1e-5,
    rotary: true,
    tie_word_embeddings: false,
  },
  // another head count, rotary_dim 4 of 8, explicit n_inner
  'gptj-inner': {
    model_type: 'gptj',
    vocab_size: 80,
    n_embd: 64,
    n_layer: 3,
    n_head: 8,
    n_positions: 64,
    rotary_dim: 4,
    n_inner: 80,
    layer_norm_epsilon: 1e-5,
  },
};
