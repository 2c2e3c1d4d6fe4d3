/**
 * Random HF-layout checkpoints for MPT, GPTBigCode and Gemma-3 text (key names and shapes from
 * their modeling files, written out here independently of the graph builder) for the registry
 * rows' test configs (families/mpt.ts, families/gpt-bigcode.ts, families/gemma3.ts), which take each
 * family's traps: MPT with 6 heads (ALiBi slopes reordered for a non-power of two),
 * `clip_qkv` low enough to clamp, max_seq_len below the test's ctx_len and MosaicML's real-config
 * spelling (`MPTForCausalLM` + `auto_map`); GPTBigCode with multi-query (one kv head) and without
 * (per-head fused rows), `n_inner` and `scale_attn_weights` both ways; Gemma-3 with layer_types
 * derived from `sliding_window_pattern`, a window of 3 (shorter than the test prompts), two rope
 * bases with linear scaling on the global layers, and a final soft-cap.
 */

type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Put = (k: string, shape: number[], scale: number, center?: number) => void;

/** Fills `put` with the family's tensors; false if `cfg` is not one of this file's families. */
export function randomMptBigcodeGemma3(cfg: Cfg, put: Put): boolean {
  if (cfg.model_type === 'mpt') return (mpt(cfg, put), true);
  if (cfg.model_type === 'gpt_bigcode') return (bigcode(cfg, put), true);
  if (cfg.model_type === 'gemma3_text') return (gemma3(cfg, put), true);
  return false;
}

// MptForCausalLM: transformer.{wte, blocks.i.{norm_1, attn.Wqkv, attn.out_proj, norm_2, ffn.up_proj, ffn.down_proj}, norm_f}
function mpt(cfg: Cfg, put: Put): void {
  const H = cfg.d_model;
  put('transformer.wte.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.n_layers; l++) {
    const p = `transformer.blocks.${l}`;
    put(`${p}.norm_1.weight`, [H], 0.1, 1);
    put(`${p}.attn.Wqkv.weight`, [3 * H, H], 1.5 / Math.sqrt(H));
    put(`${p}.attn.out_proj.weight`, [H, H], 1 / Math.sqrt(H));
    put(`${p}.norm_2.weight`, [H], 0.1, 1);
    put(`${p}.ffn.up_proj.weight`, [4 * H, H], 1 / Math.sqrt(H));
    put(`${p}.ffn.down_proj.weight`, [H, 4 * H], 1 / Math.sqrt(4 * H));
  }
  put('transformer.norm_f.weight', [H], 0.1, 1);
}

// GPTBigCodeForCausalLM: nn.Linear c_attn [H + 2·kv_dim, H], learned wpe, LayerNorms with bias
function bigcode(cfg: Cfg, put: Put): void {
  const H = cfg.n_embd,
    hd = H / cfg.n_head,
    kvDim = cfg.multi_query === false ? H : hd,
    I = cfg.n_inner ?? 4 * H;
  const lin = (k: string, out: number, inp: number) => {
    put(`${k}.weight`, [out, inp], 1 / Math.sqrt(inp));
    put(`${k}.bias`, [out], 0.1);
  };
  const ln = (k: string) => {
    put(`${k}.weight`, [H], 0.1, 1);
    put(`${k}.bias`, [H], 0.1);
  };
  put('transformer.wte.weight', [cfg.vocab_size, H], 0.5);
  put('transformer.wpe.weight', [cfg.n_positions, H], 0.2);
  for (let l = 0; l < cfg.n_layer; l++) {
    const p = `transformer.h.${l}`;
    ln(`${p}.ln_1`);
    lin(`${p}.attn.c_attn`, H + 2 * kvDim, H);
    lin(`${p}.attn.c_proj`, H, H);
    ln(`${p}.ln_2`);
    lin(`${p}.mlp.c_fc`, I, H);
    lin(`${p}.mlp.c_proj`, H, I);
  }
  ln('transformer.ln_f');
}

// Gemma3ForCausalLM: model.layers.i.{input, post_attention, pre_feedforward, post_feedforward}_layernorm, self_attn.{q,k}_norm
function gemma3(cfg: Cfg, put: Put): void {
  const H = cfg.hidden_size,
    nh = cfg.num_attention_heads,
    nkv = cfg.num_key_value_heads,
    hd = cfg.head_dim,
    I = cfg.intermediate_size;
  const normW = (k: string, n: number) => put(k, [n], 0.2);
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 0.1);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`,
      a = `${p}.self_attn`;
    for (const n of ['input', 'post_attention', 'pre_feedforward', 'post_feedforward']) normW(`${p}.${n}_layernorm.weight`, H);
    put(`${a}.q_proj.weight`, [nh * hd, H], 1 / Math.sqrt(H));
    put(`${a}.k_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    put(`${a}.v_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    put(`${a}.o_proj.weight`, [H, nh * hd], 1 / Math.sqrt(nh * hd));
    normW(`${a}.q_norm.weight`, hd);
    normW(`${a}.k_norm.weight`, hd);
    put(`${p}.mlp.gate_proj.weight`, [I, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.up_proj.weight`, [I, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.down_proj.weight`, [H, I], 1 / Math.sqrt(I));
  }
  normW('model.norm.weight', H);
}
