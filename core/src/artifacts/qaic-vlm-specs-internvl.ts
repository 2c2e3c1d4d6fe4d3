/**
 * QEfficient's specializations for InternVL (quic/efficient-transformers main
 * ebf55e8159c8b87bff6d8028541b824244b16c81, `get_specializations(kv_offload=True)` of
 * QEfficient/transformers/models/internvl/modeling_internvl.py): Vision `{batch_size,
 * num_patches, img_size, batched_num_patches}`; language entries `{batch_size, seq_len, ctx_len,
 * num_patches, img_size, vision_size}` with vision_size = batch_size · num_patches ·
 * (img_size // patch_size · downsample_ratio)², decode seq_len the string "1"; defaults
 * num_patches constants.INTERN_NUM_PATCHES (13), prefill INTERN_PREFILL_SEQ_LEN (4096 − 256),
 * ctx_len INTERN_CTX_LEN (4096), img_size = vision_config.image_size.
 *
 * Deliberate differences: QEfficient refuses an img_size other than 448 under kv_offload (its
 * remote-code checkpoints); ours compiles the export's own tile size (the position table fixes it:
 * another `--img-size` is refused). Our vision graph's output rows are named `vision_size` (its
 * dim 1) and our language graph's vision_embeds is `[vision_batch_size, vision_size, hidden]`, so
 * the Vision entry carries vision_size and the language entries vision_batch_size 1 (the encoder
 * puts every tile's rows in one batch row, as QEfficient's wrapper does). num_patches is
 * QEfficient's default (no flag sets it here yet).
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
interface InternVLFacts {
  imageSize?: number;
  mmTokensPerImage?: number;
}

/** QEfficient's `constants.INTERN_NUM_PATCHES`: tiles per image compiled for. */
export const INTERN_NUM_PATCHES = 13;

/** InternVL specializations of `m` at `s`; `langBatch` is qaic-vlm-specs.ts's CB rule. */
export function internvlSpecializations(m: InternVLFacts, s: VlmImageSizes, langBatch: LangBatch): VlmSpecializations {
  refuseImageSides(s, 'an InternVL');
  const img = s.imgSize ?? m.imageSize!;
  if (img !== m.imageSize)
    throw new UsageError(`compile: --img-size ${img} differs from the export's tile size ${m.imageSize} (its position table is fixed)`);
  const numPatches = INTERN_NUM_PATCHES;
  // (img_size // patch_size · downsample_ratio)² is the export's tokens per tile
  const visionSize = s.batchSize * numPatches * m.mmTokensPerImage!;
  requireVisionBelowCtx(visionSize, s.ctxLen, `${numPatches} tiles give`);
  const vision: VlmSpecialization = [
    ['batch_size', s.batchSize],
    ['num_patches', numPatches],
    ['img_size', img],
    ['batched_num_patches', s.batchSize * numPatches],
    ['vision_size', visionSize],
  ];
  const lang = (decode: boolean): VlmSpecialization => [
    ...langBatch(decode),
    ['seq_len', decode ? '1' : s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ['num_patches', numPatches],
    ['img_size', img],
    ['vision_size', visionSize],
    ['vision_batch_size', 1],
  ];
  return { vision: [vision], lang: [lang(false), lang(true)] };
}
