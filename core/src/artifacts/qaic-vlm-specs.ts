/**
 * QEfficient's specializations for the two graphs of a vision-language model
 * (quic/efficient-transformers), per family, from the image size compiled for:
 *
 * - Qwen3-VL(-MoE) — `QEfficient/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py`
 *   (commit 02876f45360353d417c5a57eabf83bd6b274fef3) `get_specializations`: height/width
 *   default to `constants.QWEN3_VL_HEIGHT`/`WIDTH` (354 × 536); `smart_resize` of qwen-vl-utils
 *   with factor `IMAGE_FACTOR_QWEN_3` (32 = patch 16 × merge 2), min/max pixels
 *   `IMAGE_MIN_TOKEN_NUM`/`IMAGE_MAX_TOKEN_NUM` (4 / 16384) × factor²; grid_h = h/patch,
 *   grid_w = w/patch, grid_height = grid_h·grid_w·time·batch, grid_width = patch²·tps·3,
 *   vision_size = grid_h·grid_w // 4 · time; Vision `{batch_size, vision_size, grid_height,
 *   grid_width, grid_h, grid_w, time, num_feature_layers}`; language entries add `vision_size`,
 *   `vision_batch_size` and `num_feature_layers`.
 * - Qwen2.5-VL — `qwen2_5_vl/modeling_qwen2_5_vl.py` (commit 02cdf56d505bdc3cf033e515713360c6322021ea):
 *   the same without `time` and `num_feature_layers`, its own `smart_resize` with
 *   IMAGE_FACTOR 28, MIN_PIXELS 4·28², MAX_PIXELS 16384·28², default 354 × 536
 *   (`constants.QWEN2_5_VL_HEIGHT`/`WIDTH`).
 * - Gemma 3 — `gemma3/modeling_gemma3.py` (main ebf55e8159c8b87bff6d8028541b824244b16c81):
 *   `img_size` (default `vision_config.image_size`), Vision `{batch_size, img_size, seq_len,
 *   ctx_len}`, language entries add `sliding_window`, `img_size`, `vision_size` (the value of the
 *   deprecated `mm_tokens_per_image`, default 256; #1029 renamed the symbol),
 *   `vision_batch_size`; its decode `seq_len` is the string "1".
 *
 * Defaults as `QEFFAutoModelForImageTextToText` (`modeling_auto.py`): prefill_seq_len 128
 * (Qwen) / 32 (Gemma 3), ctx_len `constants.INTERN_CTX_LEN` = 4096, batch_size 1. With
 * continuous batching the prefill entry has batch_size 1 and `full_batch_size` (+
 * `full_batch_exec_size`), the decode entry batch_size = full_batch_size.
 */
import { UsageError } from '../errors';
import { pyRound } from '../foundation/py-round';
import {
  refuseImageSides,
  requireVisionBelowCtx,
  type VlmImageSizes,
  type VlmSpecialization,
  type VlmSpecializations,
} from './qaic-vlm-spec-kit';
import { llavaSpecializations } from './qaic-vlm-specs-llava';
import { mistral3Specializations } from './qaic-vlm-specs-mistral3';
import { internvlSpecializations } from './qaic-vlm-specs-internvl';
import { llama4Specializations } from './qaic-vlm-specs-llama4';

export type { VlmSpecialization, VlmSpecializations } from './qaic-vlm-spec-kit';

/** The VLM families whose qaic specializations are built here (`vlm.json` model_type). */
export type VlmFamily = 'qwen3_vl' | 'qwen2_5_vl' | 'gemma3' | 'llava' | 'llava_next' | 'mistral3' | 'internvl' | 'llama4';

/** What the specializations need from the model (vlm.json and config.json). */
export interface VlmModelFacts {
  family: VlmFamily;
  patchSize: number;
  temporalPatchSize: number;
  /** `vision_config.spatial_merge_size`: the grid must divide by it (QEfficient's `// 4` assumes 2). */
  mergeSize: number;
  /** Qwen3-VL: the deepstack feature layers (`len(deepstack_visual_indexes)`). */
  numFeatureLayers: number;
  /** Gemma 3: `vision_config.image_size`, `mm_tokens_per_image`, `text_config.sliding_window` (LLaVA: the first two). */
  imageSize?: number;
  mmTokensPerImage?: number;
  slidingWindow?: number;
  /** LLaVA-NeXT: `image_grid_pinpoints`. */
  pinpoints?: [number, number][];
  /** Llama 4: `text_config.attention_chunk_size` (chunk_ctx_len). */
  attentionChunk?: number;
}

/** The compile's sizes (flags, else QEfficient's defaults). */
export interface VlmSizes extends VlmImageSizes {
  continuousBatching: boolean;
  fullBatchSize?: number;
}

/** QEfficient's ctx_len default for the image-text-to-text class (`constants.INTERN_CTX_LEN`). */
export const VLM_DEFAULT_CTX_LEN = 4096;
/** QEfficient's `QWEN3_VL_HEIGHT`/`WIDTH` = `QWEN2_5_VL_HEIGHT`/`WIDTH` (`QEfficient/utils/constants.py`). */
export const QWEN_VL_DEFAULT_HEIGHT = 354;
export const QWEN_VL_DEFAULT_WIDTH = 536;

/** The default prefill length of each family's `get_specializations` (a table: the planner reads it, no call). */
export const VLM_DEFAULT_PREFILL: Readonly<Record<VlmFamily, number>> = {
  gemma3: 32,
  qwen3_vl: 128,
  qwen2_5_vl: 128,
  llava: 592,
  llava_next: 5500,
  mistral3: 128,
  // constants.INTERN_PREFILL_SEQ_LEN (4096 - 256)
  internvl: 3840,
  llama4: 32,
};
/** The default ctx_len of each family's `get_specializations` (LLaVA's module CTX_LEN, LLaVA-NeXT's GRANITEVISION_CTX_LEN). */
export const VLM_DEFAULT_CTX: Readonly<Record<VlmFamily, number>> = {
  gemma3: VLM_DEFAULT_CTX_LEN,
  qwen3_vl: VLM_DEFAULT_CTX_LEN,
  qwen2_5_vl: VLM_DEFAULT_CTX_LEN,
  llava: 1024,
  llava_next: 6000,
  mistral3: VLM_DEFAULT_CTX_LEN,
  internvl: VLM_DEFAULT_CTX_LEN,
  llama4: VLM_DEFAULT_CTX_LEN,
};

/** The default prefill length of each family's `get_specializations`. */
export function vlmDefaultPrefill(family: VlmFamily): number {
  return VLM_DEFAULT_PREFILL[family];
}

/**
 * qwen-vl-utils' `smart_resize` (QwenLM/Qwen3-VL `qwen-vl-utils/src/qwen_vl_utils/vision_process.py`,
 * commit 004d5e0a; QEfficient's Qwen2.5-VL copy is the same): both sides a multiple of
 * `factor`, the area within [min_pixels, max_pixels], the aspect kept as closely as possible.
 * Not run/vlm/image.ts's HF `smart_resize`: this one floors the first rounding at `factor` and
 * not the shrunk sides, so the two differ at the edges.
 */
export function smartResize(height: number, width: number, factor: number, minPixels: number, maxPixels: number): [number, number] {
  if (Math.max(height, width) / Math.min(height, width) > 200)
    throw new UsageError(`compile: image ${height}x${width}: absolute aspect ratio must be smaller than 200`);
  let h = Math.max(factor, pyRound(height / factor) * factor);
  let w = Math.max(factor, pyRound(width / factor) * factor);
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.floor(height / beta / factor) * factor;
    w = Math.floor(width / beta / factor) * factor;
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return [h, w];
}

/** The batch entries of one language specialization (QEfficient's CB / kv_cache_batch_size rule). */
function langBatch(s: VlmSizes, decode: boolean): VlmSpecialization {
  const cb = s.continuousBatching;
  const kvBatch = s.fullBatchSize ?? s.batchSize;
  const e: VlmSpecialization = [['batch_size', cb ? (decode ? s.fullBatchSize! : 1) : kvBatch]];
  if (cb) e.push(['full_batch_size', kvBatch]);
  if (!decode && s.fullBatchSize) e.push(['full_batch_exec_size', s.fullBatchSize]);
  return e;
}

/** QEfficient's specializations of `m` at `s`. */
export function vlmSpecializations(m: VlmModelFacts, s: VlmSizes): VlmSpecializations {
  for (const [flag, v] of [
    ['--img-height', s.height],
    ['--img-width', s.width],
    ['--img-size', s.imgSize],
  ] as const)
    if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw new UsageError(`compile: ${flag} must be a positive integer (got ${v})`);
  if (m.family === 'gemma3') return gemma3Specializations(m, s);
  if (m.family === 'llava' || m.family === 'llava_next') return llavaSpecializations(m, s, (decode) => langBatch(s, decode));
  if (m.family === 'mistral3') return mistral3Specializations(m, s, (decode) => langBatch(s, decode));
  if (m.family === 'internvl') return internvlSpecializations(m, s, (decode) => langBatch(s, decode));
  if (m.family === 'llama4') return llama4Specializations(m, s, (decode) => langBatch(s, decode));
  if (s.imgSize !== undefined)
    throw new UsageError(`compile: --img-size is Gemma 3's; a ${m.family} export takes --img-height and --img-width`);
  if ((s.height === undefined) !== (s.width === undefined))
    throw new UsageError('compile: give --img-height and --img-width together (QEfficient falls back to both defaults otherwise)');
  const height = s.height ?? QWEN_VL_DEFAULT_HEIGHT;
  const width = s.width ?? QWEN_VL_DEFAULT_WIDTH;
  const qwen3 = m.family === 'qwen3_vl';
  const factor = qwen3 ? 32 : 28;
  const [rh, rw] = smartResize(height, width, factor, 4 * factor * factor, 16384 * factor * factor);
  const time = 1;
  const gridH = Math.floor(rh / m.patchSize);
  const gridW = Math.floor(rw / m.patchSize);
  // QEfficient's factors (28, 32) are patch × merge of the published models; a model whose patch
  // differs can get a grid the merger cannot pool — refused rather than handed to the compiler
  if (m.mergeSize !== 2)
    throw new UsageError(
      `compile: QEfficient's vision_size (grid // 4) assumes a 2x2 patch merger; this model merges ${m.mergeSize}x${m.mergeSize}`,
    );
  if (gridH % 2 || gridW % 2)
    throw new UsageError(
      `compile: an image of ${height}x${width} resizes to ${rh}x${rw} = ${gridH}x${gridW} patches, which the 2x2 patch merger cannot pool: choose another --img-height/--img-width`,
    );
  const visionSize = Math.floor((gridH * gridW) / 4) * time;
  requireVisionBelowCtx(
    visionSize,
    s.ctxLen,
    `an image of ${height}x${width} gives`,
    ': give a smaller --img-height/--img-width or a larger --ctx-len',
  );
  const vision: VlmSpecialization = [
    ['batch_size', s.batchSize],
    ['vision_size', visionSize],
    ['grid_height', gridH * gridW * time * s.batchSize],
    ['grid_width', m.patchSize * m.patchSize * m.temporalPatchSize * 3],
    ['grid_h', gridH],
    ['grid_w', gridW],
    ...(qwen3 ? ([['time', time]] as VlmSpecialization) : []),
    ...(qwen3 ? ([['num_feature_layers', m.numFeatureLayers]] as VlmSpecialization) : []),
  ];
  const lang = (decode: boolean): VlmSpecialization => [
    ...langBatch(s, decode),
    ['seq_len', decode ? 1 : s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ['vision_size', visionSize],
    ['vision_batch_size', s.batchSize],
    ...(qwen3 ? ([['num_feature_layers', m.numFeatureLayers]] as VlmSpecialization) : []),
  ];
  return { vision: [vision], lang: [lang(false), lang(true)] };
}

function gemma3Specializations(m: VlmModelFacts, s: VlmSizes): VlmSpecializations {
  refuseImageSides(s, 'a Gemma 3');
  const imgSize = s.imgSize ?? m.imageSize!;
  const mm = m.mmTokensPerImage ?? 256;
  const vision: VlmSpecialization = [
    ['batch_size', s.batchSize],
    ['img_size', imgSize],
    ['seq_len', s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
  ];
  const lang = (decode: boolean): VlmSpecialization => [
    ...langBatch(s, decode),
    ['seq_len', decode ? '1' : s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ['sliding_window', m.slidingWindow!],
    ['img_size', imgSize],
    // QEfficient #1029 renamed the symbol vision_size (its value still mm_tokens_per_image, default 256)
    ['vision_size', mm],
    ['vision_batch_size', s.batchSize],
  ];
  return { vision: [vision], lang: [lang(false), lang(true)] };
}
