/**
 * LlavaProcessor / LlavaNextProcessor's prompt expansion at the token level (HF
 * models/llava/processing_llava.py, models/llava_next/processing_llava_next.py): each `<image>`
 * token of a prompt that holds one per image becomes as many image tokens as the image has
 * feature rows. The count comes from the model's processor_config.json (`patch_size`,
 * `num_additional_image_tokens`, `vision_feature_select_strategy`) as the processor computes it:
 *   LLaVA       (S / patch)² + num_additional_image_tokens − (1 under "default")
 *   LLaVA-NeXT  the same base rows, plus the unpadded tile map's rows with one newline each
 *               (anyres.ts packIndex: one function for the count and for the packing)
 * and must equal the rows the vision graph gives (refused with one line otherwise). A prompt
 * whose image tokens already match the rows passes through.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError } from '../../errors';
import { readRegularFileSync } from '../../paths';
import type { VlmManifest } from '../../artifacts/vlm-manifest';
import { packIndex } from '../../artifacts/anyres';
import type { VlmImages } from './vlm-runner';

/** The processor's tokens per image (per tile) from processor_config.json, refused unless the graph's. */
function checkProcessor(m: VlmManifest): void {
  const S = m.image_size!;
  const file = path.join(path.dirname(m.config), 'processor_config.json');
  if (fs.existsSync(file)) {
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(readRegularFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      throw new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
    }
    const patch = raw.patch_size ?? m.vision.patch_size;
    const extra = raw.num_additional_image_tokens ?? 0;
    const strategy = raw.vision_feature_select_strategy ?? 'default';
    if (typeof patch !== 'number' || typeof extra !== 'number' || (strategy !== 'default' && strategy !== 'full'))
      throw new FormatError(
        file,
        '"patch_size" / "num_additional_image_tokens" / "vision_feature_select_strategy" are not numbers / default|full',
      );
    const base = Math.floor(S / patch) ** 2 + extra - (strategy === 'default' ? 1 : 0);
    if (base !== m.mm_tokens_per_image)
      throw new FormatError(
        file,
        `gives ${base} image tokens per ${m.image_grid_pinpoints ? 'tile' : 'image'} but the exported vision graph gives ${m.mm_tokens_per_image} (config.json's vision_feature_select_strategy / patch size differ)`,
      );
  }
}

/** Rows per image of `images` for the LLaVA export `m` (the vision graph's). */
function rowsPerImage(m: VlmManifest, images: VlmImages): number[] {
  const S = m.image_size!;
  const side = S / m.vision.patch_size;
  if (!m.image_grid_pinpoints) return images.grids.map(() => m.mm_tokens_per_image!);
  return (images.imageSizes ?? []).map((size) => packIndex(size, m.image_grid_pinpoints!, S, side).length);
}

/** Expands one `<image>` per image to its rows for a LLaVA export; other models' ids pass through. */
export function expandLlavaPrompt(ids: number[], m: VlmManifest, images: VlmImages | undefined): number[] {
  if ((m.model_type !== 'llava' && m.model_type !== 'llava_next') || !images) return ids;
  const at = ids.flatMap((t, k) => (t === m.image_token_id ? [k] : []));
  const rows = rowsPerImage(m, images);
  const total = rows.reduce((a, b) => a + b, 0);
  if (at.length === total || at.length !== rows.length) return ids;
  checkProcessor(m);
  let n = 0;
  return ids.flatMap((t) => (t === m.image_token_id ? new Array<number>(rows[n++]!).fill(t) : [t]));
}
