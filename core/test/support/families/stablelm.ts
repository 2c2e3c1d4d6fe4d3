/**
 * An independent float64 reference forward for StableLM, written from transformers
 * `src/transformers/models/stablelm/modeling_stablelm.py` @ 00dcc6dda6f6d8e69541a6b51f97986a80242367
 * (StableLmAttention, StableLmDecoderLayer, StableLmModel, StableLmForCausalLM) and
 * `configuration_stablelm.py` @ 05cd1ec14dbe16127778060fb68c34105873015c (defaults), sharing no
 * code with the graph builder: whole sequence, no cache. Also random StableLM checkpoints with
 * HF's key names (nn.LayerNorm has `.weight` and `.bias`; `post_attention_layernorm` exists only
 * without `use_parallel_residual`; q/k/v biases only with `use_qkv_bias`; o_proj, the MLP and
 * lm_head have none).
 */
import { stablelmFamily } from '../../../src/export/families/stablelm';
import type { FamilyTest } from '../family-tests';
import type { F32 } from '../graph-support';
import { randomTensors, type Put } from '../random-tensors';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A random StableLM checkpoint of `cfg` (HF key names). */
export function randomStablelm(cfg: Cfg, seed: number): W {
  return randomTensors(seed, (put) => putStablelm(cfg, put));
}

function putStablelm(cfg: Cfg, put: Put): void {
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const nkv: number = cfg.num_key_value_heads ?? 32;
  const hd = H / nh;
  const I: number = cfg.intermediate_size;
  const ln = (k: string) => {
    put(`${k}.weight`, [H], 0.1, 1);
    put(`${k}.bias`, [H], 0.1);
  };
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    ln(`${p}.input_layernorm`);
    if (!cfg.use_parallel_residual) ln(`${p}.post_attention_layernorm`);
    const a = `${p}.self_attn`;
    put(`${a}.q_proj.weight`, [nh * hd, H], 1 / Math.sqrt(H));
    put(`${a}.k_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    put(`${a}.v_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    if (cfg.use_qkv_bias)
      for (const [n, heads] of [
        ['q', nh],
        ['k', nkv],
        ['v', nkv],
      ] as const)
        put(`${a}.${n}_proj.bias`, [heads * hd], 0.1);
    put(`${a}.o_proj.weight`, [H, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.gate_proj.weight`, [I, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.up_proj.weight`, [I, H], 1 / Math.sqrt(H));
    put(`${p}.mlp.down_proj.weight`, [H, I], 1 / Math.sqrt(I));
  }
  ln('model.norm');
  if (!cfg.tie_word_embeddings) put('lm_head.weight', [cfg.vocab_size, H], 1 / Math.sqrt(H));
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

/** nn.LayerNorm with weight and bias (biased variance). */
function layerNorm(x: number[], w: F32, b: F32, eps: number): number[] {
  const m = x.reduce((s, a) => s + a, 0) / x.length;
  const v = x.reduce((s, a) => s + (a - m) ** 2, 0) / x.length;
  return x.map((a, i) => ((a - m) / Math.sqrt(v + eps)) * w.data[i]! + b.data[i]!);
}

/** Full-sequence logits `[T][V]` of StableLmForCausalLM (row t predicts token t+1). */
export function stablelmReference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = (k: string): F32 => {
    const t = w.get(k);
    if (!t) throw new Error(`reference: missing ${k}`);
    return t;
  };
  if (cfg.qk_layernorm) throw new Error('reference: qk_layernorm is not written here');
  if (cfg.hidden_act !== undefined && cfg.hidden_act !== 'silu') throw new Error(`reference: hidden_act ${cfg.hidden_act}`);
  if (cfg.rope_scaling) throw new Error('reference: rope_scaling is not written here');
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const nkv: number = cfg.num_key_value_heads ?? 32;
  const hd = H / nh; // StableLmAttention: self.head_dim = hidden_size // num_heads
  const eps: number = cfg.layer_norm_eps ?? 1e-5;
  const rot = Math.floor(hd * (cfg.partial_rotary_factor ?? 0.25)); // rotary_ndims
  const theta: number = cfg.rope_theta ?? 10000;
  // default rope: inv_freq = 1 / theta^(arange(0, dim, 2) / dim) over dim = rotary_ndims
  const inv = Array.from({ length: rot / 2 }, (_, i) => 1 / theta ** ((2 * i) / rot));
  const silu = (x: number) => x / (1 + Math.exp(-x));
  // apply_rotary_pos_emb on [..., :rotary_ndims] with rotate_half; [..., rotary_ndims:] passes
  const rope = (v: number[], pos: number) => {
    const out = v.slice();
    const half = rot / 2;
    for (let i = 0; i < half; i++) {
      const c = Math.cos(pos * inv[i]!);
      const s = Math.sin(pos * inv[i]!);
      out[i] = v[i]! * c - v[i + half]! * s;
      out[i + half] = v[i + half]! * c + v[i]! * s;
    }
    return out;
  };
  const mlp = (x: number[], p: string) => {
    const g = dense(x, get(`${p}.mlp.gate_proj.weight`));
    const u = dense(x, get(`${p}.mlp.up_proj.weight`));
    return dense(
      g.map((a, i) => silu(a) * u[i]!),
      get(`${p}.mlp.down_proj.weight`),
    );
  };
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  const T = ids.length;
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    const bias = (n: string) => (cfg.use_qkv_bias ? get(`${a}.${n}_proj.bias`) : undefined);
    const x = h.map((r) => layerNorm(r, get(`${p}.input_layernorm.weight`), get(`${p}.input_layernorm.bias`), eps));
    const heads = (rows: number[][], n: number, doRope: boolean) =>
      rows.map((r, t) =>
        Array.from({ length: n }, (_, j) => (doRope ? rope(r.slice(j * hd, (j + 1) * hd), t) : r.slice(j * hd, (j + 1) * hd))),
      );
    const q = heads(
      x.map((r) => dense(r, get(`${a}.q_proj.weight`), bias('q'))),
      nh,
      true,
    );
    const k = heads(
      x.map((r) => dense(r, get(`${a}.k_proj.weight`), bias('k'))),
      nkv,
      true,
    );
    const v = heads(
      x.map((r) => dense(r, get(`${a}.v_proj.weight`), bias('v'))),
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
      return dense(o, get(`${a}.o_proj.weight`));
    });
    h = h.map((r, t) => {
      if (cfg.use_parallel_residual) {
        // x = x + attn(ln1(x)) + mlp(ln1(x))
        const m = mlp(x[t]!, p);
        return r.map((val, i) => val + attnOut[t]![i]! + m[i]!);
      }
      // x = x + attn(ln1(x)); x = x + mlp(ln2(x))
      const res = r.map((val, i) => val + attnOut[t]![i]!);
      const m = mlp(layerNorm(res, get(`${p}.post_attention_layernorm.weight`), get(`${p}.post_attention_layernorm.bias`), eps), p);
      return res.map((val, i) => val + m[i]!);
    });
  }
  const head = cfg.tie_word_embeddings ? emb : get('lm_head.weight');
  const out: number[][] = [];
  for (let t = 0; t < T; t++) out.push(dense(layerNorm(h[t]!, get('model.norm.weight'), get('model.norm.bias'), eps), head));
  return out;
}

/** StableLM for the family kit and the generic suites (family-tests.ts). */
export const familyTest: FamilyTest = { row: stablelmFamily, random: randomStablelm, reference: stablelmReference };
