/**
 * The images of a VLM prompt, placed by the text: each image's placeholder (written by the
 * chat template, or by the user in `--prompt`) expanded to the token count the processor
 * gives it, on the text, as transformers' processors do before tokenizing:
 *
 * - Qwen2.5-VL / Qwen3-VL (HF `Qwen2VLProcessor.__call__`): each `<|image_pad|>` (inside
 *   `<|vision_start|>…<|vision_end|>`) becomes `grid_t·grid_h·grid_w / merge_size²` of them.
 * - Gemma 3 (HF `Gemma3Processor.__call__`): each `<start_of_image>` becomes
 *   `\n\n<start_of_image>` + `<image_soft_token>`×mm_tokens_per_image + `<end_of_image>\n\n`.
 * - Mistral 3 (HF `PixtralProcessor.__call__`): each `[IMG]` becomes its merged rows of `[IMG]`,
 *   each row closed by `[IMG_BREAK]`, the last by `[IMG_END]` (image-pixtral.ts).
 * - InternVL (HF `InternVLProcessor._insert_media_placeholders`): each `<IMG_CONTEXT>` becomes
 *   `<img>` + `<IMG_CONTEXT>`×(image_seq_length · the image's tiles) + `</img>` (image-internvl.ts).
 *
 * A `--prompt` without any placeholder gets one per image in front, in image order.
 */
import { PipelineError, UsageError } from '../../errors';
import type { VlmManifest } from '../../artifacts/vlm-manifest';
import type { TextTokenizer } from './text-tokenizer';
import { pixtralImageText } from '../vlm/image-pixtral';
import { internvlImageText } from '../vlm/image-internvl';

/** A family's placeholder: what marks one image in the text, and how it expands. */
interface Placeholder {
  /** The token counted, one per image. */
  marker: string;
  /** What `--prompt` gets in front per image when it names none. */
  prefix: string;
  /** Token text → the manifest's id it must have in the tokenizer. */
  ids: [string, number | undefined][];
  /** The text replacing the i-th marker. */
  expand(i: number): string;
}

function placeholderOf(m: VlmManifest, grids: [number, number, number][]): Placeholder {
  if (m.model_type === 'gemma3') {
    const boi = '<start_of_image>';
    const image = '<image_soft_token>';
    const eoi = '<end_of_image>';
    const seq = `\n\n${boi}${image.repeat(m.mm_tokens_per_image ?? 0)}${eoi}\n\n`;
    return {
      marker: boi,
      prefix: boi,
      ids: [
        [boi, m.vision_start_token_id],
        [image, m.image_token_id],
        [eoi, m.image_end_token_id],
      ],
      expand: () => seq,
    };
  }
  if (m.model_type === 'llava' || m.model_type === 'llava_next') {
    // LlavaProcessor: the template's (or the prompt's) <image> stays one token here; run expands
    // it to the image's feature rows after tokenizing (run/vlm/llava-prompt.ts), as the processor
    // counts them per image (anyres tiles included)
    const image = '<image>';
    return { marker: image, prefix: `${image}\n`, ids: [[image, m.image_token_id]], expand: () => image };
  }
  if (m.model_type === 'mistral3') {
    const unit = m.vision.patch_size * m.vision.spatial_merge_size;
    return {
      marker: '[IMG]',
      prefix: '[IMG]',
      ids: [['[IMG]', m.image_token_id]],
      expand: (i) => pixtralImageText([grids[i]![1], grids[i]![2]], unit),
    };
  }
  if (m.model_type === 'internvl') {
    const ctx = '<IMG_CONTEXT>';
    return {
      marker: ctx,
      prefix: `${ctx}\n`,
      ids: [[ctx, m.image_token_id]],
      expand: (i) => internvlImageText(grids[i]![0], m.mm_tokens_per_image ?? 0),
    };
  }
  const pad = '<|image_pad|>';
  const merge = m.vision.spatial_merge_size ** 2;
  return {
    marker: pad,
    prefix: `<|vision_start|>${pad}<|vision_end|>`,
    ids: [
      ['<|vision_start|>', m.vision_start_token_id],
      [pad, m.image_token_id],
    ],
    expand: (i) => pad.repeat((grids[i]![0] * grids[i]![1] * grids[i]![2]) / merge),
  };
}

/**
 * `text` with its images' placeholders expanded (see the module comment). `grids` are the
 * processed images' `[t, h, w]` in patches, in prompt order. `fromTemplate`: the chat template
 * placed them, so none placed is an error rather than a prefix.
 */
export function placeImages(
  text: string,
  m: VlmManifest,
  tok: TextTokenizer,
  grids: [number, number, number][],
  fromTemplate: boolean,
): string {
  const p = placeholderOf(m, grids);
  for (const [t, id] of p.ids) {
    const got = tok.idOf(t);
    if (id !== undefined && got !== id)
      throw new PipelineError(
        `${tok.file}: ${JSON.stringify(t)} is ${got === undefined ? 'not a token' : `token ${got}`}, but the export's vlm.json says ${id}; is this the model's tokenizer?`,
      );
  }
  let count = text.split(p.marker).length - 1;
  if (count === 0 && grids.length > 0) {
    if (fromTemplate)
      throw new UsageError(
        `run: the chat template placed no ${p.marker} for the ${grids.length} image(s); this template does not take images`,
      );
    text = p.prefix.repeat(grids.length) + text;
    count = grids.length;
  }
  if (count !== grids.length)
    throw new UsageError(
      `run: the prompt has ${count} image placeholder(s) (${p.marker}) but ${grids.length} image(s) were given (--image, in prompt order)`,
    );
  return text
    .split(p.marker)
    .map((part, k) => (k === 0 ? part : p.expand(k - 1) + part))
    .join('');
}
