/**
 * An independent float64 reference forward for GLM-4-MoE, written from
 * huggingface/transformers src/transformers/models/glm4_moe/modeling_glm4_moe.py @
 * 000c33fdfde12e1ffafbfcdb3c926df5727a00b6 (eager path), sharing no code with the graph
 * builder: original checkpoint keys (per-expert weights), whole sequence, no cache. Validated
 * against the glm4_moe fixture's reference.json, then the judge for other GLM configurations
 * (one group, no q/k norm, no renormalization, several shared experts, more dense layers).
 * Also random GLM-4-MoE checkpoints in the HF key layout.
 */
import { ACT, linear, rms, rope, softmax, weightGetter } from './graph-reference';
import { rng } from './graph-random';
import { sharedExpertMoe, topk } from './graph-reference-deepseek';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Glm4MoeMoE.route_tokens_to_experts for one token's router logits. */
function route(cfg: Cfg, logits: number[], bias: F32): { idx: number[]; w: number[] } {
  const E: number = cfg.n_routed_experts;
  const G: number = cfg.n_group ?? 1;
  const s = logits.map((x) => 1 / (1 + Math.exp(-x)));
  const choice = s.map((x, e) => x + bias.data[e]!);
  const per = E / G;
  const groupScores = Array.from({ length: G }, (_, g) => {
    const [a, b] = topk(choice.slice(g * per, (g + 1) * per), 2);
    return choice[g * per + a!]! + choice[g * per + b!]!;
  });
  const keep = new Set(topk(groupScores, cfg.topk_group ?? 1));
  const masked = choice.map((x, e) => (keep.has(Math.floor(e / per)) ? x : 0)); // masked_fill(~mask, 0.0)
  const idx = topk(masked, cfg.num_experts_per_tok);
  let w = idx.map((e) => s[e]!);
  if (cfg.norm_topk_prob ?? true) {
    const d = w.reduce((a, b) => a + b, 0) + 1e-20;
    w = w.map((x) => x / d);
  }
  return { idx, w: w.map((x) => x * (cfg.routed_scaling_factor ?? 1)) };
}

/** Full-sequence logits `[T][V]` of Glm4MoeForCausalLM. */
export function glm4MoeReference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const opt = (k: string) => w.get(k);
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const nkv: number = cfg.num_key_value_heads ?? nh;
  const hd: number = cfg.head_dim ?? H / nh;
  const eps: number = cfg.rms_norm_eps ?? 1e-5;
  const act = ACT[cfg.hidden_act ?? 'silu']!;
  const rotary = Math.floor(hd * (cfg.partial_rotary_factor ?? 0.5));
  const theta: number = cfg.rope_theta ?? 10000;
  const inv = { f: Array.from({ length: rotary / 2 }, (_, i) => 1 / theta ** ((2 * i) / rotary)), scale: 1 };
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  const mlp = (x: number[][], p: string) => {
    const g = linear(x, get(`${p}.gate_proj.weight`));
    const u = linear(x, get(`${p}.up_proj.weight`));
    return linear(
      g.map((r, t) => r.map((z, i) => act(z) * u[t]![i]!)),
      get(`${p}.down_proj.weight`),
    );
  };
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    const x = h.map((r) => rms(r, get(`${p}.input_layernorm.weight`), eps, false));
    const proj = (n: string) => linear(x, get(`${a}.${n}_proj.weight`), opt(`${a}.${n}_proj.bias`));
    const heads = (rows: number[][], n: number, norm?: string) =>
      rows.map((r, t) =>
        Array.from({ length: n }, (_, j) => {
          let e = r.slice(j * hd, (j + 1) * hd);
          if (norm && cfg.use_qk_norm) e = rms(e, get(norm), eps, false);
          return rope(e, t, inv); // rotate_half on the first `rotary` dims, the rest pass through
        }),
      );
    const Q = heads(proj('q'), nh, `${a}.q_norm.weight`);
    const K = heads(proj('k'), nkv, `${a}.k_norm.weight`);
    const V = proj('v').map((r) => Array.from({ length: nkv }, (_, j) => r.slice(j * hd, (j + 1) * hd)));
    const att = Q.map((qs, t) =>
      qs.flatMap((q, j) => {
        const kv = Math.floor(j / (nh / nkv));
        const pr = softmax(Array.from({ length: t + 1 }, (_, s) => q.reduce((acc, v, i) => acc + v * K[s]![kv]![i]!, 0) / Math.sqrt(hd)));
        return Array.from({ length: hd }, (_, i) => pr.reduce((acc, pv, s) => acc + pv * V[s]![kv]![i]!, 0));
      }),
    );
    const o = linear(att, get(`${a}.o_proj.weight`)); // o_proj has no bias
    h = h.map((r, t) => r.map((v, i) => v + o[t]![i]!));
    const y = h.map((r) => rms(r, get(`${p}.post_attention_layernorm.weight`), eps, false));
    let m: number[][];
    if (l < (cfg.first_k_dense_replace ?? 1)) {
      m = mlp(y, `${p}.mlp`);
    } else {
      const bias = get(`${p}.mlp.gate.e_score_correction_bias`);
      const logits = linear(y, get(`${p}.mlp.gate.weight`));
      m = sharedExpertMoe(y, `${p}.mlp`, logits, (cfg.n_shared_experts ?? 1) > 0, (l) => route(cfg, l, bias), mlp);
    }
    h = h.map((r, t) => r.map((v, i) => v + m[t]![i]!));
  }
  const fin = h.map((r) => rms(r, get('model.norm.weight'), eps, false));
  return linear(fin, get(cfg.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'));
}

function bf16(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer);
  u[0] = ((u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) >>> 16) << 16;
  return f[0]!;
}

/** A random GLM-4-MoE checkpoint with HF's keys (per-expert experts.N.*, shared_experts, gate + e_score_correction_bias). */
export function randomGlmCheckpoint(cfg: Cfg, seed: number): W {
  const r = rng(seed);
  const w: W = new Map();
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => bf16(center + scale * r())) });
  const H = cfg.hidden_size,
    nh = cfg.num_attention_heads,
    nkv = cfg.num_key_value_heads ?? nh,
    hd = cfg.head_dim ?? H / nh;
  const mi = cfg.moe_intermediate_size,
    E = cfg.n_routed_experts;
  const gated = (p: string, inter: number) => {
    put(`${p}.gate_proj.weight`, [inter, H], 1 / Math.sqrt(H));
    put(`${p}.up_proj.weight`, [inter, H], 1 / Math.sqrt(H));
    put(`${p}.down_proj.weight`, [H, inter], 1 / Math.sqrt(inter));
  };
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`,
      a = `${p}.self_attn`;
    put(`${p}.input_layernorm.weight`, [H], 0.1, 1);
    put(`${p}.post_attention_layernorm.weight`, [H], 0.1, 1);
    for (const [n, out] of [
      ['q', nh * hd],
      ['k', nkv * hd],
      ['v', nkv * hd],
    ] as const) {
      put(`${a}.${n}_proj.weight`, [out, H], 1 / Math.sqrt(H));
      if (cfg.attention_bias) put(`${a}.${n}_proj.bias`, [out], 0.1);
    }
    put(`${a}.o_proj.weight`, [H, nh * hd], 1 / Math.sqrt(nh * hd));
    if (cfg.use_qk_norm) {
      put(`${a}.q_norm.weight`, [hd], 0.1, 1);
      put(`${a}.k_norm.weight`, [hd], 0.1, 1);
    }
    if (l < (cfg.first_k_dense_replace ?? 1)) {
      gated(`${p}.mlp`, cfg.intermediate_size);
      continue;
    }
    put(`${p}.mlp.gate.weight`, [E, H], 1);
    w.set(`${p}.mlp.gate.e_score_correction_bias`, { shape: [E], data: Float32Array.from({ length: E }, () => 0.3 * r()) }); // F32 in HF
    for (let e = 0; e < E; e++) gated(`${p}.mlp.experts.${e}`, mi);
    if ((cfg.n_shared_experts ?? 1) > 0) gated(`${p}.mlp.shared_experts`, mi * (cfg.n_shared_experts ?? 1));
  }
  put('model.norm.weight', [H], 0.1, 1);
  if (!cfg.tie_word_embeddings) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
  return w;
}
