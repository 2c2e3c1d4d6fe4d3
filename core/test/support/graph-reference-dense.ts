/**
 * The independent float64 reference forward for Gemma-2, Granite, OLMo-2, Falcon and CodeGen,
 * written straight from the Hugging Face modeling files (eager attention path), sharing no
 * code with the graph builder. Full sequence at once, no cache, original checkpoint keys.
 *
 * Sources (huggingface/transformers):
 * - gemma2: src/transformers/models/gemma2/modeling_gemma2.py @ 006e86931247d7bacf94ad00ada1fb6baf11e94b
 * - granite: src/transformers/models/granite/modeling_granite.py @ 00aca8155c457c087b7a14160f335fe8e40afc0c
 * - olmo2: src/transformers/models/olmo2/modeling_olmo2.py @ 000c33fdfde12e1ffafbfcdb3c926df5727a00b6
 * - falcon: src/transformers/models/falcon/modeling_falcon.py @ 00dcc6dda6f6d8e69541a6b51f97986a80242367
 * - codegen: src/transformers/models/codegen/modeling_codegen.py @ 00491ceeee1a918b3c91685ddbd439f787eef424
 * - granitemoe: src/transformers/models/granitemoe/modeling_granitemoe.py @ 013458c1caaacbd32680c030827296fa65d6fe99
 *   (Granite's attention and multipliers; GraniteMoeMoE: router logits, top-k of the logits,
 *   softmax over those k, input_linear [E, 2I, H] chunked gate | up, output_linear [E, H, I])
 */
import { ACT, invFreq, layerNorm, linear, rms, rope, softmax, weightGetter } from './graph-reference';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The model types this file's forward handles. */
export const DENSE_TYPES = new Set(['gemma2', 'granite', 'olmo2', 'falcon', 'codegen', 'granitemoe']);

/** erf to ~1e-15: Taylor series below 3, Lentz continued fraction for erfc above. */
export function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 3) {
    let term = x;
    let sum = x;
    for (let n = 1; n < 80; n++) {
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
    }
    return (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(x) = exp(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))
  let f = ax;
  for (let k = 60; k >= 1; k--) f = ax + k / 2 / f;
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}
/** HF ACT2FN by name: graph-reference's table plus erf GELU (read at call time: the modules import each other). */
export function actFn(name: string): (x: number) => number {
  if (name === 'gelu') return (x) => 0.5 * x * (1 + erf(x / Math.SQRT2));
  const f = ACT[name];
  if (!f) throw new Error(`reference: activation ${name}`);
  return f;
}

const add = (a: number[][], b: number[][]) => a.map((r, t) => r.map((v, i) => v + b[t]![i]!));
const scale = (a: number[][], k: number) => a.map((r) => r.map((v) => v * k));
const cap = (v: number, c: number) => c * Math.tanh(v / c);

/**
 * Causal attention over per-token heads: q[t][j], k[t][g], v[t][g] (vectors), `kvOf(j)` the kv
 * head of query head j, scores = score(q·k) (scale, soft-cap), masked where `visible` is false.
 */
export function attend(
  q: number[][][],
  k: number[][][],
  v: number[][][],
  kvOf: (j: number) => number,
  score: (d: number) => number,
  visible: (t: number, s: number) => boolean,
): number[][] {
  return q.map((heads, t) =>
    heads.flatMap((qh, j) => {
      const g = kvOf(j);
      const sc: number[] = [];
      for (let s = 0; s <= t; s++) {
        if (!visible(t, s)) {
          sc.push(-Infinity);
          continue;
        }
        let d = 0;
        for (let i = 0; i < qh.length; i++) d += qh[i]! * k[s]![g]![i]!;
        sc.push(score(d));
      }
      const p = softmax(sc);
      return Array.from({ length: qh.length }, (_, i) => p.reduce((acc, pv, s) => acc + pv * v[s]![g]![i]!, 0));
    }),
  );
}

/** The `n` heads of `hd` features in one projected row. */
export const headsOf = (row: number[], n: number, hd: number) => Array.from({ length: n }, (_, j) => row.slice(j * hd, (j + 1) * hd));

/** Full-sequence logits for the dense families of this file. */
export function denseReferenceForward(cfg: Cfg, w: W, ids: number[]): number[][] {
  const get = weightGetter(w);
  const type: string = cfg.model_type;
  if (type === 'falcon') return falcon(cfg, get, w, ids);
  if (type === 'codegen') return codegen(cfg, get, ids);
  return llamaVariant(cfg, get, w, ids);
}

/** Gemma2Model / GraniteModel / Olmo2Model + their CausalLM heads. */
function llamaVariant(cfg: Cfg, get: (k: string) => F32, w: W, ids: number[]): number[][] {
  const type: string = cfg.model_type === 'granitemoe' ? 'granite' : cfg.model_type; // GraniteMoe = Granite with MoE MLPs
  const moe = cfg.model_type === 'granitemoe';
  const opt = (k: string) => w.get(k);
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const nkv: number = cfg.num_key_value_heads ?? nh;
  // Gemma2Config head_dim default 256; GraniteAttention: hidden // heads; Olmo2: getattr(head_dim) or hidden // heads
  const hd: number = type === 'gemma2' ? (cfg.head_dim ?? 256) : type === 'granite' ? H / nh : (cfg.head_dim ?? H / nh);
  const eps: number = cfg.rms_norm_eps ?? (type === 'olmo2' ? 1e-5 : 1e-6);
  const gemma = type === 'gemma2';
  const norm = (rows: number[][], key: string) => rows.map((r) => rms(r, get(key), eps, gemma));
  const act = actFn(gemma ? (cfg.hidden_activation ?? 'gelu_pytorch_tanh') : (cfg.hidden_act ?? 'silu'));
  const scaling: number = gemma
    ? (cfg.query_pre_attn_scalar ?? 256) ** -0.5
    : type === 'granite'
      ? (cfg.attention_multiplier ?? 1)
      : hd ** -0.5;
  const softcapAttn: number | null = gemma ? (cfg.attn_logit_softcapping === undefined ? 50 : cfg.attn_logit_softcapping) : null;
  const softcapFinal: number | null = gemma ? (cfg.final_logit_softcapping === undefined ? 30 : cfg.final_logit_softcapping) : null;
  const resid: number = type === 'granite' ? (cfg.residual_multiplier ?? 1) : 1;
  const T = ids.length;
  const emb = get('model.embed_tokens.weight');
  const embMul = gemma ? Math.sqrt(H) : type === 'granite' ? (cfg.embedding_multiplier ?? 1) : 1;
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H), (v) => v * embMul));
  const inv = invFreq(cfg, hd, T);

  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.self_attn`;
    // Gemma2: sliding on even layers (or layer_types); tril(diagonal=-W) masks s ≤ t − W
    const sliding = gemma && (cfg.layer_types ? cfg.layer_types[l] === 'sliding_attention' : l % 2 === 0);
    const W: number = cfg.sliding_window === undefined ? 4096 : cfg.sliding_window;
    const visible = (t: number, s: number) => !(sliding && W != null && s <= t - W);
    const x = type === 'olmo2' ? h : norm(h, `${p}.input_layernorm.weight`);
    let q = linear(x, get(`${a}.q_proj.weight`), opt(`${a}.q_proj.bias`));
    let k = linear(x, get(`${a}.k_proj.weight`), opt(`${a}.k_proj.bias`));
    const v = linear(x, get(`${a}.v_proj.weight`), opt(`${a}.v_proj.bias`));
    if (type === 'olmo2') {
      // q_norm / k_norm over the whole projection, before the view into heads
      q = q.map((r) => rms(r, get(`${a}.q_norm.weight`), eps, false));
      k = k.map((r) => rms(r, get(`${a}.k_norm.weight`), eps, false));
    }
    const Q = q.map((r, t) => headsOf(r, nh, hd).map((e) => rope(e, t, inv)));
    const K = k.map((r, t) => headsOf(r, nkv, hd).map((e) => rope(e, t, inv)));
    const V = v.map((r) => headsOf(r, nkv, hd));
    const score = (d: number) => (softcapAttn != null ? cap(d * scaling, softcapAttn) : d * scaling);
    let o = linear(
      attend(Q, K, V, (j) => Math.floor(j / (nh / nkv)), score, visible),
      get(`${a}.o_proj.weight`),
      opt(`${a}.o_proj.bias`),
    );
    if (gemma || type === 'olmo2') o = norm(o, `${p}.post_attention_layernorm.weight`);
    h = add(h, scale(o, resid));
    const y = gemma
      ? norm(h, `${p}.pre_feedforward_layernorm.weight`)
      : type === 'olmo2'
        ? h
        : norm(h, `${p}.post_attention_layernorm.weight`);
    let m: number[][];
    if (moe) {
      m = graniteMoe(cfg, get, `${p}.block_sparse_moe`, y, act);
    } else {
      const g = linear(y, get(`${p}.mlp.gate_proj.weight`), opt(`${p}.mlp.gate_proj.bias`));
      const u = linear(y, get(`${p}.mlp.up_proj.weight`), opt(`${p}.mlp.up_proj.bias`));
      m = linear(
        g.map((r, t) => r.map((z, i) => act(z) * u[t]![i]!)),
        get(`${p}.mlp.down_proj.weight`),
        opt(`${p}.mlp.down_proj.bias`),
      );
    }
    if (gemma || type === 'olmo2') m = norm(m, `${p}.post_feedforward_layernorm.weight`);
    h = add(h, scale(m, resid));
  }
  const fin = norm(h, 'model.norm.weight');
  const tied = cfg.tie_word_embeddings ?? gemma; // Gemma2Config ties; Granite/OLMo-2 configs do not
  let logits = linear(fin, tied ? emb : get('lm_head.weight'));
  if (type === 'granite') logits = scale(logits, 1 / (cfg.logits_scaling ?? 1));
  if (softcapFinal != null) logits = logits.map((r) => r.map((z) => cap(z, softcapFinal)));
  return logits;
}

/**
 * GraniteMoeMoE on rows `y`: router logits, top-k of the logits, softmax over those k; each
 * chosen expert e: h = input_linear[e]·y, act(h[:I]) · h[I:], output_linear[e]·that, weighted.
 */
function graniteMoe(cfg: Cfg, get: (k: string) => F32, m: string, y: number[][], act: (x: number) => number): number[][] {
  const E: number = cfg.num_local_experts;
  const k: number = cfg.num_experts_per_tok;
  const I: number = cfg.intermediate_size;
  const H: number = cfg.hidden_size;
  const inp = get(`${m}.input_linear.weight`); // [E, 2I, H]
  const out = get(`${m}.output_linear.weight`); // [E, H, I]
  const logits = linear(y, get(`${m}.router.layer.weight`));
  return y.map((row, t) => {
    const top = logits[t]!.map((v, e) => [v, e] as const)
      .sort((a, b) => b[0] - a[0])
      .slice(0, k);
    const gates = softmax(top.map(([v]) => v));
    const acc = new Array<number>(H).fill(0);
    top.forEach(([, e], j) => {
      const h = Array.from({ length: 2 * I }, (_, r) => row.reduce((s, x, c) => s + x * inp.data[(e * 2 * I + r) * H + c]!, 0));
      const a = Array.from({ length: I }, (_, i) => act(h[i]!) * h[I + i]!);
      for (let o = 0; o < H; o++) acc[o] += gates[j]! * a.reduce((s, x, i) => s + x * out.data[(e * H + o) * I + i]!, 0);
    });
    void E;
    return acc;
  });
}

/** FalconForCausalLM, rotary: `_split_heads` per architecture, the decoder layer's block wiring. */
function falcon(cfg: Cfg, get: (k: string) => F32, w: W, ids: number[]): number[][] {
  const opt = (k: string) => w.get(k);
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const hd = H / nh;
  const newArch = !!cfg.new_decoder_architecture;
  const mq: boolean = cfg.multi_query ?? true;
  const parallel: boolean = cfg.parallel_attn ?? true;
  const nLn: number = cfg.num_ln_in_parallel_attn ?? (newArch ? 2 : 1);
  const kvCfg: number = cfg.num_kv_heads ?? nh;
  const eps: number = cfg.layer_norm_epsilon ?? 1e-5;
  const act = actFn(cfg.activation ?? 'gelu');
  const ln = (rows: number[][], key: string) => rows.map((r) => layerNorm(r, get(`${key}.weight`), get(`${key}.bias`), eps));
  const emb = get('transformer.word_embeddings.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  const inv = invFreq(cfg, hd, ids.length);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `transformer.h.${l}`;
    const residual = h;
    let xa: number[][];
    let xm: number[][] | undefined;
    if (newArch && nLn === 2) {
      xa = ln(h, `${p}.ln_attn`);
      xm = ln(h, `${p}.ln_mlp`);
    } else {
      xa = ln(h, `${p}.input_layernorm`);
    }
    const fused = linear(xa, get(`${p}.self_attention.query_key_value.weight`), opt(`${p}.self_attention.query_key_value.bias`));
    // _split_heads: q [nh][hd]; k, v [nKvHeld][hd]; kvOf maps a query head to its kv head
    let nKvHeld: number;
    let qOff: (j: number) => number, kOff: (g: number) => number, vOff: (g: number) => number, kvOf: (j: number) => number;
    if (newArch) {
      const r = nh / kvCfg; // view(batch, seq, -1, nh // nkv + 2, hd): [q × r, k, v] per group
      nKvHeld = kvCfg;
      qOff = (j) => (Math.floor(j / r) * (r + 2) + (j % r)) * hd;
      kOff = (g) => (g * (r + 2) + r) * hd;
      vOff = (g) => (g * (r + 2) + r + 1) * hd;
      kvOf = (j) => Math.floor(j / r); // key broadcast_to(query.shape) within the group
    } else if (!mq) {
      nKvHeld = nh; // view(batch, seq, nh, 3, hd)
      qOff = (j) => j * 3 * hd;
      kOff = (g) => (g * 3 + 1) * hd;
      vOff = (g) => (g * 3 + 2) * hd;
      kvOf = (j) => j;
    } else {
      nKvHeld = 1; // view(batch, seq, nh + 2, hd): [..., :-2], [..., [-2]], [..., [-1]]
      qOff = (j) => j * hd;
      kOff = () => nh * hd;
      vOff = () => (nh + 1) * hd;
      kvOf = () => 0;
    }
    const sl = (r: number[], o: number) => r.slice(o, o + hd);
    const Q = fused.map((r, t) => Array.from({ length: nh }, (_, j) => rope(sl(r, qOff(j)), t, inv)));
    const K = fused.map((r, t) => Array.from({ length: nKvHeld }, (_, g) => rope(sl(r, kOff(g)), t, inv)));
    const V = fused.map((r) => Array.from({ length: nKvHeld }, (_, g) => sl(r, vOff(g))));
    const att = linear(
      attend(
        Q,
        K,
        V,
        kvOf,
        (d) => d / Math.sqrt(hd),
        () => true,
      ),
      get(`${p}.self_attention.dense.weight`),
      opt(`${p}.self_attention.dense.bias`),
    );
    let res = residual;
    if (!newArch) {
      if (parallel) xm = xa;
      else {
        res = add(residual, att);
        xm = ln(res, `${p}.post_attention_layernorm`);
      }
    }
    if (newArch && parallel && nLn === 1) xm = xa;
    const fc = linear(xm!, get(`${p}.mlp.dense_h_to_4h.weight`), opt(`${p}.mlp.dense_h_to_4h.bias`)).map((r) => r.map(act));
    let mlp = linear(fc, get(`${p}.mlp.dense_4h_to_h.weight`), opt(`${p}.mlp.dense_4h_to_h.bias`));
    if (newArch || parallel) mlp = add(mlp, att);
    h = add(res, mlp);
  }
  const fin = ln(h, 'transformer.ln_f');
  return linear(fin, (cfg.tie_word_embeddings ?? true) ? emb : get('lm_head.weight'));
}

/** CodeGenForCausalLM: mp_num = 4 qkv split (q, v, k), rotate_every_two, GPT-J parallel block. */
function codegen(cfg: Cfg, get: (k: string) => F32, ids: number[]): number[][] {
  const H: number = cfg.n_embd;
  const nh: number = cfg.n_head;
  const hd = H / nh;
  const rd: number = cfg.rotary_dim;
  const eps: number = cfg.layer_norm_epsilon ?? 1e-5;
  const act = actFn(cfg.activation_function ?? 'gelu_new');
  const ln = (rows: number[][], key: string) => rows.map((r) => layerNorm(r, get(`${key}.weight`), get(`${key}.bias`), eps));
  const mp = 4;
  const local = H / mp;
  // create_sinusoidal_positions(num_pos, rotary_dim): inv_freq = 1 / 10000^(2i / rd)
  const invf = Array.from({ length: rd / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / rd));
  const rot = (x: number[], pos: number) => {
    const out = x.slice();
    for (let i = 0; i < rd / 2; i++) {
      const s = Math.sin(pos * invf[i]!);
      const c = Math.cos(pos * invf[i]!);
      // tensor·cos + rotate_every_two(tensor)·sin, sin/cos repeat_interleave'd by 2
      out[2 * i] = x[2 * i]! * c - x[2 * i + 1]! * s;
      out[2 * i + 1] = x[2 * i + 1]! * c + x[2 * i]! * s;
    }
    return out;
  };
  const emb = get('transformer.wte.weight');
  let h = ids.map((id) => Array.from(emb.data.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < cfg.n_layer; l++) {
    const p = `transformer.h.${l}`;
    const x = ln(h, `${p}.ln_1`);
    const qkv = linear(x, get(`${p}.attn.qkv_proj.weight`));
    // qkv.reshape(..., mp_num, -1); split(local_dim) → query, value, key; head j of chunk m = head m·(nh/4) + j
    const head = (r: number[], which: 0 | 1 | 2, n: number) => {
      const m = Math.floor(n / (nh / mp));
      const j = n % (nh / mp);
      const o = m * 3 * local + which * local + j * hd;
      return r.slice(o, o + hd);
    };
    const Q = qkv.map((r, t) => Array.from({ length: nh }, (_, n) => rot(head(r, 0, n), t)));
    const V = qkv.map((r) => Array.from({ length: nh }, (_, n) => head(r, 1, n)));
    const K = qkv.map((r, t) => Array.from({ length: nh }, (_, n) => rot(head(r, 2, n), t)));
    const att = linear(
      attend(
        Q,
        K,
        V,
        (j) => j,
        (d) => d / Math.sqrt(hd),
        () => true,
      ),
      get(`${p}.attn.out_proj.weight`),
    );
    const mlp = linear(
      linear(x, get(`${p}.mlp.fc_in.weight`), get(`${p}.mlp.fc_in.bias`)).map((r) => r.map(act)),
      get(`${p}.mlp.fc_out.weight`),
      get(`${p}.mlp.fc_out.bias`),
    );
    h = add(add(att, mlp), h);
  }
  const fin = ln(h, 'transformer.ln_f');
  return linear(fin, (cfg.tie_word_embeddings ?? false) ? emb : get('lm_head.weight'), get('lm_head.bias'));
}
