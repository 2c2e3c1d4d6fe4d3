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
