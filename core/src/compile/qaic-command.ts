/**
 * The causal-LM rules of the qaic-compile plan (quic/efficient-transformers, release/v1.22.8.0 and
 * commit 008adc73); the command line and its files are `artifacts/qaic-plan.ts`'s.
 *
 * `QEFFAutoModelForCausalLM.compile` (`QEfficient/transformers/models/modeling_auto.py`) calls
 * `_compile(…, retained_state=True, specializations=…, convert_to_fp16=True, mxfp6_matmul=…,
 * custom_io=…, mdp_ts_num_devices=…, aic_num_cores=…, **compiler_options)`, so the flag order is
 * retained_state, convert_to_fp16, mxfp6_matmul, aic_num_cores, then the caller's options. Its
 * specializations: prefill `{batch_size, seq_len: prefill_seq_len, ctx_len}` and, when
 * prefill_seq_len != 1 or with continuous batching, decode `{batch_size, seq_len: 1, ctx_len}`;
 * with continuous batching prefill has batch_size 1, `full_batch_size` and `full_batch_exec_size`
 * = full_batch_size, decode batch_size = full_batch_size and `full_batch_size`. Its custom IO:
 * each cache input next to its `_RetainedState` output, layer by layer (for i: for kv in
 * [key, value]: `past_{kv}.{i}`, `past_{kv}.{i}_RetainedState`; here: every state input of
 * graph-interface.ts in graph order) → "mxint8" if mxint8_kv_cache else "float16".
 */
import path from 'node:path';
import { UsageError } from '../errors';
import { RETAINED } from '../artifacts/graph-interface';
import { mdpPipelineConfig, mdpTemplateConfig } from '../artifacts/mdp-partition';
import {
  customIoIgnored,
  DEFAULT_AIC_NUM_CORES,
  mergeExtraOptions,
  qaicPlan,
  QAIC_COMPILER,
  specializationsJson,
  tagged,
  type MdpPlan,
  type OptionValue,
  type QaicPlan,
  type Specialization,
} from '../artifacts/qaic-plan';
import type { GraphShapeFacts, QaicOptions } from './qaic-options';
import { cclLists } from '../artifacts/qaic-ccl';

/** `compile`'s `prefill_only` for a graph: true for a `--phase prefill` export, false for `--phase decode`, else None. */
export function prefillOnlyOf(g: GraphShapeFacts): boolean | undefined {
  if (g.phase === 'prefill') return true;
  if (g.seqLen === 1 || g.phase === 'decode') return false;
  return undefined;
}

/**
 * QEfficient's causal-LM specializations, transcribed from `QEFFAutoModelForCausalLM.compile`,
 * `build_prefill_specialization` and `build_decode_specialization`
 * (`QEfficient/transformers/models/modeling_auto.py`, main ebf55e81):
 * - prefill entries when prefill_only is None or True, or prefill_seq_len is 1 — one per CCL
 *   bucket (the decode list when prefill_seq_len is 1, else the prefill list): batch
 *   `exec_batch_size` (batch_size; with CB full_batch_size at prefill_seq_len 1, else 1), seq_len
 *   prefill_seq_len, ctx_len, [comp_ctx_lengths], [num_logits_to_keep 1 for a TLM], then
 *   `full_batch_size` = kv_cache_batch_size (CB) or batch_size = kv_cache_batch_size, and with CB
 *   `full_batch_exec_size` = exec_batch_size; tagged "Decode" when prefill_seq_len is 1 and
 *   prefill_only is False, else "Prefill";
 * - decode entries when prefill_only is not True and prefill_seq_len != 1 — one per K of a TLM,
 *   else one per CCL decode bucket, else one: batch (full_batch_size with CB), seq_len K + 1 or 1,
 *   ctx_len, [comp_ctx_lengths], [num_logits_to_keep K + 1], the kv batch as above; none without
 *   CB when its seq_len equals prefill_seq_len; tagged "Decode".
 * prefill_only comes from the export's phase ({@link prefillOnlyOf}); a `--phase decode` graph
 * (input_ids [batch, 1]) is compiled with prefill_only False.
 */
export function causalLmSpecializations(opts: QaicOptions, g: GraphShapeFacts): Specialization[] {
  if (opts.ctxLen !== undefined && g.ctxLen !== undefined && opts.ctxLen !== g.ctxLen)
    throw new UsageError(
      `compile: --ctx-len ${opts.ctxLen} does not match the graph, whose cache holds ${g.ctxLen} positions (export again with --ctx-len ${opts.ctxLen})`,
    );
  const prefillOnly = prefillOnlyOf(g);
  const oss = ossPrefill(opts, g);
  const ctxLen = oss ? oss.ctxLen : (opts.ctxLen ?? g.ctxLen ?? 128);
  if (g.seqLen === 1 && opts.prefillSeqLen !== undefined && opts.prefillSeqLen !== 1)
    throw new UsageError(
      `compile: the graph was exported with --phase decode (input_ids [batch, 1]); --prefill-seq-len ${opts.prefillSeqLen} cannot be met`,
    );
  const prefill = opts.prefillSeqLen ?? (prefillOnly === true && g.seqLen !== undefined ? g.seqLen : 32);
  const ks = prefillOnly === true ? undefined : speculativeKs(g, prefill);
  if (g.disaggPrefill) disaggPrefillChecks(opts, g.disaggPrefill, prefill);
  const cb = g.continuousBatching;
  const fbs = cb ? (opts.fullBatchSize ?? g.cacheBatch ?? g.batch) : undefined;
  if (cb && fbs === undefined) throw new UsageError('compile: the graph takes batch_index (continuous batching): give --full-batch-size');
  const bs = opts.batchSize ?? (cb ? 1 : (g.batch ?? 1));
  const kvBatch = fbs ?? bs;
  const lists = g.ccl ? cclLists(g.ccl, ctxLen, prefill) : undefined;
  const buildPrefill = (ccl?: number): Specialization => {
    const exec = !cb ? bs : prefill === 1 ? fbs! : 1;
    const s: Specialization = [
      ['batch_size', exec],
      ['seq_len', prefill],
      ['ctx_len', ctxLen],
      ...(oss ? [['sliding_window', GPT_OSS_SPEC_SLIDING_WINDOW] as [string, number]] : []),
    ];
    if (ccl !== undefined) s.push(['comp_ctx_lengths', ccl]);
    if (g.speculative) s.push(['num_logits_to_keep', 1]);
    if (cb) s.push(['full_batch_size', kvBatch]);
    else s[0] = ['batch_size', kvBatch];
    if (fbs !== undefined) s.push(['full_batch_exec_size', exec]);
    return tagged(s, prefill === 1 && prefillOnly === false ? 'Decode' : 'Prefill');
  };
  const buildDecode = (ccl?: number, k?: number): Specialization | undefined => {
    const seq = ks ? k! + 1 : 1;
    if (seq === prefill && !cb) return undefined;
    const s: Specialization = [
      ['batch_size', cb ? fbs! : bs],
      ['seq_len', seq],
      ['ctx_len', ctxLen],
    ];
    if (ccl !== undefined) s.push(['comp_ctx_lengths', ccl]);
    if (ks) s.push(['num_logits_to_keep', k! + 1]);
    if (cb) s.push(['full_batch_size', kvBatch]);
    else s[0] = ['batch_size', kvBatch];
    return tagged(s, 'Decode');
  };
  const out: Specialization[] = [];
  if (prefillOnly === undefined || prefillOnly || prefill === 1) {
    if (lists) for (const c of prefill === 1 ? lists.decode : lists.prefill) out.push(buildPrefill(c));
    else out.push(buildPrefill());
  }
  if (prefillOnly !== true && prefill !== 1) {
    const ds = ks ? ks.map((k) => buildDecode(undefined, k)) : lists ? lists.decode.map((c) => buildDecode(c)) : [buildDecode()];
    for (const d of ds) if (d) out.push(d);
  }
  return out;
}

/** The `sliding_window` symbol `QEffGptOssForCausalLM.get_specializations` writes, whatever the config's window. */
export const GPT_OSS_SPEC_SLIDING_WINDOW = 128;

/**
 * gpt_oss's prefill-only specialization (`QEffGptOssForCausalLM.get_specializations`,
 * `QEfficient/transformers/models/gpt_oss/modeling_gpt_oss.py`, main ebf55e81): without chunking
 * ctx_len is overridden to prefill_seq_len ("we don't support ctx_len different than
 * prefill_seq_len for prefill_only model"), and the entry gains `sliding_window: 128`. A graph
 * exported with a fixed ctx_len other than the prefill length cannot be compiled so: refused.
 * Undefined for every other graph.
 */
function ossPrefill(opts: QaicOptions, g: GraphShapeFacts): { ctxLen: number } | undefined {
  if (g.modelType !== 'gpt_oss' || prefillOnlyOf(g) !== true || !g.disaggPrefill || g.disaggPrefill.enableChunking) return undefined;
  const prefill = opts.prefillSeqLen ?? g.seqLen ?? 32;
  if (g.ctxLen !== undefined && g.ctxLen !== prefill)
    throw new UsageError(
      `compile: a prefill-only gpt_oss graph's ctx_len is its prefill_seq_len (${prefill}), but this one was exported with --ctx-len ${g.ctxLen}: export without --ctx-len`,
    );
  return { ctxLen: prefill };
}

/** QEfficient's `constants.GPT_OSS_PREFILL_Q_BLOCK_SIZE`: a prefill-only graph's q block, without chunking. */
export const PREFILL_Q_BLOCK_SIZE = 256;

/**
 * What `QEFFAutoModelForCausalLM.export(prefill_only=True)` checks when compile exports the
 * prefill graph (`get_seq_len_and_handle_specialized_prefill_model`, main ebf55e81): without
 * chunking prefill_seq_len must be a multiple of GPT_OSS_PREFILL_Q_BLOCK_SIZE (256) and at least
 * that (NUM_Q_BLOCKS = prefill_seq_len / 256); the expert-blocked MoE
 * (`QEffPrefillChunked…MoE._forward_expert_blocked`) needs num_experts divisible by the cores
 * (`expert_blocking_num_nsp = num_cores`).
 */
function disaggPrefillChecks(opts: QaicOptions, d: { enableChunking: boolean; numExperts?: number }, prefill: number): void {
  if (!d.enableChunking && (prefill % PREFILL_Q_BLOCK_SIZE !== 0 || prefill < PREFILL_Q_BLOCK_SIZE))
    throw new UsageError(
      `compile: When prefill_only=True, 'prefill_seq_len' must be explicitly set and divisible by block_size=${PREFILL_Q_BLOCK_SIZE} (got ${prefill}; give --prefill-seq-len ${PREFILL_Q_BLOCK_SIZE}, or export with --enable-chunking)`,
    );
  const cores = opts.numCores ?? DEFAULT_AIC_NUM_CORES;
  if (d.numExperts !== undefined && d.numExperts % cores !== 0)
    throw new UsageError(
      `compile: num_experts (${d.numExperts}) must be divisible by expert_blocking_num_nsp (${cores}): give a --num-cores that divides ${d.numExperts}`,
    );
}

/**
 * The TLM's decode proposal lengths, checked as `QEFFAutoModelForCausalLM.compile` and
 * `check_and_get_num_speculative_tokens` check them (`QEfficient/transformers/models/modeling_auto.py`,
 * main ebf55e81): one Decode specialization per K (`sorted(set(num_speculative_tokens))`), each
 * with seq_len = num_logits_to_keep = K + 1; prefill_seq_len must be at least max K + 1; CCL with
 * a TLM is refused (NotImplementedError there). Undefined for a graph without num_logits_to_keep.
 */
function speculativeKs(g: GraphShapeFacts, prefill: number): number[] | undefined {
  if (!g.speculative) return undefined;
  if (g.speculative.length === 0)
    throw new UsageError(
      'compile: the graph takes num_logits_to_keep but records no num_speculative_tokens (export it with --num-speculative-tokens K)',
    );
  const ks = [...new Set(g.speculative)].sort((a, b) => a - b);
  const most = ks[ks.length - 1]!;
  if (prefill < most + 1)
    throw new UsageError(
      `compile: sequence length (${prefill}) must be at least \`num_speculative_tokens+1\` (${most + 1}) (give --prefill-seq-len ${most + 1} or more)`,
    );
  if (g.ccl)
    throw new UsageError(
      'compile: a speculative-decoding target model with comp_ctx_lengths is not supported (QEfficient raises NotImplementedError)',
    );
  return ks;
}

/** Specializations for a graph without a KV cache: batch and sequence only. */
export function plainSpecializations(opts: QaicOptions, g: GraphShapeFacts): Specialization[] {
  return [
    [
      ['batch_size', opts.batchSize ?? g.batch ?? 1],
      ['seq_len', opts.prefillSeqLen ?? 32],
    ],
  ];
}

/**
 * QEfficient's custom IO map for a causal LM: each state input beside its retained output, in
 * the graph's (layer) order.
 */
export function causalLmCustomIo(states: readonly string[], mxint8KvCache: boolean, kvDtype = 'float16'): [string, string][] {
  const dtype = mxint8KvCache ? 'mxint8' : kvDtype;
  return states.flatMap((name): [string, string][] => [
    [name, dtype],
    [name + RETAINED, dtype],
  ]);
}

/** The flags that size the image (refused for a text model: a flag is never accepted and ignored). */
export function imageFlagsGiven(opts: QaicOptions): string[] {
  return [
    ...(opts.imgHeight !== undefined ? ['--img-height'] : []),
    ...(opts.imgWidth !== undefined ? ['--img-width'] : []),
    ...(opts.imgSize !== undefined ? ['--img-size'] : []),
  ];
}

/**
 * The plan of a text export's graph, as data: {@link buildQaicPlan}, after refusing the flags
 * that size an image (`exportDir` names the export in that error). One call from the backend.
 */
export function planTextGraph(
  exportDir: string,
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  g: GraphShapeFacts,
  compiler: string = QAIC_COMPILER[0],
): QaicPlan {
  const img = imageFlagsGiven(opts);
  if (img.length)
    throw new UsageError(`compile: ${img.join('/')} size the image of a vision-language export; ${exportDir} is a text model`);
  return buildQaicPlan(onnxPath, compileDir, opts, g, compiler);
}

/**
 * Builds the command QEfficient's `_compile` would run for `onnxPath`, writing into
 * `compileDir` (QEfficient: `<dir>/qpc-<hash>`), with the binary at `compiler` (default
 * {@link QAIC_COMPILER}'s path).
 */
export function buildQaicPlan(
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  g: GraphShapeFacts,
  compiler: string = QAIC_COMPILER[0],
): QaicPlan {
  // a VLM graph needs the model's sizes from vlm.json: planQaic hands it to qaic-vlm.ts; here
  // its dims would stay unresolved, so a caller that comes this way is refused
  if (g.vlmRole)
    throw new UsageError(`compile: the ${g.vlmRole} graph of a vision-language model is planned by buildVlmQaicPlan (qaic-vlm.ts)`);
  if (g.whisperRole) throw new UsageError(`compile: the Whisper ${g.whisperRole} graph is planned by planWhisperGraph (qaic-whisper.ts)`);
  const numCores = opts.numCores ?? DEFAULT_AIC_NUM_CORES;
  const options: [string, OptionValue][] = [];
  if (g.states.length > 0) options.push(['retained_state', true]);
  options.push(['convert_to_fp16', true], ['mxfp6_matmul', opts.mxfp6Matmul ?? false], ['aic_num_cores', numCores]);
  const { hw, warnings } = mergeExtraOptions(options, opts);
  const bf16 = bf16Rules(g, hw, options, warnings);
  const specs = g.states.length > 0 ? causalLmSpecializations(opts, g) : plainSpecializations(opts, g);
  const customIo = g.states.length > 0 ? causalLmCustomIo(g.states, opts.mxint8KvCache ?? false, bf16 ? 'bfloat16' : 'float16') : undefined;
  // _compile: "Model and Past KV types are both bfloat16. Custom IO list file will be ignored during compile."
  const customIoPassed = !customIoIgnored(bf16, customIo);
  if (!customIoPassed)
    warnings.push('compile: model and past KV are both bfloat16: custom_io.yaml is written but not passed (QEfficient ignores it then)');
  const mdp = mdpPlan(opts, g, options, compileDir);
  return qaicPlan({
    compiler,
    hw,
    onnxPath,
    options,
    compileDir,
    specs,
    specializationsText: specializationsJson(specs),
    customIo,
    ...(customIoPassed ? {} : { customIoInCommand: false }),
    ...(mdp ? { mdp } : {}),
    mdpCounts: { devices: opts.numDevices ?? 1, partitions: opts.pipelinePartitions ?? 1 },
    ...(g.states.length > 0 ? { prefillOnly: prefillOnlyOf(g) } : {}),
    warnings,
    // what a user hands compile(): the int K, or the list when there are several
    ...(g.speculative?.length ? { numSpeculativeTokens: g.speculative.length === 1 ? g.speculative[0]! : g.speculative } : {}),
  });
}

/**
 * `_compile`'s partition config (`QEfficient/base/modeling_qeff.py`, main ebf55e81):
 * `mdp_num_partitions` > 1 → `generate_disagg_mdp_config` (ONNX strategy) writes
 * `<compile_dir>/mdp_disagg_{N}d_{P}p.json` in the un-hashed compile folder (here the export
 * folder, the parent of `qpc-<hash>`) and its flag follows `-m`; else `mdp_ts_num_devices` > 1
 * (and no `mdp_dump_partition_config` option) → `generate_mdp_partition_config(N, aic_num_cores)`
 * written as `<qpc-hash>/mdp_ts_{N}.json`, its flag after the options. Undefined for one device.
 */
function mdpPlan(opts: QaicOptions, g: GraphShapeFacts, options: [string, OptionValue][], compileDir: string): MdpPlan | undefined {
  const nd = opts.numDevices ?? 1;
  const np = opts.pipelinePartitions ?? 1;
  if (!(Number.isInteger(nd) && nd >= 1)) throw new UsageError(`compile: --num-devices must be a positive integer (got ${nd})`);
  if (!(Number.isInteger(np) && np >= 1)) throw new UsageError(`compile: --pipeline-partitions must be a positive integer (got ${np})`);
  if (np > nd)
    throw new UsageError(
      `compile: Num of partitions should be <= number of devices. Found ${np} partitions and ${nd} devices (give --num-devices ${np} or more)`,
    );
  const coresOpt = options.find(([k]) => k === 'aic_num_cores')?.[1];
  const numCores = typeof coresOpt === 'number' ? coresOpt : Number(coresOpt ?? DEFAULT_AIC_NUM_CORES);
  if (np > 1) {
    if (!g.graph) throw new UsageError('compile: --pipeline-partitions needs the graph nodes (internal: not read)');
    const numLayers = new Set(g.states.map((n) => /\.(\d+)$/.exec(n)?.[1])).size;
    const config = mdpPipelineConfig(g.graph.nodes, g.graph.initializers, { numDevices: nd, numPartitions: np, numLayers, numCores });
    return {
      numDevices: nd,
      numPartitions: np,
      config,
      file: path.join(path.dirname(compileDir), `mdp_disagg_${nd}d_${np}p.json`),
      early: true,
    };
  }
  if (nd > 1 && !options.some(([k, v]) => k === 'mdp_dump_partition_config' && v)) {
    return {
      numDevices: nd,
      numPartitions: 1,
      config: mdpTemplateConfig(nd, numCores),
      file: path.join(compileDir, `mdp_ts_${nd}.json`),
      early: false,
    };
  }
  return undefined;
}

/**
 * QEfficient's bf16 rules (quic/efficient-transformers main ebf55e81): `_resolve_torch_dtype`
 * (`QEfficient/transformers/models/modeling_auto.py`) keeps a bf16 model in bf16 only on ai200 —
 * on ai100 it loads it in float32 — and `compile` passes `convert_to_fp16 =
 * (CUSTOM_IO_DTYPE_MAP[torch_dtype] == "float16")` and KV custom IO `CUSTOM_IO_DTYPE_MAP[torch_dtype]`
 * (bfloat16 → "bfloat16", float16 and float32 → "float16"). So a bfloat16 graph compiled for ai200
 * gets no -convert-to-fp16 (the option set False in place; `_compile` omits a False flag) and
 * bf16 custom IO (true returned); for ai100 it is converted as a float32 model would be (a warning
 * says so). Here the hardware is the one the compile targets (--aic-hw-version, else detected).
 */
function bf16Rules(g: GraphShapeFacts, hw: string, options: [string, OptionValue][], warnings: string[]): boolean {
  if (g.dtype !== 'bfloat16') return false;
  if (hw !== 'ai200') {
    warnings.push(
      `compile: ${hw} has no bfloat16: the bf16 graph is compiled with -convert-to-fp16 and float16 KV (QEfficient loads bf16 models in float32 for ai100); give --aic-hw-version ai200 to keep bf16`,
    );
    return false;
  }
  const at = options.findIndex(([k]) => k === 'convert_to_fp16');
  if (at >= 0) options[at] = ['convert_to_fp16', false];
  return true;
}
