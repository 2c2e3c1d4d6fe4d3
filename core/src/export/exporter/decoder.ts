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
 */
import type { ArchSpec, LayerSpec, RopeSpec } from '../blocks/arch';
import { weightInputs, type WeightInput } from '../blocks/arch';
import { cacheContext } from '../blocks/attention';
import { GraphBuilder, type Dim, type ModelObj } from './builder';
import { decoderInterface, windowCacheMetadata } from './graph-interface';
import { attentionBlockOf, ctxSource, declareInputs, layerStateInputs, retainStates, type StateValues } from '../blocks/layer-states';
import { mlp } from '../blocks/mlp';
import { norm } from '../blocks/norms';
import { cast, linear, reshape, softcap, unsqueeze, weight, type Ctx } from '../blocks/ops';
import type { ExportDtype } from '../../formats/dtype';
import { ropeTables } from '../blocks/rope';
import { appendSampler, type SamplerOptions } from '../blocks/sampler';
import { SAMPLER_INPUTS, SERVING_METADATA } from '../../artifacts/graph-metadata';
import { TensorDataType } from '../../formats/onnx/types';

/** Export phase: one graph for both, or a specialization per phase (disaggregated serving). */
export type { Phase } from './graph-interface';
import type { Phase } from './graph-interface';

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
}

/** A built graph and the weights it takes. */
export interface BuiltGraph {
  model: ModelObj;
  weights: WeightInput[];
  /** Names of the non-weight inputs and of the outputs, in order. */
  io: { inputs: string[]; outputs: string[] };
  layers: number;
}

/** Builds the decoder graph for `a`. */
export function buildCausalLM(a: ArchSpec, o: GraphOptions): BuiltGraph {
  const g = new GraphBuilder(o.opset);
  const c: Ctx = { g, dtype: o.dtype, declared: new Set() };
  const phase = o.phase ?? 'both';
  const cb = !!o.continuousBatching;
  const batch: Dim = cb ? 'batch_size' : (o.batchSize ?? 'batch_size');
  const cacheBatch: Dim = cb ? (o.batchSize ?? 'full_batch_size') : batch;
  const seq: Dim = phase === 'decode' ? 1 : 'seq_len';
  const ctxLen: Dim = o.ctxLen ?? 'ctx_len';
  const iface = decoderInterface(a, { batch, seq, cacheBatch, ctxLen, dtype: o.dtype, continuousBatching: cb, ccl: !!o.compCtxLengths });
  const declared = declareInputs(g, iface.inputs);
  const inputIds = declared.get('input_ids')!;
  const positionIds = declared.get('position_ids')!;
  const batchIndex = declared.get('batch_index');
  const ccl = declared.get('comp_ctx_lengths');
  const io = { inputs: iface.inputs.map((i) => i.name), outputs: [] as string[] };

  // embeddings → 2-D hidden [B·S, H]
  let h = g.within('embed', () => {
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
  // one cos/sin table per distinct rope spec, built before the layers (Gemma-3: global and local layers differ)
  const tables = new Map<RopeSpec, ReturnType<typeof ropeTables>>();
  for (const r of [a.rope, ...a.layers.map((l) => l.rope)]) if (r && !tables.has(r)) tables.set(r, ropeTables(c, positionIds, r));
  const ropeFor = (r: RopeSpec | undefined) => (r ? tables.get(r) : undefined);

  const updated: StateValues[] = [];
  const maybeNorm = (x: string, n: LayerSpec['norm1']) => (n ? norm(c, x, n, a.norm) : x);
  // Granite's residual_multiplier scales each branch before its residual add
  const branch = (l: LayerSpec, x: string, post: LayerSpec['postAttnNorm']) => {
    const y = maybeNorm(x, post);
    return l.residualScale === undefined ? y : g.op('Mul', [y, g.scalar(o.dtype, l.residualScale, 'residual_scale')]);
  };
  a.layers.forEach((l, i) => {
    g.within(`layers.${i}`, () => {
      const x1 = maybeNorm(h, l.norm1);
      const block = attentionBlockOf(l);
      const att = g.within('attn', () => block(c, a, l, x1, kv, ropeFor(l.rope ?? a.rope), layerStateInputs(iface.states, declared, i)));
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
    });
  });

  // last valid position per row (QEfficient: argmax of position_ids), then final norm + head
  const logits = g.within('head', () => {
    const h3 = g.op('Reshape', [h, g.op('Concat', [kv.bs, g.ints([a.hidden])], { axis: 0 })]); // [B,S,H]
    const last = g.op('ArgMax', [g.op('Cast', [positionIds], { to: TensorDataType.INT32 })], { axis: 1, keepdims: 1 }); // [B,1]
    const picked = g.op('GatherND', [h3, last], { batch_dims: 1 }); // [B,H]
    const normed = norm(c, picked, a.finalNorm, a.norm);
    let head = linear(c, normed, {
      weight: a.lmHead ?? a.embed,
      out: a.vocab,
      in: a.hidden,
      ...(a.lmHeadBias ? { bias: a.lmHeadBias } : {}),
    });
    if (a.logitsScale !== undefined) head = g.op('Mul', [head, g.scalar(o.dtype, a.logitsScale, 'output_multiplier')]);
    if (a.logitsDivide !== undefined) head = g.op('Div', [head, g.scalar(o.dtype, a.logitsDivide, 'logits_scaling')]);
    let logits = cast(c, head, o.dtype, 'float32');
    if (a.finalSoftcap !== undefined) logits = softcap(c, logits, a.finalSoftcap, 'float32');
    return unsqueeze(c, logits, [1]);
  });
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
    g.output(logits, 'logits', 'float32', [batch, 1, a.vocab]);
    io.outputs.push('logits');
  }
  retainStates(g, iface.states, updated, io.outputs);
  if (sampled) {
    g.output(sampled.repetitionBuffer, 'past_repetition_penalty_buffer_RetainedState', 'bool', [cacheBatch, a.vocab]);
    g.output(sampled.presenceBuffer, 'past_presence_penalty_buffer_RetainedState', 'bool', [cacheBatch, a.vocab]);
    io.outputs.push('past_repetition_penalty_buffer_RetainedState', 'past_presence_penalty_buffer_RetainedState');
  }

  const weights = weightInputs(a);
  const metadata: Record<string, string> = {
    'weight_spec.model_type': a.modelType,
    'weight_spec.phase': phase,
    'weight_spec.kv_dtype': o.dtype,
    'weight_spec.logits': 'last-valid-position',
    ...(o.compCtxLengths
      ? {
          [SERVING_METADATA.cclPrefill]: o.compCtxLengths.prefill.join(','),
          [SERVING_METADATA.cclDecode]: o.compCtxLengths.decode.join(','),
        }
      : {}),
    ...(o.sampler
      ? { [SERVING_METADATA.sampler]: JSON.stringify({ max_top_k_ids: o.sampler.maxTopK, return_pdfs: o.sampler.returnPdfs }) }
      : {}),
    ...windowCacheMetadata(iface.states),
    ...(o.metadata ?? {}),
  };
  return { model: g.build(o.name ?? `${a.modelType}-causal-lm`, metadata), weights, io, layers: a.layers.length };
}
