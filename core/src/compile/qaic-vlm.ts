/**
 * qaic-compile for the two graphs of a vision-language export (`vlm.json` + `vision/` +
 * `language/`), as `QEFFAutoModelForImageTextToText.compile` (kv_offload, the dual-QPC class)
 * does it — quic/efficient-transformers `QEfficient/transformers/models/modeling_auto.py`
 * (commit 00074466158ecd8d7fd64c370ab8821214d8c540):
 *
 * - vision: `_compile(specializations=specs["vision"], specialization_module_name="Vision",
 *   convert_to_fp16=True, mxfp6_matmul=constants.VISION_MXFP6_MATMUL (False), aic_num_cores,
 *   custom_io=custom_io_vision, **compiler_options)` — no retained state; custom IO
 *   `pixel_values` then each vision output, in float16;
 * - language: `_compile(retained_state=True, specializations=specs["lang"],
 *   convert_to_fp16=True, mxfp6_matmul, aic_num_cores, custom_io=custom_io_lang, ...)`; custom IO:
 *   for each `_RetainedState` output in output order, its input then itself
 *   (`_add_retained_state_custom_io`), float16 for `vision_embeds`/`deepstack_features`, the KV
 *   dtype (mxint8 with `--mxint8-kv-cache`) otherwise; with prefill_seq_len 1 (and no continuous
 *   batching over a larger batch) only the decode entries; for a `--phase prefill` export only the
 *   prefill entries (QEfficient's `prefill_only`, main ebf55e81).
 *
 * The specializations come from artifacts/qaic-vlm-specs.ts. Our graphs name their dims as QEfficient's
 * dynamic axes do (main ebf55e8159c8b87bff6d8028541b824244b16c81: Qwen2.5-VL's image_grid_thw
 * fixes time at 1, Qwen3-VL's deepstack_features names num_feature_layers, Gemma 3's
 * vision_embeds names vision_size). With CCL each language entry is repeated per bucket with
 * `comp_ctx_lengths` (see buildVlmQaicPlan). Every symbolic dim of the
 * graph must be specialized and every fixed dim QEfficient names must agree with its value —
 * else the compile is refused (a graph the compiler cannot meet is never handed over).
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, UsageError } from '../errors';
import { RETAINED } from '../artifacts/graph-interface';
import type { WireModel } from '../formats/onnx/wire-model';
import { readJsonTextSync } from '../paths';
import { VLM_MANIFEST_FILE } from '../spec/file-names';
import { cclLists } from '../artifacts/qaic-ccl';
import { DEFAULT_AIC_NUM_CORES, planFromParts, QAIC_COMPILER, type OptionValue, type QaicPlan } from '../artifacts/qaic-plan';
import type { GraphShapeFacts, QaicOptions } from './qaic-options';
import {
  VLM_DEFAULT_CTX,
  VLM_DEFAULT_PREFILL,
  vlmSpecializations,
  type VlmFamily,
  type VlmModelFacts,
  type VlmSpecialization,
} from '../artifacts/qaic-vlm-specs';

const FAMILY: Record<string, VlmFamily> = {
  qwen3_vl_moe: 'qwen3_vl',
  qwen3_vl: 'qwen3_vl',
  qwen2_5_vl: 'qwen2_5_vl',
  gemma3: 'gemma3',
  llava: 'llava',
  llava_next: 'llava_next',
  mistral3: 'mistral3',
  internvl: 'internvl',
  llama4: 'llama4',
};

/** Reads the model facts from the `vlm.json` beside the graph's export directory (and Gemma 3's config.json). */
export function vlmModelFacts(graphDir: string, role: 'vision' | 'language'): VlmModelFacts {
  const file = path.join(path.dirname(graphDir), VLM_MANIFEST_FILE);
  if (!fs.existsSync(file))
    throw new UsageError(
      `compile: ${graphDir} is the ${role} graph of a vision-language model but ${file} is missing: qaic compiles a VLM export made by export --config (vlm.json + vision/ + language/)`,
    );
  const m = readJson(file) as {
    model_type?: unknown;
    config?: unknown;
    vision?: { patch_size?: unknown; temporal_patch_size?: unknown; spatial_merge_size?: unknown; num_feature_layers?: unknown };
    image_size?: unknown;
    mm_tokens_per_image?: unknown;
    image_grid_pinpoints?: unknown;
  };
  const family = FAMILY[String(m.model_type)];
  if (!family) throw new FormatError(file, `model_type "${String(m.model_type)}" has no qaic specializations here`);
  const int = (v: unknown, field: string): number => {
    if (!Number.isInteger(v) || (v as number) <= 0) throw new FormatError(file, `${field} must be a positive integer`);
    return v as number;
  };
  const facts: VlmModelFacts = {
    family,
    patchSize: int(m.vision?.patch_size, 'vision.patch_size'),
    temporalPatchSize: int(m.vision?.temporal_patch_size, 'vision.temporal_patch_size'),
    mergeSize: int(m.vision?.spatial_merge_size, 'vision.spatial_merge_size'),
    numFeatureLayers: Number.isInteger(m.vision?.num_feature_layers) ? (m.vision!.num_feature_layers as number) : 0,
  };
  if (family === 'internvl')
    return { ...facts, imageSize: int(m.image_size, 'image_size'), mmTokensPerImage: int(m.mm_tokens_per_image, 'mm_tokens_per_image') };
  if (family === 'llava' || family === 'llava_next') {
    const pins = m.image_grid_pinpoints;
    if (family === 'llava_next' && !(Array.isArray(pins) && pins.length > 0))
      throw new FormatError(file, 'image_grid_pinpoints must list [height, width] pairs (LLaVA-NeXT)');
    return {
      ...facts,
      imageSize: int(m.image_size, 'image_size'),
      mmTokensPerImage: int(m.mm_tokens_per_image, 'mm_tokens_per_image'),
      ...(family === 'llava_next' ? { pinpoints: pins as [number, number][] } : {}),
    };
  }
  if (family === 'mistral3') return { ...facts, imageSize: int(m.image_size, 'image_size') };
  if (family === 'llama4') {
    const cfgFile = String(m.config);
    const chunk = (readJson(cfgFile) as { text_config?: { attention_chunk_size?: unknown } }).text_config?.attention_chunk_size;
    return {
      ...facts,
      imageSize: int(m.image_size, 'image_size'),
      mmTokensPerImage: int(m.mm_tokens_per_image, 'mm_tokens_per_image'),
      ...(Number.isInteger(chunk) && (chunk as number) > 0 ? { attentionChunk: chunk as number } : {}),
    };
  }
  if (family !== 'gemma3') return facts;
  const cfgFile = String(m.config);
  const text = (readJson(cfgFile) as { text_config?: { sliding_window?: unknown } }).text_config;
  return {
    ...facts,
    imageSize: int(m.image_size, 'image_size'),
    mmTokensPerImage: int(m.mm_tokens_per_image, 'mm_tokens_per_image'),
    slidingWindow: Number.isInteger(text?.sliding_window)
      ? (text!.sliding_window as number)
      : (() => {
          throw new FormatError(cfgFile, 'text_config.sliding_window must be an integer (a qaic language specialization names it)');
        })(),
  };
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readJsonTextSync(file));
  } catch (e) {
    throw new FormatError(file, `cannot read: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** Custom IO of the vision graph: pixel_values, then each output, in float16. */
function visionCustomIo(m: WireModel): [string, string][] {
  return [['pixel_values', 'float16'], ...m.outputs.map((o): [string, string] => [o.name, 'float16'])];
}

/** Custom IO of the language graph: each retained output's input, then the output itself. */
function langCustomIo(m: WireModel, mxint8: boolean): [string, string][] {
  const kv = mxint8 ? 'mxint8' : 'float16';
  const names = new Set([...m.inputs, ...m.outputs].map((v) => v.name));
  return m.outputs
    .filter((o) => o.name.endsWith(RETAINED))
    .flatMap((o): [string, string][] => {
      const input = o.name.slice(0, -RETAINED.length);
      const dtype = /vision_embeds|deepstack_features/.test(o.name) ? 'float16' : kv;
      return [...(names.has(input) ? [[input, dtype] as [string, string]] : []), [o.name, dtype]];
    });
}

/**
 * Refuses a specialization the graph cannot meet: a symbolic dim without a value, or a fixed
 * dim where the entry names a different value for the symbol QEfficient's graph has there.
 */
function checkAgainstGraph(m: WireModel, specs: VlmSpecialization[], onnx: string, fixedAt: [string, number, string][]): void {
  for (const s of specs) {
    const sym = new Map(s.map(([k, v]) => [k, Number(v)]));
    for (const v of [...m.inputs, ...m.outputs]) {
      for (const d of v.dims)
        if (typeof d === 'string' && !sym.has(d))
          throw new UsageError(`compile: ${onnx}: dim "${d}" of ${v.name} has no value in QEfficient's specialization`);
    }
    for (const [name, axis, symbol] of fixedAt) {
      const d = [...m.inputs, ...m.outputs].find((v) => v.name === name)?.dims[axis];
      if (typeof d === 'number' && sym.has(symbol) && d !== sym.get(symbol))
        throw new UsageError(
          `compile: ${onnx}: ${name} has ${d} at dim ${axis} (its ${symbol}), but the compile asks for ${symbol} ${sym.get(symbol)}${symbol === 'img_size' ? ' (give --img-size ' + d + ' or export at that size)' : ''}`,
        );
    }
  }
}

/** Builds the qaic-compile plan of one graph of a VLM export (see the module comment). */
export function buildVlmQaicPlan(
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  m: WireModel,
  g: GraphShapeFacts,
  facts: VlmModelFacts,
  compiler: string = QAIC_COMPILER[0],
): QaicPlan {
  const role = g.vlmRole!;
  if (opts.ctxLen !== undefined && g.ctxLen !== undefined && opts.ctxLen !== g.ctxLen)
    throw new UsageError(`compile: --ctx-len ${opts.ctxLen} does not match the graph, whose cache holds ${g.ctxLen} positions`);
  if (opts.fullBatchSize !== undefined && role === 'language' && !g.continuousBatching)
    throw new UsageError('compile: --full-batch-size needs a continuous-batching export (export --continuous-batching)');
  const fbs = opts.fullBatchSize ?? (g.continuousBatching ? g.cacheBatch : undefined);
  if (role === 'language' && g.continuousBatching && fbs === undefined)
    throw new UsageError('compile: the graph takes batch_index (continuous batching): give --full-batch-size');
  const prefill = opts.prefillSeqLen ?? (g.seqLen === 1 ? 1 : VLM_DEFAULT_PREFILL[facts.family]);
  const sizes = {
    batchSize: opts.batchSize ?? g.batch ?? 1,
    prefillSeqLen: prefill,
    ctxLen: opts.ctxLen ?? g.ctxLen ?? VLM_DEFAULT_CTX[facts.family],
    continuousBatching: g.continuousBatching,
    ...(fbs !== undefined && g.continuousBatching ? { fullBatchSize: fbs } : {}),
    ...(opts.imgHeight !== undefined ? { height: opts.imgHeight } : {}),
    ...(opts.imgWidth !== undefined ? { width: opts.imgWidth } : {}),
    ...(opts.imgSize !== undefined ? { imgSize: opts.imgSize } : {}),
  };
  const all = vlmSpecializations(facts, sizes);
  // CCL: QEfficient's dual-QPC compile runs process_ccl_specializations (artifacts/qaic-ccl.ts cclLists) and
  // each family's get_specializations makes one prefill entry per prefill value, then one decode
  // entry per decode value, each with comp_ctx_lengths (the file sorts the keys, so where it sits is moot)
  const lists = role === 'language' && g.ccl ? cclLists(g.ccl, sizes.ctxLen, prefill) : undefined;
  const withCcl = (s: VlmSpecialization, c: number): VlmSpecialization => [...s, ['comp_ctx_lengths', c]];
  let specs =
    role === 'vision'
      ? all.vision
      : lists
        ? [...lists.prefill.map((c) => withCcl(all.lang[0]!, c)), ...lists.decode.map((c) => withCcl(all.lang[1]!, c))]
        : all.lang;
  // modeling_auto.py (_QEffAutoModelForImageTextToTextDualQPC.compile, main ebf55e81): a prefill-only language graph
  // (export --phase prefill) keeps the prefill slice, one entry per CCL prefill value (lang_prefill_qpc_path; its
  // `_compile` is not handed prefill_only, so the hashed prefill_only stays null); else prefill_seq_len 1 without CB
  // over a larger batch compiles the decode entries only
  if (role === 'language' && g.phase === 'prefill') {
    if (prefill === 1)
      throw new UsageError(
        'compile: the language graph was exported with --phase prefill, which needs prefill_seq_len > 1 (QEfficient asserts it); give --prefill-seq-len 2 or more',
      );
    specs = specs.slice(0, lists ? lists.prefill.length : 1);
  } else if (role === 'language' && prefill === 1 && !(g.continuousBatching && fbs !== sizes.batchSize))
    specs = specs.slice(-(lists ? lists.decode.length : 1));
  // LLaVA-NeXT's pixel_values [batch, patches, C, S, S] has its image sides at dims 3 and 4
  const side = facts.family === 'llava_next' ? 3 : 2;
  checkAgainstGraph(m, specs, onnxPath, [
    ['pixel_values', 1, 'grid_width'],
    ['pixel_values', side, 'img_size'],
    ['pixel_values', side + 1, 'img_size'],
    ['deepstack_features', 0, 'num_feature_layers'],
    ['vision_embeds', 1, 'vision_size'],
  ]);

  const options: [string, OptionValue][] = [];
  if (role === 'language') options.push(['retained_state', true]);
  options.push(
    ['convert_to_fp16', true],
    // the vision graph: constants.VISION_MXFP6_MATMUL = False, whatever --mxfp6-matmul says
    ['mxfp6_matmul', role === 'language' ? (opts.mxfp6Matmul ?? false) : false],
    ['aic_num_cores', opts.numCores ?? DEFAULT_AIC_NUM_CORES],
  );
  const customIo = role === 'vision' ? visionCustomIo(m) : langCustomIo(m, opts.mxint8KvCache ?? false);
  // one call for the shared rules: options merged, entries named (`Vision` for the vision graph), the plan
  return planFromParts({
    compiler,
    onnxPath,
    compileDir,
    opts,
    options,
    specs,
    module: role === 'vision' ? 'Vision' : undefined,
    customIo,
  });
}

/**
 * The plan of one graph of a VLM export, as data, in one call: the model facts read from
 * `vlm.json` ({@link vlmModelFacts}) and {@link buildVlmQaicPlan}.
 */
export function planVlmGraph(
  graphDir: string,
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  m: WireModel,
  g: GraphShapeFacts,
  compiler: string = QAIC_COMPILER[0],
): QaicPlan {
  return buildVlmQaicPlan(onnxPath, compileDir, opts, m, g, vlmModelFacts(graphDir, g.vlmRole!), compiler);
}
