/**
 * An independent float64 reference forward for the Llama 4 text model, written from
 * huggingface/transformers `src/transformers/models/llama4/modeling_llama4.py` @
 * 63210d0e3b74c2119b7998ff65bc6a2729283626 (eager path) and `configuration_llama4.py`'s
 * derivations (`no_rope_layers`, `moe_layers`, `layer_types`), sharing no code with the graph
 * builder: the checkpoint's own fused `experts.gate_up_proj [E, H, 2I]` / `down_proj [E, I, H]`,
 * whole sequence, no cache. A `llama4` (multimodal) config reads `text_config` and the keys
 * under `language_model.`. Also random Llama 4 checkpoints.
 */
import { ACT, invFreq, linear, rms, softmax, weightGetter } from './graph-reference';
import { bf16, rng } from './graph-random';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Llama4TextConfig.__post_init__'s derived fields. */
export function llama4Derived(c: Cfg): { useRope: number[]; moe: Set<number>; chunked: boolean[] } {
  const L: number = c.num_hidden_layers;
  const interval: number = c.no_rope_layer_interval ?? 4;
  const useRope: number[] = c.no_rope_layers?.length
    ? c.no_rope_layers
    : Array.from({ length: L }, (_, i) => Number((i + 1) % interval !== 0));
  const step: number = c.interleave_moe_layer_step ?? 1;
  const moe = new Set<number>(
    c.moe_layers ?? Array.from({ length: L }, (_, i) => i).filter((i) => i >= step - 1 && (i - step + 1) % step === 0),
  );
  const types: string[] = c.layer_types ?? useRope.map((r) => (r ? 'chunked_attention' : 'full_attention'));
  return { useRope, moe, chunked: types.map((t) => t === 'chunked_attention') };
}

/** view_as_complex(x.reshape(-1, 2)) · e^{i·pos·f}: interleaved pairs (2i, 2i+1). */
function ropeComplex(v: number[], pos: number, f: number[]): number[] {
  const out = v.slice();
  f.forEach((fi, i) => {
    const c = Math.cos(pos * fi);
    const s = Math.sin(pos * fi);
    out[2 * i] = v[2 * i]! * c - v[2 * i + 1]! * s;
    out[2 * i + 1] = v[2 * i]! * s + v[2 * i + 1]! * c;
  });
  return out;
}

const l2 = (x: number[], eps: number) => {
  const k = 1 / Math.sqrt(x.reduce((s, a) => s + a * a, 0) / x.length + eps);
  return x.map((a) => a * k);
};

/** Full-sequence logits `[T][V]` of Llama4ForCausalLM (or the text model of Llama4ForConditionalGeneration). */
export function llama4Reference(config: Cfg, w: W, ids: number[]): number[][] {
  const multimodal = config.model_type === 'llama4';
  const c: Cfg = multimodal ? config.text_config : config;
  const pre = multimodal ? 'language_model.' : '';
  const get = weightGetter(w, pre);
  const H: number = c.hidden_size;
  const nh: number = c.num_attention_heads;
  const nkv: number = c.num_key_value_heads;
  const hd: number = c.head_dim;
  const I: number = c.intermediate_size;
  const eps: number = c.rms_norm_eps;
  const act = ACT[c.hidden_act ?? 'silu']!;
  const { useRope, moe, chunked } = llama4Derived(c);
  const chunk: number = c.attention_chunk_size ?? 8192;
  const f = invFreq({ ...c, rope_scaling: c.rope_scaling ? { ...c.rope_scaling, rope_type: 'llama3' } : null }, hd, ids.length).f;
  const emb = get('model.embed_tokens.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  const mlp = (x: number[], p: string) => {
    const g = linear([x], get(`${p}.gate_proj.weight`))[0]!;
    const u = linear([x], get(`${p}.up_proj.weight`))[0]!;
    return linear([g.map((a, i) => act(a) * u[i]!)], get(`${p}.down_proj.weight`))[0]!;
  };
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const rope = useRope[l] === 1;
    const x = h.map((r) => rms(r, get(`${p}.input_layernorm.weight`), eps, false));
    const head = (r: number[], j: number) => r.slice(j * hd, (j + 1) * hd);
    const prep = (rows: number[][], n: number, isQ: boolean) =>
      rows.map((r, t) =>
        Array.from({ length: n }, (_, j) => {
          let e = head(r, j);
          if (rope) e = ropeComplex(e, t, f);
          if (rope && (c.use_qk_norm ?? true)) e = l2(e, eps);
          if (isQ && !rope && (c.attn_temperature_tuning ?? true)) {
            const s = Math.log(Math.floor((t + 1) / (c.floor_scale ?? 8192)) + 1) * (c.attn_scale ?? 0.1) + 1;
            e = e.map((a) => a * s);
          }
          return e;
        }),
      );
    const Q = prep(linear(x, get(`${p}.self_attn.q_proj.weight`)), nh, true);
    const K = prep(linear(x, get(`${p}.self_attn.k_proj.weight`)), nkv, false);
    const V = linear(x, get(`${p}.self_attn.v_proj.weight`));
    const att = Q.map((heads, t) =>
      heads.flatMap((qh, j) => {
        const kv = Math.floor(j / (nh / nkv));
        const scores = Array.from({ length: t + 1 }, (_, s) =>
          chunked[l] && Math.floor(s / chunk) !== Math.floor(t / chunk)
            ? -Infinity
            : qh.reduce((a, q, i) => a + q * K[s]![kv]![i]!, 0) / Math.sqrt(hd),
        );
        const pr = softmax(scores);
        return Array.from({ length: hd }, (_, i) => pr.reduce((a, pv, s) => a + pv * head(V[s]!, kv)[i]!, 0));
      }),
    );
    const o = linear(att, get(`${p}.self_attn.o_proj.weight`));
    h = h.map((r, t) => r.map((a, i) => a + o[t]![i]!));
    const y = h.map((r) => rms(r, get(`${p}.post_attention_layernorm.weight`), eps, false));
    const ff = `${p}.feed_forward`;
    let m: number[][];
    if (moe.has(l)) {
      const gu = get(`${ff}.experts.gate_up_proj`);
      const dn = get(`${ff}.experts.down_proj`);
      const logits = linear(y, get(`${ff}.router.weight`));
      m = y.map((row, t) => {
        const out = mlp(row, `${ff}.shared_expert`);
        const top = logits[t]!.map((v, e) => [v, e] as const)
          .sort((a, b) => b[0] - a[0] || a[1] - b[1])
          .slice(0, c.num_experts_per_tok);
        for (const [v, e] of top) {
          const xin = row.map((a) => a / (1 + Math.exp(-v))); // routed_in = x · σ(score)
          const gate = new Array<number>(2 * I).fill(0);
          for (let i = 0; i < H; i++) for (let o2 = 0; o2 < 2 * I; o2++) gate[o2]! += xin[i]! * gu.data[(e * H + i) * 2 * I + o2]!;
          const hmid = Array.from({ length: I }, (_, i) => gate[I + i]! * act(gate[i]!)); // up · act(gate)
          for (let i = 0; i < I; i++) for (let o2 = 0; o2 < H; o2++) out[o2]! += hmid[i]! * dn.data[(e * I + i) * H + o2]!;
        }
        return out;
      });
    } else {
      m = y.map((row) => mlp(row, ff));
    }
    h = h.map((r, t) => r.map((a, i) => a + m[t]![i]!));
  }
  const fin = h.map((r) => rms(r, get('model.norm.weight'), eps, false));
  return linear(fin, get('lm_head.weight'));
}

/** A random Llama 4 text checkpoint with HF's keys (fused experts, shared expert, router; dense layers at intermediate_size_mlp). */
export function randomLlama4Checkpoint(c: Cfg, seed: number): W {
  const r = rng(seed);
  const w: W = new Map();
  const put = (k: string, shape: number[], scale: number, center = 0) =>
    w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => bf16(center + scale * r())) });
  const { H, I, hd } = { H: c.hidden_size as number, I: c.intermediate_size as number, hd: c.head_dim as number };
  const E: number = c.num_local_experts;
  const gated = (p: string, inter: number) => {
    put(`${p}.gate_proj.weight`, [inter, H], 1 / Math.sqrt(H));
    put(`${p}.up_proj.weight`, [inter, H], 1 / Math.sqrt(H));
    put(`${p}.down_proj.weight`, [H, inter], 1 / Math.sqrt(inter));
  };
  const { moe } = llama4Derived(c);
  put('model.embed_tokens.weight', [c.vocab_size, H], 0.5);
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    put(`${p}.input_layernorm.weight`, [H], 0.1, 1);
    put(`${p}.post_attention_layernorm.weight`, [H], 0.1, 1);
    put(`${p}.self_attn.q_proj.weight`, [c.num_attention_heads * hd, H], 1 / Math.sqrt(H));
    put(`${p}.self_attn.k_proj.weight`, [c.num_key_value_heads * hd, H], 1 / Math.sqrt(H));
    put(`${p}.self_attn.v_proj.weight`, [c.num_key_value_heads * hd, H], 1 / Math.sqrt(H));
    put(`${p}.self_attn.o_proj.weight`, [H, c.num_attention_heads * hd], 1 / Math.sqrt(H));
    const ff = `${p}.feed_forward`;
    if (moe.has(l)) {
      put(`${ff}.router.weight`, [E, H], 1);
      put(`${ff}.experts.gate_up_proj`, [E, H, 2 * I], 1 / Math.sqrt(H));
      put(`${ff}.experts.down_proj`, [E, I, H], 1 / Math.sqrt(I));
      gated(`${ff}.shared_expert`, I);
    } else {
      gated(ff, c.intermediate_size_mlp);
    }
  }
  put('model.norm.weight', [H], 0.1, 1);
  put('lm_head.weight', [c.vocab_size, H], 1 / Math.sqrt(H));
  return w;
}
