/**
 * An independent float64 reference forward for DeepSeek-V3 / Kimi-K2, written from
 * huggingface/transformers src/transformers/models/deepseek_v3/modeling_deepseek_v3.py @
 * 00b676f8f0489b88652a31d70751cc540dd06305 and configuration_deepseek_v3.py @
 * 001f85b38fb432858ace93f18622f07cec46d874 (eager path; yarn from modeling_rope_utils.py
 * `_compute_yarn_parameters`), sharing no code with the graph builder: the raw config, the
 * original checkpoint keys (per-expert weights, dequantized FP8), the whole sequence at once
 * without a cache. Validated against the deepseek_v3 fixture's reference.json, then the judge
 * for other configurations (q_lora_rank null, rope_interleave false, other group counts, …).
 * Also random DeepSeek-V3 checkpoints in the HF key layout.
 */
import { ACT, linear, rms, rope, softmax, weightGetter } from './graph-reference';
import { rng } from './graph-random';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** DeepseekV3Config's defaults for the fields the forward reads. */
function fields(cfg: Cfg) {
  const d = (k: string, v: unknown) => (cfg[k] === undefined ? v : cfg[k]);
  return {
    nope: d('qk_nope_head_dim', 128) as number,
    ropeDim: d('qk_rope_head_dim', 64) as number,
    v: d('v_head_dim', 128) as number,
    kvRank: d('kv_lora_rank', 512) as number,
    qRank: d('q_lora_rank', 1536) as number | null,
    E: d('n_routed_experts', 256) as number,
    topK: d('num_experts_per_tok', 8) as number,
    nGroup: d('n_group', 8) as number,
    topkGroup: d('topk_group', 4) as number,
    scale: d('routed_scaling_factor', 2.5) as number,
    norm: d('norm_topk_prob', true) as boolean,
    shared: d('n_shared_experts', 1) as number,
    mi: d('moe_intermediate_size', 2048) as number,
    firstDense: d('first_k_dense_replace', 3) as number,
    interleave: d('rope_interleave', true) as boolean,
    eps: d('rms_norm_eps', 1e-6) as number,
    bias: !!cfg.attention_bias,
  };
}

/** Indices of the k largest values (ties: lower index first, as ONNX TopK). */
export function topk(v: number[], k: number): number[] {
  return v
    .map((x, i) => [x, i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1])
    .slice(0, k)
    .map(([, i]) => i);
}

/** DeepseekV3TopkRouter.forward for one token: sigmoid, biased grouped choice, unbiased weights. */
function route(f: ReturnType<typeof fields>, logits: number[], bias: F32): { idx: number[]; w: number[] } {
  const s = logits.map((x) => 1 / (1 + Math.exp(-x)));
  const choice = s.map((x, e) => x + bias.data[e]!);
  const per = f.E / f.nGroup;
  const groupScores = Array.from({ length: f.nGroup }, (_, g) => {
    const top2 = topk(choice.slice(g * per, (g + 1) * per), 2);
    return top2.reduce((a, i) => a + choice[g * per + i]!, 0);
  });
  const keep = new Set(topk(groupScores, f.topkGroup));
  const idx = topk(
    choice.map((x, e) => (keep.has(Math.floor(e / per)) ? x : 0)),
    f.topK,
  );
  let w = idx.map((e) => s[e]!);
  if (f.norm) {
    const den = w.reduce((a, b) => a + b, 0) + 1e-20;
    w = w.map((x) => x / den);
  }
  return { idx, w: w.map((x) => x * f.scale) };
}

/** HF `_compute_yarn_parameters` (inverse frequencies, cos/sin factor) or the default rope, over `dim`. */
function ropeTable(cfg: Cfg, dim: number): { f: number[]; scale: number } {
  const theta: number = cfg.rope_theta ?? 10000;
  const base = Array.from({ length: dim / 2 }, (_, i) => theta ** ((2 * i) / dim));
  const rs = cfg.rope_scaling;
  if (!rs || (rs.rope_type ?? rs.type) === 'default') return { f: base.map((b) => 1 / b), scale: 1 };
  if ((rs.rope_type ?? rs.type) !== 'yarn') throw new Error('reference: yarn or default rope only');
  const factor: number = rs.factor;
  const orig: number = rs.original_max_position_embeddings ?? cfg.max_position_embeddings;
  const getMscale = (s: number, m = 1) => (s <= 1 ? 1 : 0.1 * m * Math.log(s) + 1);
  const scale =
    rs.attention_factor ??
    (rs.mscale && rs.mscale_all_dim ? getMscale(factor, rs.mscale) / getMscale(factor, rs.mscale_all_dim) : getMscale(factor));
  const corr = (rot: number) => (dim * Math.log(orig / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
  const low = Math.max(Math.floor(corr(rs.beta_fast ?? 32)), 0);
  let high = Math.min(Math.ceil(corr(rs.beta_slow ?? 1)), dim - 1);
  if (low === high) high += 0.001;
  const f = base.map((b, i) => {
    const ramp = Math.min(1, Math.max(0, (i - low) / (high - low)));
    const extrapolationFactor = 1 - ramp;
    return (1 / (factor * b)) * (1 - extrapolationFactor) + (1 / b) * extrapolationFactor;
  });
  return { f, scale };
}

/**
 * DeepseekV3MoE (and Glm4MoeMoE, which copies it) on rows `y` of the layer's MLP `p`: per
 * token, the shared experts' output (when there are any) plus each routed expert's weighted by
 * `route` of the token's router logits.
 */
export function sharedExpertMoe(
  y: number[][],
  p: string,
  logits: number[][],
  hasShared: boolean,
  route: (logits: number[]) => { idx: number[]; w: number[] },
  mlp: (x: number[][], p: string) => number[][],
): number[][] {
  const shared = hasShared ? mlp(y, `${p}.shared_experts`) : y.map((r) => r.map(() => 0));
  return y.map((row, t) => {
    const { idx, w } = route(logits[t]!);
    const acc = shared[t]!.slice();
    idx.forEach((e, j) => {
      const out = mlp([row], `${p}.experts.${e}`)[0]!;
      for (let i = 0; i < acc.length; i++) acc[i] += w[j]! * out[i]!;
    });
    return acc;
  });
}

/** Full-sequence logits `[T][V]` of DeepseekV3ForCausalLM. */
export function deepseekV3Reference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const f = fields(cfg);
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const qk = f.nope + f.ropeDim;
  const act = ACT[cfg.hidden_act ?? 'silu']!;
  const inv = ropeTable(cfg, f.ropeDim);
  let scaling = qk ** -0.5;
  const rs = cfg.rope_scaling;
  if (rs && rs.mscale_all_dim) {
    const m = rs.factor <= 1 ? 1 : 0.1 * rs.mscale_all_dim * Math.log(rs.factor) + 1;
    scaling *= m * m;
  }
  // apply_rotary_pos_emb_interleave: view(d/2, 2).transpose(4, 3) → evens then odds, then rotate_half
  const rot = (v: number[], pos: number) => {
    const x = f.interleave ? [...v.filter((_, i) => i % 2 === 0), ...v.filter((_, i) => i % 2 === 1)] : v;
    return rope(x, pos, inv);
  };
  const lin = (x: number[][], k: string, bias = false) => linear(x, get(`${k}.weight`), bias ? get(`${k}.bias`) : undefined);
  const mlp = (x: number[][], p: string) => {
    const g = lin(x, `${p}.gate_proj`);
    const u = lin(x, `${p}.up_proj`);
    return lin(
      g.map((r, t) => r.map((z, i) => act(z) * u[t]![i]!)),
      `${p}.down_proj`,
    );
  };
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    const x = h.map((r) => rms(r, get(`${p}.input_layernorm.weight`), f.eps, false));
    // DeepseekV3RMSNorm(q_lora_rank) / (kv_lora_rank): the default eps 1e-6, not rms_norm_eps
    const qs =
      f.qRank === null
        ? lin(x, `${a}.q_proj`)
        : lin(
            lin(x, `${a}.q_a_proj`, f.bias).map((r) => rms(r, get(`${a}.q_a_layernorm.weight`), 1e-6, false)),
            `${a}.q_b_proj`,
          );
    const ckv = lin(x, `${a}.kv_a_proj_with_mqa`, f.bias);
    const kvb = lin(
      ckv.map((r) => rms(r.slice(0, f.kvRank), get(`${a}.kv_a_layernorm.weight`), 1e-6, false)),
      `${a}.kv_b_proj`,
    );
    const Q = qs.map((r, t) =>
      Array.from({ length: nh }, (_, j) => {
        const e = r.slice(j * qk, (j + 1) * qk);
        return [...e.slice(0, f.nope), ...rot(e.slice(f.nope), t)];
      }),
    );
    const K = ckv.map((r, t) => {
      const kRot = rot(r.slice(f.kvRank), t);
      return Array.from({ length: nh }, (_, j) => [...kvb[t]!.slice(j * (f.nope + f.v), j * (f.nope + f.v) + f.nope), ...kRot]);
    });
    const V = kvb.map((r) => Array.from({ length: nh }, (_, j) => r.slice(j * (f.nope + f.v) + f.nope, (j + 1) * (f.nope + f.v))));
    const att = Q.map((qh, t) =>
      qh.flatMap((q, j) => {
        const pr = softmax(Array.from({ length: t + 1 }, (_, s) => q.reduce((acc, z, i) => acc + z * K[s]![j]![i]!, 0) * scaling));
        return Array.from({ length: f.v }, (_, i) => pr.reduce((acc, pv, s) => acc + pv * V[s]![j]![i]!, 0));
      }),
    );
    const o = lin(att, `${a}.o_proj`, f.bias);
    h = h.map((r, t) => r.map((z, i) => z + o[t]![i]!));
    const y = h.map((r) => rms(r, get(`${p}.post_attention_layernorm.weight`), f.eps, false));
    let m: number[][];
    if (l < f.firstDense) m = mlp(y, `${p}.mlp`);
    else {
      const bias = get(`${p}.mlp.gate.e_score_correction_bias`);
      m = sharedExpertMoe(y, `${p}.mlp`, lin(y, `${p}.mlp.gate`), f.shared > 0, (l) => route(f, l, bias), mlp);
    }
    h = h.map((r, t) => r.map((z, i) => z + m[t]![i]!));
  }
  const fin = h.map((r) => rms(r, get('model.norm.weight'), f.eps, false));
  return linear(fin, get(cfg.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'));
}

/** A random DeepSeek-V3 checkpoint with HF's keys (bf16-representable values; MTP layers not included). */
export function randomDeepseekCheckpoint(cfg: Cfg, seed: number): W {
  const r = rng(seed);
  const f = fields(cfg);
  const w: W = new Map();
  const bf16 = (x: number) => {
    const u = new Uint32Array(new Float32Array([x]).buffer);
    u[0] = ((u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) >>> 16) << 16;
    return new Float32Array(u.buffer)[0]!;
  };
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => bf16(center + scale * r())) });
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const qk = f.nope + f.ropeDim;
  const linear = (k: string, out: number, inp: number, bias = false) => {
    put(`${k}.weight`, [out, inp], 1 / Math.sqrt(inp));
    if (bias) put(`${k}.bias`, [out], 0.1);
  };
  const gated = (p: string, inter: number) => {
    linear(`${p}.gate_proj`, inter, H);
    linear(`${p}.up_proj`, inter, H);
    linear(`${p}.down_proj`, H, inter);
  };
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    put(`${p}.input_layernorm.weight`, [H], 0.1, 1);
    put(`${p}.post_attention_layernorm.weight`, [H], 0.1, 1);
    if (f.qRank === null) linear(`${a}.q_proj`, nh * qk, H);
    else {
      linear(`${a}.q_a_proj`, f.qRank, H, f.bias);
      put(`${a}.q_a_layernorm.weight`, [f.qRank], 0.1, 1);
      linear(`${a}.q_b_proj`, nh * qk, f.qRank);
    }
    linear(`${a}.kv_a_proj_with_mqa`, f.kvRank + f.ropeDim, H, f.bias);
    put(`${a}.kv_a_layernorm.weight`, [f.kvRank], 0.1, 1);
    linear(`${a}.kv_b_proj`, nh * (f.nope + f.v), f.kvRank);
    linear(`${a}.o_proj`, H, nh * f.v, f.bias);
    if (l < f.firstDense) {
      gated(`${p}.mlp`, cfg.intermediate_size);
      continue;
    }
    put(`${p}.mlp.gate.weight`, [f.E, H], 1);
    w.set(`${p}.mlp.gate.e_score_correction_bias`, { shape: [f.E], data: Float32Array.from({ length: f.E }, () => 0.3 * r()) });
    for (let e = 0; e < f.E; e++) gated(`${p}.mlp.experts.${e}`, f.mi);
    if (f.shared > 0) gated(`${p}.mlp.shared_experts`, f.mi * f.shared);
  }
  put('model.norm.weight', [H], 0.1, 1);
  if (!cfg.tie_word_embeddings) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
  return w;
}
