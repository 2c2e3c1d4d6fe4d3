/**
 * The Qwen3-VL text model as one weight-free graph with QEfficient's language interface
 * (`QEffQwen3VLDecoderWrapper`, QEfficient/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py):
 *   inputs  input_ids [batch, seq]; vision_embeds [vision_batch_size, vision_size, hidden];
 *           deepstack_features [num_feature_layers, vision_batch_size, vision_size, hidden] (dim 0 the
 *           symbol QEfficient main names, ebf55e8159c8b87bff6d8028541b824244b16c81);
 *           position_ids int64 [4, batch, seq] (row 0 the cache position, rows 1–3 the t/h/w
 *           MRoPE positions); image_idx int64 [1, 1]; [batch_index]; past_key.i / past_value.i
 *   outputs logits [batch, 1, vocab] (last valid position), vision_embeds_RetainedState,
 *           deepstack_features_RetainedState, image_idx_output [1, 1], past_*_RetainedState
 * Image rows replace the embeddings at image-token positions (the n-th image token takes row
 * image_idx + n of the flattened vision_embeds); after text layer k < num_feature_layers the
 * matching deepstack row is added there. Layers are the exporter's decoder layers (decoder.ts:
 * qk-norm, GQA, MoE over the prepared experts); rotary is HF's interleaved MRoPE (`apply_interleaved_mrope`).
 */
import { weightInputs, type WeightInput } from '../blocks/weight-inputs';
import { cacheContext } from '../blocks/attention';
import { archStates } from '../../artifacts/graph-interface';
import { ctxSource, declareInputs, retainStates } from '../blocks/layer-states';
import type { ModelObj } from '../blocks/builder';
import { decoderFrame, decoderLayers, lastPositionLogits } from '../exporter/decoder';
import { cast, reshape, unsqueeze, weight, type Ctx } from '../blocks/ops';
import type { ExportDtype } from '../../formats/dtype';
import type { VlmArch } from './config';
import { TensorDataType } from '../../formats/onnx/types';
import { declareCcl, resolveServing, retainSampler, servingHead, servingMetadata, type ServingRequest } from '../blocks/serving-head';

/** Options of the language graph (as for the text-only decoder, with its serving features). */
export interface LanguageOptions extends ServingRequest {
  dtype: ExportDtype;
  /** Default-domain opset (default 17). */
  opset?: number;
  ctxLen?: number;
  batchSize?: number;
  continuousBatching?: boolean;
  name?: string;
  metadata?: Record<string, string>;
}

/** The built language graph. */
export interface BuiltLanguage {
  model: ModelObj;
  weights: WeightInput[];
  io: { inputs: string[]; outputs: string[] };
}

/**
 * Which MRoPE row (0 = t, 1 = h, 2 = w) drives each of the head_dim/2 frequencies: HF
 * `apply_interleaved_mrope` starts from t and overwrites `[offset : 3·section[dim] : 3]` with
 * h (offset 1) and w (offset 2).
 */
export function mropeRows(half: number, section: [number, number, number], interleaved = true): number[] {
  const rows = new Array<number>(half).fill(0);
  if (!interleaved) {
    // HF Qwen2.5-VL apply_multimodal_rotary_pos_emb: cos.split(mrope_section * 2) and chunk i takes row i % 3,
    // i.e. contiguous t | h | w chunks over each half of head_dim
    for (let j = 0; j < half; j++) rows[j] = j < section[0] ? 0 : j < section[0] + section[1] ? 1 : 2;
    return rows;
  }
  for (const [dim, offset] of [
    [1, 1],
    [2, 2],
  ] as const) {
    for (let j = offset; j < section[dim] * 3 && j < half; j += 3) rows[j] = dim;
  }
  return rows;
}

/** cos/sin `[B, S, 1, head_dim]` from the three MRoPE rows `[3, B, S]`. */
function mropeTables(c: Ctx, arch: VlmArch, mrope: string): { cos: string; sin: string } {
  const g = c.g;
  const r = arch.text.rope!;
  const half = r.invFreq.length;
  const rows = mropeRows(half, arch.mropeSection, arch.mropeInterleaved);
  return g.within('mrope', () => {
    const pos = unsqueeze(c, g.op('Cast', [mrope], { to: TensorDataType.FLOAT }), [-1]); // [3,B,S,1]
    const freqs3 = g.op('Mul', [pos, g.constant('float32', [half], r.invFreq, 'inv_freq')]); // [3,B,S,half]
    const onehot: number[] = [];
    for (let k = 0; k < 3; k++) for (let j = 0; j < half; j++) onehot.push(rows[j] === k ? 1 : 0);
    // x·1 + 0 + 0 is exact, so this selects each frequency's row without rounding
    const picked = g.op('Mul', [freqs3, g.constant('float32', [3, 1, 1, half], onehot, 'mrope_rows')]);
    const freqs = g.op('ReduceSum', [picked, g.ints([0], 'axes')], { keepdims: 0 }); // [B,S,half]
    const emb = g.op('Concat', [freqs, freqs], { axis: -1 });
    let cos = g.op('Cos', [emb]);
    let sin = g.op('Sin', [emb]);
    if (r.attentionScale !== 1) {
      cos = g.op('Mul', [cos, g.scalar('float32', r.attentionScale, 'rope_scale')]);
      sin = g.op('Mul', [sin, g.scalar('float32', r.attentionScale, 'rope_scale')]);
    }
    return { cos: unsqueeze(c, cast(c, cos, 'float32', c.dtype), [2]), sin: unsqueeze(c, cast(c, sin, 'float32', c.dtype), [2]) };
  });
}

/** Builds the language graph for `arch`. */
export function buildLanguage(arch: VlmArch, o: LanguageOptions): BuiltLanguage {
  const a = arch.text;
  const { g, c, cb, batch, cacheBatch, ctxLen } = decoderFrame(o);
  const states = archStates(a, { cacheBatch, ctxLen, dtype: o.dtype });
  const F = arch.vision.deepstack.length;
  const H = a.hidden;

  const inputIds = g.input('input_ids', 'int64', [batch, 'seq_len']);
  const visionEmbeds = g.input('vision_embeds', o.dtype, ['vision_batch_size', 'vision_size', H]);
  // Qwen2.5-VL has no deepstack: its language graph takes QEfficient's inputs without it
  const deepstack =
    F > 0 ? g.input('deepstack_features', o.dtype, ['num_feature_layers', 'vision_batch_size', 'vision_size', H]) : undefined;
  const positionIds = g.input('position_ids', 'int64', [4, batch, 'seq_len']);
  const imageIdx = g.input('image_idx', 'int64', [1, 1]);
  const batchIndex = cb ? g.input('batch_index', 'int64', [batch, 1]) : undefined;
  const declared = declareInputs(g, states);
  const io = {
    inputs: [
      'input_ids',
      'vision_embeds',
      ...(deepstack ? ['deepstack_features'] : []),
      'position_ids',
      'image_idx',
      ...(cb ? ['batch_index'] : []),
      ...states.map((st) => st.name),
    ],
    outputs: [] as string[],
  };
  const serving = resolveServing(o, a.vocab);
  const ccl = declareCcl(g, serving, io);

  const textPos = g.op('Squeeze', [g.op('Slice', [positionIds, g.ints([0]), g.ints([1]), g.ints([0])]), g.ints([0])]); // [B,S]
  const mrope = g.op('Slice', [positionIds, g.ints([1]), g.ints([4]), g.ints([0])]); // [3,B,S]

  // embeddings with the image rows merged in (QEffQwen3VLDecoderWrapper.forward)
  const merged = g.within('embed', () => {
    const e = g.op('Gather', [weight(c, a.embed, [a.vocab, H]), inputIds], { axis: 0 }); // [B,S,H]
    const selected = g.op('Equal', [inputIds, g.int(arch.imageTokenId)]); // [B,S]
    const n = g.op('Sub', [g.op('CumSum', [g.op('Cast', [selected], { to: TensorDataType.INT64 }), g.int(1)]), g.int(1)]);
    const idx = g.op('Where', [g.op('Equal', [n, g.int(-1)]), n, g.op('Add', [n, reshape(c, imageIdx, [])])]); // [B,S]
    const rows = g.op('Gather', [reshape(c, visionEmbeds, [-1, H]), idx], { axis: 0 }); // [B,S,H]
    const withImage = g.op('Where', [unsqueeze(c, selected, [-1]), rows, e]);
    const seqIsOne = g.op('Equal', [g.op('Gather', [g.op('Shape', [inputIds]), g.int(1)], { axis: 0 }), g.int(1)]);
    const embeds = g.op('Where', [seqIsOne, e, withImage]);
    const ds = deepstack ? g.op('Gather', [reshape(c, deepstack, [F, -1, H]), idx], { axis: 1 }) : ''; // [F,B,S,H]
    const maskF = !deepstack ? '' : cast(c, g.op('Cast', [unsqueeze(c, selected, [-1])], { to: TensorDataType.FLOAT }), 'float32', o.dtype); // [B,S,1]
    // max(idx) + 1 (TopK rather than ReduceMax, whose axes moved from attribute to input at opset 18)
    const [top] = g.opN('TopK', [reshape(c, idx, [-1]), g.ints([1], 'k')], { axis: 0, largest: 1, sorted: 1 }, 2);
    const imageIdxOut = reshape(c, g.op('Add', [top!, g.int(1)]), [1, 1]);
    return { embeds, ds, maskF, imageIdxOut };
  });

  const h = reshape(c, merged.embeds, [-1, H]); // [B·S, H]
  const kv = cacheContext(c, a, inputIds, textPos, ctxSource(states, declared), batchIndex, ccl);
  const rope = mropeTables(c, arch, mrope);
  const { h: last, updated } = decoderLayers(c, a, h, kv, states, declared, {
    ropeFor: () => rope,
    norm1InAttn: true,
    // QEffQwen3VLMoeTextModel._deepstack_process: after text layer i < F, hidden + deepstack[i] · image mask
    after: (i, x) => {
      if (i >= F) return x;
      const add = g.op('Mul', [g.op('Gather', [merged.ds, g.int(i)], { axis: 0 }), merged.maskF]); // [B,S,H]
      return g.op('Add', [x, reshape(c, add, [-1, H])]);
    },
  });
  const logits = lastPositionLogits(c, a, last, kv.bs, textPos);
  // the sampler reads row 0 of position_ids, as QEfficient's sampler_forward does for MRoPE positions
  const wiring = {
    logits,
    inputIds,
    positionIds: textPos,
    ...(batchIndex ? { batchIndex } : {}),
    vocab: a.vocab,
    batch,
    seq: 'seq_len',
    cacheBatch,
  };
  const sampled = servingHead(c, wiring, serving, io);
  io.outputs.push('vision_embeds_RetainedState', ...(deepstack ? ['deepstack_features_RetainedState'] : []), 'image_idx_output');
  g.output(g.op('Identity', [visionEmbeds]), 'vision_embeds_RetainedState', o.dtype, ['vision_batch_size', 'vision_size', H]);
  if (deepstack)
    g.output(g.op('Identity', [deepstack]), 'deepstack_features_RetainedState', o.dtype, [
      'num_feature_layers',
      'vision_batch_size',
      'vision_size',
      H,
    ]);
  g.output(merged.imageIdxOut, 'image_idx_output', 'int64', [1, 1]);
  retainStates(g, states, updated, io.outputs);
  retainSampler(g, sampled, cacheBatch, a.vocab, io);
  const metadata: Record<string, string> = {
    'weight_spec.graph': 'language',
    'weight_spec.model_type': arch.modelType,
    'weight_spec.kv_dtype': o.dtype,
    'weight_spec.logits': 'last-valid-position',
    ...servingMetadata(serving),
    ...(o.metadata ?? {}),
  };
  return { model: g.build(o.name ?? `${arch.modelType}-language`, metadata), weights: weightInputs(a), io };
}
