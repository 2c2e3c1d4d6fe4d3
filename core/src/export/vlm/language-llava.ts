/**
 * The LLaVA / LLaVA-NeXT language graph: the text model of `text_config` (any registry family, its
 * decoder layers from exporter/decoder.ts) with QEfficient's language interface
 * (`QEFFLlavaDecoderWrapper`, QEfficient/transformers/models/llava/modeling_llava.py; LLaVA-NeXT's
 * wrapper is the same):
 *   inputs  input_ids [batch, seq]; vision_embeds [vision_batch_size, vision_size, hidden];
 *           position_ids int64 [batch, seq]; image_idx int64 [1, 1]; [batch_index];
 *           the text family's states (past_key.i / past_value.i …)
 *   outputs logits [batch, 1, vocab] (last valid position), vision_embeds_RetainedState,
 *           image_idx_output [1, 1], the states' _RetainedState
 * The n-th image token of a call takes row image_idx + n of the flattened vision_embeds (HF
 * `masked_scatter` of the image features into the token embeddings, in order); a call of one
 * token takes no image row; image_idx_output is image_idx plus the call's image tokens (never lower:
 * QEfficient's single-graph forward keeps the larger, its dual-graph wrapper resets to 0 in a call
 * without image tokens). What the text model does to its input embeddings after that (Gemma's
 * √hidden scale, GPT-2's learned positions) applies to the image rows too, as HF's model forward
 * applies it to `inputs_embeds`.
 */
import type { ArchSpec } from '../blocks/arch';
import { weightInputs } from '../blocks/weight-inputs';
import { cacheContext } from '../blocks/attention';
import type { CacheContext } from '../blocks/attention-block';
import { archStates, windowCacheMetadata } from '../../artifacts/graph-interface';
import { ctxSource, declareInputs, retainStates } from '../blocks/layer-states';
import { decoderFrame, decoderLayers, lastPositionLogits, ropeTablesOf } from '../exporter/decoder';
import { reshape, unsqueeze, weight } from '../blocks/ops';
import { TensorDataType } from '../../formats/onnx/types';
import { declareCcl, resolveServing, retainSampler, servingHead, servingMetadata } from '../blocks/serving-head';
import type { BuiltLanguage, LanguageOptions } from './language';
import type { LlavaArch } from './config-llava';

/** Builds the language graph of a LLaVA(-NeXT) architecture (Mistral 3's too: the same wrapper in QEfficient). */
export function buildLlavaLanguage(
  arch: Pick<LlavaArch, 'text' | 'imageTokenId'> & { modelType: string },
  o: LanguageOptions,
): BuiltLanguage {
  const a = arch.text;
  const f = llavaLanguageInputs(a, o);
  const { g, c, H, inputIds, visionEmbeds, positionIds, imageIdx, batchIndex, states, declared, ccl } = f;

  const merged = g.within('embed', () => {
    const e = g.op('Gather', [weight(c, a.embed, [a.vocab, H]), inputIds], { axis: 0 }); // [B,S,H]
    const selected = g.op('Equal', [inputIds, g.int(arch.imageTokenId)]); // [B,S]
    const n = g.op('Sub', [g.op('CumSum', [g.op('Cast', [selected], { to: TensorDataType.INT64 }), g.int(1)]), g.int(1)]);
    const idx = g.op('Where', [selected, g.op('Add', [n, reshape(c, imageIdx, [])]), g.int(-1)]); // [B,S]
    const rows = g.op('Gather', [reshape(c, visionEmbeds, [-1, H]), g.op('Max', [idx, g.int(0)])], { axis: 0 }); // [B,S,H]
    const withImage = g.op('Where', [unsqueeze(c, selected, [-1]), rows, e]);
    const seqIsOne = g.op('Equal', [g.op('Gather', [g.op('Shape', [inputIds]), g.int(1)], { axis: 0 }), g.int(1)]);
    let embeds = reshape(c, g.op('Where', [seqIsOne, e, withImage]), [-1, H]); // [B·S,H]
    if (a.positions) {
      const p = g.op('Gather', [weight(c, a.positions.weight, [a.positions.max, H]), reshape(c, positionIds, [-1])], { axis: 0 });
      embeds = g.op('Add', [embeds, p]);
    }
    if (a.embedScale !== undefined) embeds = g.op('Mul', [embeds, g.scalar(o.dtype, a.embedScale, 'embed_scale')]);
    // max(idx) + 1 (TopK rather than ReduceMax, whose axes moved from attribute to input at opset 18)
    const [top] = g.opN('TopK', [reshape(c, idx, [-1]), g.ints([1], 'k')], { axis: 0, largest: 1, sorted: 1 }, 2);
    const imageIdxOut = g.op('Max', [reshape(c, g.op('Add', [top!, g.int(1)]), [1, 1]), imageIdx]);
    return { embeds, imageIdxOut };
  });

  const kv = cacheContext(c, a, inputIds, positionIds, ctxSource(states, declared), batchIndex, ccl);
  return finishLlavaLanguage(
    f,
    a,
    merged.embeds,
    merged.imageIdxOut,
    kv,
    {
      'weight_spec.model_type': arch.modelType,
      'weight_spec.text_model_type': a.modelType,
    },
    `${arch.modelType}-language`,
    o,
  );
}

/**
 * The start every graph with QEfficient's LLaVA language interface makes (its decoder wrapper;
 * Gemma 3's and Mistral 3's take the same inputs): the decoder frame, the text family's states,
 * the inputs input_ids, vision_embeds, position_ids, image_idx, [batch_index] and the states,
 * declared in that order, and the serving options (CCL inputs declared after them).
 */
export function llavaLanguageInputs(a: ArchSpec, o: LanguageOptions) {
  const frame = decoderFrame(o);
  const { g, cb, batch, cacheBatch, ctxLen } = frame;
  const states = archStates(a, { cacheBatch, ctxLen, dtype: o.dtype });
  const H = a.hidden;

  const inputIds = g.input('input_ids', 'int64', [batch, 'seq_len']);
  const visionEmbeds = g.input('vision_embeds', o.dtype, ['vision_batch_size', 'vision_size', H]);
  const positionIds = g.input('position_ids', 'int64', [batch, 'seq_len']);
  const imageIdx = g.input('image_idx', 'int64', [1, 1]);
  const batchIndex = cb ? g.input('batch_index', 'int64', [batch, 1]) : undefined;
  const declared = declareInputs(g, states);
  const io = {
    inputs: ['input_ids', 'vision_embeds', 'position_ids', 'image_idx', ...(cb ? ['batch_index'] : []), ...states.map((st) => st.name)],
    outputs: [] as string[],
  };
  const serving = resolveServing(o, a.vocab);
  const ccl = declareCcl(g, serving, io);
  return { ...frame, states, H, inputIds, visionEmbeds, positionIds, imageIdx, batchIndex, declared, io, serving, ccl };
}

/** What {@link llavaLanguageInputs} made. */
export type LlavaLanguageInputs = ReturnType<typeof llavaLanguageInputs>;

/**
 * The rest of such a graph once the family has merged the image rows into the embeddings (`h`,
 * [B·S, H]; `imageIdxOut` [1, 1]) and made the cache context `kv`: the text family's decoder
 * layers, the last valid position's logits, the serving head, then the outputs
 * vision_embeds_RetainedState, image_idx_output, the states' _RetainedState and the sampler's.
 * `model` names the model in the metadata (after `weight_spec.graph`); `name` is the graph's
 * default name (`o.metadata` / `o.name` still win).
 */
export function finishLlavaLanguage(
  f: LlavaLanguageInputs,
  a: ArchSpec,
  h: string,
  imageIdxOut: string,
  kv: CacheContext,
  model: Record<string, string>,
  name: string,
  o: LanguageOptions,
): BuiltLanguage {
  const { g, c, H, inputIds, visionEmbeds, positionIds, batchIndex, states, declared, io, serving, batch, cacheBatch } = f;
  const ropeFor = ropeTablesOf(c, a, positionIds);
  const { h: last, updated } = decoderLayers(c, a, h, kv, states, declared, {
    ropeFor: (l) => ropeFor(l.rope ?? a.rope),
    norm1InAttn: true,
  });
  const logits = lastPositionLogits(c, a, last, kv.bs, positionIds);
  const wiring = {
    logits,
    inputIds,
    positionIds,
    ...(batchIndex ? { batchIndex } : {}),
    vocab: a.vocab,
    batch,
    seq: 'seq_len',
    cacheBatch,
  };
  const sampled = servingHead(c, wiring, serving, io);
  io.outputs.push('vision_embeds_RetainedState', 'image_idx_output');
  g.output(g.op('Identity', [visionEmbeds]), 'vision_embeds_RetainedState', o.dtype, ['vision_batch_size', 'vision_size', H]);
  g.output(imageIdxOut, 'image_idx_output', 'int64', [1, 1]);
  retainStates(g, states, updated, io.outputs);
  retainSampler(g, sampled, cacheBatch, a.vocab, io);
  const metadata: Record<string, string> = {
    'weight_spec.graph': 'language',
    ...model,
    'weight_spec.kv_dtype': o.dtype,
    'weight_spec.logits': 'last-valid-position',
    ...servingMetadata(serving),
    ...windowCacheMetadata(states),
    ...(o.metadata ?? {}),
  };
  return { model: g.build(o.name ?? name, metadata), weights: weightInputs(a), io };
}
