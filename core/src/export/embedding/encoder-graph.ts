/**
 * The embedding graph: a BERT / XLM-RoBERTa encoder (`input_ids`, `attention_mask`,
 * `token_type_ids` → `last_hidden_state`) and, when the
 * folder lists sentence-transformers modules, the pooling and normalization in the same graph
 * (`sentence_embedding`), as QEfficient's `PooledModel` appends pooling to `QEFFAutoModel`.
 *
 * Ported from transformers `models/bert/modeling_bert.py` and
 * `models/xlm_roberta/modeling_xlm_roberta.py` (commit 015bfeb8):
 * - embeddings: word + token type + absolute position rows, LayerNorm. Token types default to
 *   HF's zero buffer (row 0). Positions: BERT `position_ids[:, :S]` (0…S-1); XLM-RoBERTa
 *   `create_position_ids_from_input_ids`: cumsum(ids != pad) · (ids != pad) + padding_idx.
 * - each layer: q, k, v projections, scores (q·kᵀ) / √head_dim + the extended mask
 *   `(1 - mask) · finfo(dtype).min` (QEfficient's `_prepare_4d_attention_mask` on the encoder
 *   path), softmax, context, dense + residual + LayerNorm; intermediate dense + activation, output
 *   dense + residual + LayerNorm (post-norm).
 * Pooling as sentence-transformers' `Pooling.forward` (in float32, as its `.float()` mask makes
 * it): CLS = row 0; max over rows with padding set to -1e9; mean = Σ(h · mask) / max(Σ mask,
 * 1e-9); mean/√len divides by √ of that count; modes concatenated; `Normalize` =
 * `F.normalize(p=2, dim=1)` = x / max(‖x‖, 1e-12).
 *
 * Dims are QEfficient's dynamic axes (`batch_size`, `seq_len`), so its Embedding
 * specializations (`{batch_size, seq_len}` per compiled length) bind them.
 */
import { GraphBuilder, OPSET, type ModelObj } from '../blocks/builder';
import { activation, cast, linear, weight, type Ctx } from '../blocks/ops';
import { onnxTypeOfName, type ExportDtype } from '../../formats/dtype';
import { norm } from '../blocks/norms';
import type { WeightInput } from '../blocks/weight-inputs';
import { maxSequence, type EncoderArch } from './encoder-config';
import type { PoolingSpec } from './pooling';
import { EMBEDDING_METADATA, EMBEDDING_OUTPUTS } from '../../artifacts/graph-interface';

/** Options of {@link buildEncoder}. */
export interface EncoderGraphOptions {
  dtype: ExportDtype;
  opset?: number;
  name: string;
  /** A fixed batch (default symbolic `batch_size`). */
  batchSize?: number;
}

/** The built graph. */
export interface BuiltEncoder {
  model: ModelObj;
  weights: WeightInput[];
  io: { inputs: string[]; outputs: string[] };
}

/** `torch.finfo(dtype).min`: the additive mask HF puts on padded keys. */
const FINFO_MIN: Record<ExportDtype, number> = { float32: -3.4028234663852886e38, float16: -65504, bfloat16: -3.3895313892515355e38 };

/** Builds the encoder (and its pooling) for `a`. */
export function buildEncoder(a: EncoderArch, pool: PoolingSpec | undefined, o: EncoderGraphOptions): BuiltEncoder {
  const g = new GraphBuilder(o.opset ?? OPSET);
  const dt = o.dtype;
  const c: Ctx = { g, dtype: dt, declared: new Set() };
  const H = a.hidden;
  const dims = [o.batchSize ?? 'batch_size', 'seq_len'];
  const ids = g.input('input_ids', 'int64', dims);
  const mask = g.input('attention_mask', 'int64', dims);
  // HF adds a token type row for every token, whatever the vocabulary's size (bge-m3's one row
  // included): the graph takes the ids, as the model's forward does (QEfficient feeds zeros)
  const types = g.input('token_type_ids', 'int64', dims);
  const w = (name: string, shape: number[]) => weight(c, name, shape);
  const ln = (x: string, p: string) =>
    norm(c, x, { weight: `${p}.weight`, bias: `${p}.bias`, size: H }, { kind: 'layer', eps: a.eps, plusOne: false });
  const lin = (x: string, p: string, out: number, inp: number) => linear(c, x, { weight: `${p}.weight`, bias: `${p}.bias`, out, in: inp });

  const idsShape = g.op('Shape', [ids]);
  // embeddings: (word + token type) + position, as HF adds them
  const hidden = g.within('embeddings', () => {
    const word = g.op('Gather', [w('embeddings.word_embeddings.weight', [a.vocab, H]), ids], { axis: 0 });
    const typeRows = w('embeddings.token_type_embeddings.weight', [a.typeVocab, H]);
    const type = g.op('Gather', [typeRows, types], { axis: 0 });
    let pos: string;
    if (a.positions === 'arange') {
      const seq = g.op('Gather', [idsShape, g.int(1, 'seq_axis')], { axis: 0 });
      pos = g.op('Range', [g.int(0, 'zero'), seq, g.int(1, 'one')]);
    } else {
      const real = g.op('Cast', [g.op('Not', [g.op('Equal', [ids, g.int(a.padId, 'pad')])])], { to: onnxTypeOfName('int64') });
      const cum = g.op('CumSum', [real, g.int(1, 'seq_axis')]);
      pos = g.op('Add', [g.op('Mul', [cum, real]), g.int(a.padId, 'pad')]);
    }
    const posRows = g.op('Gather', [w('embeddings.position_embeddings.weight', [a.maxPositions, H]), pos], { axis: 0 });
    const sum = g.op('Add', [g.op('Add', [word, type]), posRows]);
    return g.op('Reshape', [ln(sum, 'embeddings.LayerNorm'), g.ints([-1, H], 'rows')]);
  });

  // [B, S] → [B, 1, 1, S] additive mask in the compute dtype
  const extended = g.within('mask', () => {
    const m = g.op('Cast', [mask], { to: onnxTypeOfName(dt) });
    const inv = g.op('Sub', [g.scalar(dt, 1, 'one'), m]);
    return g.op('Unsqueeze', [g.op('Mul', [inv, g.scalar(dt, FINFO_MIN[dt], 'finfo_min')]), g.ints([1, 2], 'axes')]);
  });
  const heads4 = g.op('Concat', [idsShape, g.ints([a.heads, a.headDim], 'heads')], { axis: 0 });
  const scale = g.scalar(dt, Math.sqrt(a.headDim), 'sqrt_head_dim');

  let x = hidden;
  for (let i = 0; i < a.layers; i++) {
    const p = `encoder.layer.${i}`;
    x = g.within(`layer.${i}`, () => {
      const split = (y: string, perm: number[]) => g.op('Transpose', [g.op('Reshape', [y, heads4])], { perm });
      const q = split(lin(x, `${p}.attention.self.query`, H, H), [0, 2, 1, 3]);
      const kT = split(lin(x, `${p}.attention.self.key`, H, H), [0, 2, 3, 1]);
      const v = split(lin(x, `${p}.attention.self.value`, H, H), [0, 2, 1, 3]);
      const scores = g.op('Add', [g.op('Div', [g.op('MatMul', [q, kT]), scale]), extended]);
      const probs = g.op('Softmax', [scores], { axis: -1 });
      const ctx = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [probs, v])], { perm: [0, 2, 1, 3] }), g.ints([-1, H], 'rows')]);
      const attn = ln(g.op('Add', [lin(ctx, `${p}.attention.output.dense`, H, H), x]), `${p}.attention.output.LayerNorm`);
      const inter = activation(c, lin(attn, `${p}.intermediate.dense`, a.intermediate, H), a.act);
      return ln(g.op('Add', [lin(inter, `${p}.output.dense`, H, a.intermediate), attn]), `${p}.output.LayerNorm`);
    });
  }
  const last = g.op('Reshape', [x, g.op('Concat', [idsShape, g.ints([H], 'hidden')], { axis: 0 })]);
  g.output(last, EMBEDDING_OUTPUTS.hidden, dt, [dims[0]!, 'seq_len', H]);
  const outputs: string[] = [EMBEDDING_OUTPUTS.hidden];
  if (pool) {
    const emb = g.within('pooling', () => pooled(c, last, mask, pool));
    g.output(emb, EMBEDDING_OUTPUTS.pooled, dt, [dims[0]!, H * pool.modes.length]);
    outputs.push(EMBEDDING_OUTPUTS.pooled);
  }
  const weights = g.inputs
    .filter((vi) => c.declared.has(vi.name))
    .map((vi) => ({ name: vi.name, shape: vi.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : 0)) }));
  const metadata = {
    'weight_spec.graph': 'embedding',
    'weight_spec.model_type': a.modelType,
    [EMBEDDING_METADATA.pooling]: pool ? `${pool.modes.join('+')}${pool.normalize ? '+normalize' : ''}` : 'none',
    [EMBEDDING_METADATA.maxSeqLen]: String(maxSequence(a)),
  };
  return {
    model: g.build(o.name, metadata),
    weights,
    io: { inputs: ['input_ids', 'attention_mask', 'token_type_ids'], outputs },
  };
}

/** sentence-transformers' Pooling (and Normalize) over `last` `[B, S, H]`, in float32. */
function pooled(c: Ctx, last: string, mask: string, pool: PoolingSpec): string {
  const g = c.g;
  const h = cast(c, last, c.dtype, 'float32');
  const m3 = g.op('Unsqueeze', [g.op('Cast', [mask], { to: onnxTypeOfName('float32') }), g.ints([2], 'axes')]);
  const parts: string[] = [];
  let sum: string | undefined;
  let count: string | undefined;
  const means = () => {
    sum ??= g.reduce('ReduceSum', g.op('Mul', [h, m3]), [1], 0);
    count ??= g.op('Max', [g.reduce('ReduceSum', m3, [1], 0), g.scalar('float32', 1e-9, 'min_count')]);
    return { sum, count };
  };
  for (const mode of pool.modes) {
    if (mode === 'cls') parts.push(g.op('Gather', [h, g.int(0, 'first')], { axis: 1 }));
    else if (mode === 'max') {
      const keep = g.op('Cast', [m3], { to: onnxTypeOfName('bool') });
      parts.push(g.reduce('ReduceMax', g.op('Where', [keep, h, g.scalar('float32', -1e9, 'pad_fill')]), [1], 0));
    } else if (mode === 'mean') {
      const s = means();
      parts.push(g.op('Div', [s.sum, s.count]));
    } else {
      const s = means();
      parts.push(g.op('Div', [s.sum, g.op('Sqrt', [s.count])]));
    }
  }
  let e = parts.length === 1 ? parts[0]! : g.op('Concat', parts, { axis: 1 });
  if (pool.normalize) {
    const n = g.reduce('ReduceL2', e, [1], 1);
    e = g.op('Div', [e, g.op('Max', [n, g.scalar('float32', 1e-12, 'norm_eps')])]);
  }
  return cast(c, e, 'float32', c.dtype);
}
