/**
 * An independent float64 reference forward for Grok-1, written from QEfficient's
 * `QEfficient/transformers/models/grok_1/modeling_grok1.py` (quic/efficient-transformers
 * 05274da408f4d7d7138dc51c2cc29e0c5187ec8d) and the hpcai-tech remote code it rewrites (RMSNorm
 * `scale`, `MoeMLP`, `MoeBlock`), sharing no code with the graph builder: original per-expert
 * keys, whole sequence, no cache. Where QEfficient's MoE block hard-codes two experts this
 * takes `num_experts_per_tok`, as the remote code does. Also random Grok-1 checkpoints.
 */
import { linear, softmax, weightGetter } from './graph-reference';
import { actFn } from './graph-reference-dense';
import { bf16, rng } from './graph-random';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** hpcai-tech RMSNorm: x · rsqrt(mean(x²) + eps) · scale. */
function rmsScale(x: number[], scale: F32, eps: number): number[] {
  const k = 1 / Math.sqrt(x.reduce((s, a) => s + a * a, 0) / x.length + eps);
  return x.map((a, i) => a * k * scale.data[i]!);
}

/** rotate_half rope with base 10000 over the whole head. */
function rotateHalf(v: number[], pos: number, theta: number): number[] {
  const d = v.length;
  const half = d / 2;
  const out = v.slice();
  for (let i = 0; i < half; i++) {
    const a = pos / theta ** ((2 * i) / d);
    out[i] = v[i]! * Math.cos(a) - v[i + half]! * Math.sin(a);
    out[i + half] = v[i + half]! * Math.cos(a) + v[i]! * Math.sin(a);
  }
  return out;
}

/** Full-sequence logits `[T][V]` of Grok1ModelForCausalLM. */
export function grok1Reference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const nkv: number = cfg.num_key_value_heads;
  const hd = H / nh;
  const eps: number = cfg.rms_norm_eps ?? 1e-5;
  const K: number = cfg.num_experts_per_tok;
  const cap: number = cfg.max_attn_value;
  const gelu = actFn('gelu');
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H), (v) => v * cfg.embedding_multiplier_scale));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const x = h.map((r) => rmsScale(r, get(`${p}.pre_attn_norm.scale`), eps));
    const q = linear(x, get(`${p}.attn.q_proj.weight`));
    const k = linear(x, get(`${p}.attn.k_proj.weight`));
    const v = linear(x, get(`${p}.attn.v_proj.weight`));
    const head = (r: number[], j: number) => r.slice(j * hd, (j + 1) * hd);
    const att = q.map((qr, t) =>
      Array.from({ length: nh }, (_, j) => {
        const kv = Math.floor(j / (nh / nkv));
        const qh = rotateHalf(head(qr, j), t, cfg.rope_theta ?? 10000);
        const scores = Array.from({ length: t + 1 }, (_, s) => {
          const kh = rotateHalf(head(k[s]!, kv), s, cfg.rope_theta ?? 10000);
          const d = qh.reduce((acc, a, i) => acc + a * kh[i]!, 0) * cfg.attn_output_multiplier;
          return cap * Math.tanh(d / cap);
        });
        const pr = softmax(scores);
        return Array.from({ length: hd }, (_, i) => pr.reduce((acc, pv, s) => acc + pv * head(v[s]!, kv)[i]!, 0));
      }).flat(),
    );
    const o = linear(att, get(`${p}.attn.o_proj.weight`));
    h = h.map((r, t) => {
      const n = rmsScale(o[t]!, get(`${p}.post_attn_norm.scale`), eps);
      return r.map((a, i) => a + n[i]!);
    });
    const y = h.map((r) => rmsScale(r, get(`${p}.pre_moe_norm.scale`), eps));
    const m = `${p}.moe_block`;
    const probs = linear(y, get(`${m}.gate.weight`)).map(softmax);
    h = h.map((r, t) => {
      const chosen = probs[t]!.map((pv, e) => [pv, e] as const)
        .sort((a, b) => b[0] - a[0] || a[1] - b[1])
        .slice(0, K);
      const out = new Array<number>(H).fill(0);
      for (const [pv, e] of chosen) {
        const ex = `${m}.experts.${e}`;
        const g = linear([y[t]!], get(`${ex}.linear.weight`))[0]!;
        const u = linear([y[t]!], get(`${ex}.linear_v.weight`))[0]!;
        const d = linear([g.map((a, i) => gelu(a) * u[i]!)], get(`${ex}.linear_1.weight`))[0]!;
        d.forEach((a, i) => (out[i]! += pv * a));
      }
      const n = rmsScale(out, get(`${p}.post_moe_norm.scale`), eps);
      return r.map((a, i) => a + n[i]!);
    });
  }
  const fin = h.map((r) => rmsScale(r, get('model.norm.scale'), eps));
  const head = w.get('lm_head.weight') && cfg.tie_word_embeddings === false ? get('lm_head.weight') : emb;
  return linear(fin, head).map((r) => r.map((a) => a * cfg.output_multiplier_scale));
}

/** A random Grok-1 checkpoint with the hpcai-tech keys (per-expert `linear`/`linear_v`/`linear_1`, norms' `scale`, no `lm_head`). */
export function randomGrok1Checkpoint(cfg: Cfg, seed: number): W {
  const r = rng(seed);
  const w: W = new Map();
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => bf16(center + scale * r())) });
  const H: number = cfg.hidden_size;
  const I: number = cfg.intermediate_size;
  const hd = H / cfg.num_attention_heads;
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    for (const n of ['pre_attn_norm', 'post_attn_norm', 'pre_moe_norm', 'post_moe_norm']) put(`${p}.${n}.scale`, [H], 0.1, 1);
    put(`${p}.attn.q_proj.weight`, [H, H], 1 / Math.sqrt(H));
    put(`${p}.attn.k_proj.weight`, [cfg.num_key_value_heads * hd, H], 1 / Math.sqrt(H));
    put(`${p}.attn.v_proj.weight`, [cfg.num_key_value_heads * hd, H], 1 / Math.sqrt(H));
    put(`${p}.attn.o_proj.weight`, [H, H], 1 / Math.sqrt(H));
    put(`${p}.moe_block.gate.weight`, [cfg.num_experts, H], 1);
    for (let e = 0; e < cfg.num_experts; e++) {
      const ex = `${p}.moe_block.experts.${e}`;
      put(`${ex}.linear.weight`, [I, H], 1 / Math.sqrt(H));
      put(`${ex}.linear_v.weight`, [I, H], 1 / Math.sqrt(H));
      put(`${ex}.linear_1.weight`, [H, I], 1 / Math.sqrt(I));
    }
  }
  put('model.norm.scale', [H], 0.1, 1);
  return w;
}
