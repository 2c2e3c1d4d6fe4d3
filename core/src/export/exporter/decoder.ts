/**
 * The causal-LM graph with QEfficient's interface:
 *   inputs  input_ids, position_ids int64 [batch, seq]; [batch_index int64 [batch, 1]];
 *           the states (graph-interface.ts: past_key.{i} / past_value.{i} [cacheBatch, nKv, ctx_len,
 *           head_dim], or what the layer's attention block declares); weights by key
 *   outputs logits float32 [batch, 1, vocab] — the last valid position (argmax of
 *           position_ids, as QEfficient does); per-position logits come from feeding one token
 *           per call — and each state's `_RetainedState`, in layer order.
 * The KV cache has the compute dtype. Weight inputs are declared in first-use order.
 *
 * Serving features (QEfficient's): `compCtxLengths` adds the `comp_ctx_lengths` input (int64,
 * dim `comp_ctx_lengths`, after the caches as QEfficient's forward signature orders it) and
 * limits what attention reads (attention.ts); `sampler` appends the on-device sampler
 * (sampler.ts), whose `next_tokens` (and `probs`) replace `logits`.
 *
 * The skeleton is shared: the VLM language graphs (vlm/language.ts, vlm/language-gemma3.ts) build
 * their own inputs and embeddings, then run {@link decoderLayers} and {@link lastPositionLogits}.
 */
import { FormatError } from '../../errors';
import type { ArchSpec, LayerSpec, RopeSpec } from '../blocks/arch';
import { weightInputs, type WeightInput } from '../blocks/weight-inputs';
import { cacheContext } from '../blocks/attention';
import type { CacheContext } from '../blocks/attention-block';
import { GraphBuilder, type Dim, type ModelObj } from '../blocks/builder';
import {
  decoderInterface,
  LORA_IDS,
  NUM_LOGITS_TO_KEEP,
  samplerStates,
  windowCacheMetadata,
  type StateTensor,
} from '../../artifacts/graph-interface';
import { attentionBlockOf, ctxSource, declareInputs, layerStateInputs, retainStates, type StateValues } from '../blocks/layer-states';
import { mlp } from '../blocks/mlp';
import { norm } from '../blocks/norms';
import { cast, linear, reshape, softcap, unsqueeze, weight, type Ctx } from '../blocks/ops';
import type { ExportDtype } from '../../formats/dtype';
import { ropeTables, type RopeTables } from '../blocks/rope';
import { appendSampler, type SamplerOptions } from '../blocks/sampler';
import { servingMetadata } from '../blocks/serving-head';
import { SAMPLER_INPUTS, SERVING_METADATA } from '../../artifacts/graph-metadata';
import { TensorDataType } from '../../formats/onnx/types';
import { loraHook, loraWeightInputs, type LoraGraph } from '../blocks/lora';

/** Export phase: one graph for both, or a specialization per phase (disaggregated serving). */
export type { Phase } from '../../artifacts/graph-interface';
import type { Phase } from '../../artifacts/graph-interface';

/** Graph options. */
export interface GraphOptions {
  dtype: ExportDtype;
  /** Fixed cache length; symbolic `ctx_len` when absent. */
  ctxLen?: number;
  /** Fixed batch (the cache's full batch with continuous batching); symbolic when absent. */
  batchSize?: number;
  continuousBatching?: boolean;
  phase?: Phase;
  /** ONNX graph name. */
  name?: string;
  /** Extra metadata_props (the spec is added by the writer). */
  metadata?: Record<string, string>;
  /** Default-domain opset (17 … 21; default 17, QEfficient's ONNX_EXPORT_OPSET). */
  opset?: number;
  /** CCL buckets (QEfficient's comp_ctx_lengths_prefill / _decode), recorded in the metadata. */
  compCtxLengths?: { prefill: number[]; decode: number[] };
  /** The on-device sampler after the logits. */
  sampler?: SamplerOptions;
  /** Finite LoRA adapters on the targeted Linears, picked per row by `lora_ids` (blocks/lora.ts). */
  lora?: LoraGraph;
  /**
   * Speculative decoding's target model (QEfficient's TLM, `SpDTransform`): the
   * `num_logits_to_keep` input and logits for that many positions; the proposal lengths K are
   * recorded in the metadata for compile's Decode specializations (seq_len K + 1).
   */
  numSpeculativeTokens?: number[];
}

/** A built graph and the weights it takes. */
export interface BuiltGraph {
  model: ModelObj;
  weights: WeightInput[];
  /** Names of the non-weight inputs and of the outputs, in order. */
  io: { inputs: string[]; outputs: string[] };
  layers: number;
}

/** The dims a decoder graph's inputs and states share. */
export interface DecoderFrame {
  g: GraphBuilder;
  c: Ctx;
  cb: boolean;
  /** `batch_size`, or the fixed batch. */
  batch: Dim;
  /** The states' batch: the full batch (`full_batch_size`) with continuous batching, else `batch`. */
  cacheBatch: Dim;
  ctxLen: Dim;
}

/** A fresh builder and the batch / cache dims of the options (the text decoder and the VLM language graphs alike). */
export function decoderFrame(o: {
  dtype: ExportDtype;
  opset?: number;
  ctxLen?: number;
  batchSize?: number;
  continuousBatching?: boolean;
}): DecoderFrame {
  const g = new GraphBuilder(o.opset);
  const c: Ctx = { g, dtype: o.dtype, declared: new Set() };
  const cb = !!o.continuousBatching;
  const batch: Dim = cb ? 'batch_size' : (o.batchSize ?? 'batch_size');
  const cacheBatch: Dim = cb ? (o.batchSize ?? 'full_batch_size') : batch;
  return { g, c, cb, batch, cacheBatch, ctxLen: o.ctxLen ?? 'ctx_len' };
}

/** One cos/sin table per distinct rope spec, built now (Gemma-3: global and local layers differ); the lookup by spec. */
export function ropeTablesOf(c: Ctx, a: ArchSpec, positionIds: string): (r: RopeSpec | undefined) => RopeTables | undefined {
  const tables = new Map<RopeSpec, RopeTables>();
  for (const r of [a.rope, ...a.layers.map((l) => l.rope)]) if (r && !tables.has(r)) tables.set(r, ropeTables(c, positionIds, r));
  return (r) => (r ? tables.get(r) : undefined);
}

/** What a graph adds to the shared layer loop. */
export interface LayerHooks {
  /** The cos/sin tables layer `l` reads. */
  ropeFor: (l: LayerSpec) => RopeTables | undefined;
  /**
   * Where the input norm's nodes are named: under the layer (the text decoder) or under its
   * `attn` scope (the VLM language graphs); node names are part of the exported bytes.
   */
  norm1InAttn?: boolean;
  /** Runs after layer `i` with the hidden state; returns the next one (Qwen3-VL's deepstack rows). */
  after?: (i: number, h: string) => string;
}

/**
 * The decoder layers over the 2-D hidden state `h` [B·S, H]: norms, the layer's attention block,
 * MLP / MoE, the residual adds (sequential or parallel, post norms, Granite's residual scale).
 * Returns the last hidden state and each layer's updated states, in layer order.
 */
export function decoderLayers(
  c: Ctx,
  a: ArchSpec,
  h0: string,
  kv: CacheContext,
  states: readonly StateTensor[],
  declared: Map<string, string>,
  hooks: LayerHooks,
): { h: string; updated: StateValues[] } {
  const g = c.g;
  let h = h0;
  const updated: StateValues[] = [];
  const maybeNorm = (x: string, n: LayerSpec['norm1']) => (n ? norm(c, x, n, a.norm) : x);
  // Granite's residual_multiplier scales each branch before its residual add
  const branch = (l: LayerSpec, x: string, post: LayerSpec['postAttnNorm']) => {
    const y = maybeNorm(x, post);
    return l.residualScale === undefined ? y : g.op('Mul', [y, g.scalar(c.dtype, l.residualScale, 'residual_scale')]);
  };
  a.layers.forEach((l, i) => {
    g.within(`layers.${i}`, () => {
      const pre = hooks.norm1InAttn ? undefined : maybeNorm(h, l.norm1);
      let x1 = pre ?? '';
      const block = attentionBlockOf(l);
      const att = g.within('attn', () => {
        x1 = pre ?? maybeNorm(h, l.norm1);
        return block(c, a, l, x1, kv, hooks.ropeFor(l), layerStateInputs(states, declared, i));
      });
      if (l.parallel) {
        // GPT-J / CodeGen / Falcon: h + attn(ln(h)) + mlp(ln'(h)), HF's summation order
        const m = g.within('mlp', () => mlp(c, a, l.mlp, l.norm2 ? norm(c, h, l.norm2, a.norm) : x1));
        h = g.op('Add', [g.op('Add', [m, att.out]), h]);
      } else {
        h = g.op('Add', [h, branch(l, att.out, l.postAttnNorm)]);
        const m = g.within('mlp', () => mlp(c, a, l.mlp, maybeNorm(h, l.norm2)));
        h = g.op('Add', [h, branch(l, m, l.postMlpNorm)]);
      }
      updated.push(att.states);
      if (hooks.after) h = hooks.after(i, h);
    });
  });
  return { h, updated };
}

/**
 * The head at each row's last valid position (QEfficient: argmax of position_ids): final norm,
 * LM head (+ bias, Granite's / Grok's logit scales, soft cap), float32 logits [B, 1, vocab].
 * With `keep` (the TLM's `num_logits_to_keep` input, K = its first dim) the K positions ending at
 * the last valid one, [B, K, vocab], as QEfficient's `filter_hidden_states`
 * (`QEfficient/transformers/spd/spd_transform_forward.py`, main ebf55e81): `lower = 0 if last < K
 * else last + 1 - K`, rows `lower … lower + K − 1` gathered before the head.
 */
export function lastPositionLogits(c: Ctx, a: ArchSpec, h: string, bs: string, positionIds: string, keep?: string): string {
  const g = c.g;
  return g.within('head', () => {
    const h3 = g.op('Reshape', [h, g.op('Concat', [bs, g.ints([a.hidden])], { axis: 0 })]); // [B,S,H]
    const last = g.op('ArgMax', [g.op('Cast', [positionIds], { to: TensorDataType.INT32 })], { axis: 1, keepdims: 1 }); // [B,1]
    let picked: string;
    if (keep) {
      const k = g.op('Gather', [g.op('Shape', [keep]), g.int(0)], { axis: 0 }); // scalar K
      const lower = g.op('Where', [g.op('Less', [last, k]), g.int(0), g.op('Sub', [g.op('Add', [last, g.int(1)]), k])]); // [B,1]
      const idx = g.op('Add', [lower, unsqueeze(c, g.op('Range', [g.int(0), k, g.int(1)]), [0])]); // [B,K]
      picked = reshape(c, g.op('GatherND', [h3, unsqueeze(c, idx, [2])], { batch_dims: 1 }), [-1, a.hidden]); // [B·K,H]
    } else picked = g.op('GatherND', [h3, last], { batch_dims: 1 }); // [B,H]
    const normed = norm(c, picked, a.finalNorm, a.norm);
    let head = linear(c, normed, {
      weight: a.lmHead ?? a.embed,
      out: a.vocab,
      in: a.hidden,
      ...(a.lmHeadBias ? { bias: a.lmHeadBias } : {}),
    });
    if (a.logitsScale !== undefined) head = g.op('Mul', [head, g.scalar(c.dtype, a.logitsScale, 'output_multiplier')]);
    if (a.logitsDivide !== undefined) head = g.op('Div', [head, g.scalar(c.dtype, a.logitsDivide, 'logits_scaling')]);
    let logits = cast(c, head, c.dtype, 'float32');
    if (a.finalSoftcap !== undefined) logits = softcap(c, logits, a.finalSoftcap, 'float32');
    if (keep)
      return g.op('Reshape', [logits, g.op('Concat', [g.op('Slice', [bs, g.ints([0]), g.ints([1])]), g.ints([-1, a.vocab])], { axis: 0 })]);
    return unsqueeze(c, logits, [1]);
  });
}

/** Builds the decoder graph for `a`. */
export function buildCausalLM(a: ArchSpec, o: GraphOptions): BuiltGraph {
  const { g, c, cb, batch, cacheBatch, ctxLen } = decoderFrame(o);
  const phase = o.phase ?? 'both';
  const seq: Dim = phase === 'decode' ? 1 : 'seq_len';
  const iface = decoderInterface(a, {
    batch,
    seq,
    cacheBatch,
    ctxLen,
    dtype: o.dtype,
    continuousBatching: cb,
    ccl: !!o.compCtxLengths,
    ...(o.lora ? { lora: true } : {}),
    tlm: !!o.numSpeculativeTokens,
  });
  const declared = declareInputs(g, iface.inputs);
  const lora = o.lora ? loraHook(c, o.lora, declared.get(LORA_IDS)!) : undefined;
  if (lora) c.afterLinear = lora.hook;
  const inputIds = declared.get('input_ids')!;
  const positionIds = declared.get('position_ids')!;
  const batchIndex = declared.get('batch_index');
  const ccl = declared.get('comp_ctx_lengths');
  const io = { inputs: iface.inputs.map((i) => i.name), outputs: [] as string[] };

  // embeddings → 2-D hidden [B·S, H]
  const h = g.within('embed', () => {
    const ids = reshape(c, inputIds, [-1]);
    let e = g.op('Gather', [weight(c, a.embed, [a.vocab, a.hidden]), ids], { axis: 0 });
    if (a.positions) {
      const p = g.op('Gather', [weight(c, a.positions.weight, [a.positions.max, a.hidden]), reshape(c, positionIds, [-1])], { axis: 0 });
      e = g.op('Add', [e, p]);
    }
    if (a.embedScale !== undefined) e = g.op('Mul', [e, g.scalar(o.dtype, a.embedScale, 'embed_scale')]);
    return e;
  });
  const kv = cacheContext(c, a, inputIds, positionIds, ctxSource(iface.states, declared), batchIndex, ccl);
  const ropeFor = ropeTablesOf(c, a, positionIds);
  const { h: last, updated } = decoderLayers(c, a, h, kv, iface.states, declared, { ropeFor: (l) => ropeFor(l.rope ?? a.rope) });
  const logits = lastPositionLogits(c, a, last, kv.bs, positionIds, declared.get(NUM_LOGITS_TO_KEEP));
  // QEfficient's output order: probs?, next_tokens | logits, the caches, the penalty buffers
  const sampled = o.sampler
    ? appendSampler(
        c,
        { logits, inputIds, positionIds, ...(batchIndex ? { batchIndex } : {}), vocab: a.vocab, batch, seq, cacheBatch },
        o.sampler,
      )
    : undefined;
  if (sampled) {
    if (sampled.probs) g.output(sampled.probs, 'probs', 'float32', [batch, 1, a.vocab]);
    g.output(sampled.nextTokens, 'next_tokens', 'int64', [batch, 1, 1]);
    io.outputs.push(...(sampled.probs ? ['probs'] : []), 'next_tokens');
    io.inputs.push(...SAMPLER_INPUTS);
  } else {
    g.output(logits, 'logits', 'float32', [batch, o.numSpeculativeTokens ? NUM_LOGITS_TO_KEEP : 1, a.vocab]);
    io.outputs.push('logits');
  }
  retainStates(g, iface.states, updated, io.outputs);
  if (sampled) {
    // the penalty buffers, retained after the caches (graph-interface.ts samplerStates)
    const buffers = samplerStates(cacheBatch, a.vocab);
    for (const s of buffers) g.output(sampled.states[s.name], s.retained, s.dtype, s.dims);
    io.outputs.push(...buffers.map((s) => s.retained));
  }

  const weights = [...weightInputs(a), ...(o.lora ? loraWeightInputs(o.lora) : [])];
  const unused = o.lora ? [...o.lora.modules.values()].filter((m) => !lora!.used.has(`${m.module}.weight`)) : [];
  if (unused.length)
    throw new FormatError(unused[0]!.by, `targets ${unused[0]!.module}, which this ${a.modelType} graph does not build as a plain Linear`);
  const metadata: Record<string, string> = {
    'weight_spec.model_type': a.modelType,
    'weight_spec.phase': phase,
    'weight_spec.kv_dtype': o.dtype,
    'weight_spec.logits': 'last-valid-position',
    // CCL and the sampler go together; neither goes with a TLM (export-config.ts), so the key order is unchanged
    ...servingMetadata(o),
    ...(o.numSpeculativeTokens ? { [SERVING_METADATA.speculative]: o.numSpeculativeTokens.join(',') } : {}),
    ...windowCacheMetadata(iface.states),
    ...(o.metadata ?? {}),
  };
  return { model: g.build(o.name ?? `${a.modelType}-causal-lm`, metadata), weights, io, layers: a.layers.length };
}
