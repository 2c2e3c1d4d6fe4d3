/**
 * An independent float64 reference forward of the BERT-family encoders and the
 * sentence-transformers pooling, written from transformers
 * `src/transformers/models/xlm_roberta/modeling_xlm_roberta.py` @ 015bfeb86891c5f5e450f48942260ac3e2cd2bf2
 * (XLMRobertaEmbeddings with `create_position_ids_from_input_ids`: mask = ids != padding_idx,
 * positions = cumsum(mask) · mask + padding_idx; XLMRobertaSelfAttention: scores / √head_size +
 * the extended mask (1 - mask) · finfo.min, softmax, context; XLMRobertaSelfOutput /
 * XLMRobertaOutput: LayerNorm(dense(x) + residual); XLMRobertaIntermediate: dense + ACT2FN) and
 * sentence-transformers `models/Pooling.py` @ 13b4da22 / `Normalize.py` @ 4edb4a94, sharing no
 * code with the graph builder. Also a random XLM-RoBERTa checkpoint with HF's key names
 * (`XLMRobertaModel` parameters, optionally under `roberta.` as a task head saves them).
 */
import { erf } from './graph-reference-dense';
import { bf16, rng } from './graph-random';
import type { F32 } from './graph-support';

type W = Map<string, F32>;
type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Random XLMRobertaModel weights for `cfg` (bf16-rounded), keys under `prefix` (`''` or `roberta.`). */
export function randomEncoderCheckpoint(cfg: Cfg, seed: number, prefix = ''): W {
  const r = rng(seed);
  const w: W = new Map();
  const put = (k: string, shape: number[], scale: number, center = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    w.set(prefix + k, { shape, data: Float32Array.from({ length: n }, () => bf16(center + scale * r())) });
  };
  const H: number = cfg.hidden_size;
  const I: number = cfg.intermediate_size;
  put('embeddings.word_embeddings.weight', [cfg.vocab_size, H], 0.5);
  put('embeddings.position_embeddings.weight', [cfg.max_position_embeddings, H], 0.5);
  put('embeddings.token_type_embeddings.weight', [cfg.type_vocab_size, H], 0.5);
  const ln = (k: string) => {
    put(`${k}.weight`, [H], 0.1, 1);
    put(`${k}.bias`, [H], 0.1);
  };
  const dense = (k: string, out: number, inp: number) => {
    put(`${k}.weight`, [out, inp], 1 / Math.sqrt(inp));
    put(`${k}.bias`, [out], 0.1);
  };
  ln('embeddings.LayerNorm');
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `encoder.layer.${l}`;
    for (const n of ['query', 'key', 'value']) dense(`${p}.attention.self.${n}`, H, H);
    dense(`${p}.attention.output.dense`, H, H);
    ln(`${p}.attention.output.LayerNorm`);
    dense(`${p}.intermediate.dense`, I, H);
    dense(`${p}.output.dense`, H, I);
    ln(`${p}.output.LayerNorm`);
  }
  dense('pooler.dense', H, H);
  return w;
}

const linear = (x: number[], w: F32, b: F32): number[] => {
  const [out, inp] = w.shape as [number, number];
  return Array.from({ length: out }, (_, o) => {
    let s = b.data[o]!;
    for (let i = 0; i < inp; i++) s += x[i]! * w.data[o * inp + i]!;
    return s;
  });
};

const layerNorm = (x: number[], w: F32, b: F32, eps: number): number[] => {
  const mean = x.reduce((a, v) => a + v, 0) / x.length;
  const v = x.reduce((a, t) => a + (t - mean) ** 2, 0) / x.length;
  return x.map((t, i) => ((t - mean) / Math.sqrt(v + eps)) * w.data[i]! + b.data[i]!);
};

/** What the reference computes for a padded batch. */
export interface EncoderOutputs {
  /** `[B][S][H]`, padded rows included. */
  hidden: number[][][];
  /** `[B][H·modes]` after Pooling (and Normalize when asked). */
  pooled: number[][];
  /** The position ids HF makes. */
  positions: number[][];
}

/**
 * XLMRobertaModel forward (BertModel's for model_type bert: positions 0…S-1; token types
 * `types`, default HF's zero buffer) (eager, float64) over `ids` `[B][S]` with `mask`, then Pooling with
 * `modes` (cls, max, mean, mean_sqrt_len, concatenated in that order) and Normalize.
 */
export function xlmRobertaReference(
  w: W,
  cfg: Cfg,
  ids: number[][],
  mask: number[][],
  pool: { modes: ('cls' | 'max' | 'mean' | 'mean_sqrt_len')[]; normalize: boolean },
  prefix = '',
  types?: number[][],
): EncoderOutputs {
  const get = (k: string) => {
    const t = w.get(prefix + k);
    if (!t) throw new Error(`reference: no ${prefix + k}`);
    return t;
  };
  const H: number = cfg.hidden_size;
  const nh: number = cfg.num_attention_heads;
  const hd = H / nh;
  const eps: number = cfg.layer_norm_eps;
  const pad: number = cfg.pad_token_id;
  const row = (t: F32, i: number) => Array.from(t.data.subarray(i * H, (i + 1) * H));
  // BertEmbeddings (modeling_bert.py, same commit): the position_ids buffer, 0…S-1
  const positions = ids.map((r) => {
    let c = 0;
    return cfg.model_type === 'bert' ? r.map((_, s) => s) : r.map((t) => (t !== pad ? ((c += 1), c + pad) : pad));
  });
  const gelu = (x: number) => 0.5 * x * (1 + erf(x / Math.SQRT2));
  const min = -3.4028234663852886e38;
  const hidden = ids.map((r, b) => {
    let x = r.map((t, s) => {
      const e = row(get('embeddings.word_embeddings.weight'), t);
      const ty = row(get('embeddings.token_type_embeddings.weight'), types?.[b]![s] ?? 0);
      const po = row(get('embeddings.position_embeddings.weight'), positions[b]![s]!);
      return layerNorm(
        e.map((v, i) => v + ty[i]! + po[i]!),
        get('embeddings.LayerNorm.weight'),
        get('embeddings.LayerNorm.bias'),
        eps,
      );
    });
    for (let l = 0; l < cfg.num_hidden_layers; l++) {
      const p = `encoder.layer.${l}`;
      const proj = (n: string) => x.map((h) => linear(h, get(`${p}.attention.self.${n}.weight`), get(`${p}.attention.self.${n}.bias`)));
      const q = proj('query');
      const k = proj('key');
      const v = proj('value');
      const ctx = x.map((_, i) => {
        const out = new Array<number>(H).fill(0);
        for (let h = 0; h < nh; h++) {
          const sc = x.map((__, j) => {
            let d = 0;
            for (let c = 0; c < hd; c++) d += q[i]![h * hd + c]! * k[j]![h * hd + c]!;
            return d / Math.sqrt(hd) + (1 - mask[b]![j]!) * min;
          });
          const m = Math.max(...sc);
          const e = sc.map((s) => Math.exp(s - m));
          const z = e.reduce((a, t) => a + t, 0);
          for (let j = 0; j < x.length; j++) for (let c = 0; c < hd; c++) out[h * hd + c]! += (e[j]! / z) * v[j]![h * hd + c]!;
        }
        return out;
      });
      const attn = ctx.map((c, i) => {
        const d = linear(c, get(`${p}.attention.output.dense.weight`), get(`${p}.attention.output.dense.bias`));
        return layerNorm(
          d.map((t, j) => t + x[i]![j]!),
          get(`${p}.attention.output.LayerNorm.weight`),
          get(`${p}.attention.output.LayerNorm.bias`),
          eps,
        );
      });
      x = attn.map((a) => {
        const inter = linear(a, get(`${p}.intermediate.dense.weight`), get(`${p}.intermediate.dense.bias`)).map(gelu);
        const o = linear(inter, get(`${p}.output.dense.weight`), get(`${p}.output.dense.bias`));
        return layerNorm(
          o.map((t, j) => t + a[j]!),
          get(`${p}.output.LayerNorm.weight`),
          get(`${p}.output.LayerNorm.bias`),
          eps,
        );
      });
    }
    return x;
  });
  const pooled = hidden.map((h, b) => {
    const m = mask[b]!;
    const count = Math.max(
      m.reduce((a, t) => a + t, 0),
      1e-9,
    );
    const sum = Array.from({ length: H }, (_, i) => h.reduce((a, r, s) => a + r[i]! * m[s]!, 0));
    const parts: number[] = [];
    for (const mode of pool.modes) {
      if (mode === 'cls') parts.push(...h[0]!);
      if (mode === 'max') parts.push(...Array.from({ length: H }, (_, i) => Math.max(...h.map((r, s) => (m[s] ? r[i]! : -1e9)))));
      if (mode === 'mean') parts.push(...sum.map((t) => t / count));
      if (mode === 'mean_sqrt_len') parts.push(...sum.map((t) => t / Math.sqrt(count)));
    }
    if (!pool.normalize) return parts;
    const n = Math.max(Math.sqrt(parts.reduce((a, t) => a + t * t, 0)), 1e-12);
    return parts.map((t) => t / n);
  });
  return { hidden, pooled, positions };
}
