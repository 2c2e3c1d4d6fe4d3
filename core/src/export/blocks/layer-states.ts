/**
 * The builder's side of the graph interface (graph-interface.ts): declaring the state inputs,
 * handing each layer's states to its attention block, and declaring the `_RetainedState`
 * outputs in layer order. Shared by the causal-LM decoder (decoder.ts) and the VLM language
 * graph (vlm/language.ts).
 *
 * The hook for attention kinds with their own states (MLA's compressed cache, linear
 * attention's conv and recurrent states): a block registered in {@link ATTENTION_BLOCKS} under
 * its `LayerSpec.attn.kind` receives the layer's state inputs by kind and returns the updated
 * states by kind; the layer's `LayerSpec.states` declares their dims.
 */
import type { LayerSpec } from './arch';
import { attention } from './attention';
import { mlaBlock } from './attention-mla';
import { gatedDeltaNetBlock } from './gated-deltanet';
import type { GraphBuilder } from './builder';
import type { DtypeName } from '../../formats/dtype';
import { ctxState, type RuntimeInput, type StateTensor } from '../../artifacts/graph-interface';
import type { AttentionBlock, StateValues } from './attention-block';
export type { AttentionBlock, StateValues } from './attention-block';

/** Attention blocks by `LayerSpec.attn.kind` for kinds that are not MHA (MLA and linear attention register here). */
export const ATTENTION_BLOCKS: Partial<Record<string, AttentionBlock>> = { mla: mlaBlock, 'gated-deltanet': gatedDeltaNetBlock };

/** The attention block of layer `l`. */
export function attentionBlockOf(l: LayerSpec): AttentionBlock {
  return ATTENTION_BLOCKS[l.attn.kind] ?? attention;
}

/** Declares the runtime inputs in order; returns name → graph value. */
export function declareInputs(g: GraphBuilder, inputs: readonly RuntimeInput[]): Map<string, string> {
  return new Map(inputs.map((i) => [i.name, g.input(i.name, i.dtype as DtypeName, i.dims)]));
}

/** Layer `layer`'s state inputs by kind. */
export function layerStateInputs(states: readonly StateTensor[], declared: Map<string, string>, layer: number): StateValues {
  const out: StateValues = {};
  for (const s of states) if (s.layer === layer) out[s.kind] = declared.get(s.name)!;
  return out;
}

/** The input whose Shape gives ctx_len (the first state with a ctx_len axis). */
export function ctxSource(states: readonly StateTensor[], declared: Map<string, string>): string {
  const s = ctxState(states);
  if (!s) throw new Error('internal error: the graph has no state with a ctx_len axis');
  return declared.get(s.name)!;
}

/** Declares every state's `_RetainedState` output (in the interface's order) from the layers' updated states. */
export function retainStates(g: GraphBuilder, states: readonly StateTensor[], updated: readonly StateValues[], outputs: string[]): void {
  for (const s of states) {
    const v = updated[s.layer]?.[s.kind];
    if (v === undefined) throw new Error(`internal error: layer ${s.layer}'s attention block returned no ${s.kind}`);
    g.output(v, s.retained, s.dtype as DtypeName, s.dims);
    outputs.push(s.retained);
  }
}
