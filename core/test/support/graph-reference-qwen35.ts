/**
 * An independent float64 reference forward for Qwen3.5-MoE, written from
 * huggingface/transformers src/transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py @
 * 5fd974ea3af798c79b3b70d2fd9e52fb58869894 and configuration_qwen3_5_moe.py @
 * e36255cb9af68ea2c16fefd6b1c798882cafda16, sharing no code with the graph builder: raw config
 * fields, the original checkpoint keys (fused `experts.gate_up_proj [E, 2I, H]` / `down_proj
 * [E, H, I]`), and the Gated DeltaNet as HF's token-by-token recurrence
 * (`torch_recurrent_gated_delta_rule`, `torch_causal_conv1d_update`): one token at a time
 * through the conv history and the state, never the chunked form. Also random Qwen3.5-MoE
 * checkpoints in the HF key layout (A_log and the gated norm's weight in F32 as published,
 * the rest rounded to bfloat16).
 */
import { linear, rms, softmax, weightGetter } from './graph-reference';
import { rng } from './graph-random';
import type { F32 } from './graph-support';

export { multimodalConfig, QWEN35_OTHER } from './graph-configs-qwen35';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const silu = (x: number) => x / (1 + Math.exp(-x));
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
/** torch.nn.functional.softplus (beta 1, threshold 20). */
const softplus = (x: number) => (x > 20 ? x : Math.log1p(Math.exp(x)));
const dot = (a: number[], b: ArrayLike<number>, off = 0) => a.reduce((s, v, i) => s + v * b[off + i]!, 0);

/** HF `l2norm`: x · rsqrt(Σx² + 1e-6). */
function l2norm(x: number[]): number[] {
  const k = 1 / Math.sqrt(x.reduce((s, v) => s + v * v, 0) + 1e-6);
  return x.map((v) => v * k);
}

/** The layer types HF's config derives (full every `full_attention_interval`-th layer by default). */
export function layerTypes(cfg: Cfg): string[] {
  const L: number = cfg.num_hidden_layers;
  return (
    cfg.layer_types ??
    Array.from({ length: L }, (_, i) => ((i + 1) % (cfg.full_attention_interval ?? 4) ? 'linear_attention' : 'full_attention'))
  );
}

/** Full-sequence logits `[T][V]` of Qwen3_5MoeForCausalLM (text config, keys `model.…`). */
export function qwen35MoeReference(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const nkv: number = cfg.num_key_value_heads;
  const hd: number = cfg.head_dim;
  const eps: number = cfg.rms_norm_eps ?? 1e-6;
  const nk: number = cfg.linear_num_key_heads;
  const nv: number = cfg.linear_num_value_heads;
  const dk: number = cfg.linear_key_head_dim;
  const dv: number = cfg.linear_value_head_dim;
  const K: number = cfg.linear_conv_kernel_dim;
  const I: number = cfg.moe_intermediate_size;
  const topK: number = cfg.num_experts_per_tok;
  const partial: number = cfg.rope_parameters?.partial_rotary_factor ?? cfg.partial_rotary_factor ?? 0.25;
  const theta: number = cfg.rope_parameters?.rope_theta ?? cfg.rope_theta ?? 10000;
  const rot = Math.floor(hd * partial);
  const inv = Array.from({ length: rot / 2 }, (_, i) => 1 / theta ** ((2 * i) / rot));
  /** apply_rotary_pos_emb on the first `rot` dims (rotate_half), the rest passes through. */
  const rope = (x: number[], pos: number) => {
    const half = rot / 2;
    const out = x.slice();
    for (let i = 0; i < half; i++) {
      const c = Math.cos(pos * inv[i]!);
      const s = Math.sin(pos * inv[i]!);
      out[i] = x[i]! * c - x[i + half]! * s;
      out[i + half] = x[i + half]! * c + x[i]! * s;
    }
    return out;
  };

  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  layerTypes(cfg).forEach((type, l) => {
    const p = `model.layers.${l}`;
    const x = h.map((r) => rms(r, get(`${p}.input_layernorm.weight`), eps, true));
    let mixed: number[][];
    if (type === 'linear_attention') {
      const la = `${p}.linear_attn`;
      const qkv = linear(x, get(`${la}.in_proj_qkv.weight`));
      const z = linear(x, get(`${la}.in_proj_z.weight`));
      const b = linear(x, get(`${la}.in_proj_b.weight`));
      const a = linear(x, get(`${la}.in_proj_a.weight`));
      const conv = get(`${la}.conv1d.weight`); // [C, 1, K]
      const aLog = get(`${la}.A_log`).data;
      const dt = get(`${la}.dt_bias`).data;
      const normW = get(`${la}.norm.weight`).data;
      const C = 2 * nk * dk + nv * dv;
      let hist: number[][] = Array.from({ length: K }, () => new Array<number>(C).fill(0)); // conv_state: the last K inputs
      const S = Array.from({ length: nv }, () => Array.from({ length: dk }, () => new Array<number>(dv).fill(0)));
      const core = x.map((_, t) => {
        hist = [...hist.slice(1), qkv[t]!];
        const y = Array.from({ length: C }, (_, ch) => silu(hist.reduce((s, row, j) => s + conv.data[ch * K + j]! * row[ch]!, 0)));
        const q = Array.from({ length: nk }, (_, i) => l2norm(y.slice(i * dk, (i + 1) * dk)));
        const k = Array.from({ length: nk }, (_, i) => l2norm(y.slice(nk * dk + i * dk, nk * dk + (i + 1) * dk)));
        return Array.from({ length: nv }, (_, j) => {
          const kh = Math.floor(j / (nv / nk)); // repeat_interleave
          const qj = q[kh]!.map((v) => v / Math.sqrt(dk));
          const kj = k[kh]!;
          const vj = y.slice(2 * nk * dk + j * dv, 2 * nk * dk + (j + 1) * dv);
          const beta = sigmoid(b[t]![j]!);
          const g = -Math.exp(aLog[j]!) * softplus(a[t]![j]! + dt[j]!);
          const Sj = S[j]!;
          for (const row of Sj) for (let d = 0; d < dv; d++) row[d] *= Math.exp(g);
          const mem = Array.from({ length: dv }, (_, d) => Sj.reduce((s, row, i) => s + row[d]! * kj[i]!, 0));
          const delta = vj.map((v, d) => (v - mem[d]!) * beta);
          Sj.forEach((row, i) => row.forEach((_, d) => (row[d] += kj[i]! * delta[d]!)));
          const o = Array.from({ length: dv }, (_, d) => Sj.reduce((s, row, i) => s + row[d]! * qj[i]!, 0));
          // Qwen3_5MoeRMSNormGated: plain weight, then · silu(z)
          const r = 1 / Math.sqrt(o.reduce((s, v) => s + v * v, 0) / dv + eps);
          return o.map((v, d) => v * r * normW[d]! * silu(z[t]![j * dv + d]!));
        }).flat();
      });
      mixed = linear(core, get(`${la}.out_proj.weight`));
    } else {
      const sa = `${p}.self_attn`;
      const qg = linear(x, get(`${sa}.q_proj.weight`));
      const kp = linear(x, get(`${sa}.k_proj.weight`));
      const vp = linear(x, get(`${sa}.v_proj.weight`));
      const Q = qg.map((r, t) =>
        Array.from({ length: nh }, (_, j) => rope(rms(r.slice(2 * j * hd, 2 * j * hd + hd), get(`${sa}.q_norm.weight`), eps, true), t)),
      );
      const G = qg.map((r) => Array.from({ length: nh }, (_, j) => r.slice(2 * j * hd + hd, 2 * (j + 1) * hd)).flat());
      const Kh = kp.map((r, t) =>
        Array.from({ length: nkv }, (_, j) => rope(rms(r.slice(j * hd, (j + 1) * hd), get(`${sa}.k_norm.weight`), eps, true), t)),
      );
      const V = vp.map((r) => Array.from({ length: nkv }, (_, j) => r.slice(j * hd, (j + 1) * hd)));
      const att = Q.map((qs, t) =>
        qs
          .flatMap((q, j) => {
            const kv = Math.floor(j / (nh / nkv));
            const pr = softmax(Array.from({ length: t + 1 }, (_, s) => dot(q, Kh[s]![kv]!) / Math.sqrt(hd)));
            return Array.from({ length: hd }, (_, i) => pr.reduce((acc, pv, s) => acc + pv * V[s]![kv]![i]!, 0));
          })
          .map((v, i) => v * sigmoid(G[t]![i]!)),
      );
      mixed = linear(att, get(`${sa}.o_proj.weight`));
    }
    h = h.map((r, t) => r.map((v, i) => v + mixed[t]![i]!));

    const y = h.map((r) => rms(r, get(`${p}.post_attention_layernorm.weight`), eps, true));
    const m = `${p}.mlp`;
    const logits = linear(y, get(`${m}.gate.weight`));
    const gu = get(`${m}.experts.gate_up_proj`); // [E, 2I, H]
    const down = get(`${m}.experts.down_proj`); // [E, H, I]
    const sg = linear(y, get(`${m}.shared_expert.gate_proj.weight`));
    const su = linear(y, get(`${m}.shared_expert.up_proj.weight`));
    const shared = linear(
      sg.map((r, t) => r.map((v, i) => silu(v) * su[t]![i]!)),
      get(`${m}.shared_expert.down_proj.weight`),
    );
    const sgate = linear(y, get(`${m}.shared_expert_gate.weight`));
    const out = y.map((row, t) => {
      const probs = softmax(logits[t]!);
      const idx = probs
        .map((v, e) => [v, e] as const)
        .sort((u, v) => v[0] - u[0] || u[1] - v[1])
        .slice(0, topK)
        .map(([, e]) => e);
      const total = idx.reduce((s, e) => s + probs[e]!, 0); // always renormalised
      const acc = shared[t]!.map((v) => v * sigmoid(sgate[t]![0]!));
      for (const e of idx) {
        const wt = probs[e]! / total;
        const act = Array.from(
          { length: I },
          (_, i) => silu(dot(row, gu.data, (e * 2 * I + i) * H)) * dot(row, gu.data, (e * 2 * I + I + i) * H),
        );
        for (let o = 0; o < H; o++) acc[o] += wt * dot(act, down.data, (e * H + o) * I);
      }
      return acc;
    });
    h = h.map((r, t) => r.map((v, i) => v + out[t]![i]!));
  });
  const normed = h.map((r) => rms(r, get('model.norm.weight'), eps, true));
  return linear(normed, cfg.tie_word_embeddings ? emb : get('lm_head.weight'));
}

/** A text checkpoint in the multimodal layout: `model.language_model.*`, plus vision and MTP tensors the text model ignores. */
export function multimodalCheckpoint(text: W): W {
  const w: W = new Map();
  for (const [k, t] of text) w.set(k.replace(/^model\./, 'model.language_model.'), t);
  w.set('model.visual.patch_embed.proj.weight', { shape: [4, 3], data: Float32Array.from({ length: 12 }, (_, i) => i / 12) });
  w.set('mtp.fc.weight', { shape: [4, 4], data: Float32Array.from({ length: 16 }, (_, i) => i / 16) });
  return w;
}

/** {@link qwen35MoeReference} for either layout. */
export function qwen35Reference(cfg: Cfg, w: W, ids: number[]): number[][] {
  if (cfg.model_type !== 'qwen3_5_moe') return qwen35MoeReference(cfg, w, ids);
  const text = new Map(
    [...w]
      .filter(([k]) => !k.startsWith('model.visual.') && !k.startsWith('mtp.'))
      .map(([k, t]) => [k.replace(/^model\.language_model\./, 'model.'), t]),
  );
  return qwen35MoeReference({ ...cfg.text_config, tie_word_embeddings: cfg.tie_word_embeddings }, text, ids);
}

/** {@link randomQwen35Checkpoint} for either layout. */
export function randomQwen35(cfg: Cfg, seed: number): W {
  return cfg.model_type === 'qwen3_5_moe'
    ? multimodalCheckpoint(randomQwen35Checkpoint(cfg.text_config, seed))
    : randomQwen35Checkpoint(cfg, seed);
}

function bf16(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer);
  u[0] = (u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) & 0xffff0000;
  return f[0]!;
}

/** A random Qwen3.5-MoE checkpoint for `cfg` (text layout, HF keys). */
export function randomQwen35Checkpoint(cfg: Cfg, seed: number): W {
  const r = rng(seed);
  const w: W = new Map();
  const put = (k: string, shape: number[], scale: number, center = 0, f32 = false) =>
    w.set(k, {
      shape,
      data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => (f32 ? Math.fround : bf16)(center + scale * r())),
    });
  const H: number = cfg.hidden_size;
  const s = 1 / Math.sqrt(H);
  const { num_attention_heads: nh, num_key_value_heads: nkv, head_dim: hd, num_experts: E, moe_intermediate_size: I } = cfg;
  const { linear_num_key_heads: nk, linear_num_value_heads: nv, linear_key_head_dim: dk, linear_value_head_dim: dv } = cfg;
  put('model.embed_tokens.weight', [cfg.vocab_size, H], 1);
  layerTypes(cfg).forEach((type, l) => {
    const p = `model.layers.${l}`;
    put(`${p}.input_layernorm.weight`, [H], 0.1);
    put(`${p}.post_attention_layernorm.weight`, [H], 0.1);
    if (type === 'linear_attention') {
      const la = `${p}.linear_attn`;
      const C = 2 * nk * dk + nv * dv;
      put(`${la}.in_proj_qkv.weight`, [C, H], s);
      put(`${la}.in_proj_z.weight`, [nv * dv, H], s);
      put(`${la}.in_proj_b.weight`, [nv, H], s);
      put(`${la}.in_proj_a.weight`, [nv, H], s);
      put(`${la}.conv1d.weight`, [C, 1, cfg.linear_conv_kernel_dim], 0.5);
      put(`${la}.dt_bias`, [nv], 0.5, 1);
      put(`${la}.A_log`, [nv], 0.5, 0, true);
      put(`${la}.norm.weight`, [dv], 0.1, 1, true);
      put(`${la}.out_proj.weight`, [H, nv * dv], 1 / Math.sqrt(nv * dv));
    } else {
      const sa = `${p}.self_attn`;
      put(`${sa}.q_proj.weight`, [2 * nh * hd, H], s);
      put(`${sa}.k_proj.weight`, [nkv * hd, H], s);
      put(`${sa}.v_proj.weight`, [nkv * hd, H], s);
      put(`${sa}.o_proj.weight`, [H, nh * hd], 1 / Math.sqrt(nh * hd));
      put(`${sa}.q_norm.weight`, [hd], 0.1);
      put(`${sa}.k_norm.weight`, [hd], 0.1);
    }
    const m = `${p}.mlp`;
    put(`${m}.gate.weight`, [E, H], s);
    put(`${m}.experts.gate_up_proj`, [E, 2 * I, H], s);
    put(`${m}.experts.down_proj`, [E, H, I], 1 / Math.sqrt(I));
    const si: number = cfg.shared_expert_intermediate_size;
    put(`${m}.shared_expert.gate_proj.weight`, [si, H], s);
    put(`${m}.shared_expert.up_proj.weight`, [si, H], s);
    put(`${m}.shared_expert.down_proj.weight`, [H, si], 1 / Math.sqrt(si));
    put(`${m}.shared_expert_gate.weight`, [1, H], s);
  });
  put('model.norm.weight', [H], 0.1);
  put('lm_head.weight', [cfg.vocab_size, H], s);
  return w;
}
