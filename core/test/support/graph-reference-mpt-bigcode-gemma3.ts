/**
 * The independent float64 reference forward for MPT, GPTBigCode and Gemma-3 text, written straight
 * from the Hugging Face modeling files (eager path) and sharing no code with the graph builder:
 * full sequence at once, no cache, original checkpoint keys.
 *
 * Sources (huggingface/transformers):
 * - mpt: src/transformers/models/mpt/modeling_mpt.py @ 4352620161a5f53911ddc19dbfa1bd76d92c93be
 *   (build_mpt_alibi_tensor, MptAttention with clip_qkv, MptBlock, MptModel, MptForCausalLM);
 *   configuration_mpt.py @ 79f1fc71ad1e0220e2b05723f5fd2e14bc270de5 for defaults. HF's forward
 *   builds the ALiBi table with its default alibi_bias_max 8; the config's value is used here as
 *   MosaicML's code does (equal for every published config).
 * - gpt_bigcode: src/transformers/models/gpt_bigcode/modeling_gpt_bigcode.py @ e3f47e53722e43ccd9f666fb450aa4af1ac9f04a;
 *   configuration_gpt_bigcode.py @ d0d5bbf1baa61a32f0ec4a7f18c77daf4be63ed3.
 * - gemma3_text: src/transformers/models/gemma3/modeling_gemma3.py @ f14d0cbc824e447ef294d8cdc0f8ad4222f3dfee;
 *   configuration_gemma3.py @ d98ac17cc00f337eeee9a1e2380072dc8cafabd4 (defaults) and the later
 *   `layer_types` derivation from `sliding_window_pattern`.
 */
import { ACT, invFreq, linear, rms, rope, softmax, weightGetter } from './graph-reference';
import { erf } from './graph-reference-dense';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The model types this file's forward handles. */
export const MPT_BIGCODE_GEMMA3_TYPES = new Set(['mpt', 'gpt_bigcode', 'gemma3_text']);

const add = (a: number[][], b: number[][]) => a.map((r, t) => r.map((v, i) => v + b[t]![i]!));
const heads = (row: number[], n: number, hd: number) => Array.from({ length: n }, (_, j) => row.slice(j * hd, (j + 1) * hd));
const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
/** nn.LayerNorm; `b` absent = MPT's `bias = None`. */
function ln(x: number[], w: F32, b: F32 | undefined, eps: number): number[] {
  const m = x.reduce((s, a) => s + a, 0) / x.length;
  const v = x.reduce((s, a) => s + (a - m) * (a - m), 0) / x.length;
  return x.map((a, i) => ((a - m) / Math.sqrt(v + eps)) * w.data[i]! + (b ? b.data[i]! : 0));
}
/** softmax(scores) · V over keys 0..t for query t; `score(t, s)` null = masked. */
function attendRow(t: number, score: (s: number) => number | null, v: (s: number) => number[]): number[] {
  const sc: number[] = [];
  for (let s = 0; s <= t; s++) sc.push(score(s) ?? -Infinity);
  const p = softmax(sc);
  const out = new Array<number>(v(0).length).fill(0);
  p.forEach((pv, s) => v(s).forEach((x, i) => (out[i]! += pv * x)));
  return out;
}

/** Full-sequence logits for this file's families. */
export function mptBigcodeGemma3Reference(cfg: Cfg, w: W, ids: number[]): number[][] {
  if (cfg.model_type === 'mpt') return mpt(cfg, w, ids);
  if (cfg.model_type === 'gpt_bigcode') return bigcode(cfg, w, ids);
  return gemma3(cfg, w, ids);
}

/** HF build_mpt_alibi_tensor: slopes over the next power of two, reordered when heads is not one. */
function mptSlopes(n: number, biasMax: number): number[] {
  const p2 = 2 ** Math.ceil(Math.log2(n));
  const s = Array.from({ length: p2 }, (_, i) => 1 / 2 ** ((i + 1) * (biasMax / p2)));
  return p2 === n ? s : [...s.filter((_, i) => i % 2 === 1), ...s.filter((_, i) => i % 2 === 0)].slice(0, n);
}

function mpt(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const ac = cfg.attn_config ?? {};
  const H: number = cfg.d_model,
    nh: number = cfg.n_heads,
    hd = H / nh,
    T = ids.length;
  const eps: number = cfg.layer_norm_epsilon ?? 1e-5;
  const scale: number = ac.softmax_scale ?? 1 / Math.sqrt(H / nh);
  const clip: number | null = ac.clip_qkv ?? null;
  const slopes = mptSlopes(nh, ac.alibi_bias_max ?? 8);
  // HF: alibi[h][j] = (j + 1 − max_seq_len)·slope over max_seq_len columns, the last key_length
  // of them added to every query row. The table is taken at least T long so the same formula
  // extends past max_seq_len (where HF's slice would no longer fit).
  const M = Math.max(cfg.max_seq_len ?? 2048, T);
  const alibi = (h: number, s: number) => (M - T + s + 1 - M) * slopes[h]!;
  const wte = get('transformer.wte.weight');
  let h = ids.map((id) => Array.from(wte.data.subarray(id * H, (id + 1) * H)));
  const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));
  for (let l = 0; l < cfg.n_layers; l++) {
    const p = `transformer.blocks.${l}`;
    const x = h.map((r) => ln(r, get(`${p}.norm_1.weight`), undefined, eps));
    let qkv = linear(x, get(`${p}.attn.Wqkv.weight`));
    if (clip) qkv = qkv.map((r) => r.map((v) => Math.min(clip, Math.max(-clip, v))));
    const Q = qkv.map((r) => heads(r.slice(0, H), nh, hd));
    const K = qkv.map((r) => heads(r.slice(H, 2 * H), nh, hd));
    const V = qkv.map((r) => heads(r.slice(2 * H), nh, hd));
    const ctx = Q.map((qh, t) =>
      qh.flatMap((q, j) =>
        attendRow(
          t,
          (s) => dot(q, K[s]![j]!) * scale + alibi(j, s),
          (s) => V[s]![j]!,
        ),
      ),
    );
    h = add(h, linear(ctx, get(`${p}.attn.out_proj.weight`)));
    const y = h.map((r) => ln(r, get(`${p}.norm_2.weight`), undefined, eps));
    h = add(
      h,
      linear(
        linear(y, get(`${p}.ffn.up_proj.weight`)).map((r) => r.map(gelu)),
        get(`${p}.ffn.down_proj.weight`),
      ),
    );
  }
  const fin = h.map((r) => ln(r, get('transformer.norm_f.weight'), undefined, eps));
  return linear(fin, cfg.tie_word_embeddings === false ? get('lm_head.weight') : wte);
}

function bigcode(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const H: number = cfg.n_embd,
    nh: number = cfg.n_head,
    hd = H / nh;
  const mq: boolean = cfg.multi_query ?? true;
  const eps: number = cfg.layer_norm_epsilon ?? 1e-5;
  const scale = (cfg.scale_attn_weights ?? true) ? 1 / hd ** 0.5 : 1;
  const act = ACT[cfg.activation_function ?? 'gelu_pytorch_tanh']!;
  const wte = get('transformer.wte.weight'),
    wpe = get('transformer.wpe.weight');
  let h = ids.map((id, t) => Array.from(wte.data.subarray(id * H, (id + 1) * H), (v, i) => v + wpe.data[t * H + i]!));
  const lnOf = (rows: number[][], k: string) => rows.map((r) => ln(r, get(`${k}.weight`), get(`${k}.bias`), eps));
  const lin = (rows: number[][], k: string) => linear(rows, get(`${k}.weight`), get(`${k}.bias`));
  for (let l = 0; l < cfg.n_layer; l++) {
    const p = `transformer.h.${l}`;
    const c = lin(lnOf(h, `${p}.ln_1`), `${p}.attn.c_attn`);
    // MQA: split (embed_dim, kv_dim, kv_dim); MHA: view(heads, 3·head_dim) → per head [q | k | v]
    const q = (t: number, j: number) => (mq ? c[t]!.slice(j * hd, (j + 1) * hd) : c[t]!.slice(j * 3 * hd, j * 3 * hd + hd));
    const k = (s: number, j: number) => (mq ? c[s]!.slice(H, H + hd) : c[s]!.slice(j * 3 * hd + hd, j * 3 * hd + 2 * hd));
    const v = (s: number, j: number) => (mq ? c[s]!.slice(H + hd, H + 2 * hd) : c[s]!.slice(j * 3 * hd + 2 * hd, (j + 1) * 3 * hd));
    const ctx = ids.map((_, t) =>
      Array.from({ length: nh }, (_, j) =>
        attendRow(
          t,
          (s) => dot(q(t, j), k(s, j)) * scale,
          (s) => v(s, j),
        ),
      ).flat(),
    );
    h = add(h, lin(ctx, `${p}.attn.c_proj`));
    const m = lin(lnOf(h, `${p}.ln_2`), `${p}.mlp.c_fc`).map((r) => r.map(act));
    h = add(h, lin(m, `${p}.mlp.c_proj`));
  }
  return linear(lnOf(h, 'transformer.ln_f'), cfg.tie_word_embeddings === false ? get('lm_head.weight') : wte);
}

function gemma3(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const H: number = cfg.hidden_size,
    nh: number = cfg.num_attention_heads,
    nkv: number = cfg.num_key_value_heads,
    hd: number = cfg.head_dim ?? 256,
    L: number = cfg.num_hidden_layers,
    T = ids.length;
  const eps: number = cfg.rms_norm_eps ?? 1e-6;
  const norm = (rows: number[][], k: string) => rows.map((r) => rms(r, get(k), eps, true));
  // Gemma3TextConfig: layer_types, else sliding unless (i + 1) % sliding_window_pattern == 0
  const pattern: number = cfg.sliding_window_pattern ?? 6;
  const types: string[] =
    cfg.layer_types ?? Array.from({ length: L }, (_, i) => ((i + 1) % pattern ? 'sliding_attention' : 'full_attention'));
  const W: number = cfg.sliding_window ?? 4096;
  // Gemma3TextModel: rotary_emb (rope_theta, rope_scaling) for full layers; rotary_emb_local
  // (rope_local_base_freq, rope_type default) for sliding ones
  const ropeGlobal = invFreq({ rope_theta: cfg.rope_theta ?? 1_000_000, rope_scaling: cfg.rope_scaling ?? null }, hd, T);
  const ropeLocal = invFreq({ rope_theta: cfg.rope_local_base_freq ?? 10_000, rope_scaling: { rope_type: 'default' } }, hd, T);
  const scaling = (cfg.query_pre_attn_scalar ?? 256) ** -0.5;
  const act = ACT[cfg.hidden_activation ?? 'gelu_pytorch_tanh']!;
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H), (v) => v * H ** 0.5));
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}`,
      a = `${p}.self_attn`;
    const sliding = types[l] === 'sliding_attention';
    const r = sliding ? ropeLocal : ropeGlobal;
    const x = norm(h, `${p}.input_layernorm.weight`);
    const qn = get(`${a}.q_norm.weight`),
      kn = get(`${a}.k_norm.weight`);
    const Q = linear(x, get(`${a}.q_proj.weight`)).map((row, t) => heads(row, nh, hd).map((e) => rope(rms(e, qn, eps, true), t, r)));
    const K = linear(x, get(`${a}.k_proj.weight`)).map((row, t) => heads(row, nkv, hd).map((e) => rope(rms(e, kn, eps, true), t, r)));
    const V = linear(x, get(`${a}.v_proj.weight`)).map((row) => heads(row, nkv, hd));
    // sliding_window_overlay: kv_idx > q_idx − sliding_window; the soft-cap is never passed on
    const ctx = Q.map((qh, t) =>
      qh.flatMap((q, j) => {
        const g = Math.floor(j / (nh / nkv));
        return attendRow(
          t,
          (s) => (sliding && s <= t - W ? null : dot(q, K[s]![g]!) * scaling),
          (s) => V[s]![g]!,
        );
      }),
    );
    h = add(h, norm(linear(ctx, get(`${a}.o_proj.weight`)), `${p}.post_attention_layernorm.weight`));
    const y = norm(h, `${p}.pre_feedforward_layernorm.weight`);
    const gate = linear(y, get(`${p}.mlp.gate_proj.weight`)),
      up = linear(y, get(`${p}.mlp.up_proj.weight`));
    const m = linear(
      gate.map((row, t) => row.map((z, i) => act(z) * up[t]![i]!)),
      get(`${p}.mlp.down_proj.weight`),
    );
    h = add(h, norm(m, `${p}.post_feedforward_layernorm.weight`));
  }
  let logits = linear(norm(h, 'model.norm.weight'), cfg.tie_word_embeddings === false ? get('lm_head.weight') : emb);
  const cap: number | null = cfg.final_logit_softcapping ?? null;
  if (cap) logits = logits.map((row) => row.map((z) => cap * Math.tanh(z / cap)));
  return logits;
}
