/**
 * The graph interface as data: the runtime inputs of a causal-LM graph and its state tensors,
 * each with its `_RetainedState` output, dims and dtype. The decoder builds its inputs and
 * outputs from it ({@link decoderInterface}, derived from the ArchSpec); the runner, qaic
 * (specializations, custom IO), `check` and `checkGraph` read a graph's states back with
 * {@link statesOfGraph} — no other file spells a cache name or shape.
 *
 * A state is per layer: input `<kind>.<layer>`, output `<kind>.<layer>_RetainedState`
 * (QEfficient's convention), batch on axis 0. Its {@link STATE_KINDS} row says which axis is
 * ctx_len (KV-like caches) or that it has none (recurrent states have a fixed size). What a
 * layer holds is its attention block's choice: {@link layerStates} returns `LayerSpec.states`
 * when the family declares them (MLA, linear attention), else per-layer K and V.
 *
 * No graph code here (the server and the runner import it without the builder). It sits in
 * `artifacts/` because it is the format of the tool's own graphs (input and output names, dims,
 * the window-ring metadata key), read by every floor above: export writes it, run, check,
 * compile and the server read it back ({@link graphStates}).
 */
import { PipelineError } from '../errors';
import { SAMPLER_STATES } from './graph-metadata';

/** A dim: a number, or a symbolic name (`batch_size`, `full_batch_size`, `ctx_len`, `seq_len`). */
export type Dim = number | string;

/** What kinds of per-layer state a graph may carry, and where their ctx_len axis is. */
export const STATE_KINDS = {
  /** Keys `[batch, kv heads, ctx_len, key head dim]` (MHA/GQA; MLA per head: nope + rope dims). */
  past_key: { ctxAxis: 2 },
  /** Values `[batch, kv heads, ctx_len, value head dim]`. */
  past_value: { ctxAxis: 2 },
  /** MLA's compressed cache `[batch, 1, ctx_len, kv_lora_rank]`. */
  compressed_kv: { ctxAxis: 2 },
  /** MLA's shared rotary key `[batch, 1, ctx_len, qk_rope_head_dim]`. */
  k_pe: { ctxAxis: 2 },
  /** Linear attention's causal-conv window `[batch, key heads, conv_dim / key heads, kernel]` (no ctx_len). */
  conv_state: {},
  /** Linear attention's recurrent state `[batch, value heads, key dim, value dim]` (no ctx_len). */
  recurrent_state: {},
  /** Whisper's decoder self-attention keys `[batch, heads, decoder_ctx_len, head_dim]` (QEfficient's names). */
  past_key_self: { ctxAxis: 2 },
  /** Whisper's decoder self-attention values. */
  past_value_self: { ctxAxis: 2 },
  /** Whisper's cross-attention keys `[batch, heads, max_source_positions, head_dim]`, filled once from the encoder output. */
  past_key_cross: {},
  /** Whisper's cross-attention values. */
  past_value_cross: {},
} as const satisfies Record<string, { ctxAxis?: number }>;

/** One kind of state. */
export type StateKind = keyof typeof STATE_KINDS;

/** The suffix of a state's output: the state after this call, fed back as the next call's input. */
export const RETAINED = '_RetainedState';

/**
 * A state as a layer's attention block declares it: its kind and dims, `batch` and `ctx`
 * standing for the graph's cache batch and ctx_len; `dtype` absent = the model dtype.
 */
export interface StateDecl {
  kind: StateKind;
  dims: (number | 'batch' | 'ctx')[];
  dtype?: 'float32';
  /**
   * A ring over the layer's sliding window (`export --sliding-cache window`): the KV axis holds
   * `window` slots (a number in `dims`), not ctx_len, so the state has no ctx_len axis.
   */
  window?: number;
}

/** One state tensor of a graph: input `name`, output `retained`. */
export interface StateTensor {
  name: string;
  retained: string;
  kind: StateKind;
  layer: number;
  dims: Dim[];
  dtype: string;
  /** The ctx_len axis (KV-like caches); absent for fixed-size states and window rings. */
  ctxAxis?: number;
  /** A sliding layer's ring of `window` slots (position p at slot p mod window); see {@link StateDecl.window}. */
  window?: number;
}

/** QEfficient's LoRA input (`QEffAutoLoraModelForCausalLM.export`): the adapter id of each batch row, `[batch, 1]`. */
export const LORA_IDS = 'lora_ids';

/** One runtime (non-weight) input. */
export interface RuntimeInput {
  name: string;
  dtype: string;
  dims: Dim[];
}

/** The interface of a causal-LM graph. */
export interface GraphInterface {
  /** Runtime inputs in declaration order: input_ids, position_ids, [batch_index], the states, [comp_ctx_lengths], [lora_ids]. */
  inputs: RuntimeInput[];
  /** The states, in layer order (within a layer, the block's order), each with its retained output. */
  states: StateTensor[];
}

/** One of the on-device sampler's states (QEfficient's penalty buffers). */
export type SamplerStateName = (typeof SAMPLER_STATES)[number];

/** A sampler state tensor: input `name`, output `retained`, `[cache batch, vocab]` bool. */
export interface SamplerStateTensor {
  name: SamplerStateName;
  retained: string;
  dtype: 'bool';
  dims: Dim[];
}

/** The sampler's states of a graph with this cache batch and vocabulary, in its input order. */
export function samplerStates(cacheBatch: Dim, vocab: Dim): SamplerStateTensor[] {
  return SAMPLER_STATES.map((name) => ({ name, retained: name + RETAINED, dtype: 'bool' as const, dims: [cacheBatch, vocab] }));
}

/** What {@link layerStates} reads of a layer. */
export interface StateLayer {
  states?: StateDecl[];
  slidingWindow?: number;
  /** `--sliding-cache window`: this sliding layer's K/V are a ring of `slidingWindow` slots. */
  windowCache?: boolean;
}

/**
 * The hook where a layer's attention block declares its states: `LayerSpec.states` when the
 * family sets them, else K and V `[batch, nKv, ctx, headDim]` (MHA / GQA / MQA), or
 * `[batch, nKv, sliding_window, headDim]` rings for a sliding layer with `windowCache`.
 */
export function layerStates(a: { nKv: number; headDim: number }, l: StateLayer): StateDecl[] {
  if (l.states) return l.states;
  const w = l.windowCache ? l.slidingWindow : undefined;
  const dims: StateDecl['dims'] = ['batch', a.nKv, w ?? 'ctx', a.headDim];
  const ring = w !== undefined ? { window: w } : {};
  return [
    { kind: 'past_key', dims, ...ring },
    { kind: 'past_value', dims, ...ring },
  ];
}

/** A state's input name: `<kind>.<layer>`. */
export function stateName(kind: StateKind, layer: number): string {
  return `${kind}.${layer}`;
}

/** The states of `a` with the graph's cache batch, ctx_len and model dtype filled in. */
export function archStates(
  a: { nKv: number; headDim: number; layers: readonly StateLayer[] },
  o: { cacheBatch: Dim; ctxLen: Dim; dtype: string },
): StateTensor[] {
  return a.layers.flatMap((l, layer) =>
    layerStates(a, l).map((s) => {
      const name = stateName(s.kind, layer);
      const ctxAxis = s.window === undefined ? (STATE_KINDS[s.kind] as { ctxAxis?: number }).ctxAxis : undefined;
      return {
        name,
        retained: name + RETAINED,
        kind: s.kind,
        layer,
        dims: s.dims.map((d) => (d === 'batch' ? o.cacheBatch : d === 'ctx' ? o.ctxLen : d)),
        dtype: s.dtype ?? o.dtype,
        ...(ctxAxis !== undefined ? { ctxAxis } : {}),
        ...(s.window !== undefined ? { window: s.window } : {}),
      };
    }),
  );
}

/** Shape options of {@link decoderInterface}: the decoder's batch, seq, cache batch and ctx_len dims. */
export interface InterfaceDims {
  batch: Dim;
  seq: Dim;
  cacheBatch: Dim;
  ctxLen: Dim;
  dtype: string;
  continuousBatching: boolean;
  ccl: boolean;
  /** Finite LoRA adapters: QEfficient's `lora_ids` `[batch, 1]` int64 (the adapter of each row, 0 = base). */
  lora?: boolean;
  /** Speculative decoding's target model (QEfficient's TLM): the `num_logits_to_keep` input, last as in `tlm_forward`'s signature. */
  tlm?: boolean;
}

/**
 * The TLM's input (QEfficient `QEfficient/transformers/spd/spd_transform_forward.py` at main
 * ebf55e81, `filter_hidden_states`): only its first dim counts, the number of logits returned
 * per row (`[num_logits_to_keep, 1]`, as `QEFFAutoModelForCausalLM.export` traces it).
 */
export const NUM_LOGITS_TO_KEEP = 'num_logits_to_keep';

/** The causal-LM decoder's interface (QEfficient's forward signature order). */
export function decoderInterface(a: Parameters<typeof archStates>[0], o: InterfaceDims): GraphInterface {
  const states = archStates(a, o);
  return {
    inputs: [
      { name: 'input_ids', dtype: 'int64', dims: [o.batch, o.seq] },
      { name: 'position_ids', dtype: 'int64', dims: [o.batch, o.seq] },
      ...(o.continuousBatching ? [{ name: 'batch_index', dtype: 'int64', dims: [o.batch, 1] }] : []),
      ...states.map((s) => ({ name: s.name, dtype: s.dtype, dims: s.dims })),
      ...(o.ccl ? [{ name: 'comp_ctx_lengths', dtype: 'int64', dims: ['comp_ctx_lengths'] }] : []),
      ...(o.lora ? [{ name: LORA_IDS, dtype: 'int64', dims: [o.batch, 1] }] : []),
      ...(o.tlm ? [{ name: NUM_LOGITS_TO_KEEP, dtype: 'int64', dims: [NUM_LOGITS_TO_KEEP, 1] }] : []),
    ],
    states,
  };
}

/** `<kind>.<layer>` → kind and layer, when `name` is a state input. */
export function parseStateName(name: string): { kind: StateKind; layer: number } | undefined {
  const m = /^([a-z_]+)\.(\d+)$/.exec(name);
  if (!m || !Object.hasOwn(STATE_KINDS, m[1]!)) return undefined;
  return { kind: m[1] as StateKind, layer: Number(m[2]) };
}

/** A value of a read graph: name, element type name and dims. */
export interface GraphValue {
  name: string;
  dims: readonly Dim[];
  dtype?: string;
}

/**
 * The metadata_props key naming a graph's window rings (`--sliding-cache window`): JSON
 * `{"sliding_window": W, "layers": [i, …]}`. A ring's dims do not say it is one (with a fixed
 * ctx_len both lengths are numbers), so a reader learns it here; absent = no rings.
 */
export const WINDOW_CACHE_METADATA = 'weight_spec.sliding_cache';

/** The {@link WINDOW_CACHE_METADATA} entry of a graph with these states (empty without rings). */
export function windowCacheMetadata(states: readonly StateTensor[]): Record<string, string> {
  const rings = states.filter((s) => s.window !== undefined);
  if (rings.length === 0) return {};
  const layers = [...new Set(rings.map((s) => s.layer))];
  return { [WINDOW_CACHE_METADATA]: JSON.stringify({ sliding_window: rings[0]!.window, layers }) };
}

/** The ring layers a graph's metadata declares: layer → window. */
function windowLayers(metadata: readonly { key?: string; value?: string }[]): Map<number, number> {
  const v = metadata.find((e) => e.key === WINDOW_CACHE_METADATA)?.value;
  if (v === undefined) return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    parsed = undefined;
  }
  const p = parsed as { sliding_window?: unknown; layers?: unknown } | undefined;
  const w = p?.sliding_window;
  if (typeof w !== 'number' || !Number.isInteger(w) || w <= 0 || !Array.isArray(p?.layers) || !p.layers.every(Number.isInteger))
    throw new PipelineError(`the graph's metadata ${WINDOW_CACHE_METADATA} is not {"sliding_window": W, "layers": [i, …]}: ${v}`);
  return new Map((p.layers as number[]).map((l) => [l, w]));
}

/**
 * The states of a read graph: every input named `<kind>.<layer>`, in input order, with the
 * name of the `_RetainedState` output that carries it over (whether the graph has that output
 * is the caller's check: the runner and `checkGraph` refuse a state without it). `metadata`
 * (the graph's metadata_props) marks the window rings ({@link WINDOW_CACHE_METADATA}).
 */
export function statesOfGraph(inputs: readonly GraphValue[], metadata: readonly { key?: string; value?: string }[] = []): StateTensor[] {
  const rings = windowLayers(metadata);
  const out: StateTensor[] = [];
  for (const i of inputs) {
    const p = parseStateName(i.name);
    if (!p) continue;
    const window = p.kind === 'past_key' || p.kind === 'past_value' ? rings.get(p.layer) : undefined;
    const ctxAxis = window === undefined ? (STATE_KINDS[p.kind] as { ctxAxis?: number }).ctxAxis : undefined;
    out.push({
      name: i.name,
      retained: i.name + RETAINED,
      kind: p.kind,
      layer: p.layer,
      dims: [...i.dims],
      dtype: i.dtype ?? '',
      ...(ctxAxis !== undefined ? { ctxAxis } : {}),
      ...(window !== undefined ? { window } : {}),
    });
  }
  return out;
}

/** The number of layers carrying state (0 for a graph without a cache). */
export function stateLayers(states: readonly StateTensor[]): number {
  return new Set(states.map((s) => s.layer)).size;
}

/** The first state with a ctx_len axis (the one whose dims give the graph's ctx_len and cache batch). */
export function ctxState(states: readonly StateTensor[]): StateTensor | undefined {
  return states.find((s) => s.ctxAxis !== undefined);
}

/** A read graph's states and the one whose dims give its ctx_len and cache batch: {@link graphStates}. */
export interface GraphStates {
  /** Every state input in graph order, each with its retained output, dims and dtype. */
  states: StateTensor[];
  /** {@link ctxState} of `states`. */
  ctx?: StateTensor;
}

/**
 * {@link statesOfGraph} and {@link ctxState} in one call, as plain data: what compile's qaic
 * build reads of the graph interface (one visit to this module, not one per question).
 */
export function graphStates(inputs: readonly GraphValue[], metadata: readonly { key?: string; value?: string }[] = []): GraphStates {
  const states = statesOfGraph(inputs, metadata);
  const ctx = ctxState(states);
  return ctx ? { states, ctx } : { states };
}

/** True when `name` is a state input (`past_key.3`, `conv_state.0`, …). */
export function isStateInput(name: string): boolean {
  return parseStateName(name) !== undefined;
}

/**
 * The dims to allocate state `st` with: `batch` on axis 0, `ctx` on its ctx_len axis, every
 * other dim as the graph declares it; undefined when one of those is not a fixed number.
 */
export function stateDims(st: StateTensor, batch: number, ctx: number): number[] | undefined {
  if (st.ctxAxis !== undefined && st.dims.length <= st.ctxAxis) return undefined;
  const dims = st.dims.map((d, k) => (k === 0 ? batch : k === st.ctxAxis ? ctx : typeof d === 'number' && d > 0 ? d : -1));
  return dims.includes(-1) ? undefined : dims;
}

/** Which specializations a graph serves: prefill and decode in one graph, or one of them. */
export type Phase = 'both' | 'prefill' | 'decode';

/**
 * An embedding graph's outputs (export/embedding/: BERT, XLM-RoBERTa): `last_hidden_state`
 * `[batch_size, seq_len, hidden]` and, when the graph pools, `sentence_embedding`.
 */
export const EMBEDDING_OUTPUTS = { hidden: 'last_hidden_state', pooled: 'sentence_embedding' } as const;

/** True when a graph with these outputs is an embedding graph (run and qaic plan it as one). */
export function isEmbeddingGraph(outputs: readonly { name: string }[]): boolean {
  return outputs.some((o) => o.name === EMBEDDING_OUTPUTS.hidden);
}

/** metadata_props of an embedding graph: its pooling (`mean+normalize`, `cls`, `none`) and the longest input its positions cover. */
export const EMBEDDING_METADATA = { pooling: 'weight_spec.embedding', maxSeqLen: 'weight_spec.max_seq_len' } as const;

/** The longest sequence an embedding graph's position table covers, when its metadata says (legacy graphs do not). */
export function embeddingMaxSeqLen(metadata: readonly { key: string; value: string }[]): number | undefined {
  const v = metadata.find((e) => e.key === EMBEDDING_METADATA.maxSeqLen)?.value;
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}
