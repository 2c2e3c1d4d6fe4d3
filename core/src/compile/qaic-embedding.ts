/**
 * The qaic plan of an embedding graph (export/embedding/: BERT, XLM-RoBERTa), by
 * `QEFFAutoModel.compile` (quic/efficient-transformers `QEfficient/transformers/models/modeling_auto.py`,
 * commit ebf55e81):
 *
 *   _seq_lens = seq_len if isinstance(seq_len, list) else [seq_len]          (default seq_len=32)
 *   specializations = [{"_graph_name": "Embedding" if len(_seq_lens) == 1 else f"Embedding_{i}",
 *                       "batch_size": batch_size, "seq_len": sl} for i, sl in enumerate(_seq_lens)]
 *   self._compile(…, specializations=…, convert_to_fp16=(CUSTOM_IO_DTYPE_MAP[target_dtype] == "float16"),
 *                 mxfp6_matmul=…, mdp_ts_num_devices=…, aic_num_cores=…, **compiler_options)
 *
 * with a warning for 15 lengths or more. `CUSTOM_IO_DTYPE_MAP` maps float32 and float16 to
 * "float16" (the compiler has no fp32), so `-convert-to-fp16` is passed; no custom IO (no
 * retained state). `to_named_specializations` (`QEfficient/utils/_utils.py`) takes the name from
 * `_graph_name` and leaves that tag out of the symbols; `compile_hash_params` hashes the raw
 * dicts, tag included.
 */
import { UsageError } from '../errors';
import { pyJsonDumps } from '../spec/py-json';
import { DEFAULT_AIC_NUM_CORES, mergeExtraOptions, qaicPlan, type OptionValue, type QaicPlan } from '../artifacts/qaic-plan';
import { imageFlagsGiven } from './qaic-command';
import type { GraphShapeFacts, QaicOptions } from './qaic-options';

/** QEFFAutoModel.compile's default `seq_len`. */
export const DEFAULT_EMBEDDING_SEQ_LEN = 32;

/** QEfficient's embedding specializations: `[_graph_name, batch_size, seq_len]` per length. */
export function embeddingSpecializations(seqLens: readonly number[], batch: number): [string, number | string][][] {
  return seqLens.map((sl, i) => [
    ['_graph_name', seqLens.length === 1 ? 'Embedding' : `Embedding_${i}`],
    ['batch_size', batch],
    ['seq_len', sl],
  ]);
}

/** The plan of an embedding graph, as data (one call from the qaic backend). */
export function planEmbeddingGraph(
  exportDir: string,
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  g: GraphShapeFacts,
  compiler: string,
  maxSeqLen?: number,
): QaicPlan {
  const wrong = [
    ...imageFlagsGiven(opts),
    ...(opts.ctxLen !== undefined ? ['--ctx-len'] : []),
    ...(opts.fullBatchSize !== undefined ? ['--full-batch-size'] : []),
    ...(opts.mxint8KvCache ? ['--mxint8-kv-cache'] : []),
    ...(opts.prefillSeqLen !== undefined ? ['--prefill-seq-len (use --seq-len)'] : []),
  ];
  if (wrong.length)
    throw new UsageError(`compile: ${wrong.join(', ')} do not apply to ${exportDir}, an embedding graph (no KV cache, no image)`);
  if (opts.batchSize !== undefined && g.batch !== undefined && opts.batchSize !== g.batch)
    throw new UsageError(
      `compile: --batch-size ${opts.batchSize} does not match the graph's fixed batch ${g.batch} (export again with --batch-size ${opts.batchSize})`,
    );
  const seqLens = opts.seqLens ?? [DEFAULT_EMBEDDING_SEQ_LEN];
  if (seqLens.length === 0) throw new UsageError('compile: --seq-len needs at least one length');
  const over = maxSeqLen !== undefined ? seqLens.find((s) => s > maxSeqLen) : undefined;
  if (over !== undefined)
    throw new UsageError(`compile: --seq-len ${over} exceeds the ${maxSeqLen} positions of ${exportDir}'s position table`);
  const specs = embeddingSpecializations(seqLens, opts.batchSize ?? g.batch ?? 1);
  const options: [string, OptionValue][] = [
    ['convert_to_fp16', true],
    ['mxfp6_matmul', opts.mxfp6Matmul ?? false],
    ['aic_num_cores', opts.numCores ?? DEFAULT_AIC_NUM_CORES],
  ];
  const { hw, warnings } = mergeExtraOptions(options, opts);
  if (seqLens.length >= 15)
    warnings.unshift('compile: Recommended: `seq_len` should contain fewer than 15 items (QEfficient warns the same)');
  const named = specs.map((s) => ({
    name: String(s[0]![1]),
    symbols: Object.fromEntries(s.slice(1).map(([k, v]) => [k, String(v)])),
  }));
  const specializationsText = pyJsonDumps({ specializations: named }, { indent: 4, separators: [',', ':'], sortKeys: true });
  return qaicPlan({ compiler, hw, onnxPath, options, compileDir, specs, specializationsText, customIo: undefined, warnings });
}
