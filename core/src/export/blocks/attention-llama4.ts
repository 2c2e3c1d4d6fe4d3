/**
 * Llama 4's attention pieces (HF `models/llama4/modeling_llama4.py`, `Llama4TextAttention` and
 * `masking_utils.create_chunked_causal_mask`), used by `attention.ts` when a layer asks for them:
 *
 * - chunked attention on the rope layers: a query at position p sees slot j when j ≤ p and
 *   ⌊j / chunk⌋ = ⌊p / chunk⌋. Slots are absolute positions (the cache is written at
 *   `position_ids`), so the same mask serves prefill and decode over any `ctx_len`;
 * - `Llama4TextL2Norm`: x · rsqrt(mean(x²) + eps) in float32, no weight, per head after rope;
 * - temperature tuning on the NoPE layers: q · (log(⌊(pos + 1) / floor_scale⌋ + 1) · attn_scale + 1),
 *   from the float32 cache position.
 */
import { cast, type Ctx } from './ops';
import { TensorDataType } from '../../formats/onnx/types';

/** `allowed ∧ ⌊slot / chunk⌋ = ⌊pos / chunk⌋` for int64 `slots [1, 1, C]` and `pos3 [B, S, 1]` (positions ≥ 0 of valid tokens). */
export function sameChunk(c: Ctx, allowed: string, slots: string, pos3: string, chunk: number): string {
  const g = c.g;
  const k = g.int(chunk);
  return g.op('And', [allowed, g.op('Equal', [g.op('Div', [slots, k]), g.op('Div', [pos3, k])])]);
}

/** Weightless RMS normalization over the last axis, in float32 (HF `Llama4TextL2Norm`). */
export function l2Norm(c: Ctx, x: string, eps: number): string {
  const g = c.g;
  const xf = cast(c, x, c.dtype, 'float32');
  const variance = g.reduce('ReduceMean', g.op('Mul', [xf, xf]), [-1], 1);
  const inv = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [variance, g.scalar('float32', eps, 'l2_eps')])])]);
  return cast(c, g.op('Mul', [xf, inv]), 'float32', c.dtype);
}

/** `q [B, S, heads, hd]` times the temperature-tuning scale of each position (`positionIds [B, S]`). */
export function temperatureScale(c: Ctx, q: string, positionIds: string, t: { floorScale: number; attnScale: number }): string {
  const g = c.g;
  const pos = g.op('Cast', [positionIds], { to: TensorDataType.FLOAT });
  const floored = g.op('Floor', [
    g.op('Div', [g.op('Add', [pos, g.scalar('float32', 1, 'one')]), g.scalar('float32', t.floorScale, 'floor_scale')]),
  ]);
  const log = g.op('Log', [g.op('Add', [floored, g.scalar('float32', 1, 'one')])]);
  const scale = g.op('Add', [g.op('Mul', [log, g.scalar('float32', t.attnScale, 'attn_scale')]), g.scalar('float32', 1, 'one')]); // [B,S]
  const s4 = g.op('Unsqueeze', [scale, g.ints([2, 3], 'axes')]); // [B,S,1,1]
  // HF: (query_states * attn_scales).to(query_states.dtype) — the product is float32
  return cast(c, g.op('Mul', [cast(c, q, c.dtype, 'float32'), s4]), 'float32', c.dtype);
}
