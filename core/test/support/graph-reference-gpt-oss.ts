/**
 * An independent float64 reference forward for GPT-OSS, written from huggingface/transformers
 * src/transformers/models/gpt_oss/modeling_gpt_oss.py @ 00d4b3d2142cb4ced2f51b90614b5d26bc045015
 * (eager attention with sinks, layer_types windows, GptOssTopKRouter, GptOssExperts) and
 * modeling_rope_utils.py `_compute_yarn_parameters` (with `truncate`), sharing no code with the
 * graph builder or prepare. Experts in HF's in-memory layout (`gate_up_proj [E, H, 2I]`, gate on
 * even columns; `down_proj [E, I, H]`); `dequantMxfp4Reference` turns the checkpoint's
 * blocks/scales into that (integrations/mxfp4.py `convert_moe_packed_tensors`).
 */
import { linear, rms, softmax, weightGetter } from './graph-reference';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const FP4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

/** blocks u8 `[E, R, G, 16]` + scales u8 `[E, R, G]` → `[E, G·32, R]` (dequantized, then transposed per expert as HF holds it). */
export function dequantMxfp4Reference(blocks: Uint8Array, scales: Uint8Array, E: number, R: number, G: number): F32 {
  const C = G * 32;
  const data = new Float32Array(E * R * C);
  for (let e = 0; e < E; e++)
    for (let r = 0; r < R; r++)
      for (let g = 0; g < G; g++) {
        const s = 2 ** (scales[(e * R + r) * G + g]! - 127);
        for (let j = 0; j < 16; j++) {
          const b = blocks[((e * R + r) * G + g) * 16 + j]!;
          const c = g * 32 + 2 * j;
          data[(e * C + c) * R + r] = FP4[b & 15]! * s; // low nibble → even column
          data[(e * C + c + 1) * R + r] = FP4[b >> 4]! * s;
        }
      }
  return { shape: [E, C, R], data };
}

/** HF yarn inverse frequencies and attention factor. */
function yarn(cfg: Cfg, dim: number): { f: number[]; scale: number } {
  const base: number = cfg.rope_theta ?? 150000;
  // GptOssConfig's default when config.json has no rope_scaling; null means none
  const rs =
    cfg.rope_scaling === undefined
      ? { rope_type: 'yarn', factor: 32, beta_fast: 32, beta_slow: 1, truncate: false, original_max_position_embeddings: 4096 }
      : cfg.rope_scaling;
  const plain = Array.from({ length: dim / 2 }, (_, i) => 1 / base ** ((2 * i) / dim));
  if (!rs || (rs.rope_type ?? rs.type) === 'default') return { f: plain, scale: 1 };
  const factor: number = rs.factor;
  const orig: number = rs.original_max_position_embeddings ?? cfg.max_position_embeddings;
  const corr = (rot: number) => (dim * Math.log(orig / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  let lo = corr(rs.beta_fast ?? 32);
  let hi = corr(rs.beta_slow ?? 1);
  if (rs.truncate ?? true) [lo, hi] = [Math.floor(lo), Math.ceil(hi)];
  lo = Math.max(lo, 0);
  hi = Math.min(hi, dim - 1);
  if (lo === hi) hi += 0.001;
  const f = plain.map((x, i) => {
    const extrap = 1 - Math.min(1, Math.max(0, (i - lo) / (hi - lo)));
    return (x / factor) * (1 - extrap) + x * extrap;
  });
  return { f, scale: rs.attention_factor ?? 0.1 * Math.log(factor) + 1 };
}

/** Full-sequence logits `[T][V]` of GptOssForCausalLM. */
export function gptOssReference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const opt = (k: string) => w.get(k);
  const H: number = cfg.hidden_size,
    nh: number = cfg.num_attention_heads,
    nkv: number = cfg.num_key_value_heads,
    hd: number = cfg.head_dim ?? 64;
  const E: number = cfg.num_local_experts,
    k: number = cfg.num_experts_per_tok,
    I: number = cfg.intermediate_size;
  const eps: number = cfg.rms_norm_eps ?? 1e-5;
  const limit: number = cfg.swiglu_limit ?? 7,
    alpha: number = cfg.swiglu_alpha ?? 1.702;
  const inv = yarn(cfg, hd);
  const types: string[] =
    cfg.layer_types ?? Array.from({ length: cfg.num_hidden_layers }, (_, i) => ((i + 1) % 2 ? 'sliding_attention' : 'full_attention'));
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  // _apply_rotary_emb: halves, cos/sin of length hd/2 times the attention factor
  const rot = (v: number[], t: number) => {
    const half = hd / 2;
    const out = v.slice();
    for (let i = 0; i < half; i++) {
      const c = Math.cos(t * inv.f[i]!) * inv.scale,
        s = Math.sin(t * inv.f[i]!) * inv.scale;
      out[i] = v[i]! * c - v[i + half]! * s;
      out[i + half] = v[i + half]! * c + v[i]! * s;
    }
    return out;
  };
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`,
      a = `${p}.self_attn`;
    const window: number | undefined = types[l] === 'sliding_attention' ? (cfg.sliding_window ?? 128) : undefined;
    const x = h.map((r) => rms(r, get(`${p}.input_layernorm.weight`), eps, false));
    const proj = (n: string) => linear(x, get(`${a}.${n}_proj.weight`), opt(`${a}.${n}_proj.bias`));
    const Q = proj('q').map((r, t) => Array.from({ length: nh }, (_, j) => rot(r.slice(j * hd, (j + 1) * hd), t)));
    const K = proj('k').map((r, t) => Array.from({ length: nkv }, (_, j) => rot(r.slice(j * hd, (j + 1) * hd), t)));
    const V = proj('v').map((r) => Array.from({ length: nkv }, (_, j) => r.slice(j * hd, (j + 1) * hd)));
    const sinks = get(`${a}.sinks`);
    const att = Q.map((qs, t) =>
      qs.flatMap((q, j) => {
        const kv = Math.floor(j / (nh / nkv));
        const sc = Array.from({ length: t + 1 }, (_, s) =>
          window !== undefined && t - s >= window ? -Infinity : q.reduce((acc, v, i) => acc + v * K[s]![kv]![i]!, 0) / Math.sqrt(hd),
        );
        const pr = softmax([...sc, sinks.data[j]!]).slice(0, -1); // the sink joins the softmax, then is dropped
        return Array.from({ length: hd }, (_, i) => pr.reduce((acc, pv, s) => acc + pv * V[s]![kv]![i]!, 0));
      }),
    );
    const o = linear(att, get(`${a}.o_proj.weight`), opt(`${a}.o_proj.bias`));
    h = h.map((r, t) => r.map((v, i) => v + o[t]![i]!));
    const y = h.map((r) => rms(r, get(`${p}.post_attention_layernorm.weight`), eps, false));
    const m = `${p}.mlp`;
    const logits = linear(y, get(`${m}.router.weight`), get(`${m}.router.bias`));
    const gu = get(`${m}.experts.gate_up_proj`),
      gub = get(`${m}.experts.gate_up_proj_bias`);
    const dn = get(`${m}.experts.down_proj`),
      dnb = get(`${m}.experts.down_proj_bias`);
    const out = y.map((row, t) => {
      const top = logits[t]!.map((v, e) => [v, e] as const)
        .sort((x1, x2) => x2[0] - x1[0] || x1[1] - x2[1])
        .slice(0, k);
      const gates = softmax(top.map(([v]) => v));
      const acc = new Array<number>(H).fill(0);
      top.forEach(([, e], j) => {
        const col = (c: number) => row.reduce((s, xv, i) => s + xv * gu.data[(e * H + i) * 2 * I + c]!, gub.data[e * 2 * I + c]!);
        const act = Array.from({ length: I }, (_, i) => {
          const g = Math.min(col(2 * i), limit);
          const u = Math.max(-limit, Math.min(col(2 * i + 1), limit));
          return ((u + 1) * g) / (1 + Math.exp(-g * alpha));
        });
        for (let o2 = 0; o2 < H; o2++)
          acc[o2] += gates[j]! * act.reduce((s, v, i) => s + v * dn.data[(e * I + i) * H + o2]!, dnb.data[e * H + o2]!);
      });
      void E;
      return acc;
    });
    h = h.map((r, t) => r.map((v, i) => v + out[t]![i]!));
  }
  const fin = h.map((r) => rms(r, get('model.norm.weight'), eps, false));
  return linear(fin, get(cfg.tie_word_embeddings ? 'model.embed_tokens.weight' : 'lm_head.weight'));
}

/** HF in-memory experts → the prepared canonical layout the graph takes (gate/up = even/odd columns, biases alike). */
export function preparedFromInMemory(w: W, layers: number): W {
  const out = new Map([...w].filter(([k]) => !/\.experts\./.test(k)));
  for (let l = 0; l < layers; l++) {
    const m = `model.layers.${l}.mlp`;
    const gu = w.get(`${m}.experts.gate_up_proj`)!,
      gub = w.get(`${m}.experts.gate_up_proj_bias`)!;
    const [E, H, twoI] = gu.shape as [number, number, number];
    const I = twoI / 2;
    for (const [role, parity] of [
      ['gate', 0],
      ['up', 1],
    ] as const) {
      out.set(`${m}.moe_weights.${role}`, {
        shape: [E, H, I],
        data: Float32Array.from({ length: E * H * I }, (_, n) => gu.data[Math.floor(n / I) * twoI + 2 * (n % I) + parity]!),
      });
      out.set(`${m}.moe_weights.${role}_bias`, {
        shape: [E, I],
        data: Float32Array.from({ length: E * I }, (_, n) => gub.data[Math.floor(n / I) * twoI + 2 * (n % I) + parity]!),
      });
    }
    out.set(`${m}.moe_weights.down`, w.get(`${m}.experts.down_proj`)!);
    out.set(`${m}.moe_weights.down_bias`, w.get(`${m}.experts.down_proj_bias`)!);
  }
  return out;
}
