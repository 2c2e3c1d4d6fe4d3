/**
 * A float64 Whisper forward written from Hugging Face transformers v4.57
 * `models/whisper/modeling_whisper.py` (WhisperEncoder.forward, WhisperDecoder.forward,
 * WhisperEncoderLayer / WhisperDecoderLayer, WhisperAttention eager path,
 * WhisperForConditionalGeneration.proj_out), independent of the graph builder, and a tiny random
 * checkpoint in HF's key layout to run it on. The tests compare the exported graphs' logits with it.
 *
 * Encoder: gelu(conv1(x)) → gelu(conv2(·), stride 2) → permute → + embed_positions.weight →
 * layers (x + attn(ln1(x)); x + fc2(act(fc1(ln2(x))))) → layer_norm. Decoder: embed_tokens(ids)
 * + embed_positions[positions] → layers (causal self-attention, cross-attention over the encoder
 * output, feed-forward; each pre-LN with a residual) → layer_norm → proj_out (no bias).
 * Attention: q = q_proj(x)·head_dim^-0.5; k_proj has no bias; softmax(q·kᵀ [+ causal mask])·v.
 */
import { rng } from '../../src/foundation/rng';

/** A Whisper config (HF field names). */
export interface WhisperTestConfig {
  vocab_size: number;
  num_mel_bins: number;
  d_model: number;
  encoder_layers: number;
  encoder_attention_heads: number;
  encoder_ffn_dim: number;
  decoder_layers: number;
  decoder_attention_heads: number;
  decoder_ffn_dim: number;
  max_source_positions: number;
  max_target_positions: number;
  tie_word_embeddings: boolean;
}

/** Row-major float64 tensors by HF key. */
export type Weights = Map<string, { shape: number[]; data: Float64Array }>;

/** Random weights for `c` (seeded): normal-ish values ×0.3, norms near 1; `proj_out.weight` only when untied. */
export function randomWhisperWeights(c: WhisperTestConfig, seed: number): Weights {
  const r = rng(seed);
  const w: Weights = new Map();
  const put = (key: string, shape: number[], scale = 0.3, offset = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    // the values are float32-exact: the checkpoint stores F32, the reference computes in f64 on the same numbers
    w.set(key, { shape, data: Float64Array.from({ length: n }, () => Math.fround(offset + scale * (r() + r() + r() - 1.5))) });
  };
  const d = c.d_model;
  const layer = (p: string, ffn: number, cross: boolean) => {
    const attn = (a: string) => {
      for (const x of ['q_proj', 'v_proj', 'out_proj']) {
        put(`${p}.${a}.${x}.weight`, [d, d]);
        put(`${p}.${a}.${x}.bias`, [d], 0.1);
      }
      put(`${p}.${a}.k_proj.weight`, [d, d]);
    };
    const ln = (n: string) => {
      put(`${p}.${n}.weight`, [d], 0.2, 1);
      put(`${p}.${n}.bias`, [d], 0.1);
    };
    attn('self_attn');
    ln('self_attn_layer_norm');
    if (cross) {
      attn('encoder_attn');
      ln('encoder_attn_layer_norm');
    }
    put(`${p}.fc1.weight`, [ffn, d]);
    put(`${p}.fc1.bias`, [ffn], 0.1);
    put(`${p}.fc2.weight`, [d, ffn]);
    put(`${p}.fc2.bias`, [d], 0.1);
    ln('final_layer_norm');
  };
  put('model.encoder.conv1.weight', [d, c.num_mel_bins, 3], 0.1);
  put('model.encoder.conv1.bias', [d], 0.1);
  put('model.encoder.conv2.weight', [d, d, 3], 0.2);
  put('model.encoder.conv2.bias', [d], 0.1);
  put('model.encoder.embed_positions.weight', [c.max_source_positions, d], 0.2);
  for (let i = 0; i < c.encoder_layers; i++) layer(`model.encoder.layers.${i}`, c.encoder_ffn_dim, false);
  put('model.encoder.layer_norm.weight', [d], 0.2, 1);
  put('model.encoder.layer_norm.bias', [d], 0.1);
  put('model.decoder.embed_tokens.weight', [c.vocab_size, d], 0.5);
  put('model.decoder.embed_positions.weight', [c.max_target_positions, d], 0.2);
  for (let i = 0; i < c.decoder_layers; i++) layer(`model.decoder.layers.${i}`, c.decoder_ffn_dim, true);
  put('model.decoder.layer_norm.weight', [d], 0.2, 1);
  put('model.decoder.layer_norm.bias', [d], 0.1);
  if (!c.tie_word_embeddings) put('proj_out.weight', [c.vocab_size, d], 0.5);
  return w;
}

type Mat = Float64Array[];
const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));
/** erf to ~1e-15 (Taylor series near 0, continued fraction beyond). */
function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 3) {
    let sum = 0;
    let term = ax;
    for (let n = 0; n < 60; n++) {
      sum += term / (2 * n + 1);
      term *= (-ax * ax) / (n + 1);
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction (Lentz)
  let f = ax;
  for (let k = 60; k >= 1; k--) f = ax + k / 2 / f;
  return Math.sign(x) * (1 - Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f);
}

function get(w: Weights, k: string): Float64Array {
  const t = w.get(k);
  if (!t) throw new Error(`reference: no ${k}`);
  return t.data;
}
function linear(x: Mat, w: Float64Array, b: Float64Array | undefined, out: number): Mat {
  const inp = x[0]!.length;
  return x.map((row) => {
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let s = b ? b[o]! : 0;
      for (let i = 0; i < inp; i++) s += w[o * inp + i]! * row[i]!;
      y[o] = s;
    }
    return y;
  });
}
function layerNorm(x: Mat, w: Float64Array, b: Float64Array): Mat {
  return x.map((row) => {
    const n = row.length;
    const mean = row.reduce((a, v) => a + v, 0) / n;
    const v = row.reduce((a, x) => a + (x - mean) ** 2, 0) / n;
    return row.map((x, i) => ((x - mean) / Math.sqrt(v + 1e-5)) * w[i]! + b[i]!);
  });
}
const add = (a: Mat, b: Mat): Mat => a.map((r, i) => r.map((v, j) => v + b[i]![j]!));

function attention(w: Weights, p: string, x: Mat, kv: Mat, heads: number, causal: boolean): Mat {
  const d = x[0]!.length;
  const hd = d / heads;
  const scale = Math.pow(hd, -0.5);
  const q = linear(x, get(w, `${p}.q_proj.weight`), get(w, `${p}.q_proj.bias`), d).map((r) => r.map((v) => v * scale));
  const k = linear(kv, get(w, `${p}.k_proj.weight`), undefined, d);
  const v = linear(kv, get(w, `${p}.v_proj.weight`), get(w, `${p}.v_proj.bias`), d);
  const ctx = x.map(() => new Float64Array(d));
  for (let h = 0; h < heads; h++)
    for (let t = 0; t < x.length; t++) {
      const limit = causal ? t + 1 : kv.length;
      const s = Array.from({ length: limit }, (_, j) => {
        let acc = 0;
        for (let e = 0; e < hd; e++) acc += q[t]![h * hd + e]! * k[j]![h * hd + e]!;
        return acc;
      });
      const m = Math.max(...s);
      const ex = s.map((z) => Math.exp(z - m));
      const sum = ex.reduce((a, b) => a + b, 0);
      for (let j = 0; j < limit; j++) for (let e = 0; e < hd; e++) ctx[t]![h * hd + e]! += (ex[j]! / sum) * v[j]![h * hd + e]!;
    }
  return linear(ctx, get(w, `${p}.out_proj.weight`), get(w, `${p}.out_proj.bias`), d);
}

function feedForward(w: Weights, p: string, h: Mat, ffn: number): Mat {
  const x = layerNorm(h, get(w, `${p}.final_layer_norm.weight`), get(w, `${p}.final_layer_norm.bias`));
  const up = linear(x, get(w, `${p}.fc1.weight`), get(w, `${p}.fc1.bias`), ffn).map((r) => r.map(gelu));
  return add(h, linear(up, get(w, `${p}.fc2.weight`), get(w, `${p}.fc2.bias`), h[0]!.length));
}

/** Conv1d over `[inCh][T]` with kernel 3, padding 1 → `[T_out][outCh]` (time-major). */
function conv(x: Mat, wt: Float64Array, b: Float64Array, outCh: number, stride: number): Mat {
  const inCh = x.length;
  const T = x[0]!.length;
  const tOut = Math.floor((T + 2 - 3) / stride) + 1;
  return Array.from({ length: tOut }, (_, t) => {
    const y = new Float64Array(outCh);
    for (let o = 0; o < outCh; o++) {
      let s = b[o]!;
      for (let i = 0; i < inCh; i++)
        for (let k = 0; k < 3; k++) {
          const src = t * stride + k - 1;
          if (src >= 0 && src < T) s += wt[(o * inCh + i) * 3 + k]! * x[i]![src]!;
        }
      y[o] = gelu(s);
    }
    return y;
  });
}

/** WhisperEncoder: features `[num_mel_bins][2·max_source]` → `[max_source][d_model]`. */
export function whisperEncoder(c: WhisperTestConfig, w: Weights, features: ArrayLike<number>[]): Mat {
  const d = c.d_model;
  const x = features.map((r) => Float64Array.from(r));
  const h1 = conv(x, get(w, 'model.encoder.conv1.weight'), get(w, 'model.encoder.conv1.bias'), d, 1);
  const chanMajor = Array.from({ length: d }, (_, o) => Float64Array.from(h1, (row) => row[o]!));
  const pos = get(w, 'model.encoder.embed_positions.weight');
  let h: Mat = conv(chanMajor, get(w, 'model.encoder.conv2.weight'), get(w, 'model.encoder.conv2.bias'), d, 2).map((r, t) =>
    r.map((v, j) => v + pos[t * d + j]!),
  );
  for (let i = 0; i < c.encoder_layers; i++) {
    const p = `model.encoder.layers.${i}`;
    const xn = layerNorm(h, get(w, `${p}.self_attn_layer_norm.weight`), get(w, `${p}.self_attn_layer_norm.bias`));
    h = feedForward(w, p, add(h, attention(w, `${p}.self_attn`, xn, xn, c.encoder_attention_heads, false)), c.encoder_ffn_dim);
  }
  return layerNorm(h, get(w, 'model.encoder.layer_norm.weight'), get(w, 'model.encoder.layer_norm.bias'));
}

/** WhisperDecoder + proj_out over the whole sequence: logits `[ids.length][vocab]` (positions 0…S−1). */
export function whisperDecoderLogits(c: WhisperTestConfig, w: Weights, ids: number[], enc: Mat): number[][] {
  const d = c.d_model;
  const emb = get(w, 'model.decoder.embed_tokens.weight');
  const pos = get(w, 'model.decoder.embed_positions.weight');
  let h: Mat = ids.map((id, t) => Float64Array.from({ length: d }, (_, j) => emb[id * d + j]! + pos[t * d + j]!));
  for (let i = 0; i < c.decoder_layers; i++) {
    const p = `model.decoder.layers.${i}`;
    const x1 = layerNorm(h, get(w, `${p}.self_attn_layer_norm.weight`), get(w, `${p}.self_attn_layer_norm.bias`));
    h = add(h, attention(w, `${p}.self_attn`, x1, x1, c.decoder_attention_heads, true));
    const x2 = layerNorm(h, get(w, `${p}.encoder_attn_layer_norm.weight`), get(w, `${p}.encoder_attn_layer_norm.bias`));
    h = add(h, attention(w, `${p}.encoder_attn`, x2, enc, c.decoder_attention_heads, false));
    h = feedForward(w, p, h, c.decoder_ffn_dim);
  }
  const last = layerNorm(h, get(w, 'model.decoder.layer_norm.weight'), get(w, 'model.decoder.layer_norm.bias'));
  const head = c.tie_word_embeddings ? emb : get(w, 'proj_out.weight');
  return linear(last, head, undefined, c.vocab_size).map((r) => Array.from(r));
}

/** Greedy decode of `n` tokens by full recomputation (HF generate without a cache). */
export function whisperGreedy(c: WhisperTestConfig, w: Weights, prompt: number[], enc: Mat, n: number): number[] {
  const ids = [...prompt];
  const out: number[] = [];
  for (let k = 0; k < n; k++) {
    const rows = whisperDecoderLogits(c, w, ids, enc);
    const last = rows[rows.length - 1]!;
    const next = last.indexOf(Math.max(...last));
    out.push(next);
    ids.push(next);
  }
  return out;
}
