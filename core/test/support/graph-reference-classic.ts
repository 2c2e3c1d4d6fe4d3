/**
 * The independent float64 reference forward for Phi, StarCoder2 and GPT-J, written straight
 * from the Hugging Face modeling files (eager attention path) and sharing no code with the
 * graph builder: raw config.json, original checkpoint keys, the whole sequence at once, no cache.
 *
 * Sources (huggingface/transformers):
 * - phi: src/transformers/models/phi/modular_phi.py @ b39782da06db496e7c2528808f42718e54157709
 *   (PhiAttention: view into heads, q_layernorm / k_layernorm per head, partial rotary on the
 *   first int(head_dim · partial_rotary_factor) dims, `dense`; PhiDecoderLayer:
 *   attn + mlp + residual from one input_layernorm; PhiModel.final_layernorm) and
 *   modeling_phi.py @ 0faeaf39a9176bb1581969e51565851bfcc2dc98 (PhiForCausalLM: lm_head with
 *   bias=True); defaults from configuration_phi.py @ 90f2781aaf6cb2ba75e33a485edec50cbdcbdef5.
 * - starcoder2: src/transformers/models/starcoder2/modular_starcoder2.py @
 *   ae005ce12a086176742fbf6c8364782a27085c85 (Mistral attention with use_bias, LayerNorm with
 *   norm_epsilon, c_fc/c_proj MLP, sliding_window as Mistral's mask); defaults from
 *   configuration_starcoder2.py @ 77efc55c011c247cd8ff1e7047bd20a177edf012.
 * - gptj: src/transformers/models/gptj/modeling_gptj.py @ cb6cd7e984c1482cfcf62aeb3b2921bfeca71e95
 *   (create_sinusoidal_positions, rotate_every_two, GPTJAttention._attn ÷ √head_dim, GPTJBlock,
 *   GPTJForCausalLM lm_head with bias); defaults from configuration_gptj.py @
 *   c4c7dfb77cf6d24ac1d7857226c4da0c1bfbf11d (rotary_dim 64, n_inner None → 4·n_embd, untied).
 */
import { invFreq, layerNorm, linear, rope, weightGetter } from './graph-reference';
import { actFn, attend, headsOf } from './graph-reference-dense';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The model types this file's forward handles. */
export const CLASSIC_TYPES = new Set(['phi', 'starcoder2', 'gptj']);

const add = (a: number[][], b: number[][]) => a.map((r, t) => r.map((v, i) => v + b[t]![i]!));

/** Full-sequence logits for Phi, StarCoder2 or GPT-J. */
export function classicReferenceForward(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const type: string = cfg.model_type;
  if (type === 'phi') return phi(cfg, get, ids);
  if (type === 'starcoder2') return starcoder2(cfg, get, w, ids);
  return gptj(cfg, get, w, ids);
}

/** PhiForCausalLM. */
function phi(cfg: Cfg, get: (k: string) => F32, ids: number[]): number[][] {
  const H: number = cfg.hidden_size ?? 2048;
  const nh: number = cfg.num_attention_heads ?? 32;
  const nkv: number = cfg.num_key_value_heads ?? nh;
  const hd = H / nh;
  const eps: number = cfg.layer_norm_eps ?? 1e-5;
  const act = actFn(cfg.hidden_act ?? 'gelu_new');
  const ln = (rows: number[][], key: string) => rows.map((r) => layerNorm(r, get(`${key}.weight`), get(`${key}.bias`), eps));
  const rd = Math.floor(hd * (cfg.partial_rotary_factor ?? 0.5));
  const inv = invFreq(cfg, rd, ids.length);
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < (cfg.num_hidden_layers ?? 24); l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    const x = ln(h, `${p}.input_layernorm`);
    const proj = (n: string) => linear(x, get(`${a}.${n}.weight`), get(`${a}.${n}.bias`));
    // per head: LayerNorm over head_dim (q_layernorm / k_layernorm), then rope on the first rd dims
    const prep = (rows: number[][], n: number, norm?: string) =>
      rows.map((r, t) =>
        headsOf(r, n, hd).map((e) => rope(norm ? layerNorm(e, get(`${a}.${norm}.weight`), get(`${a}.${norm}.bias`), eps) : e, t, inv)),
      );
    const qk = !!cfg.qk_layernorm;
    const Q = prep(proj('q_proj'), nh, qk ? 'q_layernorm' : undefined);
    const K = prep(proj('k_proj'), nkv, qk ? 'k_layernorm' : undefined);
    const V = proj('v_proj').map((r) => headsOf(r, nkv, hd));
    const att = linear(
      attend(
        Q,
        K,
        V,
        (j) => Math.floor(j / (nh / nkv)),
        (d) => d * hd ** -0.5,
        () => true,
      ),
      get(`${a}.dense.weight`),
      get(`${a}.dense.bias`),
    );
    const ff = linear(
      linear(x, get(`${p}.mlp.fc1.weight`), get(`${p}.mlp.fc1.bias`)).map((r) => r.map(act)),
      get(`${p}.mlp.fc2.weight`),
      get(`${p}.mlp.fc2.bias`),
    );
    h = add(add(att, ff), h); // attn_outputs + feed_forward_hidden_states + residual
  }
  const fin = ln(h, 'model.final_layernorm');
  const tied: boolean = cfg.tie_word_embeddings ?? false;
  return linear(fin, tied ? emb : get('lm_head.weight'), get('lm_head.bias'));
}

/** Starcoder2ForCausalLM. */
function starcoder2(cfg: Cfg, get: (k: string) => F32, w: W, ids: number[]): number[][] {
  const H: number = cfg.hidden_size ?? 3072;
  const nh: number = cfg.num_attention_heads ?? 24;
  const nkv: number = cfg.num_key_value_heads ?? 2;
  const hd: number = cfg.head_dim ?? H / nh;
  const eps: number = cfg.norm_epsilon ?? 1e-5;
  const bias: boolean = cfg.use_bias ?? true;
  const act = actFn(cfg.hidden_act ?? 'gelu_pytorch_tanh');
  const W: number | null = cfg.sliding_window ?? null;
  const ln = (rows: number[][], key: string) => rows.map((r) => layerNorm(r, get(`${key}.weight`), get(`${key}.bias`), eps));
  const lin = (x: number[][], key: string) => {
    if (!bias && w.has(`${key}.bias`)) throw new Error(`reference: ${key}.bias present with use_bias false`);
    return linear(x, get(`${key}.weight`), bias ? get(`${key}.bias`) : undefined);
  };
  const inv = invFreq(cfg, hd, ids.length);
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < (cfg.num_hidden_layers ?? 30); l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    const x = ln(h, `${p}.input_layernorm`);
    const Q = lin(x, `${a}.q_proj`).map((r, t) => headsOf(r, nh, hd).map((e) => rope(e, t, inv)));
    const K = lin(x, `${a}.k_proj`).map((r, t) => headsOf(r, nkv, hd).map((e) => rope(e, t, inv)));
    const V = lin(x, `${a}.v_proj`).map((r) => headsOf(r, nkv, hd));
    // Mistral's sliding window: key s is visible to query t when t − W < s ≤ t
    const att = attend(
      Q,
      K,
      V,
      (j) => Math.floor(j / (nh / nkv)),
      (d) => d * hd ** -0.5,
      (t, s) => W == null || s > t - W,
    );
    h = add(h, lin(att, `${a}.o_proj`));
    const y = ln(h, `${p}.post_attention_layernorm`);
    h = add(
      h,
      lin(
        lin(y, `${p}.mlp.c_fc`).map((r) => r.map(act)),
        `${p}.mlp.c_proj`,
      ),
    );
  }
  const fin = ln(h, 'model.norm');
  return linear(fin, (cfg.tie_word_embeddings ?? true) ? emb : get('lm_head.weight'));
}

/** GPT-J's apply_rotary_pos_emb on the first 2·f.length dims: x·cos + rotate_every_two(x)·sin, sin/cos repeat-interleaved. */
function rotateEveryTwo(x: number[], pos: number, f: number[]): number[] {
  const out = x.slice();
  for (let i = 0; i < f.length; i++) {
    const s = Math.sin(pos * f[i]!);
    const c = Math.cos(pos * f[i]!);
    out[2 * i] = x[2 * i]! * c - x[2 * i + 1]! * s;
    out[2 * i + 1] = x[2 * i + 1]! * c + x[2 * i]! * s;
  }
  return out;
}

/** GPTJForCausalLM. */
function gptj(cfg: Cfg, get: (k: string) => F32, w: W, ids: number[]): number[][] {
  const H: number = cfg.n_embd;
  const nh: number = cfg.n_head;
  const hd = H / nh;
  const rd: number = cfg.rotary_dim === undefined ? 64 : cfg.rotary_dim;
  const eps: number = cfg.layer_norm_epsilon ?? 1e-5;
  const act = actFn(cfg.activation_function ?? 'gelu_new');
  const ln = (rows: number[][], key: string) => rows.map((r) => layerNorm(r, get(`${key}.weight`), get(`${key}.bias`), eps));
  // create_sinusoidal_positions: inv_freq = 1 / 10000^(arange(0, dim, 2) / dim)
  const f = Array.from({ length: rd / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / rd));
  const emb = get('transformer.wte.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < cfg.n_layer; l++) {
    const p = `transformer.h.${l}`;
    const a = `${p}.attn`;
    const x = ln(h, `${p}.ln_1`);
    for (const n of ['q_proj', 'k_proj', 'v_proj', 'out_proj'])
      if (w.has(`${a}.${n}.bias`)) throw new Error(`reference: GPT-J's ${n} has no bias`);
    const Q = linear(x, get(`${a}.q_proj.weight`)).map((r, t) => headsOf(r, nh, hd).map((e) => rotateEveryTwo(e, t, f)));
    const K = linear(x, get(`${a}.k_proj.weight`)).map((r, t) => headsOf(r, nh, hd).map((e) => rotateEveryTwo(e, t, f)));
    const V = linear(x, get(`${a}.v_proj.weight`)).map((r) => headsOf(r, nh, hd));
    const att = linear(
      attend(
        Q,
        K,
        V,
        (j) => j,
        (d) => d / Math.sqrt(hd),
        () => true,
      ),
      get(`${a}.out_proj.weight`),
    );
    const ff = linear(
      linear(x, get(`${p}.mlp.fc_in.weight`), get(`${p}.mlp.fc_in.bias`)).map((r) => r.map(act)),
      get(`${p}.mlp.fc_out.weight`),
      get(`${p}.mlp.fc_out.bias`),
    );
    h = add(add(att, ff), h); // attn_output + feed_forward_hidden_states + residual
  }
  const fin = ln(h, 'transformer.ln_f');
  return linear(fin, (cfg.tie_word_embeddings ?? false) ? emb : get('lm_head.weight'), get('lm_head.bias'));
}
