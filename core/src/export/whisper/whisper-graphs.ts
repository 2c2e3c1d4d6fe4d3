/**
 * Whisper's two weight-free graphs, the math of Hugging Face `models/whisper/modeling_whisper.py`
 * (WhisperEncoder, WhisperDecoder, WhisperAttention, WhisperForConditionalGeneration; transformers
 * v4.57) in QEfficient's interface (`QEfficient/transformers/models/whisper/modeling_whisper.py`
 * `QEffWhisperForConditionalGeneration`, quic/efficient-transformers main ebf55e8):
 *
 *   encoder  input_features [batch_size, num_mel_bins, feature_len] → encoder_hidden_states
 *            [batch_size, max_source_positions, d_model]: conv1 (k 3, pad 1) → GELU → conv2 (k 3,
 *            stride 2, pad 1) → GELU → + embed_positions → pre-LN layers → layer_norm.
 *   decoder  input_ids, position_ids [batch_size, seq_len], encoder_hidden_states
 *            [batch_size, encoder_seq_len, d_model], and per layer i (QEfficient's names and order)
 *            past_key_self.i / past_value_self.i [batch_size, heads, decoder_ctx_len, head_dim] and
 *            past_key_cross.i / past_value_cross.i [batch_size, heads, max_source_positions, head_dim]
 *            → logits float32 [batch_size, seq_len, vocab] and each state's `_RetainedState`.
 *
 * The self-attention cache is written at position_ids (one ScatterND per tensor) and read under
 * `slot ≤ position`, so a prompt (seq_len > 1) and one token (seq_len 1) are one graph. The
 * cross-attention cache is filled once: QEfficient keeps the encoder inside its decoder graph and
 * selects `torch.where(input_features.shape[2] == 1, old, new)` for the cross K/V; here the
 * encoder is its own graph, so the same choice is made on the encoder output's length — the first
 * call passes encoder_hidden_states (K/V projected into the cross cache), every later call a
 * `[batch_size, 1, d_model]` dummy (the cache is kept).
 */
import type { LinearSpec, NormKind } from '../blocks/arch';
import { norm } from '../blocks/norms';
import { activation, cast, linear, reshape, transpose, unsqueeze, weight, type Ctx } from '../blocks/ops';
import { GraphBuilder, type Dim, type ModelObj } from '../blocks/builder';
import type { ExportDtype } from '../../formats/dtype';
import { RETAINED } from '../../artifacts/graph-interface';
import type { WhisperArch } from './whisper-config';

/** nn.LayerNorm's default eps (every Whisper norm). */
const LAYER_NORM: NormKind = { kind: 'layer', eps: 1e-5, plusOne: false };

/** Graph options. */
export interface WhisperGraphOptions {
  dtype: ExportDtype;
  opset?: number;
  /** Self-attention cache length (a fixed number, or the symbolic `decoder_ctx_len`). */
  ctxLen?: number;
  batchSize?: number;
  name: string;
}

/** A built graph with its weight inputs (checkpoint keys) and its runtime interface. */
export interface BuiltWhisperGraph {
  model: ModelObj;
  weights: { name: string; shape: number[] }[];
  io: { inputs: string[]; outputs: string[] };
}

/** The decoder's per-layer states in QEfficient's order (`get_output_names`). */
export const WHISPER_STATES = ['past_key_self', 'past_value_self', 'past_key_cross', 'past_value_cross'] as const;

const lin = (name: string, out: number, inp: number, bias = true): LinearSpec => ({
  weight: `${name}.weight`,
  ...(bias ? { bias: `${name}.bias` } : {}),
  out,
  in: inp,
});
const ln = (name: string, size: number) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size });

function finish(g: GraphBuilder, c: Ctx, name: string, role: string, meta: Record<string, string>): BuiltWhisperGraph {
  const weights = g.inputs
    .filter((i) => c.declared.has(i.name))
    .map((i) => ({ name: i.name, shape: i.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : 0)) }));
  const model = g.build(name, { 'weight_spec.graph': role, 'weight_spec.model_type': 'whisper', ...meta });
  return {
    model,
    weights,
    io: { inputs: g.inputs.filter((i) => !c.declared.has(i.name)).map((i) => i.name), outputs: g.outputs.map((o) => o.name) },
  };
}

/** `[N, d]` → heads `[B, H, T, hd]` (`T` from `shape4 = [B, T, H, hd]`). */
function heads(c: Ctx, x: string, shape4: string): string {
  return transpose(c, c.g.op('Reshape', [x, shape4]), [0, 2, 1, 3]);
}

/** softmax(q·kᵀ [masked]) · v in float32 scores, merged back to `[N, d]`. */
function attend(c: Ctx, q: string, k: string, v: string, d: number, mask?: string): string {
  const g = c.g;
  const scores = cast(c, g.op('MatMul', [q, transpose(c, k, [0, 1, 3, 2])]), c.dtype, 'float32');
  const masked = mask ? g.op('Where', [mask, scores, g.scalar('float32', -3.4028234663852886e38, 'neg_max')]) : scores;
  const probs = cast(c, g.op('Softmax', [masked], { axis: -1 }), 'float32', c.dtype);
  return reshape(c, transpose(c, g.op('MatMul', [probs, v]), [0, 2, 1, 3]), [-1, d]);
}

/** pre-LN feed-forward: x + fc2(act(fc1(final_layer_norm(x)))). */
function feedForward(c: Ctx, a: WhisperArch, p: string, h: string, ffn: number): string {
  const x = norm(c, h, ln(`${p}.final_layer_norm`, a.dModel), LAYER_NORM);
  const up = activation(c, linear(c, x, lin(`${p}.fc1`, ffn, a.dModel)), a.act);
  return c.g.op('Add', [h, linear(c, up, lin(`${p}.fc2`, a.dModel, ffn))]);
}

/** The encoder graph. */
export function buildWhisperEncoder(a: WhisperArch, o: WhisperGraphOptions): BuiltWhisperGraph {
  const g = new GraphBuilder(o.opset);
  const c: Ctx = { g, dtype: o.dtype, declared: new Set() };
  const d = a.dModel;
  const P = 'model.encoder';
  const batch: Dim = o.batchSize ?? 'batch_size';
  const x = g.input('input_features', o.dtype, [batch, a.numMel, 'feature_len']);
  const conv = (name: string, inCh: number, stride: number, inp: string) =>
    activation(
      c,
      g.op('Conv', [inp, weight(c, `${P}.${name}.weight`, [d, inCh, 3]), weight(c, `${P}.${name}.bias`, [d])], {
        kernel_shape: [3],
        pads: [1, 1],
        strides: [stride],
      }),
      a.act,
    );
  const conv2 = conv('conv2', d, 2, conv('conv1', a.numMel, 1, x)); // [B, d, T]
  // + embed_positions.weight: every row (T must be max_source_positions, as HF asserts)
  const embedded = g.op('Add', [transpose(c, conv2, [0, 2, 1]), weight(c, `${P}.embed_positions.weight`, [a.maxSource, d])]);
  let h = reshape(c, embedded, [-1, d]);
  const hd = d / a.encoder.heads;
  const shape4 = g.ints([-1, a.maxSource, a.encoder.heads, hd], 'enc_heads');
  for (let i = 0; i < a.encoder.layers; i++) {
    const p = `${P}.layers.${i}`;
    h = g.within(`encoder.${i}`, () => {
      const xn = norm(c, h, ln(`${p}.self_attn_layer_norm`, d), LAYER_NORM);
      const q = g.op('Mul', [linear(c, xn, lin(`${p}.self_attn.q_proj`, d, d)), g.scalar(o.dtype, Math.pow(hd, -0.5), 'scaling')]);
      const k = linear(c, xn, lin(`${p}.self_attn.k_proj`, d, d, false));
      const v = linear(c, xn, lin(`${p}.self_attn.v_proj`, d, d));
      const ctx = attend(c, heads(c, q, shape4), heads(c, k, shape4), heads(c, v, shape4), d);
      const h1 = g.op('Add', [h, linear(c, ctx, lin(`${p}.self_attn.out_proj`, d, d))]);
      return feedForward(c, a, p, h1, a.encoder.ffn);
    });
  }
  const out = reshape(c, norm(c, h, ln(`${P}.layer_norm`, d), LAYER_NORM), [-1, a.maxSource, d]);
  g.output(out, 'encoder_hidden_states', o.dtype, [batch, a.maxSource, d]);
  return finish(g, c, o.name, 'encoder', {});
}

/** The decoder graph (self-attention cache + cross-attention cache filled once). */
export function buildWhisperDecoder(a: WhisperArch, o: WhisperGraphOptions): BuiltWhisperGraph {
  const g = new GraphBuilder(o.opset);
  const c: Ctx = { g, dtype: o.dtype, declared: new Set() };
  const d = a.dModel;
  const H = a.decoder.heads;
  const hd = d / H;
  const P = 'model.decoder';
  const batch: Dim = o.batchSize ?? 'batch_size';
  const ids = g.input('input_ids', 'int64', [batch, 'seq_len']);
  const positionIds = g.input('position_ids', 'int64', [batch, 'seq_len']);
  const enc = g.input('encoder_hidden_states', o.dtype, [batch, 'encoder_seq_len', d]);
  const past = Array.from({ length: a.decoder.layers }, (_, i) =>
    WHISPER_STATES.map((kind) =>
      g.input(`${kind}.${i}`, o.dtype, [batch, H, kind.endsWith('_self') ? (o.ctxLen ?? 'decoder_ctx_len') : a.maxSource, hd]),
    ),
  );
  const table = weight(c, `${P}.embed_tokens.weight`, [a.vocab, d]);
  const embedded = g.op('Add', [
    g.op('Gather', [table, ids], { axis: 0 }),
    g.op('Gather', [weight(c, `${P}.embed_positions.weight`, [a.maxTarget, d]), positionIds], { axis: 0 }),
  ]);
  let h = reshape(c, embedded, [-1, d]);

  const { scatterIdx, mask, shape4 } = g.within('kv', () => {
    const bs = g.op('Shape', [ids]); // [B, S]
    const shape4 = g.op('Concat', [bs, g.ints([H, hd])], { axis: 0 }); // [B, S, H, hd]
    const idxShape = g.op(
      'Concat',
      [g.op('Slice', [bs, g.ints([0]), g.ints([1])]), g.ints([H]), g.op('Slice', [bs, g.ints([1]), g.ints([2])]), g.ints([1])],
      {
        axis: 0,
      },
    ); // [B, H, S, 1]
    const rows = g.op('Range', [g.int(0), g.op('Gather', [bs, g.int(0)], { axis: 0 }), g.int(1)]);
    const bIdx = g.op('Expand', [reshape(c, rows, [-1, 1, 1, 1]), idxShape]);
    const hIdx = g.op('Expand', [
      g.constant(
        'int64',
        [1, H, 1, 1],
        Array.from({ length: H }, (_, k) => k),
        'heads',
      ),
      idxShape,
    ]);
    const pIdx = g.op('Expand', [unsqueeze(c, positionIds, [1, 3]), idxShape]);
    const ctxLen = g.op('Gather', [g.op('Shape', [past[0]![0]!]), g.int(2)], { axis: 0 });
    const slots = unsqueeze(c, g.op('Range', [g.int(0), ctxLen, g.int(1)]), [0, 1]); // [1, 1, C]
    const allowed = g.op('LessOrEqual', [slots, unsqueeze(c, positionIds, [-1])]); // [B, S, C]
    return { scatterIdx: g.op('Concat', [bIdx, hIdx, pIdx], { axis: -1 }), mask: unsqueeze(c, allowed, [1]), shape4 };
  });
  // the cross cache is replaced only when the encoder output is real (length ≠ 1), as QEfficient's torch.where
  const { fresh, encFlat, encShape4 } = g.within('cross', () => {
    const len = g.op('Gather', [g.op('Shape', [enc]), g.int(1)], { axis: 0 });
    return {
      fresh: g.op('Not', [g.op('Equal', [len, g.int(1)])]),
      encFlat: reshape(c, enc, [-1, d]),
      encShape4: g.op('Concat', [g.op('Slice', [g.op('Shape', [enc]), g.ints([0]), g.ints([2])]), g.ints([H, hd])], { axis: 0 }),
    };
  });
  const scaling = g.scalar(o.dtype, Math.pow(hd, -0.5), 'scaling');
  const updated: string[] = [];
  for (let i = 0; i < a.decoder.layers; i++) {
    const p = `${P}.layers.${i}`;
    const [pk, pv, ck, cv] = past[i]! as [string, string, string, string];
    h = g.within(`decoder.${i}`, () => {
      const xn = norm(c, h, ln(`${p}.self_attn_layer_norm`, d), LAYER_NORM);
      const q = heads(c, g.op('Mul', [linear(c, xn, lin(`${p}.self_attn.q_proj`, d, d)), scaling]), shape4);
      const k = heads(c, linear(c, xn, lin(`${p}.self_attn.k_proj`, d, d, false)), shape4);
      const v = heads(c, linear(c, xn, lin(`${p}.self_attn.v_proj`, d, d)), shape4);
      const key = g.op('ScatterND', [pk, scatterIdx, k]);
      const value = g.op('ScatterND', [pv, scatterIdx, v]);
      const h1 = g.op('Add', [h, linear(c, attend(c, q, key, value, d, mask), lin(`${p}.self_attn.out_proj`, d, d))]);

      const xc = norm(c, h1, ln(`${p}.encoder_attn_layer_norm`, d), LAYER_NORM);
      const qc = heads(c, g.op('Mul', [linear(c, xc, lin(`${p}.encoder_attn.q_proj`, d, d)), scaling]), shape4);
      const kNew = heads(c, linear(c, encFlat, lin(`${p}.encoder_attn.k_proj`, d, d, false)), encShape4);
      const vNew = heads(c, linear(c, encFlat, lin(`${p}.encoder_attn.v_proj`, d, d)), encShape4);
      const crossKey = g.op('Where', [fresh, kNew, ck]);
      const crossValue = g.op('Where', [fresh, vNew, cv]);
      const h2 = g.op('Add', [h1, linear(c, attend(c, qc, crossKey, crossValue, d), lin(`${p}.encoder_attn.out_proj`, d, d))]);
      updated.push(key, value, crossKey, crossValue);
      return feedForward(c, a, p, h2, a.decoder.ffn);
    });
  }
  const last = norm(c, h, ln(`${P}.layer_norm`, d), LAYER_NORM);
  // proj_out (no bias): tied to embed_tokens unless the checkpoint has its own
  const head = a.tied ? table : weight(c, 'proj_out.weight', [a.vocab, d]);
  const logits = cast(c, g.op('Gemm', [last, head], { transB: 1 }), o.dtype, 'float32');
  const bsv = g.op('Concat', [g.op('Shape', [ids]), g.ints([a.vocab])], { axis: 0 });
  g.output(g.op('Reshape', [logits, bsv]), 'logits', 'float32', [batch, 'seq_len', a.vocab]);
  past.flat().forEach((name, k) => {
    const dims: Dim[] = [batch, H, name.includes('_self.') ? (o.ctxLen ?? 'decoder_ctx_len') : a.maxSource, hd];
    g.output(updated[k]!, name + RETAINED, o.dtype, dims);
  });
  return finish(g, c, o.name, 'decoder', { 'weight_spec.whisper_tied_head': String(a.tied) });
}
