/**
 * QEfficient's specializations for Mistral 3 (quic/efficient-transformers main
 * ebf55e8159c8b87bff6d8028541b824244b16c81, `get_specializations(kv_offload=True)` of
 * QEfficient/transformers/models/mistral3/modeling_mistral3.py): Vision `{batch_size, seq_len,
 * ctx_len, image_size, vision_size}`; language entries `{batch_size, seq_len, ctx_len,
 * image_size, vision_size}` with vision_size = (img_size // patch_size)² · batch_size //
 * spatial_merge_size², decode seq_len the string "1"; defaults img_size = vision_config.image_size,
 * prefill 128, ctx_len constants.INTERN_CTX_LEN (4096); vision_size must stay below ctx_len.
 *
 * Deliberate differences: our vision graph names the image sides `image_height` /
 * `image_width` (one export serves non-square images under ORT) and its output rows
 * `image_tokens` (per image), so the Vision entry also carries those three (both sides
 * img_size, image_tokens = vision_size / batch_size); our language graph's vision_embeds is
 * `[vision_batch_size, vision_size, hidden]` (QEfficient's is 2-D), so the language entries
 * carry vision_batch_size. img_size must be a multiple of patch_size · spatial_merge_size (the
 * patch merger's cells; 1540 = 14 · 2 · 55 for Mistral-Small-3.1).
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
interface Mistral3Facts {
  patchSize: number;
  mergeSize: number;
  imageSize?: number;
}

/** Mistral 3 specializations of `m` at `s`; `langBatch` is qaic-vlm-specs.ts's CB rule. */
export function mistral3Specializations(m: Mistral3Facts, s: VlmImageSizes, langBatch: LangBatch): VlmSpecializations {
  refuseImageSides(s, 'a Mistral 3');
  const img = s.imgSize ?? m.imageSize!;
  const unit = m.patchSize * m.mergeSize;
  if (img % unit)
    throw new UsageError(
      `compile: --img-size ${img} is not a multiple of patch_size · spatial_merge_size (${unit}); the patch merger needs whole cells`,
    );
  const visionSize = Math.floor(((img / m.patchSize) ** 2 * s.batchSize) / m.mergeSize ** 2);
  requireVisionBelowCtx(visionSize, s.ctxLen, `an image of ${img}x${img} gives`);
  const vision: VlmSpecialization = [
    ['batch_size', s.batchSize],
    ['seq_len', s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ['image_size', img],
    ['vision_size', visionSize],
    ['image_height', img],
    ['image_width', img],
    ['image_tokens', visionSize / s.batchSize],
  ];
  const lang = (decode: boolean): VlmSpecialization => [
    ...langBatch(decode),
    ['seq_len', decode ? '1' : s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ['image_size', img],
    ['vision_size', visionSize],
    ['vision_batch_size', s.batchSize],
  ];
  return { vision: [vision], lang: [lang(false), lang(true)] };
}
