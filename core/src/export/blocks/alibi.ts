/**
 * ALiBi (Press et al., arXiv 2108.12409) as MPT computes it: transformers
 * `models/mpt/modeling_mpt.py` `build_mpt_alibi_tensor` (read at 4352620): head h's slope is
 * `1 / 2^((h + 1) · bias_max / n)` over n = the next power of two ≥ heads; when the head count
 * is not a power of two the slopes are reordered as `concat(slopes[1::2], slopes[::2])[:heads]`.
 *
 * HF adds `slope · (k − (K − 1))` to the scaled scores of key k out of K keys — the same for every
 * query row, from a table of `max_seq_len` columns. Softmax is invariant to a constant per row,
 * so that equals `slope · (k − q)` for a query at position q, which is what the KV-cache graph
 * adds: a bias by key slot relative to the query's position, defined for every slot of any
 * ctx_len (HF's table stops at max_seq_len; masked slots get −max anyway).
 */
import { cast, unsqueeze, type Ctx } from './ops';

/** HF MPT's ALiBi slopes for `nHeads` heads (float32, as torch computes them). */
export function alibiSlopes(nHeads: number, biasMax: number): number[] {
  const n2 = 2 ** Math.ceil(Math.log2(nHeads));
  const step = Math.fround(biasMax / n2);
  const all = Array.from({ length: n2 }, (_, i) => Math.fround(1 / Math.fround(2 ** Math.fround((i + 1) * step))));
  if (n2 === nHeads) return all;
  return [...all.filter((_, i) => i % 2 === 1), ...all.filter((_, i) => i % 2 === 0)].slice(0, nHeads);
}

/**
 * The float32 bias `[B, nKv, groups·S, C]` laid out as the attention scores are (query row
 * `grp·S + s` of kv head k is head `k·groups + grp`): `slope[head] · (slot − position)`.
 * `slots` is `[1, 1, C]` int64, `pos3` the query positions `[B, S, 1]` int64.
 */
export function alibiBias(c: Ctx, slopes: number[], nKv: number, slots: string, pos3: string): string {
  const g = c.g;
  return g.within('alibi', () => {
    const rel = cast(c, g.op('Sub', [slots, pos3]), 'int64', 'float32'); // [B,S,C]
    const perHead = g.constant('float32', [1, slopes.length, 1, 1], slopes, 'alibi_slopes');
    const bias = g.op('Mul', [unsqueeze(c, rel, [1]), perHead]); // [B,nh,S,C]
    const cDim = g.op('Slice', [g.op('Shape', [rel]), g.ints([2]), g.ints([3])]);
    return g.op('Reshape', [bias, g.op('Concat', [g.ints([0, nKv, -1]), cDim], { axis: 0 })]);
  });
}
