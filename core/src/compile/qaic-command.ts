/**
 * The qaic-compile command line and its two files, built by QEfficient's rules
 * (quic/efficient-transformers, release/v1.22.8.0 and commit 008adc73).
 *
 * `QEfficient/base/modeling_qeff.py`, `QEFFBaseModel._compile`:
 *   command = constants.COMPILER + [f"-aic-hw-version={compiler_options.pop('aic_hw_version', …DEFAULT_AIC_HW_VERSION)}"]
 *             + [f"-m={onnx_path}"]
 *   (-mdp-load-partition-config=… only when mdp_ts_num_devices > 1)
 *   for key, value in compiler_options.items():
 *       option = "-" + key.replace("_", "-")
 *       if isinstance(value, bool): if value: command.append(option); continue
 *       command.append(f"{option}={value}")
 *   compile_dir = qpc_path.with_name("qpc-" + compile_hash); qpc_path = compile_dir / "qpc"
 *   specializations.json = create_json({"specializations": to_named_specializations(specializations)})
 *     → -network-specialization-config=…
 *   custom_io.yaml (" - IOName: {name}\n   Precision: {dtype}\n\n" per entry) → -custom-IO-list-file=…
 *   command.append(f"-aic-binary-dir={qpc_path}")
 * `compile_only` is no longer passed on: the compiler dropped `-compile-only`, and QEfficient
 * strips it with a deprecation warning (so do we, when a user asks for it).
 * `create_json` (`QEfficient/utils/_utils.py`): `json.dump(data, fp, indent=4, separators=(",", ":"),
 * sort_keys=True)` (ASCII). `to_named_specializations` wraps each entry as
 * `{"name": …, "symbols": {k: str(v)}}`, the name from `_infer_specialization_name`: a `_graph_name`
 * tag, else `seq_len` > 1 → "Prefill", `seq_len` == 1 → "Decode", `encoder_ctx_len` without
 * `seq_len` → "Encoder", `sequence_length` → "Embedding", else `Graph_<i>`
 * (QEfficient's tests: tests/transformers/test_causal_lm.py `TestInferSpecializationName`).
 * `constants.COMPILER = ["/opt/qti-aic/exec/qaic-compile", "-aic-hw"]`, DEFAULT_AIC_HW_VERSION = "ai100",
 * DEFAULT_AIC_NUM_CORES = 16 (`QEfficient/utils/constants.py`).
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
import { pyJsonDumps } from '../spec/py-json';
import { mdpPipelineConfig, mdpTemplateConfig, type MdpConfig, type MdpNode } from '../artifacts/mdp-partition';

/** QEfficient's `constants.COMPILER`. */
export const QAIC_COMPILER = ['/opt/qti-aic/exec/qaic-compile', '-aic-hw'] as const;
/** QEfficient's `DEFAULT_AIC_HW_VERSION`. */
export const DEFAULT_AIC_HW_VERSION = 'ai100';
/** QEfficient's `DEFAULT_AIC_NUM_CORES`. */
export const DEFAULT_AIC_NUM_CORES = 16;

/** What the qaic backend is asked for (the CLI's flags). */
export interface QaicOptions {
  numCores?: number;
  mxfp6Matmul?: boolean;
  mxint8KvCache?: boolean;
  aicHwVersion?: string;
  batchSize?: number;
  prefillSeqLen?: number;
  ctxLen?: number;
  fullBatchSize?: number;
  /** An embedding graph: one specialization per sequence length (`--seq-len 32,64`; qaic-embedding.ts). */
  seqLens?: number[];
  /** A vision-language export: the image size compiled for (qaic-vlm.ts; refused for a text model). */
  imgHeight?: number;
  imgWidth?: number;
  imgSize?: number;
  /** Extra compiler options `a_b=v` (→ `-a-b=v`) or `a_b` (boolean → `-a-b`), in order. */
  extra?: string[];
  /** `--num-devices`: QEfficient's `num_devices` → `mdp_ts_num_devices` (multi-device partitioning). */
  numDevices?: number;
  /** `--pipeline-partitions`: `_compile`'s `mdp_num_partitions` (layer-balanced pipeline stages). */
  pipelinePartitions?: number;
}

/** A compiler option value as QEfficient passes it: a bool is a bare flag, anything else `=v`. */
export type OptionValue = boolean | string | number;

/** `key.replace("_", "-")` with Python's replace-all semantics, bools bare, else `-key=value`. */
export function optionFlags(options: [string, OptionValue][]): string[] {
  const out: string[] = [];
  for (const [key, value] of options) {
    const option = '-' + key.split('_').join('-');
    if (typeof value === 'boolean') {
      if (value) out.push(option);
      continue;
    }
    out.push(`${option}=${value}`);
  }
  return out;
}

/** Parses `--qaic-option a_b=v` words: `v` of true/false becomes a boolean, as a Python kwarg would be. */
export function parseExtraOptions(words: readonly string[]): [string, OptionValue][] {
  return words.map((w) => {
    const eq = w.indexOf('=');
    const key = (eq >= 0 ? w.slice(0, eq) : w).trim().replace(/^-+/, '');
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(key)) throw new UsageError(`compile: bad qaic option "${w}" (expected name=value or name)`);
    if (eq < 0) return [key.split('-').join('_'), true];
    const raw = w.slice(eq + 1);
    const v: OptionValue = raw === 'true' || raw === 'True' ? true : raw === 'false' || raw === 'False' ? false : raw;
    return [key.split('-').join('_'), v];
  });
}

/** What the graph says about itself (from its inputs). */
export interface GraphShapeFacts {
  /** The state inputs (graph-interface.ts `statesOfGraph`: `past_key.{i}`, `past_value.{i}`, …) in graph order; empty without a cache. */
  states: readonly string[];
  /** True when the graph takes `batch_index` (continuous batching). */
  continuousBatching: boolean;
  /** Fixed ctx_len of the cache inputs, when the dim is a number. */
  ctxLen?: number;
  /** Fixed batch of input_ids, when a number. */
  batch?: number;
  /** Fixed sequence length of input_ids, when a number (1: an export made with `--phase decode`). */
  seqLen?: number;
  /** Fixed batch of the cache inputs (the full batch with continuous batching), when a number. */
  cacheBatch?: number;
  /** A vision-language model's graph: `vision` takes pixel_values, `language` takes vision_embeds. */
  vlmRole?: 'vision' | 'language';
  /** A Whisper export's graph: `encoder` takes input_features, `decoder` takes encoder_hidden_states (qaic-whisper.ts). */
  whisperRole?: 'encoder' | 'decoder';
  /** CCL: the graph takes `comp_ctx_lengths`; the export's bucket lists (ONNX metadata). */
  ccl?: { prefill: number[]; decode: number[] };
  /** Speculative decoding's target model: the graph takes `num_logits_to_keep`; the proposal lengths K (ONNX metadata). */
  speculative?: number[];
  /** The graph's compute and KV dtype (`weight_spec.kv_dtype`), when recorded. */
  dtype?: string;
  /** The export's phase (`weight_spec.phase`): `compile`'s prefill_only is true for prefill, false for decode. */
  phase?: string;
  /** The export's `weight_spec.model_type` (gpt_oss's prefill-only graph has its own specializations). */
  modelType?: string;
  /** A disaggregated-serving prefill graph (`--phase prefill` of a SPECIALIZED_DISAGG arch): its chunking and expert count. */
  disaggPrefill?: { enableChunking: boolean; numExperts?: number };
  /** The nodes and initializers, read only for a pipeline partition config (`--pipeline-partitions` > 1). */
  graph?: { nodes: MdpNode[]; initializers: string[] };
}

/** QEfficient's `constants.CCL_MIN_CTX_LEN`: a smaller bucket is raised to it. */
export const CCL_MIN_CTX_LEN = 1024;
/** QEfficient's `constants.CCL_UNIQNE_STEP` (its spelling): a colliding prefill bucket is lowered to a multiple of it. */
export const CCL_UNIQNE_STEP = 32;

/**
 * QEfficient's `process_ccl_specializations` for explicit lists
 * (`QEfficient/utils/check_ccl_specializations.py` `validate_ccl_lists`, quic/efficient-transformers
 * main ebf55e81 and the weight-free PR head 277283b5, the same text; the older `ctx_len - 1` and
 * `val -= 1` forms are from #710, replaced by #825): a missing list is [ctx_len]; each value below
 * CCL_MIN_CTX_LEN is raised to it; ctx_len is appended to a list whose last value is below it;
 * with prefill_seq_len 1 both phases share the sorted union (capped at ctx_len); otherwise each
 * list is capped, deduplicated and sorted, and a prefill value also in the decode list (or already
 * taken) is lowered to the multiple of CCL_UNIQNE_STEP below it until it is unique — the compiler
 * needs distinct specializations.
 */
export function cclLists(
  ccl: { prefill: number[]; decode: number[] },
  ctxLen: number,
  prefillSeqLen: number,
): { prefill: number[]; decode: number[] } {
  const raise = (xs: number[]) => (xs.length ? xs : [ctxLen]).map((x) => Math.max(x, CCL_MIN_CTX_LEN));
  const pre = raise(ccl.prefill);
  const dec = raise(ccl.decode);
  // the last value as given (QEfficient checks ccl_prefill[-1], the list order of the user)
  if (pre[pre.length - 1]! < ctxLen) pre.push(ctxLen);
  if (dec[dec.length - 1]! < ctxLen) dec.push(ctxLen);
  const sorted = (xs: number[]) => [...new Set(xs.map((x) => Math.min(x, ctxLen)))].sort((a, b) => a - b);
  if (prefillSeqLen === 1) {
    const all = sorted([...pre, ...dec]);
    return { prefill: all, decode: all };
  }
  const decode = sorted(dec);
  const prefill: number[] = [];
  for (let v of sorted(pre)) {
    while (decode.includes(v) || prefill.includes(v)) {
      // `(val - 1) // CCL_UNIQNE_STEP * CCL_UNIQNE_STEP` (Python's floor division)
      v = Math.floor((v - 1) / CCL_UNIQNE_STEP) * CCL_UNIQNE_STEP;
      if (v < 0) break;
    }
    if (v >= 0) prefill.push(v);
  }
  return { prefill: prefill.sort((a, b) => a - b), decode };
}

/** One specialization: `[name, value]` pairs (QEfficient's dict; the file sorts the keys). */
export type Specialization = [string, number][];

/**
 * The `_graph_name` tag `build_prefill_specialization` / `build_decode_specialization` put on a
 * causal-LM entry (QEfficient main ebf55e81): `_infer_specialization_name` names the entry by it
 * first, `to_named_specializations` keeps it out of the symbols, and the hashed parameters hold it.
 */
const GRAPH_NAME = new WeakMap<object, string>();

/** The entry's `_graph_name` tag, if it has one. */
export function graphNameOf(spec: object): string | undefined {
  return GRAPH_NAME.get(spec);
}

function tagged(spec: Specialization, name: string): Specialization {
  GRAPH_NAME.set(spec, name);
  return spec;
}

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

/**
 * QEfficient's `_infer_specialization_name` for the entry at index `i`: its `_graph_name` tag
 * ({@link graphNameOf}) first, else by its symbols.
 */
export function specializationName(spec: Specialization, i: number): string {
  const tag = graphNameOf(spec);
  if (tag !== undefined) return tag;
  const get = (k: string) => spec.find(([n]) => n === k)?.[1];
  const seq = get('seq_len');
  if (seq !== undefined) return seq > 1 ? 'Prefill' : 'Decode';
  if (get('encoder_ctx_len') !== undefined) return 'Encoder';
  if (get('sequence_length') !== undefined) return 'Embedding';
  return `Graph_${i}`;
}

/**
 * Names that occur more than once become `<name>_0`, `<name>_1`, … in order (CCL buckets, a
 * continuous-batching export at prefill_seq_len 1): the compiler must not see two graphs with one
 * name. A name that occurs once is kept as it is.
 */
export function uniqueNames(names: readonly string[]): string[] {
  const total = new Map<string, number>();
  for (const n of names) total.set(n, (total.get(n) ?? 0) + 1);
  const seen = new Map<string, number>();
  return names.map((n) => {
    if (total.get(n) === 1) return n;
    const k = seen.get(n) ?? 0;
    seen.set(n, k + 1);
    return `${n}_${k}`;
  });
}

/**
 * specializations.json text as QEfficient writes it: `create_json({"specializations":
 * to_named_specializations(specs)})` = `json.dump(…, indent=4, separators=(",", ":"), sort_keys=True)`.
 */
export function specializationsJson(specs: Specialization[]): string {
  const named = uniqueNames(specs.map((s, i) => specializationName(s, i))).map((name, i) => ({
    name,
    symbols: Object.fromEntries(specs[i]!.map(([k, v]) => [k, String(v)])),
  }));
  return pyJsonDumps({ specializations: named }, { indent: 4, separators: [',', ':'], sortKeys: true });
}

/** custom_io.yaml text, one ` - IOName: …\n   Precision: …\n\n` block per entry. */
export function customIoYaml(entries: [string, string][]): string {
  return entries.map(([name, dtype]) => ` - IOName: ${name}\n   Precision: ${dtype}\n\n`).join('');
}

/** Everything needed to run (or print) one qaic-compile. */
export interface QaicPlan {
  command: string[];
  /** {@link shellLine} of `command`: what a log line or an error prints. */
  commandLine: string;
  compileDir: string;
  qpcDir: string;
  specializationsFile?: string;
  specializationsText?: string;
  customIoFile?: string;
  customIoText?: string;
  /** The partition config (`--num-devices` > 1 or `--pipeline-partitions` > 1) and its text. */
  mdpFile?: string;
  mdpText?: string;
  /** `hashed_compile_params.json` beside the binary directory, written after a successful compile. */
  hashedParamsFile: string;
  hashedParamsText: string;
  /** Options dropped with a warning (e.g. compile_only). */
  warnings: string[];
}

/**
 * Adds the `--qaic-option` words to `options` (in place) as QEfficient's `**compiler_options`
 * do: a key already there is overridden in place, `aic_hw_version` is popped into the
 * `-aic-hw-version` flag, `compile_only` is dropped with a warning.
 */
export function mergeExtraOptions(options: [string, OptionValue][], opts: QaicOptions): { hw: string; warnings: string[] } {
  let hw = opts.aicHwVersion ?? DEFAULT_AIC_HW_VERSION;
  const warnings: string[] = [];
  for (const [k, v] of parseExtraOptions(opts.extra ?? [])) {
    if (k === 'compile_only') {
      // the compiler no longer takes -compile-only; QEfficient drops it with a deprecation warning
      warnings.push('compile: ignoring compile_only: qaic-compile no longer supports -compile-only (QEfficient drops it too)');
      continue;
    }
    // `_compile` pops aic_hw_version before the loop; a later duplicate key overrides in the dict.
    if (k === 'aic_hw_version') {
      hw = String(v);
      continue;
    }
    const at = options.findIndex(([ok]) => ok === k);
    if (at >= 0) options[at] = [k, v];
    else options.push([k, v]);
  }
  return { hw, warnings };
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
  const customIoPassed = !(bf16 && customIo?.some(([k, v]) => k.includes('past_') && v.includes('bfloat16')));
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
 * The plan `_compile` makes of its parts (QEfficient/base/modeling_qeff.py): the command
 * `qaic-compile -aic-hw -aic-hw-version=… -m=<onnx> <options>` followed, in its order, by the
 * specialization file, the custom-IO file (when there is custom IO) and the binary folder, all in
 * `compileDir`, and the texts of those files and of hashed_compile_params.json. One place for the
 * causal-LM plan above and the VLM graphs' plan (qaic-vlm.ts).
 */
export function qaicPlan(p: {
  compiler: string;
  hw: string;
  onnxPath: string;
  options: [string, OptionValue][];
  compileDir: string;
  specs: readonly (readonly [string, number | string][])[];
  specializationsText: string;
  customIo: [string, string][] | undefined;
  warnings: string[];
  /**
   * False: custom_io.yaml is written but not handed to the compiler — `_compile`'s rule when the
   * model (config.torch_dtype) and a `past_` entry are both bfloat16 ("Custom IO list file will be
   * ignored during compile").
   */
  customIoInCommand?: boolean;
  /** The specializations as hashed_compile_params.json holds them, when they differ from `specs` (QEfficient's `_graph_name` tags). */
  hashedSpecs?: readonly (readonly [string, number | string][])[];
  /** `num_speculative_tokens` as compile() was given it (hashed only). */
  numSpeculativeTokens?: number | number[];
  mdp?: MdpPlan;
  /** `mdp_ts_num_devices` and `mdp_num_partitions` (hashed; 1 and 1 when absent). */
  mdpCounts?: { devices: number; partitions: number };
  /** `compile`'s prefill_only (hashed only). */
  prefillOnly?: boolean | undefined;
}): QaicPlan {
  const command = [p.compiler, ...QAIC_COMPILER.slice(1), `-aic-hw-version=${p.hw}`, `-m=${p.onnxPath}`];
  // a pipeline config is generated before the options are added, the template one after them
  const mdpFlag = p.mdp ? `-mdp-load-partition-config=${p.mdp.file}` : undefined;
  if (p.mdp?.early) command.push(mdpFlag!);
  command.push(...optionFlags(p.options));
  if (p.mdp && !p.mdp.early) command.push(mdpFlag!);
  const specializationsFile = path.join(p.compileDir, 'specializations.json');
  command.push(`-network-specialization-config=${specializationsFile}`);
  const customIoFile = p.customIo ? path.join(p.compileDir, 'custom_io.yaml') : undefined;
  if (customIoFile && p.customIoInCommand !== false) command.push(`-custom-IO-list-file=${customIoFile}`);
  const qpcDir = path.join(p.compileDir, 'qpc');
  command.push(`-aic-binary-dir=${qpcDir}`);
  return {
    command,
    commandLine: shellLine(command),
    compileDir: p.compileDir,
    qpcDir,
    specializationsFile,
    specializationsText: p.specializationsText,
    ...(p.customIo ? { customIoFile, customIoText: customIoYaml(p.customIo) } : {}),
    hashedParamsFile: path.join(p.compileDir, 'hashed_compile_params.json'),
    ...(p.mdp ? { mdpFile: p.mdp.file, mdpText: createJsonText(p.mdp.config) } : {}),
    hashedParamsText: hashedCompileParams(command, p.hashedSpecs ?? p.specs, p.customIo, {
      numSpeculativeTokens: p.numSpeculativeTokens,
      ...(p.mdpCounts ? { mdpTsNumDevices: p.mdpCounts.devices, mdpNumPartitions: p.mdpCounts.partitions } : {}),
      ...(p.mdp ? { mdpTsJson: p.mdp.config } : {}),
      prefillOnly: p.prefillOnly,
    }),
    warnings: p.warnings,
  };
}

/** `create_json`'s text (`QEfficient/utils/_utils.py`): `json.dump(…, indent=4, separators=(",", ":"), sort_keys=True)`. */
export function createJsonText(value: unknown): string {
  return pyJsonDumps(value, { indent: 4, separators: [',', ':'], sortKeys: true });
}

/** A partition config to write and pass. */
export interface MdpPlan {
  numDevices: number;
  numPartitions: number;
  config: MdpConfig;
  file: string;
  /** A pipeline config: its flag comes before the compiler options. */
  early: boolean;
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

/**
 * The plan of a graph whose rules live elsewhere (a VLM graph, qaic-vlm.ts), from its parts in
 * one call: the `--qaic-option` words merged into `options` ({@link mergeExtraOptions}), the
 * specializations named (`module` for every entry, as `specialization_module_name` does, else
 * {@link specializationName}; repeats made unique) into `create_json`'s layout, then
 * {@link qaicPlan}.
 */
export function planFromParts(p: {
  compiler: string;
  onnxPath: string;
  compileDir: string;
  opts: QaicOptions;
  options: [string, OptionValue][];
  specs: (readonly [string, number | string][])[];
  module: string | undefined;
  /** Each entry's name (QEfficient's `_graph_name`), when the rules give one per entry. */
  names?: string[];
  customIo: [string, string][];
  /** Warnings of the rules themselves (QEfficient's logger.warning for an option it ignores). */
  warnings?: string[];
  /** See {@link qaicPlan}'s `customIoInCommand`. */
  customIoInCommand?: boolean;
}): QaicPlan {
  if ((p.opts.numDevices ?? 1) > 1 || (p.opts.pipelinePartitions ?? 1) > 1)
    throw new UsageError('compile: --num-devices / --pipeline-partitions are not supported for a vision-language or Whisper graph yet');
  const merged = mergeExtraOptions(p.options, p.opts);
  const hw = merged.hw;
  const warnings = [...(p.warnings ?? []), ...merged.warnings];
  const names = uniqueNames(
    p.specs.map(
      (s, i) =>
        p.names?.[i] ??
        p.module ??
        specializationName(
          s.map(([k, v]) => [k, Number(v)]),
          i,
        ),
    ),
  );
  const named = p.specs.map((s, i) => ({ name: names[i], symbols: Object.fromEntries(s.map(([k, v]) => [k, String(v)])) }));
  const specializationsText = pyJsonDumps({ specializations: named }, { indent: 4, separators: [',', ':'], sortKeys: true });
  // entries named by the rules carry `_graph_name` into the hashed parameters, as QEfficient's dicts do
  const hashedSpecs = p.names ? p.specs.map((s, i): [string, number | string][] => [['_graph_name', p.names![i]!], ...s]) : undefined;
  return qaicPlan({ ...p, hw, specializationsText, warnings, ...(hashedSpecs ? { hashedSpecs } : {}) });
}

/** The MDP and phase parts of `_compile`'s hashed parameters. */
export interface HashedExtras {
  numSpeculativeTokens?: number | number[] | undefined;
  mdpTsNumDevices?: number;
  mdpNumPartitions?: number;
  mdpTsJson?: MdpConfig | undefined;
  prefillOnly?: boolean | undefined;
}

/**
 * `hashed_compile_params.json` as `_compile` writes it (`QEfficient/base/modeling_qeff.py`, main
 * ebf55e81): `create_json(compile_dir / "hashed_compile_params.json", compile_hash_params)` with
 * `{"command", "specializations", "custom_io", "mdp_ts_num_devices", "mdp_num_partitions",
 * "mdp_strategy": "onnx", "mdp_ts_json", "num_speculative_tokens", "prefill_only"}`. `command` is
 * the list the compiler ran (the dict holds the list itself, so the flags appended after hashing
 * are in the file); specializations are the flat dicts with their int values and their
 * `_graph_name` tag ({@link graphNameOf}).
 */
export function hashedCompileParams(
  command: readonly string[],
  specs: readonly (readonly [string, number | string][])[],
  customIo: [string, string][] | undefined,
  extra: HashedExtras = {},
): string {
  return pyJsonDumps(
    {
      command,
      specializations: specs.map((s) => {
        const tag = graphNameOf(s);
        return { ...Object.fromEntries(s), ...(tag !== undefined ? { _graph_name: tag } : {}) };
      }),
      custom_io: customIo ? Object.fromEntries(customIo) : null,
      mdp_ts_num_devices: extra.mdpTsNumDevices ?? 1,
      mdp_num_partitions: extra.mdpNumPartitions ?? 1,
      mdp_strategy: 'onnx',
      mdp_ts_json: extra.mdpTsJson ?? null,
      num_speculative_tokens: extra.numSpeculativeTokens ?? null,
      prefill_only: extra.prefillOnly ?? null,
    },
    { indent: 4, separators: [',', ':'], sortKeys: true },
  );
}

/**
 * QEfficient's `get_default_aic_hw_version` (`QEfficient/utils/constants.py` on main ebf55e81):
 * the first `FW IMAGE_VARIANT : <v>` of `qaic-util -q`; a variant containing AIC200 → "ai200",
 * anything else → "ai100". Undefined when the output has no such field (QEfficient then falls
 * back to "ai100" too; the caller keeps DEFAULT_AIC_HW_VERSION). The `NSP IMAGE_VARIANT` form
 * was an unmerged PR's.
 */
export function hwVersionFromQaicUtil(output: string): string | undefined {
  const m = /FW IMAGE_VARIANT\s*:\s*(\S+)/.exec(output);
  if (!m) return undefined;
  return m[1]!.toUpperCase().includes('AIC200') ? 'ai200' : 'ai100';
}

/** The command as one shell line (POSIX single quotes where a word needs them). */
export function shellLine(command: readonly string[]): string {
  return command.map((w) => (/^[A-Za-z0-9_\-=./:,+@%]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`)).join(' ');
}
