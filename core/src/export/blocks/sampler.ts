/**
 * QEfficient's on-device sampler, appended after the logits (`export --sampler`). Ported from
 * quic/efficient-transformers `QEfficient/transformers/sampler/sampler.py` (`sampler_forward`,
 * `prefill_path`, `decode_path`; commit 86aaad21a0ee906f991c9c67fc6912881eaea9be) with the
 * inputs `QEFFAutoModelForCausalLM.get_sampling_inputs_and_outputs` declares
 * (`QEfficient/utils/sampler_utils.py`):
 *
 *   last_accepted_output_tokens int64 [batch, seq]; past_repetition_penalty_buffer,
 *   past_presence_penalty_buffer bool [cache batch, vocab] (retained states); repetition_penalties,
 *   presence_penalties, temperatures, top_ps, min_ps float32 [batch, 1]; top_ks int32 [batch, 1];
 *   random_numbers float32 [batch, max_top_k_ids].
 *   outputs: [probs float32 [batch, 1, vocab] with return_pdfs], next_tokens int64 [batch, 1, 1],
 *   past_{repetition,presence}_penalty_buffer_RetainedState.
 *
 * Steps, per row: update the penalty buffers (prefill — more than one token in the call — resets
 * the repetition buffer when the chunk starts at position 0 and marks the prompt, and clears the
 * presence buffer; decode marks `last_accepted_output_tokens` in both; position −1 = padding is
 * skipped); repetition penalty `logits *= p^(−sign(logits))` on marked tokens; presence penalty
 * `logits −= p` on marked tokens; greedy = argmax here; temperature; top-k over the
 * `max_top_k_ids` largest (ascending order); top-p on the cumulative softmax (the largest token is
 * always kept); min-p relative to the largest probability; Gumbel-max sampling with the given
 * uniform numbers; `next_tokens = temperature == 0 ? greedy : sampled`. Masked values are
 * float16's lowest (−65504), as QEfficient writes them.
 *
 * QEfficient scatters with its `CtxScatterFuncCB3D` custom op, which drops out-of-range indices;
 * here a padded token adds 0 through `ScatterElements(reduction='add')`, which runs everywhere.
 */
import type { Dim } from './builder';
import { UsageError } from '../../errors';
import { samplerStates, type SamplerStateName, type SamplerStateTensor } from '../../artifacts/graph-interface';
import { cast, reshape, unsqueeze, type Ctx } from './ops';

/** `export --sampler` options (QEfficient's `qaic_config` keys `max_top_k_ids`, `return_pdfs`). */
export interface SamplerOptions {
  maxTopK: number;
  returnPdfs: boolean;
}

/** QEfficient's `Constants.MAX_TOP_K_IDS` / `ONNX_EXPORT_EXAMPLE_MAX_TOP_K_IDS`, capped at the vocabulary. */
export const DEFAULT_MAX_TOP_K = 512;

/** `--sampler` as asked (`--max-top-k` optional) resolved against the vocabulary; a K outside [1, vocab] is a usage error. */
export function resolveSampler(asked: { maxTopK?: number; returnPdfs?: boolean }, vocab: number): SamplerOptions {
  const k = asked.maxTopK ?? Math.min(DEFAULT_MAX_TOP_K, vocab);
  if (!(Number.isInteger(k) && k >= 1 && k <= vocab))
    throw new UsageError(`--max-top-k must be between 1 and the vocabulary size ${vocab} (got ${k})`);
  return { maxTopK: k, returnPdfs: !!asked.returnPdfs };
}

const FP16_MIN = -65504;

/** What the decoder hands the sampler. */
export interface SamplerWiring {
  /** float32 `[B, 1, V]` logits of the last valid position. */
  logits: string;
  inputIds: string;
  positionIds: string;
  batchIndex?: string;
  vocab: number;
  batch: Dim;
  seq: Dim;
  cacheBatch: Dim;
}

/** The sampler's result values; the decoder declares them as outputs in QEfficient's order. */
export interface SamplerValues {
  probs?: string;
  nextTokens: string;
  /** The updated penalty buffers, by state name (graph-interface.ts `samplerStates`). */
  states: Record<SamplerStateName, string>;
}

/** Appends the sampler after the logits and declares its inputs. */
export function appendSampler(c: Ctx, w: SamplerWiring, o: SamplerOptions): SamplerValues {
  const g = c.g;
  const { vocab: V } = w;
  const K = o.maxTopK;
  const lastAccepted = g.input('last_accepted_output_tokens', 'int64', [w.batch, w.seq]);
  // the penalty buffers as the graph interface describes them (in QEfficient's input order, between the penalties)
  const [rep, pres] = samplerStates(w.cacheBatch, V) as [SamplerStateTensor, SamplerStateTensor];
  const pastRep = g.input(rep.name, rep.dtype, rep.dims);
  const repPen = g.input('repetition_penalties', 'float32', [w.batch, 1]);
  const pastPres = g.input(pres.name, pres.dtype, pres.dims);
  const presPen = g.input('presence_penalties', 'float32', [w.batch, 1]);
  const temps = g.input('temperatures', 'float32', [w.batch, 1]);
  const topKs = g.input('top_ks', 'int32', [w.batch, 1]);
  const topPs = g.input('top_ps', 'float32', [w.batch, 1]);
  const minPs = g.input('min_ps', 'float32', [w.batch, 1]);
  const randoms = g.input('random_numbers', 'float32', [w.batch, K]);

  return g.within('sampler', () => {
    const logits2 = reshape(c, w.logits, [-1, V]); // [B, V] (spec_length 1)
    const bs = g.op('Shape', [w.inputIds]);
    const rows = w.batchIndex
      ? reshape(c, w.batchIndex, [-1])
      : g.op('Range', [g.int(0), g.op('Gather', [bs, g.int(0)], { axis: 0 }), g.int(1)]);
    const rowIdx = unsqueeze(c, rows, [1]); // [B, 1] ScatterND indices

    /** buf with buf[rows[b], tokens[b, t]] = true wherever valid[b, t]. */
    const mark = (rowsOf: string, tokens: string, valid: string) => {
      const idx = g.op('Where', [valid, tokens, g.int(0)]);
      const add = g.op('ScatterElements', [cast(c, rowsOf, 'bool', 'int32'), idx, cast(c, valid, 'bool', 'int32')], {
        axis: 1,
        reduction: 'add',
      });
      return g.op('Greater', [add, g.constant('int32', [], [0], 'zero_i32')]);
    };
    const writeRows = (buf: string, sel: string) => g.op('ScatterND', [buf, rowIdx, sel]);
    const selected = (buf: string) => g.op('Gather', [buf, rows], { axis: 0 }); // [B, V]
    const notPad = g.op('Not', [g.op('Equal', [w.positionIds, g.int(-1)])]); // [B, S]

    // prefill_path: keep the repetition rows only when the chunk does not start at position 0
    const first = g.op('Slice', [w.positionIds, g.ints([0]), g.ints([1]), g.ints([1])]); // [B, 1]
    const keep = g.op('Not', [g.op('Equal', [first, g.int(0)])]);
    const repPrefill = writeRows(pastRep, mark(g.op('And', [selected(pastRep), keep]), w.inputIds, notPad));
    const presPrefill = g.op('And', [pastPres, g.constant('bool', [], [0], 'false')]); // QEfficient zeroes the whole buffer
    // decode_path: mark the accepted tokens in both buffers
    const accValid = notPad;
    const repDecode = writeRows(pastRep, mark(selected(pastRep), lastAccepted, accValid));
    const presDecode = writeRows(pastPres, mark(selected(pastPres), lastAccepted, accValid));
    const isPrefill = g.op('Greater', [g.op('Gather', [bs, g.int(1)], { axis: 0 }), g.int(1)]); // seq > spec_length
    // Where on bool tensors has no ONNX Runtime CPU kernel: (c ∧ a) ∨ (¬c ∧ b)
    const pick2 = (a: string, b: string) => g.op('Or', [g.op('And', [isPrefill, a]), g.op('And', [g.op('Not', [isPrefill]), b])]);
    const repBuf = pick2(repPrefill, repDecode);
    const presBuf = pick2(presPrefill, presDecode);

    // penalties
    let L = logits2;
    const one = g.scalar('float32', 1, 'one_f32');
    const repMask = g.op('Where', [selected(repBuf), repPen, one]); // [B, V]
    L = g.op('Mul', [L, g.op('Pow', [repMask, g.op('Neg', [g.op('Sign', [L])])])]);
    L = g.op('Sub', [L, g.op('Mul', [presPen, cast(c, selected(presBuf), 'bool', 'float32')])]);
    const greedy = g.op('ArgMax', [L], { axis: 1, keepdims: 1 }); // [B, 1]

    // temperature, top-k (ascending), top-p, min-p
    const zero = g.scalar('float32', 0, 'zero_f32');
    const hot = g.op('Not', [g.op('Equal', [temps, zero])]);
    L = g.op('Where', [hot, g.op('Div', [L, temps]), L]);
    const [topVals, topIdx] = g.opN('TopK', [L, g.ints([K], 'k')], { axis: 1, largest: 1, sorted: 1 }, 2) as [string, string];
    const reverse = g.ints(
      Array.from({ length: K }, (_, i) => K - 1 - i),
      'reverse',
    );
    let vals = g.op('Gather', [topVals, reverse], { axis: 1 }); // ascending
    const idxAsc = g.op('Gather', [topIdx, reverse], { axis: 1 });
    const lowest = g.scalar('float32', FP16_MIN, 'fp16_min');
    const ks = g.op('Min', [cast(c, topKs, 'int32', 'int64'), g.int(K)]);
    const arangeK = g.ints(
      Array.from({ length: K }, (_, i) => i),
      'arange_k',
    );
    vals = g.op('Where', [g.op('Less', [arangeK, g.op('Sub', [g.int(K), ks])]), lowest, vals]);
    const topProbs = g.op('Softmax', [vals], { axis: 1 });
    const cum = g.op('CumSum', [topProbs, g.int(1)]);
    const notLast = g.constant(
      'bool',
      [1, K],
      Array.from({ length: K }, (_, i) => (i < K - 1 ? 1 : 0)),
      'not_last',
    );
    const topPMask = g.op('And', [g.op('LessOrEqual', [cum, g.op('Sub', [one, topPs])]), notLast]);
    vals = g.op('Where', [topPMask, lowest, vals]);
    const maxProb = g.op('Slice', [topProbs, g.ints([K - 1]), g.ints([K]), g.ints([1])]); // [B, 1]
    vals = g.op('Where', [g.op('Less', [topProbs, g.op('Mul', [minPs, maxProb])]), lowest, vals]);

    let probs: string | undefined;
    if (o.returnPdfs) {
      const filled = g.op('Expand', [lowest, g.op('Shape', [L])]);
      probs = g.op('Reshape', [
        g.op('Softmax', [g.op('ScatterElements', [filled, idxAsc, vals], { axis: 1 })], { axis: 1 }),
        g.ints([-1, 1, V]),
      ]);
    }
    // Gumbel-max: argmax(values − log(−log(u)))
    const gumbel = g.op('Neg', [g.op('Log', [g.op('Neg', [g.op('Log', [randoms])])])]);
    const pick = g.op('ArgMax', [g.op('Add', [vals, gumbel])], { axis: 1, keepdims: 1 });
    const sampled = g.op('GatherElements', [idxAsc, pick], { axis: 1 });
    const next = reshape(c, g.op('Where', [hot, sampled, greedy]), [-1, 1, 1]);

    return {
      ...(probs ? { probs } : {}),
      nextTokens: next,
      states: { [rep.name]: repBuf, [pres.name]: presBuf } as Record<SamplerStateName, string>,
    };
  });
}
