/**
 * Sliding layers over a ring of `sliding_window` cache slots (`export --sliding-cache window`),
 * QEfficient's Gemma 3 layout: `QEffSlidingWindowCache.update` (QEfficient
 * `transformers/cache_utils.py`) writes position p at slot p mod W of a `[batch, kv heads, W,
 * head_dim]` cache whose dynamic axis `QEffGemma3ForConditionalGeneration.get_onnx_dynamic_axes`
 * names `sliding_window`; full-attention layers keep ctx_len.
 *
 * HF's rule (a token sees itself and the W − 1 positions before it) needs at most W keys per
 * query, so W slots hold everything a decode step reads. A prefill chunk longer than W would
 * overwrite, in one scatter, keys its own earlier queries still need (QEfficient's single
 * `ctx_scatter` has that limit), so here attention reads [the ring as it was before the call ‖
 * the call's own keys], and only each row's last W valid tokens are written.
 *
 * Which position a ring slot holds: with p0 the call's first valid position (per row), slot j
 * holds the latest position before p0 congruent to j mod W, p0 − 1 − ((p0 − 1 − j) mod W);
 * negative means never written. This assumes every earlier position was fed, which is how the
 * runner (and QEfficient's generation) feed a sequence.
 */
import type { ArchSpec } from './arch';
import { FormatError, UsageError } from '../../errors';
import { reshape, unsqueeze, type Ctx } from './ops';

/** What every ring layer of one window shares (built once per graph and window). */
export interface WindowContext {
  window: number;
  /** `[B, 1, groups·S, W + S]` bool: query s may read key k of [ring ‖ the call's keys]. */
  mask: string;
  /**
   * `[B, nKv, S, 3]` ScatterND indices into `[B, nKv, W + S, ·]`: slot p mod W for each row's
   * last W valid tokens; the token's own column W + s (a no-op write) for the others and padding.
   */
  writeIdx: string;
  /** `[B, S, W + S]` before the head grouping: the mask a caller may OR more terms into. */
  allowed: string;
}

/** Builds the window's key positions, mask and write indices from `position_ids` `[B, S]` and `bs` = Shape(input_ids). */
export function windowContext(c: Ctx, a: ArchSpec, positionIds: string, bs: string, window: number): WindowContext {
  const g = c.g;
  return g.within(`window_${window}`, () => {
    const W = g.int(window);
    const valid = g.op('GreaterOrEqual', [positionIds, g.int(0)]); // [B,S]; padding is −1
    const p0 = g.reduce('ReduceMin', g.op('Where', [valid, positionIds, g.int(2 ** 40)]), [1], 1); // [B,1]
    const pMax = g.reduce('ReduceMax', positionIds, [1], 1); // [B,1]
    const slots = g.constant(
      'int64',
      [1, window],
      Array.from({ length: window }, (_, j) => j),
      'ring_slots',
    );
    const before = g.op('Sub', [p0, g.int(1)]);
    const ringPos = g.op('Sub', [before, g.op('Mod', [g.op('Sub', [before, slots]), W])]); // [B,W]
    const keyPos = unsqueeze(c, g.op('Concat', [ringPos, positionIds], { axis: 1 }), [1]); // [B,1,W+S]
    const q = unsqueeze(c, positionIds, [-1]); // [B,S,1]
    const allowed = g.op('And', [
      g.op('And', [g.op('GreaterOrEqual', [keyPos, g.int(0)]), g.op('LessOrEqual', [keyPos, q])]),
      g.op('Greater', [keyPos, g.op('Sub', [q, W])]),
    ]); // [B,S,W+S]
    const mask = groupMask(c, a, allowed);

    // writes: a row's last W valid tokens go to slot p mod W (distinct slots); the rest to their own column
    const keep = g.op('And', [valid, g.op('Greater', [positionIds, g.op('Sub', [pMax, W])])]);
    const S = g.op('Slice', [bs, g.ints([1]), g.ints([2])]); // [1]
    const own = unsqueeze(c, g.op('Add', [g.op('Range', [g.int(0), reshape(c, S, []), g.int(1)]), W]), [0]); // [1,S]
    const slot = g.op('Where', [keep, g.op('Mod', [positionIds, W]), own]); // [B,S]
    const idxShape = g.op('Concat', [g.op('Slice', [bs, g.ints([0]), g.ints([1])]), g.ints([a.nKv]), S, g.ints([1])], { axis: 0 });
    const rows = g.op('Range', [g.int(0), g.op('Gather', [bs, g.int(0)], { axis: 0 }), g.int(1)]);
    const bIdx = g.op('Expand', [reshape(c, rows, [-1, 1, 1, 1]), idxShape]);
    const heads = g.constant(
      'int64',
      [1, a.nKv, 1, 1],
      Array.from({ length: a.nKv }, (_, i) => i),
      'kv_heads',
    );
    const hIdx = g.op('Expand', [heads, idxShape]);
    const sIdx = g.op('Expand', [unsqueeze(c, slot, [1, 3]), idxShape]);
    return { window, mask, allowed, writeIdx: g.op('Concat', [bIdx, hIdx, sIdx], { axis: -1 }) };
  });
}

/** `[B, S, K]` → `[B, 1, groups·S, K]`: queries are laid out (group, position) per kv head. */
export function groupMask(c: Ctx, a: ArchSpec, allowed: string): string {
  const m = unsqueeze(c, allowed, [1]);
  const groups = a.nHeads / a.nKv;
  return groups > 1 ? c.g.op('Tile', [m, c.g.ints([1, 1, groups, 1])]) : m;
}

/**
 * A ring layer's cache step: the keys/values attention reads (`[B, nKv, W + S, ·]`: the ring
 * rows before the write, then the call's own) and the rings after the write. With continuous
 * batching the rows are `batchRows` of the full ring, written back there.
 */
export function windowReadWrite(
  c: Ctx,
  w: WindowContext,
  batchRows: string | undefined,
  t: { k: string; v: string },
  past: { key: string; value: string },
): { key: string; value: string; kRead: string; vRead: string } {
  const g = c.g;
  const step = (ring: string, fresh: string) => {
    const rows = batchRows ? g.op('Gather', [ring, batchRows], { axis: 0 }) : ring;
    const read = g.op('Concat', [rows, fresh], { axis: 2 });
    const written = g.op('Slice', [g.op('ScatterND', [read, w.writeIdx, fresh]), g.ints([0]), g.ints([w.window]), g.ints([2])]);
    return { read, next: batchRows ? g.op('ScatterND', [ring, unsqueeze(c, batchRows, [1]), written]) : written };
  };
  const k = step(past.key, t.k);
  const v = step(past.value, t.v);
  return { key: k.next, value: v.next, kRead: k.read, vRead: v.read };
}

/**
 * The sequence indices a prefill-only ring takes from the call's keys `[B, nKv, S, ·]`
 * (`QEffPrefillOnlyGptOssAttention`, QEfficient `transformers/models/gpt_oss/modeling_gpt_oss.py`,
 * main ebf55e81): `read_idx = arange(W) + max(pmax − W + 1, 0)`, and 0 where it passes `pmax`
 * ("a trick to export with seq_len < sliding_window_len"); `pmax` is the largest position of
 * the whole batch. Slot j then holds position start + j, which is slot (start + j) mod W of a
 * ring when the prompt fills a multiple of W, as QEfficient compiles it (prefill_seq_len a
 * multiple of 128 = its sliding_window specialization).
 */
export function chunkTail(c: Ctx, positionIds: string, window: number): string {
  const g = c.g;
  return g.within(`prefill_tail_${window}`, () => {
    const pMax = g.reduce('ReduceMax', positionIds, [0, 1], 0); // scalar
    const start = g.op('Max', [g.op('Sub', [pMax, g.int(window - 1)]), g.int(0)]);
    const slots = g.constant(
      'int64',
      [window],
      Array.from({ length: window }, (_, j) => j),
      'tail_slots',
    );
    const idx = g.op('Add', [slots, start]);
    return g.op('Where', [g.op('Greater', [idx, pMax]), g.int(0), idx]); // [W]
  });
}

/** `--sliding-cache`: the KV cache of sliding layers, ctx_len long (`full`, the default) or a `window` ring. */
export type SlidingCache = 'full' | 'window';

/** The refusal of `--sliding-cache` for a family QEfficient gives no sliding-window cache. */
export function slidingCacheRefused(file: string, modelType: string): UsageError {
  return new UsageError(
    `${file}: --sliding-cache goes with Gemma 3 (gemma3_text, gemma3), whose sliding layers QEfficient gives a sliding_window-long cache; not ${modelType}`,
  );
}

/**
 * `--sliding-cache window` on an architecture: every sliding layer with plain K/V states gets a
 * ring (`LayerSpec.windowCache`). Refused by name when there is no sliding layer, or no full
 * layer left to carry ctx_len (the graph's ctx_len comes from a full layer's cache).
 */
export function windowCacheArch(a: ArchSpec, file: string): ArchSpec {
  const ringable = (l: ArchSpec['layers'][number]) => l.slidingWindow !== undefined && !l.states;
  if (!a.layers.some(ringable))
    throw new UsageError(`${file}: --sliding-cache window: ${a.modelType} has no sliding-window layer (layer_types sliding_attention)`);
  if (a.layers.every(ringable))
    throw new FormatError(
      file,
      '"layer_types" has only sliding_attention layers: --sliding-cache window needs a full_attention layer to carry ctx_len',
    );
  return { ...a, layers: a.layers.map((l) => (ringable(l) ? { ...l, windowCache: true } : l)) };
}
