/**
 * Self-attention over a fixed-size KV cache, QEfficient style: new k/v are written into
 * `past_key.{i}` / `past_value.{i}` `[cacheBatch, nKv, ctxLen, headDim]` at `position_ids` with
 * one ScatterND each; queries attend the whole cache under a mask `slot ≤ position` (and
 * `slot > position − window` with a sliding window), so prefill (seq > 1) and decode (seq = 1)
 * are one graph. GQA/MQA: queries are grouped per kv head by a reshape, never by copying K/V.
 *
 * Padded prompt tokens (position −1, as QEfficient feeds them) are written to the last slot,
 * which no valid query can see until a real token at that position overwrites it.
 *
 * Compute-context-length (CCL, QEfficient's `comp_ctx_lengths` input, a 1-D tensor whose
 * *length* is the active bucket): the new k/v are still written into the full cache, but the
 * scores, mask and values read only the first min(bucket, ctx_len) slots — QEfficient
 * `blocking/attention_blocking.py` `past_key_value_update` slices the mask to
 * `comp_ctx_lengths.shape[-1]` and hands that length to the cache read (`cache_kwargs["CCL"]`).
 */
import type { ArchSpec, FusedLayout, LayerSpec } from './arch';
import { alibiBias } from './alibi';
import { applyRope } from './rope';
import { cast, linear, reshape, softcap, split, transpose, unsqueeze, weight, type Ctx } from './ops';
import { norm } from './norms';
import { repeatKvHeads } from './replicate-kv';
import { l2Norm, sameChunk, temperatureScale } from './attention-llama4';
import { chunkTail, windowContext, windowReadWrite, type WindowContext } from './attention-window';
import type { AttentionBlock, CacheContext, StateValues } from './attention-block';
import type { StateKind } from '../../artifacts/graph-interface';

/**
 * Builds the scatter indices and the attention mask from `position_ids` and the cache shape.
 * `batchIndex` (continuous batching) is `[B, 1]` int64; without it row b writes cache row b.
 * `compCtxLengths` (CCL) limits the slots attention reads to its length (capped at ctx_len).
 */
export function cacheContext(
  c: Ctx,
  a: ArchSpec,
  inputIds: string,
  positionIds: string,
  pastKey0: string,
  batchIndex?: string,
  compCtxLengths?: string,
): CacheContext {
  const g = c.g;
  return g.within('kv', () => {
    const bs = g.op('Shape', [inputIds]); // [B, S]
    const ctxLen = g.op('Gather', [g.op('Shape', [pastKey0]), g.int(2)], { axis: 0 }); // scalar C
    const cMinus1 = g.op('Sub', [ctxLen, g.int(1)]);
    // positions < 0 (padding) → last slot; see the file comment for why that is harmless.
    const neg = g.op('Less', [positionIds, g.int(0)]);
    const writePos = g.op('Where', [neg, cMinus1, positionIds]); // [B,S]
    const idxShape = g.op(
      'Concat',
      [g.op('Slice', [bs, g.ints([0]), g.ints([1])]), g.ints([a.nKv]), g.op('Slice', [bs, g.ints([1]), g.ints([2])]), g.ints([1])],
      { axis: 0 },
    ); // [B,nKv,S,1]
    let rows: string;
    let batchRows: string | undefined;
    if (batchIndex) {
      batchRows = reshape(c, batchIndex, [-1]);
      rows = batchRows;
    } else {
      const b = g.op('Gather', [bs, g.int(0)], { axis: 0 });
      rows = g.op('Range', [g.int(0), b, g.int(1)]);
    }
    const bIdx = g.op('Expand', [reshape(c, rows, [-1, 1, 1, 1]), idxShape]);
    const hIdx = g.op('Expand', [
      g.constant(
        'int64',
        [1, a.nKv, 1, 1],
        Array.from({ length: a.nKv }, (_, i) => i),
        'kv_heads',
      ),
      idxShape,
    ]);
    const pIdx = g.op('Expand', [unsqueeze(c, writePos, [1, 3]), idxShape]);
    const scatterIdx = g.op('Concat', [bIdx, hIdx, pIdx], { axis: -1 });

    // CCL: read R = min(len(comp_ctx_lengths), C) slots; the mask spans those R slots only
    let readLen: string | undefined;
    // prefill-only attention (ArchSpec.chunkAttention) reads the call's own S keys, not the cache
    let span = a.chunkAttention ? g.op('Gather', [bs, g.int(1)], { axis: 0 }) : ctxLen;
    if (compCtxLengths) {
      span = g.op('Min', [g.op('Gather', [g.op('Shape', [compCtxLengths]), g.int(0)], { axis: 0 }), ctxLen]); // scalar R
      readLen = unsqueeze(c, span, [0]); // [1]
    }
    // mask[b, s, j] = j ≤ pos[b,s] (∧ j > pos[b,s] − window: HF's window, a token sees itself and the W−1 before it)
    const slots = unsqueeze(c, g.op('Range', [g.int(0), span, g.int(1)]), [0, 1]); // [1,1,C or R]
    const pos3 = unsqueeze(c, positionIds, [-1]); // [B,S,1]
    const causal = g.op('LessOrEqual', [slots, pos3]);
    const groups = a.nHeads / a.nKv;
    const masks = new Map<string, string>();
    const maskFor = (window: number | undefined, chunk?: number): string => {
      const hit = masks.get(`${window}:${chunk}`);
      if (hit) return hit;
      let allowed = chunk === undefined ? causal : sameChunk(c, causal, slots, pos3, chunk);
      if (window !== undefined) {
        const lo = g.op('Sub', [pos3, g.int(window)]);
        allowed = g.op('And', [allowed, g.op('Greater', [slots, lo])]);
      }
      let mask = unsqueeze(c, allowed, [1]); // [B,1,S,C or R]
      // queries are laid out (group, position) per kv head; tile the mask to match
      if (groups > 1) mask = g.op('Tile', [mask, g.ints([1, 1, groups, 1])]);
      masks.set(`${window}:${chunk}`, mask);
      return mask;
    };
    const alibi = a.alibi ? alibiBias(c, a.alibi.slopes, a.nKv, slots, pos3) : undefined;
    const windows = new Map<number, WindowContext>();
    const windowFor = (w: number): WindowContext => {
      const hit = windows.get(w) ?? windowContext(c, a, positionIds, bs, w);
      windows.set(w, hit);
      return hit;
    };
    return {
      scatterIdx,
      mask: maskFor(a.slidingWindow),
      maskFor,
      windowFor,
      positionIds,
      batchRows,
      bs,
      ...(readLen ? { readLen } : {}),
      ...(alibi ? { alibi } : {}),
    };
  });
}

/** Splits a fused qkv output `[N, F]` into q, k, v `[N, ·]` per its layout (see {@link FusedLayout}). */
function splitFused(c: Ctx, qkv: string, layout: FusedLayout): [string, string, string] {
  const sizes = layout.pieces.map((p) => p.size);
  const grouped = layout.groups > 1 ? reshape(c, qkv, [0, layout.groups, sizes.reduce((x, y) => x + y, 0)]) : qkv;
  const parts = split(c, grouped, layout.groups > 1 ? 2 : 1, sizes).map((p) => (layout.groups > 1 ? reshape(c, p, [0, -1]) : p));
  const of = (role: 'q' | 'k' | 'v') => parts[layout.pieces.findIndex((p) => p.role === role)]!;
  return [of('q'), of('k'), of('v')];
}

function need(states: StateValues, kind: StateKind): string {
  const v = states[kind];
  if (v === undefined) throw new Error(`internal error: the MHA attention block needs a ${kind} state`);
  return v;
}

/** MHA / GQA / MQA, the default attention block: layer `l` on 2-D hidden `x [B·S, H]` over its K and V caches. */
export const attention: AttentionBlock = (c, a, l, x, kv, rope, states) => {
  const past = { key: need(states, 'past_key'), value: need(states, 'past_value') };
  const g = c.g;
  const { nHeads: nh, nKv, headDim: hd } = a;
  let q: string, k: string, v: string;
  if (l.attn.kind === 'separate') {
    q = linear(c, x, l.attn.q);
    k = linear(c, x, l.attn.k);
    v = linear(c, x, l.attn.v);
  } else if (l.attn.kind === 'fused') {
    const layout = l.attn.layout ?? {
      groups: 1,
      pieces: [
        { role: 'q', size: nh * hd },
        { role: 'k', size: nKv * hd },
        { role: 'v', size: nKv * hd },
      ],
    };
    let qkv = linear(c, x, l.attn.qkv);
    // MPT clip_qkv: the fused output is clamped before the split (HF MptAttention.forward)
    if (l.attn.clip !== undefined)
      qkv = g.op('Clip', [qkv, g.scalar(c.dtype, -l.attn.clip, 'clip_lo'), g.scalar(c.dtype, l.attn.clip, 'clip_hi')]);
    [q, k, v] = splitFused(c, qkv, layout);
  } else {
    // MLA (attention-mla.ts) and Gated DeltaNet (gated-deltanet.ts) layers do not come here (decoder.ts routes them)
    throw new Error(`internal: a ${l.attn.kind} layer has no softmax attention here`);
  }
  if (a.kvRepeat) [k, v] = [repeatKvHeads(c, k, a), repeatKvHeads(c, v, a)];
  let gate: string | undefined;
  if (l.attnOutputGate) {
    // Qwen3.5: q_proj(x).view(..., heads, 2·head_dim).chunk(2, -1) → query, gate (query first)
    const qg = g.op('Reshape', [q, g.op('Concat', [kv.bs, g.ints([nh, 2 * hd])], { axis: 0 })]);
    const [qPart, gPart] = split(c, qg, 3, [hd, hd]);
    q = qPart!;
    gate = reshape(c, gPart!, [-1, nh * hd]);
  }
  const overProjection = l.qkNormOver === 'projection';
  if (overProjection && l.qNorm) q = norm(c, q, l.qNorm, a.norm);
  if (overProjection && l.kNorm) k = norm(c, k, l.kNorm, a.norm);
  const heads = (t: string, n: number) => g.op('Reshape', [t, g.op('Concat', [kv.bs, g.ints([n, hd])], { axis: 0 })]); // [B,S,n,hd]
  q = heads(q, nh);
  k = heads(k, nKv);
  v = heads(v, nKv);
  if (!overProjection && l.qNorm) q = norm(c, q, l.qNorm, a.norm);
  if (!overProjection && l.kNorm) k = norm(c, k, l.kNorm, a.norm);
  const ropeSpec = l.rope ?? a.rope;
  if (rope && ropeSpec && !l.noRope) {
    q = applyRope(c, q, rope, ropeSpec, hd);
    k = applyRope(c, k, rope, ropeSpec, hd);
  }
  if (l.qkL2NormEps !== undefined) {
    q = l2Norm(c, q, l.qkL2NormEps);
    k = l2Norm(c, k, l.qkL2NormEps);
  }
  if (l.attnTemperature) q = temperatureScale(c, q, kv.positionIds, l.attnTemperature);
  q = transpose(c, q, [0, 2, 1, 3]); // [B,nh,S,hd]
  k = transpose(c, k, [0, 2, 1, 3]); // [B,nKv,S,hd]
  v = transpose(c, v, [0, 2, 1, 3]);
  const r = attendCache(c, a, l, { q, k, v }, kv, past, { qk: hd, v: hd }, gate);
  return { out: r.out, states: { past_key: r.key, past_value: r.value } };
};

/**
 * The cache rows attention reads after the write, for each of `ts`: the batch_index rows
 * (continuous batching), then the CCL bucket's slots (the write went to the full cache).
 */
export function readCaches(c: Ctx, kv: CacheContext, ts: string[]): string[] {
  const g = c.g;
  const rows = ts.map((t) => (kv.batchRows ? g.op('Gather', [t, kv.batchRows], { axis: 0 }) : t));
  return kv.readLen ? rows.map((r) => g.op('Slice', [r, g.ints([0]), kv.readLen!, g.ints([2])])) : rows;
}

/**
 * Writes `k`/`v` `[B, nKv, S, ·]` into the layer's cache at the positions and attends `q`
 * `[B, nh, S, dims.qk]` over it (scale, soft-cap, mask, softmax in float32, sinks); returns the
 * merged heads through `o` and the new cache. `dims.v` is the value head size (MLA's v_head_dim);
 * `gate` (Qwen3.5's gated attention) multiplies the merged heads by sigmoid(gate) before `o`.
 */
export function attendCache(
  c: Ctx,
  a: ArchSpec,
  l: LayerSpec,
  t: { q: string; k: string; v: string },
  kv: CacheContext,
  past: { key: string; value: string },
  dims: { qk: number; v: number },
  gate?: string,
): { out: string; key: string; value: string } {
  const g = c.g;
  const { nHeads: nh, nKv } = a;
  // a ring layer reads [ring ‖ the call's keys] under its window's own mask (attention-window.ts)
  const ring = l.windowCache && l.slidingWindow !== undefined && !a.chunkAttention ? kv.windowFor(l.slidingWindow) : undefined;
  const rw = ring ? windowReadWrite(c, ring, kv.batchRows, t, past) : undefined;
  // prefill-only: a ring layer keeps the call's last W keys in order, others scatter as usual
  const tail =
    a.chunkAttention && l.windowCache && l.slidingWindow !== undefined ? chunkTail(c, kv.positionIds, l.slidingWindow) : undefined;
  const key = rw ? rw.key : tail ? g.op('Gather', [t.k, tail], { axis: 2 }) : g.op('ScatterND', [past.key, kv.scatterIdx, t.k]);
  const value = rw ? rw.value : tail ? g.op('Gather', [t.v, tail], { axis: 2 }) : g.op('ScatterND', [past.value, kv.scatterIdx, t.v]);
  const [kRows, vRows] = rw ? [rw.kRead, rw.vRead] : a.chunkAttention ? [t.k, t.v] : (readCaches(c, kv, [key, value]) as [string, string]);

  const qg = reshape(c, t.q, [0, nKv, -1, dims.qk]); // [B,nKv,groups·S,hd]
  // CodeGen keeps q·kᵀ in float32 whatever the model dtype (HF `_attn`: query/key .to(float32))
  const se = a.scoresInFloat32 ? 'float32' : c.dtype;
  let scores = g.op('MatMul', [cast(c, qg, c.dtype, se), cast(c, transpose(c, kRows, [0, 1, 3, 2]), c.dtype, se)]); // [B,nKv,groups·S,C]
  if (a.scoreScale) {
    scores = g.op(a.scoreScale.op === 'mul' ? 'Mul' : 'Div', [scores, g.scalar(se, a.scoreScale.value, 'attn_scale')]);
  }
  const probs = maskedSoftmax(c, a, l, kv, cast(c, scores, se, 'float32'), ring?.mask);
  const ctx = g.op('MatMul', [probs, vRows]); // [B,nKv,groups·S,v]
  const merged = reshape(c, transpose(c, reshape(c, ctx, [0, nh, -1, dims.v]), [0, 2, 1, 3]), [-1, nh * dims.v]);
  // Qwen3.5's gated attention: the output times sigmoid(gate) before o_proj
  const gated = gate ? g.op('Mul', [merged, g.op('Sigmoid', [gate])]) : merged;
  return { out: linear(c, gated, l.o), key, value };
}

/**
 * float32 scores → soft-cap, the layer's mask, softmax (with sinks) → probabilities in the
 * compute dtype. HF softmaxes in float32 (`softmax(..., dtype=float32).to(query.dtype)`) and
 * caps in the model dtype, where a float16 tanh·50 loses ~0.02 per score, so the cap is here too.
 * `ringMask` replaces the layer's cache mask for a ring layer (its keys are [ring ‖ the call's]).
 */
export function maskedSoftmax(c: Ctx, a: ArchSpec, l: LayerSpec, kv: CacheContext, scores: string, ringMask?: string): string {
  const g = c.g;
  let sf = a.attnSoftcap !== undefined ? softcap(c, scores, a.attnSoftcap, 'float32') : scores;
  if (kv.alibi) sf = g.op('Add', [sf, kv.alibi]);
  const mask =
    ringMask ?? (l.slidingWindow !== undefined || l.attnChunk !== undefined ? kv.maskFor(l.slidingWindow, l.attnChunk) : kv.mask);
  const masked = g.op('Where', [mask, sf, g.scalar('float32', -3.4028234663852886e38, 'neg_max')]);
  return cast(c, l.sinks ? softmaxWithSinks(c, a, masked, l.sinks) : g.op('Softmax', [masked], { axis: -1 }), 'float32', c.dtype);
}

/**
 * GPT-OSS `eager_attention_forward`: each head's learned sink logit is appended as one more
 * column of the scores, the softmax runs over scores + sink, and the sink's column is dropped
 * (so a head may attend to "nothing"). `scores` is float32 `[B, nKv, groups·S, C]`; query row
 * `grp·S + s` of kv head k is attention head `k·groups + grp`, so the `[nHeads]` sinks become
 * a `[1, nKv, groups·S, 1]` column by repeating each head's value S times.
 */
function softmaxWithSinks(c: Ctx, a: ArchSpec, scores: string, sinks: string): string {
  const g = c.g;
  const groups = a.nHeads / a.nKv;
  const shape = g.op('Shape', [scores]); // [B, nKv, groups·S, C]
  const s = g.op('Div', [g.op('Slice', [shape, g.ints([2]), g.ints([3])]), g.ints([groups])]); // [S]
  const perHead = reshape(c, cast(c, weight(c, sinks, [a.nHeads]), c.dtype, 'float32'), [1, a.nKv, groups, 1]);
  const repeated = g.op('Expand', [perHead, g.op('Concat', [g.ints([1, a.nKv, groups]), s], { axis: 0 })]); // [1,nKv,groups,S]
  const column = g.op('Expand', [
    reshape(c, repeated, [1, a.nKv, -1, 1]),
    g.op('Concat', [g.op('Slice', [shape, g.ints([0]), g.ints([3])]), g.ints([1])], { axis: 0 }),
  ]);
  const probs = g.op('Softmax', [g.op('Concat', [scores, column], { axis: -1 })], { axis: -1 });
  return g.op('Slice', [probs, g.ints([0]), g.ints([-1]), g.ints([-1])]); // drop the sink column
}
