/**
 * Random HF-layout checkpoints for Gemma-2, Granite, OLMo-2, Falcon and CodeGen (key names and
 * shapes from their modeling files, written out here independently of the graph builder), and
 * small configs that exercise each family's traps: Gemma-2's window, soft-caps and
 * query_pre_attn_scalar ≠ head_dim; Granite's four multipliers with biases; OLMo-2's
 * whole-projection q/k norms with GQA; Falcon 7B (multi_query with a contradicting
 * num_kv_heads: one kv head), 40B (new architecture, two norms), new architecture with one
 * norm, and the old sequential per-head layout with biases; CodeGen (mp_num 4, partial rotary).
 */

type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Put = (k: string, shape: number[], scale: number, center?: number) => void;

/** A Llama-style gated MLP at `m` (`gate_proj`, `up_proj`, `down_proj`, with biases when `bias`). */
export function putGatedMlp(put: Put, m: string, H: number, I: number, bias: boolean): void {
  put(`${m}.gate_proj.weight`, [I, H], 1 / Math.sqrt(H));
  put(`${m}.up_proj.weight`, [I, H], 1 / Math.sqrt(H));
  put(`${m}.down_proj.weight`, [H, I], 1 / Math.sqrt(I));
  if (bias)
    for (const [n, size] of [
      ['gate', I],
      ['up', I],
      ['down', H],
    ] as const)
      put(`${m}.${n}_proj.bias`, [size], 0.1);
}

/** The final norm, and the LM head unless tied (Gemma ties by default). */
export function putNormAndHead(put: Put, normW: (k: string, n: number) => void, cfg: Cfg, H: number, gemma: boolean): void {
  normW('model.norm.weight', H);
  if (!(cfg.tie_word_embeddings ?? gemma)) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
}

/** Fills `put` with the family's tensors; false if `cfg` is not one of this file's families. */
export function randomDenseTensors(cfg: Cfg, put: Put): boolean {
  const t = cfg.model_type as string;
  if (t === 'falcon') return (falcon(cfg, put), true);
  if (t === 'codegen') return (codegen(cfg, put), true);
  if (t !== 'gemma2' && t !== 'granite' && t !== 'olmo2' && t !== 'granitemoe') return false;
  const H = cfg.hidden_size,
    nh = cfg.num_attention_heads,
    nkv = cfg.num_key_value_heads ?? nh,
    I = cfg.intermediate_size;
  const hd = t === 'granite' || t === 'granitemoe' ? H / nh : (cfg.head_dim ?? (t === 'gemma2' ? 256 : H / nh));
  const gemma = t === 'gemma2';
  const normW = (k: string, n: number) => put(k, [n], 0.1, gemma ? 0 : 1);
  put('model.embed_tokens.weight', [cfg.vocab_size, H], gemma ? 0.1 : 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`,
      a = `${p}.self_attn`;
    if (t !== 'olmo2') normW(`${p}.input_layernorm.weight`, H);
    put(`${a}.q_proj.weight`, [nh * hd, H], 1 / Math.sqrt(H));
    put(`${a}.k_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    put(`${a}.v_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    put(`${a}.o_proj.weight`, [H, nh * hd], 1 / Math.sqrt(nh * hd));
    if (cfg.attention_bias) {
      for (const [n, size] of [
        ['q', nh * hd],
        ['k', nkv * hd],
        ['v', nkv * hd],
        ['o', H],
      ] as const)
        put(`${a}.${n}_proj.bias`, [size], 0.1);
    }
    if (t === 'olmo2') {
      normW(`${a}.q_norm.weight`, nh * hd);
      normW(`${a}.k_norm.weight`, nkv * hd);
    }
    normW(`${p}.post_attention_layernorm.weight`, H);
    if (gemma) normW(`${p}.pre_feedforward_layernorm.weight`, H);
    if (gemma || t === 'olmo2') normW(`${p}.post_feedforward_layernorm.weight`, H);
    if (t === 'granitemoe') {
      // GraniteMoeParallelExperts: [num_experts, output_size, input_size]; router: GraniteMoeTopKGating.layer
      const E = cfg.num_local_experts,
        m = `${p}.block_sparse_moe`;
      put(`${m}.router.layer.weight`, [E, H], 1);
      put(`${m}.input_linear.weight`, [E, 2 * I, H], 1 / Math.sqrt(H));
      put(`${m}.output_linear.weight`, [E, H, I], 1 / Math.sqrt(I));
      continue;
    }
    putGatedMlp(put, `${p}.mlp`, H, I, !!cfg.mlp_bias);
  }
  putNormAndHead(put, normW, cfg, H, gemma);
  return true;
}

function falcon(cfg: Cfg, put: Put): void {
  const H = cfg.hidden_size,
    nh = cfg.num_attention_heads,
    hd = H / nh,
    I = cfg.ffn_hidden_size ?? 4 * H;
  const newArch = !!cfg.new_decoder_architecture;
  const mq = cfg.multi_query ?? true;
  const nkv = cfg.num_kv_heads ?? nh;
  const qkvOut = newArch ? (2 * nkv + nh) * hd : mq ? H + 2 * hd : 3 * H;
  const nLn = cfg.num_ln_in_parallel_attn ?? (newArch ? 2 : 1);
  const parallel = cfg.parallel_attn ?? true;
  const lin = (k: string, out: number, inp: number) => {
    put(`${k}.weight`, [out, inp], 1 / Math.sqrt(inp));
    if (cfg.bias) put(`${k}.bias`, [out], 0.1);
  };
  const ln = (k: string) => {
    put(`${k}.weight`, [H], 0.1, 1);
    put(`${k}.bias`, [H], 0.1);
  };
  put('transformer.word_embeddings.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `transformer.h.${l}`;
    if (newArch && nLn === 2) {
      ln(`${p}.ln_attn`);
      ln(`${p}.ln_mlp`);
    } else {
      ln(`${p}.input_layernorm`);
      if (!parallel) ln(`${p}.post_attention_layernorm`);
    }
    lin(`${p}.self_attention.query_key_value`, qkvOut, H);
    lin(`${p}.self_attention.dense`, H, H);
    lin(`${p}.mlp.dense_h_to_4h`, I, H);
    lin(`${p}.mlp.dense_4h_to_h`, H, I);
  }
  ln('transformer.ln_f');
  if (!(cfg.tie_word_embeddings ?? true)) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
}

function codegen(cfg: Cfg, put: Put): void {
  const H = cfg.n_embd,
    I = cfg.n_inner ?? 4 * H;
  const ln = (k: string) => {
    put(`${k}.weight`, [H], 0.1, 1);
    put(`${k}.bias`, [H], 0.1);
  };
  put('transformer.wte.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.n_layer; l++) {
    const p = `transformer.h.${l}`;
    ln(`${p}.ln_1`);
    put(`${p}.attn.qkv_proj.weight`, [3 * H, H], 1 / Math.sqrt(H));
    put(`${p}.attn.out_proj.weight`, [H, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.fc_in.weight`, [I, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.fc_in.bias`, [I], 0.1);
    put(`${p}.mlp.fc_out.weight`, [H, I], 1 / Math.sqrt(I));
    put(`${p}.mlp.fc_out.bias`, [H], 0.1);
  }
  ln('transformer.ln_f');
  if (!(cfg.tie_word_embeddings ?? false)) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
  put('lm_head.bias', [cfg.vocab_size], 0.1);
}

/** Small configs (real HF field names) for the dense families. */
export const DENSE_SYNTHETIC_CONFIGS: Record<string, Cfg> = {
  // window 3 on layers 0 and 2, scalar 24 ≠ head_dim 16, both soft-caps low enough to bite
  gemma2: {
    model_type: 'gemma2',
    vocab_size: 96,
    hidden_size: 48,
    intermediate_size: 64,
    num_hidden_layers: 3,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    query_pre_attn_scalar: 24,
    rms_norm_eps: 1e-6,
    rope_theta: 10000.0,
    sliding_window: 3,
    attn_logit_softcapping: 2.0,
    final_logit_softcapping: 3.0,
    hidden_activation: 'gelu_pytorch_tanh',
    hidden_act: 'gelu_pytorch_tanh',
  },
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
  olmo2: {
    model_type: 'olmo2',
    vocab_size: 96,
    hidden_size: 48,
    intermediate_size: 80,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_key_value_heads: 3,
    rms_norm_eps: 1e-6,
    rope_theta: 500000.0,
    attention_bias: false,
    tie_word_embeddings: false,
    hidden_act: 'silu',
  },
  // Falcon-7B layout: old architecture, multi_query (one kv head whatever num_kv_heads says), parallel, one norm
  'falcon-7b': {
    model_type: 'falcon',
    vocab_size: 96,
    hidden_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_kv_heads: 6,
    multi_query: true,
    new_decoder_architecture: false,
    parallel_attn: true,
    bias: false,
    alibi: false,
    layer_norm_epsilon: 1e-5,
    rope_theta: 10000.0,
    tie_word_embeddings: true,
  },
  // Falcon-40B layout: new decoder architecture, grouped kv, ln_attn + ln_mlp
  'falcon-40b': {
    model_type: 'falcon',
    vocab_size: 96,
    hidden_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 8,
    num_kv_heads: 2,
    new_decoder_architecture: true,
    multi_query: true,
    parallel_attn: true,
    bias: false,
    alibi: false,
    layer_norm_epsilon: 1e-5,
    rope_theta: 10000.0,
    tie_word_embeddings: false,
  },
  'falcon-new-1ln': {
    model_type: 'falcon',
    vocab_size: 80,
    hidden_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_kv_heads: 1,
    new_decoder_architecture: true,
    parallel_attn: true,
    num_ln_in_parallel_attn: 1,
    ffn_hidden_size: 72,
    bias: true,
    alibi: false,
    layer_norm_epsilon: 1e-5,
    rope_theta: 10000.0,
  },
  // old architecture without multi_query: per-head [q|k|v], sequential block, biases, untied
  'falcon-seq': {
    model_type: 'falcon',
    vocab_size: 80,
    hidden_size: 32,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    multi_query: false,
    new_decoder_architecture: false,
    parallel_attn: false,
    bias: true,
    alibi: false,
    layer_norm_epsilon: 1e-5,
    rope_theta: 10000.0,
    tie_word_embeddings: false,
  },
  codegen: {
    model_type: 'codegen',
    vocab_size: 96,
    n_embd: 64,
    n_layer: 2,
    n_head: 8,
    rotary_dim: 6,
    n_inner: null,
    activation_function: 'gelu_new',
    layer_norm_epsilon: 1e-5,
    n_positions: 128,
    tie_word_embeddings: false,
  },
};
