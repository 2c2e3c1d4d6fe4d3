/**
 * An independent float64 reference forward for Cohere (Command-R), written from transformers
 * `src/transformers/models/cohere/modeling_cohere.py` @ dbb5a504d1ba0043124f7951c0ee3473be1dbcfc
 * (CohereLayerNorm, CohereRotaryEmbedding, rotate_half, CohereAttention, CohereMLP,
 * CohereDecoderLayer, CohereModel, CohereForCausalLM) and `configuration_cohere.py` @
 * 032b32abfb07ba36e8fc1a8e5251514523edce34 (defaults), sharing no code with the graph builder:
 * whole sequence, no cache. Also random Cohere checkpoints with HF's key names (CohereLayerNorm
 * has only `.weight`; q/k/v/o biases only with `attention_bias`; no post_attention_layernorm;
 * `lm_head.weight` only when `tie_word_embeddings` is false).
 */
import { cohereFamily } from '../../../src/export/families/cohere';
import type { FamilyTest } from '../family-tests';
import type { F32 } from '../graph-support';
import { randomTensors } from '../random-tensors';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** CohereConfig's defaults for the fields the reference reads. */
function dims(cfg: Cfg) {
  const H: number = cfg.hidden_size ?? 8192;
  const nh: number = cfg.num_attention_heads ?? 64;
  return {
    H,
    nh,
    nkv: (cfg.num_key_value_heads ?? nh) as number,
    hd: H / nh, // CohereAttention: self.head_dim = self.hidden_size // self.num_heads
    I: (cfg.intermediate_size ?? 22528) as number,
    L: (cfg.num_hidden_layers ?? 40) as number,
    V: (cfg.vocab_size ?? 256000) as number,
    bias: !!cfg.attention_bias,
    tied: (cfg.tie_word_embeddings ?? true) as boolean,
  };
}

/** A random Cohere checkpoint of `cfg` (HF key names). */
export function randomCohere(cfg: Cfg, seed: number): W {
  const { H, nh, nkv, hd, I, L, V, bias, tied } = dims(cfg);
  return randomTensors(seed, (put) => {
    put('model.embed_tokens.weight', [V, H], 0.5);
    for (let l = 0; l < L; l++) {
      const p = `model.layers.${l}`;
      put(`${p}.input_layernorm.weight`, [H], 0.1, 1);
      for (const [n, out] of [
        ['q', nh * hd],
        ['k', nkv * hd],
        ['v', nkv * hd],
      ] as const) {
        put(`${p}.self_attn.${n}_proj.weight`, [out, H], 1 / Math.sqrt(H));
        if (bias) put(`${p}.self_attn.${n}_proj.bias`, [out], 0.1);
      }
      put(`${p}.self_attn.o_proj.weight`, [H, H], 1 / Math.sqrt(H));
      if (bias) put(`${p}.self_attn.o_proj.bias`, [H], 0.1);
      put(`${p}.mlp.gate_proj.weight`, [I, H], 1 / Math.sqrt(H));
      put(`${p}.mlp.up_proj.weight`, [I, H], 1 / Math.sqrt(H));
      put(`${p}.mlp.down_proj.weight`, [H, I], 1 / Math.sqrt(I));
    }
    put('model.norm.weight', [H], 0.1, 1);
    if (!tied) put('lm_head.weight', [V, H], 1 / Math.sqrt(H));
  });
}

/** x·Wᵀ (+ b) for one row, W `[out, in]` (nn.Linear). */
function dense(x: number[], w: F32, b?: F32): number[] {
  const [out, inp] = w.shape as [number, number];
  const y = new Array<number>(out);
  for (let o = 0; o < out; o++) {
    let s = b ? b.data[o]! : 0;
    for (let i = 0; i < inp; i++) s += x[i]! * w.data[o * inp + i]!;
    y[o] = s;
  }
  return y;
}

/** CohereLayerNorm: (x − mean) · rsqrt(var + eps) · weight, no bias. */
function layerNorm(x: number[], w: F32, eps: number): number[] {
  const m = x.reduce((s, a) => s + a, 0) / x.length;
  const v = x.reduce((s, a) => s + (a - m) ** 2, 0) / x.length;
  return x.map((a, i) => ((a - m) / Math.sqrt(v + eps)) * w.data[i]!);
}

/** Full-sequence logits `[T][V]` of CohereForCausalLM (row t predicts token t+1). */
export function cohereReference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = (k: string): F32 => {
    const t = w.get(k);
    if (!t) throw new Error(`reference: missing ${k}`);
    return t;
  };
  if (cfg.use_qk_norm) throw new Error('reference: use_qk_norm is not written here');
  if (cfg.hidden_act !== undefined && cfg.hidden_act !== 'silu') throw new Error(`reference: hidden_act ${cfg.hidden_act}`);
  if (cfg.rope_scaling || cfg.rope_parameters) throw new Error('reference: rope_scaling is not written here');
  const { H, nh, nkv, hd, L, bias, tied } = dims(cfg);
  const eps: number = cfg.layer_norm_eps ?? 1e-5;
  const theta: number = cfg.rope_theta ?? 10000;
  const logitScale: number = cfg.logit_scale ?? 0.0625;
  // default rope: inv_freq = 1 / theta^(arange(0, dim, 2) / dim), dim = head_dim
  const inv = Array.from({ length: hd / 2 }, (_, i) => 1 / theta ** ((2 * i) / hd));
  const silu = (x: number) => x / (1 + Math.exp(-x));
  // emb = repeat_interleave(freqs, 2): dims 2i and 2i+1 share frequency i; Cohere's rotate_half
  // gives rot[2i] = −x[2i+1], rot[2i+1] = x[2i]; q·cos + rotate_half(q)·sin
  const rope = (v: number[], pos: number) => {
    const out = v.slice();
    for (let i = 0; i < hd / 2; i++) {
      const c = Math.cos(pos * inv[i]!);
      const s = Math.sin(pos * inv[i]!);
      out[2 * i] = v[2 * i]! * c - v[2 * i + 1]! * s;
      out[2 * i + 1] = v[2 * i + 1]! * c + v[2 * i]! * s;
    }
    return out;
  };
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    const proj = (x: number[], n: string) => dense(x, get(`${a}.${n}_proj.weight`), bias ? get(`${a}.${n}_proj.bias`) : undefined);
    const x = h.map((r) => layerNorm(r, get(`${p}.input_layernorm.weight`), eps));
    const heads = (rows: number[][], n: number, doRope: boolean) =>
      rows.map((r, t) =>
        Array.from({ length: n }, (_, j) => (doRope ? rope(r.slice(j * hd, (j + 1) * hd), t) : r.slice(j * hd, (j + 1) * hd))),
      );
    const q = heads(
      x.map((r) => proj(r, 'q')),
      nh,
      true,
    );
    const k = heads(
      x.map((r) => proj(r, 'k')),
      nkv,
      true,
    );
    const v = heads(
      x.map((r) => proj(r, 'v')),
      nkv,
      false,
    );
    const groups = nh / nkv; // repeat_kv: query head j reads kv head floor(j / groups)
    const attnOut = q.map((qt, t) => {
      const o: number[] = [];
      for (let j = 0; j < nh; j++) {
        const kv = Math.floor(j / groups);
        const s: number[] = [];
        for (let u = 0; u <= t; u++) s.push(qt[j]!.reduce((acc, qi, d) => acc + qi * k[u]![kv]![d]!, 0) / Math.sqrt(hd));
        const m = Math.max(...s);
        const e = s.map((z) => Math.exp(z - m));
        const z = e.reduce((x1, x2) => x1 + x2, 0);
        for (let d = 0; d < hd; d++) o.push(e.reduce((acc, pe, u) => acc + (pe / z) * v[u]![kv]![d]!, 0));
      }
      return proj(o, 'o');
    });
    // CohereDecoderLayer: residual + attn(ln(h)) + mlp(ln(h))
    h = h.map((r, t) => {
      const g = dense(x[t]!, get(`${p}.mlp.gate_proj.weight`));
      const u = dense(x[t]!, get(`${p}.mlp.up_proj.weight`));
      const m = dense(
        g.map((gi, i) => silu(gi) * u[i]!),
        get(`${p}.mlp.down_proj.weight`),
      );
      return r.map((val, i) => val + attnOut[t]![i]! + m[i]!);
    });
  }
  const head = tied ? emb : get('lm_head.weight');
  // CohereForCausalLM: logits = lm_head(norm(h)) * logit_scale
  return h.map((r) => dense(layerNorm(r, get('model.norm.weight'), eps), head).map((z) => z * logitScale));
}

/** Cohere for the family kit and the generic suites (family-tests.ts). */
export const familyTest: FamilyTest = { row: cohereFamily, random: randomCohere, reference: cohereReference };
