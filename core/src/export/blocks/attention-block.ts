/**
 * The shape of an attention block and the per-graph cache context it reads (layer-states.ts
 * registers the blocks by `LayerSpec.attn.kind`):
 * types only, so that the blocks (attention-mla.ts, gated-deltanet.ts) and the registry that
 * imports them do not import each other.
 */
import type { ArchSpec, LayerSpec } from './arch';
import type { WindowContext } from './attention-window';
import type { StateKind } from '../../artifacts/graph-interface';
import type { Ctx } from './ops';
import type { RopeTables } from './rope';

/** Per-graph values every layer's attention shares (built once by {@link cacheContext}). */
export interface CacheContext {
  /** `[B, nKv, S, 3]` int64 ScatterND indices (batch slot, kv head, position). */
  scatterIdx: string;
  /** `[B, 1, groups·S, C]` bool: true where a query may attend a cache slot (the model-wide window). */
  mask: string;
  /** The mask for a layer with its own sliding window (HF `layer_types`) or attention chunk (Llama 4), built once per kind. */
  maskFor(window: number | undefined, chunk?: number): string;
  /** The `position_ids` input (int64 `[B, S]`). */
  positionIds: string;
  /** Continuous batching: `[B]` int64 cache rows to read after the write. */
  batchRows?: string;
  /** `[B, S]` as an int64 shape vector (for reshapes that need B and S). */
  bs: string;
  /** CCL: `[1]` int64, the number of cache slots attention reads (absent: the whole cache). */
  readLen?: string;
  /** ALiBi (MPT): the float32 bias added to the scaled scores, `[B, nKv, groups·S, C or R]` (see `alibi.ts`). */
  alibi?: string;
  /** Ring-cache layers (`--sliding-cache window`): their mask and write indices, built once per window (attention-window.ts). */
  windowFor(window: number): WindowContext;
}

/** A layer's state values by kind (inputs going in, updated states coming out). */
export type StateValues = Partial<Record<StateKind, string>>;

/** An attention block: hidden `x [B·S, H]` and the layer's states → output and updated states. */
export type AttentionBlock = (
  c: Ctx,
  a: ArchSpec,
  l: LayerSpec,
  x: string,
  kv: CacheContext,
  rope: RopeTables | undefined,
  states: StateValues,
) => { out: string; states: StateValues };
