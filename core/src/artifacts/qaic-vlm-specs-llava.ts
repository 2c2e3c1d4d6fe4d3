/**
 * QEfficient's specializations for LLaVA and LLaVA-NeXT (quic/efficient-transformers main
 * ebf55e8159c8b87bff6d8028541b824244b16c81, `get_specializations(kv_offload=True)` of
 * QEfficient/transformers/models/llava/modeling_llava.py and llava_next/modeling_llava_next.py):
 *
 * - LLaVA: Vision `{batch_size, max_num_images, img_size}`; language entries `{batch_size,
 *   seq_len, ctx_len, max_num_images, img_size, vision_size, vision_batch_size}` with
 *   vision_size = (img_size // patch_size)², decode seq_len the string "1"; defaults prefill 592,
 *   ctx 1024 (the module's SEQ_LEN / CTX_LEN).
 * - LLaVA-NeXT: both add `image_size_height`, `image_size_width`, `num_patches`; defaults
 *   prefill 5500, ctx 6000 (constants.GRANITEVISION_SEQ_LEN / _CTX_LEN), image 1109 × 1610.
 *
 * Deliberate differences (QEfficient is Granite Vision's numbers there): LLaVA-NeXT's
 * num_patches and vision_size are computed for the image size compiled for (`--img-height` /
 * `--img-width`, default QEfficient's 1109 × 1610) by anyres (run/vlm/anyres.ts) rather than fixed
 * at 10 and 5239, and the Vision entry carries vision_size too: our vision graph packs by an
 * index input of that length (QEfficient's traces the image size into the graph). LLaVA's
 * vision_size is the tokens per image of the export (the same number under the default
 * strategy; one more under "full", which QEfficient's formula misses).
 */
import { UsageError } from '../errors';
import { anyresLayout, packIndex } from './anyres';
import {
  type LangBatch,
  refuseImageSides,
  requireVisionBelowCtx,
  type VlmImageSizes,
  type VlmSpecialization,
  type VlmSpecializations,
} from './qaic-vlm-spec-kit';

/** The model facts read here (a subset of qaic-vlm-specs.ts VlmModelFacts). */
interface LlavaFacts {
  family: string;
  patchSize: number;
  imageSize?: number;
  mmTokensPerImage?: number;
  pinpoints?: [number, number][];
}

/** QEfficient's default image for LLaVA-NeXT (constants.GRANITEVISION_IMG_SIZE_HEIGHT / _WIDTH). */
export const LLAVA_NEXT_DEFAULT_IMAGE: [number, number] = [1109, 1610];

/** LLaVA / LLaVA-NeXT specializations of `m` at `s`. */
export function llavaSpecializations(m: LlavaFacts, s: VlmImageSizes, langBatch: LangBatch): VlmSpecializations {
  const next = m.family === 'llava_next';
  if (!next) refuseImageSides(s, 'a LLaVA');
  if ((s.height === undefined) !== (s.width === undefined))
    throw new UsageError('compile: give --img-height and --img-width together (QEfficient falls back to both defaults otherwise)');
  const imgSize = s.imgSize ?? m.imageSize!;
  const common: VlmSpecialization = [];
  let visionSize = m.mmTokensPerImage!;
  if (next) {
    const size: [number, number] = s.height !== undefined ? [s.height, s.width!] : LLAVA_NEXT_DEFAULT_IMAGE;
    const { patches } = anyresLayout(size, m.pinpoints!, imgSize);
    visionSize = packIndex(size, m.pinpoints!, imgSize, imgSize / m.patchSize).length;
    common.push(['image_size_height', size[0]], ['image_size_width', size[1]], ['num_patches', patches]);
  }
  requireVisionBelowCtx(visionSize, s.ctxLen, 'an image gives');
  common.push(['max_num_images', 1], ['img_size', imgSize]);
  const vision: VlmSpecialization = [
    ['batch_size', s.batchSize],
    ...common,
    ...(next ? ([['vision_size', visionSize]] as VlmSpecialization) : []),
  ];
  const lang = (decode: boolean): VlmSpecialization => [
    ...langBatch(decode),
    ['seq_len', decode ? '1' : s.prefillSeqLen],
    ['ctx_len', s.ctxLen],
    ...common,
    ['vision_size', visionSize],
    ['vision_batch_size', s.batchSize],
  ];
  return { vision: [vision], lang: [lang(false), lang(true)] };
}
