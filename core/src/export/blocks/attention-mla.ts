/**
 * DeepSeek-V3 Multi-head Latent Attention over a fixed-size KV cache, ported from HF
 * transformers `src/transformers/models/deepseek_v3/modeling_deepseek_v3.py`
 * (`DeepseekV3Attention.forward`, eager path), in QEfficient's two cache forms
 * (`QEfficient/transformers/models/deepseek_v3/modeling_deepseek.py`, quic/efficient-transformers):
 *
 * - per head (QEfficient's default, `forward_full_kv`): the expanded keys `[k_nope | k_rot]`
 *   and values go into `past_key.{i}` `[b, heads, ctx, nope + rope]` and `past_value.{i}`
 *   `[b, heads, ctx, v]`, and attention runs as for any other family (attention.ts);
 * - compressed (`fused_forward_orig` with `cache_compressed`): only the normalized latent
 *   `compressed_kv.{i}` `[b, 1, ctx, kv_lora_rank]` and the rotated `k_pe.{i}` `[b, 1, ctx, rope]`
 *   are cached. The key side of `kv_b_proj` is absorbed into the query
 *   (q_nope · k_upₕ → a latent query per head, scored against the latent cache) and its value
 *   side applied after the softmax (probs · latent · v_upₕᵀ). QEfficient absorbs `q_b_proj`
 *   too (`fusedqk`, which needs q_lora_rank); absorbing k_up alone gives the same scores and
 *   also serves `q_lora_rank: null`.
 *
 * Both forms follow HF's math, not QEfficient's where they differ: rope is interleaved only when
 * `rope_interleave` is true (QEfficient always de-interleaves), and the q_a / kv_a norms use
 * RMSNorm's default eps 1e-6 as HF builds them.
 */
import type { ArchSpec, LayerSpec, MlaSpec } from './arch';
import { attendCache, maskedSoftmax, readCaches } from './attention';
import type { CacheContext } from './attention-block';
import { norm } from './norms';
import { cast, linear, reshape, split, transpose, unsqueeze, weight, type Ctx } from './ops';
import { applyRope, type RopeTables } from './rope';
import type { StateKind } from '../../artifacts/graph-interface';
import type { AttentionBlock } from './attention-block';

/**
 * HF `apply_rotary_pos_emb_interleave`'s `view(d/2, 2).transpose` as an index permutation of the
 * last axis: even dims first, then odd ones (rotate_half then pairs 2i with 2i + 1).
 */
export function deinterleaveOrder(d: number): number[] {
  return [...Array.from({ length: d / 2 }, (_, i) => 2 * i), ...Array.from({ length: d / 2 }, (_, i) => 2 * i + 1)];
}

/** The MLA attention block (layer-states.ts `ATTENTION_BLOCKS.mla`): the layer's states in its cache form. */
export const mlaBlock: AttentionBlock = (c, a, l, x, kv, rope, states) => {
  const m = l.attn as MlaSpec;
  const need = (k: StateKind) => {
    const v = states[k];
    if (v === undefined) throw new Error(`internal error: the MLA block (${m.cache} cache) needs a ${k} state`);
    return v;
  };
  if (!rope) throw new Error('internal error: MLA needs the rope tables');
  if (m.cache === 'compressed') {
    const r = mlaAttention(c, a, l, m, x, kv, rope, { key: need('compressed_kv'), value: need('k_pe') });
    return { out: r.out, states: { compressed_kv: r.key, k_pe: r.value } };
  }
  const r = mlaAttention(c, a, l, m, x, kv, rope, { key: need('past_key'), value: need('past_value') });
  return { out: r.out, states: { past_key: r.key, past_value: r.value } };
};

/** Layer `l`'s MLA on 2-D hidden `x [B·S, H]`; `past` is the layer's cache pair in `m.cache`'s form. */
export function mlaAttention(
  c: Ctx,
  a: ArchSpec,
  l: LayerSpec,
  m: MlaSpec,
  x: string,
  kv: CacheContext,
  rope: RopeTables,
  past: { key: string; value: string },
): { out: string; key: string; value: string } {
  const g = c.g;
  const nh = a.nHeads;
  const qkDim = m.nope + m.rope;
  const eps6 = { ...a.norm, eps: 1e-6 };
  const heads = (t: string, n: number, d: number) => g.op('Reshape', [t, g.op('Concat', [kv.bs, g.ints([n, d])], { axis: 0 })]); // [B,S,n,d]

  const qFlat = m.q ? linear(c, x, m.q) : linear(c, norm(c, linear(c, x, m.qA!), m.qANorm!, eps6), m.qB!);
  const [qPass, qRot0] = split(c, heads(qFlat, nh, qkDim), -1, [m.nope, m.rope]) as [string, string];
  const [latent, kRot0] = split(c, linear(c, x, m.kvA), -1, [m.kvLoraRank, m.rope]) as [string, string];
  const latentN = norm(c, latent, m.kvANorm, eps6); // [T, L]
  const order = m.interleave ? g.ints(deinterleaveOrder(m.rope), 'rope_deinterleave') : undefined;
  const deint = (t: string) => (order ? g.op('Gather', [t, order], { axis: -1 }) : t);
  const qRot = applyRope(c, deint(qRot0), rope, a.rope!, m.rope); // [B,S,nh,rope]
  const kRot = applyRope(c, deint(heads(kRot0, 1, m.rope)), rope, a.rope!, m.rope); // [B,S,1,rope]

  if (m.cache === 'per-head') {
    const [kNope, v] = split(c, heads(linear(c, latentN, m.kvB), nh, m.nope + m.v), -1, [m.nope, m.v]) as [string, string];
    const kRotAll = g.op('Expand', [kRot, g.op('Concat', [kv.bs, g.ints([nh, m.rope])], { axis: 0 })]);
    const t = (y: string) => transpose(c, y, [0, 2, 1, 3]); // [B,nh,S,·]
    const q = t(g.op('Concat', [qPass, qRot], { axis: -1 }));
    const k = t(g.op('Concat', [kNope, kRotAll], { axis: -1 }));
    return attendCache(c, a, l, { q, k, v: t(v) }, kv, past, { qk: qkDim, v: m.v });
  }

  // compressed: cache the normalized latent and the rotated k_pe, one "head" each — written at
  // the kv context's head-0 indices (its heads are the query heads, as for the per-head form)
  const idx = g.op('Slice', [kv.scatterIdx, g.ints([0]), g.ints([1]), g.ints([1])]); // [B,1,S,3]
  const latent4 = unsqueeze(c, g.op('Reshape', [latentN, g.op('Concat', [kv.bs, g.ints([m.kvLoraRank])], { axis: 0 })]), [1]); // [B,1,S,L]
  const ckv = g.op('ScatterND', [past.key, idx, latent4]);
  const kpe = g.op('ScatterND', [past.value, idx, transpose(c, kRot, [0, 2, 1, 3])]);
  const [ckvRows, kpeRows] = readCaches(c, kv, [ckv, kpe]) as [string, string]; // [B,1,C,L], [B,1,C,rope]

  // kv_b_proj [nh·(nope+v), L] per head as [k_up (nope) | v_up (v)], each [nh, ·, L]
  const wkv = reshape(c, weight(c, m.kvB.weight, [m.kvB.out, m.kvB.in]), [nh, m.nope + m.v, m.kvLoraRank]);
  const [kUp, vUp] = split(c, wkv, 1, [m.nope, m.v]) as [string, string];
  const qLatent = g.op('MatMul', [transpose(c, qPass, [0, 2, 1, 3]), kUp]); // [B,nh,S,L]
  const query = g.op('Concat', [qLatent, transpose(c, qRot, [0, 2, 1, 3])], { axis: -1 }); // [B,nh,S,L+rope]
  const keys = g.op('Concat', [ckvRows, kpeRows], { axis: -1 }); // [B,1,C,L+rope]
  let scores = g.op('MatMul', [query, transpose(c, keys, [0, 1, 3, 2])]); // [B,nh,S,C]
  if (a.scoreScale) scores = g.op('Mul', [scores, g.scalar(c.dtype, a.scoreScale.value, 'attn_scale')]);
  const probs = maskedSoftmax(c, a, l, kv, cast(c, scores, c.dtype, 'float32'));
  const ctxLatent = g.op('MatMul', [probs, ckvRows]); // [B,nh,S,L]
  const ctx = g.op('MatMul', [ctxLatent, transpose(c, vUp, [0, 2, 1])]); // [B,nh,S,v]
  const merged = reshape(c, transpose(c, ctx, [0, 2, 1, 3]), [-1, nh * m.v]);
  return { out: linear(c, merged, l.o), key: ckv, value: kpe };
}
