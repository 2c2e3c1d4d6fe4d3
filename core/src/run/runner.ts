/**
 * Runs a bound model with ONNX Runtime. The graph's inputs decide how:
 *
 * - full-sequence graphs (`input_ids`, optionally `attention_mask`/`position_ids`, no cache):
 *   one forward over all ids; `logits` `[batch, seq, vocab]` gives a row per position (a graph
 *   that returns only the last position is run once per prefix).
 * - QEfficient KV graphs (`input_ids`, `position_ids`, the state inputs of graph-interface.ts —
 *   `past_key.{i}`/`past_value.{i}` `[batch, n_kv, ctx_len, head_dim]`, MLA's compressed cache,
 *   recurrent states — optional `batch_index`): logits for the last valid position, each state's
 *   `_RetainedState` output fed back as the next step's state (zeros at the start). A fixed sequence
 *   dim is filled with padding at position -1, as QEfficient's generation does.
 *
 * QEfficient's serving features (serving.ts): a `comp_ctx_lengths` input gets the smallest
 * covering CCL bucket per call; a graph ending in the on-device sampler (`next_tokens`) is fed
 * the sampling parameters and its penalty buffers, and gives tokens instead of logits. On a
 * plain graph, sampling (temperature, top-k/p, min-p, penalties) runs on the host (sampling.ts)
 * with the same semantics.
 */
import { PipelineError } from '../errors';
import { SERVING_METADATA } from '../artifacts/graph-metadata';
import { ctxState, isEmbeddingGraph, RETAINED, stateDims, statesOfGraph } from '../artifacts/graph-interface';
import { toFloat32 } from '../formats/float-convert';
import type { WireValueInfo } from '../formats/onnx/wire-model';
import { loadOrt, type OrtModule, type OrtSession, type OrtTensor } from '../ort/loader';
import { ortSessionOptions } from '../ort/session-options';
import { cclTensor, pickBucket, samplerFeeds, samplerState, servingFeatures, SAMPLER_INPUT_NAMES, SAMPLER_STATE } from './serving';
import { GREEDY, PenaltyBuffers } from './sampling';
import { TensorDataType } from '../formats/onnx/types';
import { LORA_IDS } from '../artifacts/graph-interface';
import { loraIdsOf } from './lora-ids';
import { batchMethods, checkRows } from './batch-rows';
import { NUM_LOGITS_TO_KEEP } from '../artifacts/graph-interface';
import { tlmGenerate, tlmLogits, type TlmCall } from './speculative';
import { checkTokenIds, hostToken, makeRunner, type GenState, type Runner } from './runner-generate';

// run/vlm/vlm-runner.ts takes the token callback's type from here

/** Options of the runner. */
export interface RunnerOptions {
  /** Keep ORT's weight prepacking (faster, but copies MatMul weights into RAM). */
  prepack?: boolean;
  /** onnxruntime-node location (else WEIGHT_SPEC_ORT_PATH, else normal resolution). */
  ortPath?: string;
  /** KV graphs with a symbolic ctx_len: cache length to allocate (default: what the call needs). */
  ctxLen?: number;
  /** Ids must be below this (the embedding's rows, see vocab.ts); default: the logits' last dimension. */
  vocab?: number;
  /** KV graphs: feed the prompt in calls of this many tokens, the last padded at position −1 (QEfficient's prefill_seq_len). */
  prefillSeqLen?: number;
  /** LoRA graphs (`lora_ids` input): the adapter every row uses (default 0, the base model); lora-ids.ts. */
  loraId?: number;
}

const ELEM_NAMES: Record<number, string> = { 1: 'float32', 6: 'int32', 7: 'int64', 10: 'float16', 11: 'float64', 9: 'bool' };

function intTensor(ort: OrtModule, elemType: number, values: number[], dims: number[]): OrtTensor {
  if (elemType === TensorDataType.INT32) return new ort.Tensor('int32', Int32Array.from(values), dims);
  return new ort.Tensor('int64', BigInt64Array.from(values.map((v) => BigInt(v))), dims);
}

function zeros(ort: OrtModule, info: WireValueInfo, dims: number[]): OrtTensor {
  const n = dims.reduce((a, b) => a * b, 1);
  if (info.elemType === TensorDataType.FLOAT) return new ort.Tensor('float32', new Float32Array(n), dims);
  if (info.elemType === TensorDataType.FLOAT16) return new ort.Tensor('float16', new Uint16Array(n), dims);
  throw new PipelineError(
    `cache input "${info.name}" has element type ${ELEM_NAMES[info.elemType] ?? info.elemType}; expected float32 or float16`,
  );
}

/** Float rows of a logits tensor `[batch, seq, vocab]` (or `[batch, vocab]`) for batch row `b` (default 0). */
export function logitRows(t: OrtTensor, b = 0): Float32Array[] {
  let data: Float32Array;
  if (t.type === 'float32') data = t.data as Float32Array;
  else if (t.type === 'float16') {
    const u = t.data as Uint16Array;
    data = toFloat32(new Uint8Array(u.buffer, u.byteOffset, u.byteLength), 'F16');
  } else if (t.type === 'float64') data = Float32Array.from(t.data as Float64Array);
  else throw new PipelineError(`logits have type ${t.type}; expected a float type`);
  const d = t.dims;
  const vocab = d[d.length - 1]!;
  const seq = d.length >= 3 ? d[d.length - 2]! : 1;
  const rows: Float32Array[] = [];
  const at = b * seq * vocab;
  for (let s = 0; s < seq; s++) rows.push(data.subarray(at + s * vocab, at + (s + 1) * vocab));
  return rows;
}

/** Index of the largest value (first on ties, like torch.argmax). */
export function argmax(row: Float32Array): number {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i]! > row[best]!) best = i;
  return best;
}

const fixed = (d: number | string | undefined): number | undefined => (typeof d === 'number' && d > 0 ? d : undefined);

/** The `num_logits_to_keep` feed: only its first dim counts (QEfficient feeds `np.zeros((n, 1))` / an arange). */
function keepTensor(ort: OrtModule, n: number): OrtTensor {
  return new ort.Tensor('int64', new BigInt64Array(n), [n, 1]);
}

/** Opens a session on `model` and returns the runner for its kind of graph. */
export async function createRunner(
  model: string,
  inputs: WireValueInfo[],
  outputs: WireValueInfo[],
  opts: RunnerOptions = {},
  metadata: { key: string; value: string }[] = [],
): Promise<Runner> {
  const ort = loadOrt(opts.ortPath);
  let session: OrtSession;
  try {
    session = await ort.InferenceSession.create(model, ortSessionOptions(opts.prepack));
  } catch (e) {
    throw new PipelineError(`${model}: ONNX Runtime cannot load it: ${(e as Error).message.split('\n')[0]}`);
  }
  const byName = new Map(inputs.map((i) => [i.name, i]));
  const ids = byName.get('input_ids');
  if (!ids) throw new PipelineError(`${model}: the graph has no input_ids input (inputs: ${inputs.map((i) => i.name).join(', ')})`);
  const feat = servingFeatures(model, inputs, outputs, metadata);
  // QEfficient's prefill-only GPT-OSS graph attends one call's tokens only: chunked feeding would be wrong
  const meta = (k: string) => metadata.find((e) => e.key === k)?.value;
  if (meta(SERVING_METADATA.disaggPrefill) !== undefined && meta('weight_spec.model_type') === 'gpt_oss')
    throw new PipelineError(
      `${model}: a prefill-only gpt_oss graph (export --phase prefill) attends one call's tokens and hands its caches to a decode graph; run serves the plain export`,
    );
  const logitsOut = outputs.find((o) => o.name === 'logits');
  // an embedding graph (run/embedding.ts) has no logits to generate from
  if (!logitsOut && isEmbeddingGraph(outputs))
    throw new PipelineError(`${model}: an embedding graph (last_hidden_state, no logits); run it with --dump-embeddings <out.json>`);
  const logitsName = logitsOut?.name ?? session.outputNames[0]!;
  const vocab = opts.vocab ?? fixed(logitsOut?.dims[logitsOut.dims.length - 1]) ?? feat.sampler?.vocab;
  // the graph's state tensors (graph-interface.ts): KV caches, MLA's compressed cache, recurrent states
  const states = statesOfGraph(inputs, metadata);
  const served = [
    ...(feat.ccl ? ['comp_ctx_lengths'] : []),
    ...(feat.speculative ? [NUM_LOGITS_TO_KEEP] : []),
    ...(feat.sampler ? SAMPLER_INPUT_NAMES : []),
  ];
  const known = new Set(['input_ids', 'position_ids', 'attention_mask', 'batch_index', ...states.map((st) => st.name), ...served]);
  known.add(LORA_IDS);
  const unknown = inputs.filter((i) => !known.has(i.name));
  if (unknown.length) {
    throw new PipelineError(
      `${model}: unbound graph input(s) ${unknown.map((u) => u.name).join(', ')} (not a weight in the spec, not a known model input)`,
    );
  }
  const batch = fixed(ids.dims[0]) ?? 1;
  const seqFixed = fixed(ids.dims[1]);
  const loraIn = byName.get(LORA_IDS);
  const loraOf = loraIdsOf(model, !!loraIn, metadata, opts.loraId);
  loraOf(batch); // an id the graph cannot take is refused before any call
  const run = async (feeds: Record<string, OrtTensor>) => {
    try {
      return await session.run(feeds);
    } catch (e) {
      throw new PipelineError(`${model}: inference failed: ${(e as Error).message.split('\n')[0]}`);
    }
  };
  const rowsOf = (v: number[]) => Array.from({ length: batch }, () => v).flat();
  const noLogits = () =>
    new PipelineError(
      `${model}: the graph ends in the on-device sampler (next_tokens); it has no logits to dump (export without --sampler for --dump-logits)`,
    );

  if (states.length === 0) {
    if (feat.sampler || feat.ccl || feat.speculative)
      throw new PipelineError(
        `${model}: comp_ctx_lengths / num_logits_to_keep / the on-device sampler need a KV-cache graph (past_key.{i} inputs)`,
      );
    const forward = async (tokens: number[]): Promise<Float32Array[]> => {
      const dims = [batch, tokens.length];
      const feeds: Record<string, OrtTensor> = { input_ids: intTensor(ort, ids.elemType, rowsOf(tokens), dims) };
      const pos = byName.get('position_ids');
      if (pos) feeds.position_ids = intTensor(ort, pos.elemType, rowsOf(tokens.map((_, k) => k)), dims);
      const mask = byName.get('attention_mask');
      if (mask) feeds.attention_mask = intTensor(ort, mask.elemType, rowsOf(tokens.map(() => 1)), dims);
      if (loraIn) feeds[LORA_IDS] = intTensor(ort, loraIn.elemType, loraOf(batch), [batch, 1]);
      return logitRows((await run(feeds))[logitsName]!);
    };
    const lastLogits = async (tokens: number[]) => {
      const rows = await forward(tokens);
      return rows[rows.length - 1]!;
    };
    return makeRunner(
      'full',
      model,
      vocab,
      feat,
      session,
      async (tokens) => {
        const rows = await forward(tokens);
        if (rows.length === tokens.length) return rows.map((r) => Array.from(r));
        const out: number[][] = [];
        for (let t = 1; t <= tokens.length; t++) out.push(Array.from(await lastLogits(tokens.slice(0, t))));
        return out;
      },
      async (tokens, n, onFirst, gen) => {
        // the host sampler sees the calls a KV graph would: the prompt (prefill), then one token each
        const seq = [...tokens];
        const out: number[] = [];
        for (let k = 0; k < n; k++) {
          const row = await lastLogits(seq);
          gen.host ??= new PenaltyBuffers(row.length);
          if (k === 0)
            gen.host.observe(
              tokens,
              tokens.map((_, i) => i),
            );
          else gen.host.observe([seq[seq.length - 1]!], [seq.length - 1]);
          const next = hostToken(gen, row, gen.p.temperature !== 0 ? gen.draw(row.length) : undefined);
          out.push(next);
          seq.push(next);
          if (k === 0) onFirst();
          if (gen.onToken?.(next)) break;
        }
        return out;
      },
    );
  }

  // KV-cache graph.
  const pos = byName.get('position_ids');
  if (!pos) throw new PipelineError(`${model}: the graph has past_key/past_value inputs but no position_ids`);
  const bIndex = byName.get('batch_index');
  // the ctx_len and cache batch come from the first state with a ctx_len axis; every other dim must be fixed
  const c0 = ctxState(states);
  const ctxAxis = c0?.ctxAxis;
  for (const st of states) {
    if (!stateDims(st, 1, 1)) {
      throw new PipelineError(
        `${model}: state input ${st.name} has shape [${st.dims.join(', ')}]; expected [batch, …] with every dim fixed but batch${st.ctxAxis !== undefined ? ` and ctx_len (axis ${st.ctxAxis})` : ''}`,
      );
    }
  }
  const cacheFixed = fixed(states[0]!.dims[0]);
  const ctxFixed = c0 && ctxAxis !== undefined ? fixed(c0.dims[ctxAxis]) : undefined;

  const newState = (need: number, rows = batch) => {
    const cacheBatch = cacheFixed ?? rows;
    if (cacheBatch < rows) throw new PipelineError(`${model}: ${rows} rows do not fit its cache batch of ${cacheBatch}`);
    const ctx = ctxFixed ?? opts.ctxLen ?? need;
    if (need > ctx) throw new PipelineError(`${model}: ${need} tokens do not fit the KV cache (ctx_len ${ctx})`);
    const state: Record<string, OrtTensor> = Object.create(null) as Record<string, OrtTensor>;
    for (const st of states) state[st.name] = zeros(ort, byName.get(st.name)!, stateDims(st, cacheBatch, ctx)!);
    if (feat.sampler) Object.assign(state, samplerState(ort, cacheBatch, feat.sampler.vocab));
    return { state, ctx, rows };
  };
  /**
   * Feeds `tokens` at positions start…; returns the last call's logits (plain graph) or next
   * token (sampler graph, or host sampling when `gen` is given).
   */
  /**
   * `rows` (one per batch row, of equal length; a single prompt is every row of a fixed batch)
   * at positions start…; `loraIds` the adapter per row. Returns each row's last logits (plain
   * graph) or row 0's next token (sampler graph, or host sampling when `gen` is given).
   */
  const step = async (
    kv: { state: Record<string, OrtTensor>; ctx: number; rows: number },
    rows: number[][],
    start: number,
    phase: 'prefill' | 'decode',
    gen?: GenState,
    loraIds?: number[],
  ) => {
    const { state } = kv;
    const nb = rows.length;
    const tokens = rows[0]!;
    const len = seqFixed ?? (phase === 'prefill' && opts.prefillSeqLen ? opts.prefillSeqLen : tokens.length);
    let last: Float32Array[] | undefined;
    let next: number | undefined;
    let u: Float32Array | undefined;
    for (let at = 0; at < tokens.length; at += len) {
      const chunk = tokens.slice(at, at + len);
      const padded = rows.map((r) => r.slice(at, at + len).concat(Array(len - chunk.length).fill(0)));
      const positions = padded[0]!.map((_, k) => (k < chunk.length ? start + at + k : -1));
      const inputIds = intTensor(ort, ids.elemType, padded.flat(), [nb, len]);
      const feeds: Record<string, OrtTensor> = {
        ...state,
        input_ids: inputIds,
        position_ids: intTensor(ort, pos.elemType, Array.from({ length: nb }, () => positions).flat(), [nb, len]),
      };
      // one prompt in every row of a fixed batch writes cache row 0, as before; distinct rows their own
      const rowIndex = kv.rows === nb && loraIds !== undefined ? (k: number) => k : () => 0;
      if (bIndex)
        feeds.batch_index = intTensor(
          ort,
          bIndex.elemType,
          Array.from({ length: nb }, (_, k) => rowIndex(k)),
          [nb, 1],
        );
      if (loraIn) feeds[LORA_IDS] = intTensor(ort, loraIn.elemType, loraIds ?? loraOf(nb), [nb, 1]);
      // a TLM's prefill keeps one logit row (QEfficient's prefill specialization: num_logits_to_keep 1)
      if (feat.speculative) feeds[NUM_LOGITS_TO_KEEP] = keepTensor(ort, 1);
      if (feat.ccl) {
        const bucket = pickBucket(phase === 'prefill' ? feat.ccl.prefill : feat.ccl.decode, start + at + chunk.length - 1, kv.ctx);
        feeds.comp_ctx_lengths = cclTensor(ort, bucket);
        if (gen && gen.buckets[gen.buckets.length - 1] !== bucket) gen.buckets.push(bucket);
      }
      const p = gen?.p ?? GREEDY;
      const hot = p.temperature !== 0 && gen !== undefined;
      if (feat.sampler) {
        // one draw of max_top_k_ids uniform numbers per call (unused, so not drawn, when greedy)
        const k = feat.sampler.maxTopK;
        Object.assign(feeds, samplerFeeds(ort, p, nb, k, inputIds, hot ? gen.draw(k) : new Float32Array(k).fill(0.5)));
      }
      const out = await run(feeds);
      for (const c of [...states.map((x) => x.name), ...(feat.sampler ? SAMPLER_STATE : [])]) {
        const r = out[c + RETAINED];
        if (!r) throw new PipelineError(`${model}: output ${c + RETAINED} is missing`);
        state[c] = r;
      }
      if (feat.sampler) {
        next = Number((out.next_tokens!.data as BigInt64Array)[0]);
        continue;
      }
      last = rows.map((_, b) => {
        const lr = logitRows(out[logitsName]!, b);
        // QEfficient graphs return the last valid position; a graph returning every position gives rows[chunk-1].
        return lr.length === len ? lr[chunk.length - 1]! : lr[lr.length - 1]!;
      });
      if (gen) {
        gen.host ??= new PenaltyBuffers(last[0]!.length);
        gen.host.observe(padded[0]!, positions);
        // the host's K is the vocabulary: one vocabulary-sized draw per call, as a sampler graph draws K
        u = hot ? gen.draw(last[0]!.length) : undefined;
      }
    }
    if (!feat.sampler && gen) next = hostToken(gen, last![0]!, u);
    return { logits: last?.[0], last, next };
  };
  const one = (tokens: number[]) => Array.from({ length: batch }, () => tokens);
  // a TLM: K + 1 tokens per call, K the largest proposal length recorded (speculative.ts)
  const spdK = feat.speculative ? Math.max(1, ...feat.speculative.ks) : undefined;
  const tlmCall =
    (kv: { state: Record<string, OrtTensor> }): TlmCall =>
    async (tokens, positions, keep) => {
      const feeds: Record<string, OrtTensor> = {
        ...kv.state,
        input_ids: intTensor(ort, ids.elemType, rowsOf(tokens), [batch, tokens.length]),
        position_ids: intTensor(ort, pos.elemType, rowsOf(positions), [batch, tokens.length]),
        [NUM_LOGITS_TO_KEEP]: keepTensor(ort, keep),
      };
      if (bIndex) feeds.batch_index = intTensor(ort, bIndex.elemType, Array(batch).fill(0), [batch, 1]);
      const out = await run(feeds);
      for (const st of states) kv.state[st.name] = out[st.name + RETAINED]!;
      return logitRows(out[logitsName]!);
    };
  if (spdK !== undefined && seqFixed !== undefined)
    throw new PipelineError(`${model}: a speculative-decoding graph needs a symbolic sequence dim (it takes 1 and K + 1 tokens per call)`);
  return makeRunner(
    'kv',
    model,
    vocab,
    feat,
    session,
    async (tokens) => {
      if (spdK !== undefined) return tlmLogits(tlmCall(newState(tokens.length)), tokens, spdK);
      if (feat.sampler) throw noLogits();
      const kv = newState(tokens.length);
      const out: number[][] = [];
      for (let t = 0; t < tokens.length; t++) out.push(Array.from((await step(kv, one([tokens[t]!]), t, 'prefill')).logits!));
      return out;
    },
    async (tokens, n, onFirst, gen) => {
      if (spdK !== undefined) {
        if (gen.p.temperature !== 0 || gen.p.repetitionPenalty !== 1 || gen.p.presencePenalty !== 0)
          throw new PipelineError(`${model}: a speculative-decoding target model is run greedily (its proposals are checked by argmax)`);
        const kv = newState(tokens.length + n);
        const first = argmax((await step(kv, one(tokens), 0, 'prefill')).logits!);
        onFirst();
        const r = await tlmGenerate(tlmCall(kv), tokens, first, n, spdK, kv.ctx - 1, gen.onToken);
        gen.speculative = r.stats;
        return r.tokens;
      }
      const kv = newState(tokens.length + n);
      const out: number[] = [];
      let next = (await step(kv, one(tokens), 0, 'prefill', gen)).next!;
      for (let k = 0; k < n; k++) {
        out.push(next);
        if (k === 0) onFirst();
        if (gen.onToken?.(next)) break;
        if (k + 1 < n) next = (await step(kv, one([next]), tokens.length + k, 'decode', gen)).next!;
      }
      return out;
    },
    batchMethods({
      newState,
      step: async (kv, rows, start, phase, lora) => (await step(kv, rows, start, phase, undefined, lora)).last!,
      check: (rows, loraIds) => {
        checkRows(rows, { model, sampler: !!feat.sampler, batch: fixed(ids.dims[0]), checkIds: (r) => checkTokenIds(r, vocab, model) });
        return loraOf(rows.length, loraIds);
      },
      argmax,
    }),
  );
}
