/**
 * `run --dump-embeddings`: one forward of an embedding graph (export/embedding/, or a legacy
 * BERT-style graph converted by `export --onnx`: `input_ids`, `attention_mask`, optionally
 * `token_type_ids` → `last_hidden_state`, optionally `sentence_embedding`) over one unpadded
 * input. Returns the rows of `last_hidden_state` (one per id) and the sentence embedding.
 */
import { PipelineError, UsageError } from '../errors';
import { parseWireModel, type WireValueInfo } from '../formats/onnx/wire-model';
import { TensorDataType } from '../formats/onnx/types';
import { loadOrt, type OrtModule, type OrtTensor } from '../ort/loader';
import { ortSessionOptions } from '../ort/session-options';
import { readRegularFileSync } from '../paths';
import { gatheredRows } from './vocab';
import { logitRows } from './runner';
import { EMBEDDING_OUTPUTS, embeddingMaxSeqLen, isEmbeddingGraph } from '../artifacts/graph-interface';

/** One input to embed: ids, and optionally its mask and token types (each one per id). */
export interface EmbeddingInput {
  ids: number[];
  attentionMask?: number[];
  tokenTypeIds?: number[];
}

/** What `--dump-embeddings` writes. */
export interface Embeddings {
  last_hidden_state: number[][];
  sentence_embedding?: number[];
}

/** Options: ORT's location and prepacking. */
export interface EmbeddingRunOptions {
  ortPath?: string;
  prepack?: boolean;
}

const fixed = (d: number | string | undefined): number | undefined => (typeof d === 'number' && d > 0 ? d : undefined);

function intTensor(ort: OrtModule, info: WireValueInfo, values: number[], dims: number[]): OrtTensor {
  if (info.elemType === TensorDataType.INT32) return new ort.Tensor('int32', Int32Array.from(values), dims);
  return new ort.Tensor('int64', BigInt64Array.from(values.map((v) => BigInt(v))), dims);
}

/** Checks the input against the graph: lengths, a 0/1 mask, ids and token types inside their tables. */
function checkInput(
  x: EmbeddingInput,
  model: string,
  inputs: Map<string, WireValueInfo>,
  rows: (name: string) => number | undefined,
): void {
  const n = x.ids.length;
  for (const [flag, v] of [
    ['--attention-mask', x.attentionMask],
    ['--token-type-ids', x.tokenTypeIds],
  ] as const) {
    if (v && v.length !== n) throw new UsageError(`run: ${flag} has ${v.length} values for ${n} input ids`);
  }
  if (x.attentionMask?.some((m) => m !== 0 && m !== 1)) throw new UsageError('run: --attention-mask takes 0 or 1 per id');
  if (x.attentionMask && !x.attentionMask.includes(1)) throw new UsageError('run: --attention-mask masks every id');
  // a legacy graph exported without token types (an XLM-RoBERTa tokenizer gives none) adds row 0: zeros are what it computes
  if (x.tokenTypeIds?.some((t) => t !== 0) && !inputs.has('token_type_ids'))
    throw new UsageError(`run: ${model} takes no token_type_ids (it adds token type 0 to every token)`);
  for (const [name, v, flag] of [
    ['input_ids', x.ids, '--input-ids'],
    ['token_type_ids', x.tokenTypeIds, '--token-type-ids'],
  ] as const) {
    const limit = v ? rows(name) : undefined;
    const bad = limit !== undefined ? v!.find((t) => t >= limit) : undefined;
    if (bad !== undefined) throw new UsageError(`run: ${flag}: ${bad} is out of range for ${model} (its table has ${limit} rows)`);
  }
}

/** Runs the embedding graph `model` (a bound .onnx) on one input. */
export async function embed(model: string, x: EmbeddingInput, opts: EmbeddingRunOptions = {}): Promise<Embeddings> {
  const wire = parseWireModel(readRegularFileSync(model), model);
  const byName = new Map(wire.inputs.map((i) => [i.name, i]));
  if (!isEmbeddingGraph(wire.outputs)) throw new PipelineError(`${model}: not an embedding graph (no ${EMBEDDING_OUTPUTS.hidden} output)`);
  const ids = byName.get('input_ids');
  if (!ids) throw new PipelineError(`${model}: the graph has no input_ids input`);
  const known = new Set(['input_ids', 'attention_mask', 'token_type_ids']);
  const unknown = wire.inputs.filter((i) => !known.has(i.name));
  if (unknown.length)
    throw new PipelineError(
      `${model}: unbound graph input(s) ${unknown.map((u) => u.name).join(', ')} (not a weight in the spec, not a known model input)`,
    );
  checkInput(x, model, byName, (name) => gatheredRows(wire, name, model));
  const maxLen = embeddingMaxSeqLen(wire.metadata);
  if (maxLen !== undefined && x.ids.length > maxLen)
    throw new UsageError(`run: ${x.ids.length} input ids exceed the ${maxLen} positions of ${model}'s position table`);
  const ort = loadOrt(opts.ortPath);
  let session;
  try {
    session = await ort.InferenceSession.create(model, ortSessionOptions(opts.prepack));
  } catch (e) {
    throw new PipelineError(`${model}: ONNX Runtime cannot load it: ${(e as Error).message.split('\n')[0]}`);
  }
  try {
    // a graph exported with a fixed batch gets the input repeated in every row; row 0 is read
    const batch = fixed(ids.dims[0]) ?? 1;
    const n = x.ids.length;
    const rowsOf = (v: number[]) => Array.from({ length: batch }, () => v).flat();
    const feeds: Record<string, OrtTensor> = { input_ids: intTensor(ort, ids, rowsOf(x.ids), [batch, n]) };
    const mask = byName.get('attention_mask');
    if (mask) feeds.attention_mask = intTensor(ort, mask, rowsOf(x.attentionMask ?? x.ids.map(() => 1)), [batch, n]);
    const types = byName.get('token_type_ids');
    if (types) feeds.token_type_ids = intTensor(ort, types, rowsOf(x.tokenTypeIds ?? x.ids.map(() => 0)), [batch, n]);
    let out: Record<string, OrtTensor>;
    try {
      out = await session.run(feeds);
    } catch (e) {
      throw new PipelineError(`${model}: inference failed: ${(e as Error).message.split('\n')[0]}`);
    }
    const hidden = logitRows(out[EMBEDDING_OUTPUTS.hidden]!).map((r) => Array.from(r));
    const pooled = out[EMBEDDING_OUTPUTS.pooled];
    return {
      last_hidden_state: hidden,
      ...(pooled ? { sentence_embedding: Array.from(logitRows(pooled)[0]!) } : {}),
    };
  } finally {
    await session.release?.();
  }
}
