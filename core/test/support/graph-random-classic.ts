/**
 * Random HF-layout checkpoints for Phi, StarCoder2 and GPT-J (key names and shapes from their
 * modeling files, written out here independently of the graph builder), for the small configs
 * of their registry rows (families/phi.ts, families/starcoder2.ts, families/gptj.ts).
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
