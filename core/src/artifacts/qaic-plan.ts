/**
 * The qaic-compile command line and its files (specializations.json, custom_io.yaml,
 * hashed_compile_params.json, the partition config), built by QEfficient's rules
 * (quic/efficient-transformers, release/v1.22.8.0 and commit 008adc73): plain data and texts,
 * written by the compile backends (compile/qaic*.ts), whose per-model rules live there.
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
 *
 * Floor 3 (a writer's texts, as `mdp-partition.ts`): the planners of compile/ call it without
 * leaving their own module (docs/ARCHITECTURE.md "Compile flow").
 */
import path from 'node:path';
import { UsageError } from '../errors';
import { pyJsonDumps } from '../spec/py-json';
import type { MdpConfig } from './mdp-partition';

/** The flags the shared rules read (compile's `QaicOptions` has them all). */
export interface QaicPlanFlags {
  aicHwVersion?: string;
  /** Extra compiler options `a_b=v` (→ `-a-b=v`) or `a_b` (boolean → `-a-b`), in order. */
  extra?: readonly string[];
  numDevices?: number;
  pipelinePartitions?: number;
}

/** QEfficient's `constants.COMPILER`. */
export const QAIC_COMPILER = ['/opt/qti-aic/exec/qaic-compile', '-aic-hw'] as const;
/** QEfficient's `DEFAULT_AIC_HW_VERSION`. */
export const DEFAULT_AIC_HW_VERSION = 'ai100';
/** QEfficient's `DEFAULT_AIC_NUM_CORES`. */
export const DEFAULT_AIC_NUM_CORES = 16;

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

/** Tags `spec` with its `_graph_name` (see {@link graphNameOf}); returns it. */
export function tagged(spec: Specialization, name: string): Specialization {
  GRAPH_NAME.set(spec, name);
  return spec;
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
export function mergeExtraOptions(options: [string, OptionValue][], opts: QaicPlanFlags): { hw: string; warnings: string[] } {
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

/**
 * `_compile`'s bf16 custom-IO rule (`QEfficient/base/modeling_qeff.py`, main ebf55e81): with the
 * model in bfloat16 (`config.torch_dtype`) and a bfloat16 entry whose name holds `past_`,
 * custom_io.yaml is written but left off the command ("Model and Past KV types are both bfloat16.
 * Custom IO list file will be ignored during compile"). True when it is left off; the causal-LM
 * and Whisper planners both ask here.
 */
export function customIoIgnored(modelBf16: boolean, customIo: readonly (readonly [string, string])[] | undefined): boolean {
  return modelBf16 && !!customIo?.some(([k, v]) => k.includes('past_') && v.includes('bfloat16'));
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
  opts: QaicPlanFlags;
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
