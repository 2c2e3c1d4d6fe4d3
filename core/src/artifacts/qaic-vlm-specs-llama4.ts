/**
 * QEfficient's specializations for Llama 4 (quic/efficient-transformers main
 * ebf55e8159c8b87bff6d8028541b824244b16c81, `get_specializations(kv_offload=True)` of
 * QEfficient/transformers/models/llama4/modeling_llama4.py): Vision `{batch_size, max_num_tiles,
 * img_size}`; language entries `{batch_size, seq_len, ctx_len, max_num_tiles, img_size,
 * vision_size, chunk_length, chunk_ctx_len}` with vision_size = num_features_per_tile ·
 * max_num_tiles (num_features_per_tile = (img_size // patch_size)² // round(1 / ratio²)),
 * chunk_length = prefill_seq_len, chunk_ctx_len = min(ctx_len, text_config.attention_chunk_size);
 * decode seq_len 1; defaults max_num_tiles 17 (QEfficient's fallback when the caller gives
 * none), img_size = vision_config.image_size, prefill 32, ctx_len constants.INTERN_CTX_LEN
 * (4096); prefill and ctx_len at most constants.LLAMA4_MAX_POSITION_EMBEDDINGS (65536).
 *
 * Deliberate differences: QEfficient's language graph takes 2-D `vision_embeds [vision_size,
 * hidden]`; ours takes `[vision_batch_size, vision_size, hidden]` with one row per tile (the
 * LLaVA wrapper's form), so our language entries carry vision_batch_size = max_num_tiles and
 * vision_size = num_features_per_tile (the rows of one tile), and the Vision entry our output's
 * `max_num_tiles` only (already QEfficient's). chunk_length / chunk_ctx_len are symbols of
 * QEfficient's chunked cache; our language graph (the llama4 text graph) keeps every layer's
 * cache at ctx_len, so they name nothing in it and are passed as QEfficient passes them.
 */
import { UsageError } from '../errors';
import {
  type LangBatch,
  refuseImageSides,
  requireVisionBelowCtx,
  type VlmImageSizes,
  type VlmSpecialization,
  type VlmSpecializations,
} from './qaic-vlm-spec-kit';

/** The model facts read here (a subset of qaic-vlm-specs.ts VlmModelFacts). */
interface Llama4Facts {
  patchSize: number;
  imageSize?: number;
  /** The rows of one tile (vlm.json mm_tokens_per_image). */
  mmTokensPerImage?: number;
  /** text_config.attention_chunk_size (QEfficient's default 8192 when absent). */
  attentionChunk?: number;
}

/** QEfficient's `max_num_tiles` when the compile gives none. */
export const LLAMA4_DEFAULT_MAX_NUM_TILES = 17;
const MAX_POSITIONS = 65536;

/** Llama 4 specializations of `m` at `s`; `langBatch` is qaic-vlm-specs.ts's CB rule. */
export function llama4Specializations(m: Llama4Facts, s: VlmImageSizes, langBatch: LangBatch): VlmSpecializations {
  refuseImageSides(s, 'a Llama 4');
  if (s.prefillSeqLen > MAX_POSITIONS || s.ctxLen > MAX_POSITIONS)
    throw new UsageError(
      `compile: prefill ${s.prefillSeqLen} / ctx_len ${s.ctxLen} exceed Llama 4's ${MAX_POSITIONS} positions (QEfficient's LLAMA4_MAX_POSITION_EMBEDDINGS)`,
    );
  const img = s.imgSize ?? m.imageSize!;
  const tiles = LLAMA4_DEFAULT_MAX_NUM_TILES;
  const perTile = m.mmTokensPerImage!;
  const visionSize = perTile * tiles;
  requireVisionBelowCtx(visionSize, s.ctxLen, `${tiles} tiles of ${perTile} rows give`);
  const chunkCtx = Math.min(s.ctxLen, m.attentionChunk ?? 8192);
  const vision: VlmSpecialization = [
    ['batch_size', s.batchSize],
    ['max_num_tiles', tiles],
    ['img_size', img],
  ];
  const lang = (decode: boolean): VlmSpecialization => [
    ...langBatch(decode),
    ['seq_len', decode ? 1 : s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ['max_num_tiles', tiles],
    ['img_size', img],
    ['vision_size', perTile],
    ['chunk_length', s.prefillSeqLen],
    ['chunk_ctx_len', chunkCtx],
    ['vision_batch_size', tiles],
  ];
  return { vision: [vision], lang: [lang(false), lang(true)] };
}
