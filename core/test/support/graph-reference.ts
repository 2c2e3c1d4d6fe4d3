/**
 * An independent float64 reference forward for the causal LMs, written straight from the HF
 * modeling files and sharing no code with the graph builder: it reads the raw config.json and
 * the *original* checkpoint keys (per-expert MoE weights, not the prepared layout), and runs
 * the whole sequence at once without a cache (Gemma-2, Granite, OLMo-2, Falcon and CodeGen in
 * graph-reference-dense.ts; Phi, StarCoder2 and GPT-J in graph-reference-classic.ts; a family with
 * its own test file in `families/<name>.ts`, found by family-tests.ts). Tests validate it against the fixtures'
 * reference.json first, then use it as the judge for families without fixtures.
 */
import { CLASSIC_TYPES, classicReferenceForward } from './graph-reference-classic';
import { DENSE_TYPES, denseReferenceForward } from './graph-reference-dense';
import { deepseekV3Reference } from './graph-reference-deepseek';
import { glm4MoeReference } from './graph-reference-glm';
import { gptOssReference } from './graph-reference-gpt-oss';
import { MPT_BIGCODE_GEMMA3_TYPES, mptBigcodeGemma3Reference } from './graph-reference-mpt-bigcode-gemma3';
import { grok1Reference } from './graph-reference-grok1';
import { llama4Reference } from './graph-reference-llama4';
import { qwen35Reference } from './graph-reference-qwen35';
import { familyOfConfig } from '../../src/export/families/registry';
import { familyTestOf } from './family-tests';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The tensor `prefix + k` of `w`; a missing one throws, naming it. */
export function weightGetter(w: W, prefix = ''): (k: string) => F32 {
  return (k) => {
    const t = w.get(prefix + k);
    if (!t) throw new Error(`reference: missing ${prefix + k}`);
    return t;
  };
}

/** y[n] = x[n]·Wᵀ (+ b), W `[out, in]` (or `[in, out]` when conv1d). */
export function linear(x: number[][], w: F32, b?: F32, conv1d = false): number[][] {
  const [r, c] = w.shape as [number, number];
  const out = conv1d ? c : r;
  const inp = conv1d ? r : c;
  return x.map((row) => {
    const y = new Array<number>(out).fill(0);
    for (let o = 0; o < out; o++) {
      let s = b ? b.data[o]! : 0;
      for (let i = 0; i < inp; i++) s += row[i]! * (conv1d ? w.data[i * c + o]! : w.data[o * c + i]!);
      y[o] = s;
    }
    return y;
  });
}

export function rms(x: number[], w: F32, eps: number, plusOne: boolean): number[] {
  const v = x.reduce((s, a) => s + a * a, 0) / x.length;
  const k = 1 / Math.sqrt(v + eps);
  return x.map((a, i) => a * k * (plusOne ? 1 + w.data[i]! : w.data[i]!));
}

export function layerNorm(x: number[], w: F32, b: F32, eps: number): number[] {
  const m = x.reduce((s, a) => s + a, 0) / x.length;
  const v = x.reduce((s, a) => s + (a - m) * (a - m), 0) / x.length;
  return x.map((a, i) => ((a - m) / Math.sqrt(v + eps)) * w.data[i]! + b.data[i]!);
}

export const ACT: Record<string, (x: number) => number> = {
  silu: (x) => x / (1 + Math.exp(-x)),
  gelu_new: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
  gelu_pytorch_tanh: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
};

export function softmax(v: number[]): number[] {
  const m = Math.max(...v);
  const e = v.map((a) => Math.exp(a - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((a) => a / s);
}

/** HF inverse frequencies with rope_scaling default/linear/llama3/longrope, and the cos/sin scale. */
export function invFreq(cfg: Cfg, dim: number, seqLen: number): { f: number[]; scale: number } {
  const theta = cfg.rope_theta ?? 10000;
  const rs = cfg.rope_scaling;
  const type = rs ? (rs.rope_type ?? rs.type) : 'default';
  if (type === 'longrope' || type === 'su') {
    const orig = cfg.original_max_position_embeddings ?? cfg.max_position_embeddings;
    const factor = cfg.max_position_embeddings / orig;
    const ext: number[] = seqLen > orig ? rs.long_factor : rs.short_factor;
    const scale = factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(orig));
    return { f: ext.map((e, i) => 1 / (e * theta ** ((2 * i) / dim))), scale };
  }
  return { f: invFreqPlain(cfg, dim, theta, rs, type), scale: 1 };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function invFreqPlain(cfg: Cfg, dim: number, theta: number, rs: any, type: string): number[] {
  void cfg;
  const f = Array.from({ length: dim / 2 }, (_, i) => 1 / theta ** ((2 * i) / dim));
  if (type === 'default') return f;
  if (type === 'linear') return f.map((x) => x / rs.factor);
  if (type === 'llama3') {
    const { factor, low_freq_factor: lo, high_freq_factor: hi, original_max_position_embeddings: old } = rs;
    return f.map((x) => {
      const wl = (2 * Math.PI) / x;
      if (wl < old / hi) return x;
      if (wl > old / lo) return x / factor;
      const s = (old / wl - lo) / (hi - lo);
      return (1 - s) * (x / factor) + s * x;
    });
  }
  throw new Error(`reference: rope type ${type}`);
}

/** rotate_half RoPE on the first 2·inv.length dims of `v` (the rest pass through). */
export function rope(v: number[], pos: number, r: { f: number[]; scale: number }): number[] {
  const half = r.f.length;
  const out = v.slice();
  for (let i = 0; i < half; i++) {
    const a = pos * r.f[i]!;
    const c = Math.cos(a) * r.scale;
    const s = Math.sin(a) * r.scale;
    const x1 = v[i]!;
    const x2 = v[i + half]!;
    out[i] = x1 * c - x2 * s;
    out[i + half] = x2 * c + x1 * s;
  }
  return out;
}

type Forward = (cfg: Cfg, w: W, ids: number[]) => number[][];

/**
 * Reference forwards by the registry row's model_type (a config's alias or `architectures`
 * finds its row). Families with a test file (`families/<name>.ts`, family-tests.ts) are found
 * there first; the Llama-like families and GPT-2 share {@link llamaLikeReference}, the default.
 */
let forwards: Readonly<Record<string, Forward>> | undefined;
// built on first use, not at import: the per-family reference modules import this one's helpers
// (graph-reference-dense.ts ↔ graph-reference.ts), so a table made at import time would read their
// exports before they exist when one of them is imported first (encoder-reference.ts does)
const FORWARDS = (): Readonly<Record<string, Forward>> =>
  (forwards ??= {
    ...Object.fromEntries([...DENSE_TYPES].map((t) => [t, denseReferenceForward])),
    ...Object.fromEntries([...CLASSIC_TYPES].map((t) => [t, classicReferenceForward])),
    ...Object.fromEntries([...MPT_BIGCODE_GEMMA3_TYPES].map((t) => [t, mptBigcodeGemma3Reference])),
    glm4_moe: glm4MoeReference,
    gpt_oss: gptOssReference,
    deepseek_v3: deepseekV3Reference,
    'grok-1': grok1Reference,
    llama4_text: llama4Reference,
    llama4: llama4Reference,
    qwen3_5_moe_text: qwen35Reference,
  });

/** Full-sequence logits `[T][V]` (row t predicts token t+1) for `ids`. */
export function referenceForward(cfg: Cfg, w: W, ids: number[]): number[][] {
  const own = familyTestOf(cfg);
  if (own) return own.reference(cfg, w, ids);
  const row = familyOfConfig(cfg);
  return ((row && FORWARDS()[row.modelType]) ?? llamaLikeReference)(cfg, w, ids);
}

/** Llama, Mistral, Qwen2/3, Phi-3, Gemma, Mixtral, Qwen3-MoE and GPT-2 (modeling_llama.py and kin). */
function llamaLikeReference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const opt = (k: string) => w.get(k);
  const type: string = cfg.model_type;
  const gpt2 = type === 'gpt2';
  const H: number = gpt2 ? cfg.n_embd : cfg.hidden_size;
  const nh: number = gpt2 ? cfg.n_head : cfg.num_attention_heads;
  const nkv: number = gpt2 ? nh : (cfg.num_key_value_heads ?? nh);
  const hd: number = cfg.head_dim ?? (type === 'gemma' ? 256 : type.startsWith('qwen3') ? 128 : H / nh);
  const L: number = gpt2 ? cfg.n_layer : cfg.num_hidden_layers;
  const eps: number = gpt2 ? (cfg.layer_norm_epsilon ?? 1e-5) : (cfg.rms_norm_eps ?? 1e-6);
  const pre = gpt2 ? (w.has('wte.weight') ? '' : 'transformer.') : 'model.';
  const act =
    ACT[
      gpt2
        ? (cfg.activation_function ?? 'gelu_new')
        : type === 'gemma'
          ? (cfg.hidden_activation ?? 'gelu_pytorch_tanh')
          : (cfg.hidden_act ?? 'silu')
    ]!;
  const T = ids.length;
  const emb = get(gpt2 ? `${pre}wte.weight` : 'model.embed_tokens.weight');
  let h = ids.map((id, t) => {
    const row = Array.from(emb.data.subarray(id * H, (id + 1) * H));
    if (gpt2) {
      const p = get(`${pre}wpe.weight`);
      return row.map((v, i) => v + p.data[t * H + i]!);
    }
    return type === 'gemma' ? row.map((v) => v * Math.sqrt(H)) : row;
  });
  const rotary = Math.floor(hd * (cfg.partial_rotary_factor ?? 1));
  const inv = gpt2 ? { f: [], scale: 1 } : invFreq(cfg, rotary, T);
  const normRow = (x: number[], p: string) =>
    gpt2 ? layerNorm(x, get(`${p}.weight`), get(`${p}.bias`), eps) : rms(x, get(`${p}.weight`), eps, type === 'gemma');
  const window: number | undefined = ['mistral', 'mixtral', 'phi3'].includes(type) ? (cfg.sliding_window ?? undefined) : undefined;

  for (let l = 0; l < L; l++) {
    const p = gpt2 ? `${pre}h.${l}` : `model.layers.${l}`;
    const x = h.map((r) => normRow(r, gpt2 ? `${p}.ln_1` : `${p}.input_layernorm`));
    let q: number[][], k: number[][], v: number[][];
    if (gpt2) {
      const qkv = linear(x, get(`${p}.attn.c_attn.weight`), get(`${p}.attn.c_attn.bias`), true);
      q = qkv.map((r) => r.slice(0, H));
      k = qkv.map((r) => r.slice(H, 2 * H));
      v = qkv.map((r) => r.slice(2 * H));
    } else if (type === 'phi3') {
      const qkv = linear(x, get(`${p}.self_attn.qkv_proj.weight`));
      q = qkv.map((r) => r.slice(0, nh * hd));
      k = qkv.map((r) => r.slice(nh * hd, (nh + nkv) * hd));
      v = qkv.map((r) => r.slice((nh + nkv) * hd));
    } else {
      const a = `${p}.self_attn`;
      q = linear(x, get(`${a}.q_proj.weight`), opt(`${a}.q_proj.bias`));
      k = linear(x, get(`${a}.k_proj.weight`), opt(`${a}.k_proj.bias`));
      v = linear(x, get(`${a}.v_proj.weight`), opt(`${a}.v_proj.bias`));
    }
    const headOf = (r: number[], j: number) => r.slice(j * hd, (j + 1) * hd);
    // per-token, per-head transforms: qk-norm (qwen3), rope
    const prep = (rows: number[][], n: number, normKey?: string) =>
      rows.map((r, t) =>
        Array.from({ length: n }, (_, j) => {
          let e = headOf(r, j);
          if (normKey) e = rms(e, get(normKey), eps, false);
          return gpt2 ? e : rope(e, t, inv);
        }),
      );
    const qk = type.startsWith('qwen3');
    const Q = prep(q, nh, qk ? `${p}.self_attn.q_norm.weight` : undefined);
    const K = prep(k, nkv, qk ? `${p}.self_attn.k_norm.weight` : undefined);
    const V = v.map((r) => Array.from({ length: nkv }, (_, j) => headOf(r, j)));
    const att = Q.map((heads, t) =>
      heads.flatMap((qh, j) => {
        const kvh = Math.floor(j / (nh / nkv));
        const scores: number[] = [];
        for (let s = 0; s <= t; s++) {
          if (window !== undefined && t - s >= window) {
            scores.push(-Infinity);
            continue;
          }
          let d = 0;
          for (let i = 0; i < hd; i++) d += qh[i]! * K[s]![kvh]![i]!;
          scores.push(d / Math.sqrt(hd));
        }
        const pr = softmax(scores);
        return Array.from({ length: hd }, (_, i) => pr.reduce((acc, pv, s) => acc + pv * V[s]![kvh]![i]!, 0));
      }),
    );
    const o = gpt2
      ? linear(att, get(`${p}.attn.c_proj.weight`), get(`${p}.attn.c_proj.bias`), true)
      : linear(att, get(`${p}.self_attn.o_proj.weight`), opt(`${p}.self_attn.o_proj.bias`));
    h = h.map((r, t) => r.map((a, i) => a + o[t]![i]!));
    const y = h.map((r) => normRow(r, gpt2 ? `${p}.ln_2` : `${p}.post_attention_layernorm`));
    let m: number[][];
    if (gpt2) {
      m = linear(
        linear(y, get(`${p}.mlp.c_fc.weight`), get(`${p}.mlp.c_fc.bias`), true).map((r) => r.map(act)),
        get(`${p}.mlp.c_proj.weight`),
        get(`${p}.mlp.c_proj.bias`),
        true,
      );
    } else if (type === 'phi3') {
      const gu = linear(y, get(`${p}.mlp.gate_up_proj.weight`));
      const I = gu[0]!.length / 2;
      m = linear(
        gu.map((r) => r.slice(0, I).map((g, i) => act(g) * r[I + i]!)),
        get(`${p}.mlp.down_proj.weight`),
      );
    } else if (w.has(`${p}.block_sparse_moe.gate.weight`) || w.has(`${p}.mlp.gate.weight`)) {
      const mix = type === 'mixtral';
      const mp = mix ? `${p}.block_sparse_moe` : `${p}.mlp`;
      const names = mix ? ['w1', 'w3', 'w2'] : ['gate_proj', 'up_proj', 'down_proj'];
      const K = cfg.num_experts_per_tok as number;
      const probs = linear(y, get(`${mp}.gate.weight`)).map(softmax);
      m = y.map((row, t) => {
        const order = probs[t]!.map((pv, e) => [pv, e] as const)
          .sort((a, b) => b[0] - a[0])
          .slice(0, K);
        const norm = mix || cfg.norm_topk_prob ? order.reduce((s, [pv]) => s + pv, 0) : 1;
        const out = new Array<number>(H).fill(0);
        for (const [pv, e] of order) {
          const ex = `${mp}.experts.${e}`;
          const g = linear([row], get(`${ex}.${names[0]}.weight`))[0]!;
          const u = linear([row], get(`${ex}.${names[1]}.weight`))[0]!;
          const d = linear([g.map((a, i) => act(a) * u[i]!)], get(`${ex}.${names[2]}.weight`))[0]!;
          d.forEach((a, i) => (out[i]! += a * (pv / norm)));
        }
        return out;
      });
    } else {
      const g = linear(y, get(`${p}.mlp.gate_proj.weight`), opt(`${p}.mlp.gate_proj.bias`));
      const u = linear(y, get(`${p}.mlp.up_proj.weight`), opt(`${p}.mlp.up_proj.bias`));
      m = linear(
        g.map((r, t) => r.map((a, i) => act(a) * u[t]![i]!)),
        get(`${p}.mlp.down_proj.weight`),
        opt(`${p}.mlp.down_proj.bias`),
      );
    }
    h = h.map((r, t) => r.map((a, i) => a + m[t]![i]!));
  }
  const fin = h.map((r) => normRow(r, gpt2 ? `${pre}ln_f` : 'model.norm'));
  const tied = gpt2 ? (cfg.tie_word_embeddings ?? true) : (cfg.tie_word_embeddings ?? type === 'gemma');
  return linear(fin, tied ? emb : get('lm_head.weight'));
}
