/**
 * The shape of an attention block (layer-states.ts registers the blocks by `LayerSpec.attn.kind`):
 * types only, so that the blocks (attention-mla.ts, gated-deltanet.ts) and the registry that
 * imports them do not import each other.
 */
import type { ArchSpec, LayerSpec } from './arch';
import type { CacheContext } from './attention';
import type { StateKind } from '../exporter/graph-interface';
import type { Ctx } from './ops';
import type { ropeTables } from './rope';

/** A layer's state values by kind (inputs going in, updated states coming out). */
export type StateValues = Partial<Record<StateKind, string>>;

/** An attention block: hidden `x [B·S, H]` and the layer's states → output and updated states. */
export type AttentionBlock = (
  c: Ctx,
  a: ArchSpec,
  l: LayerSpec,
  x: string,
  kv: CacheContext,
  rope: ReturnType<typeof ropeTables> | undefined,
  states: StateValues,
) => { out: string; states: StateValues };
