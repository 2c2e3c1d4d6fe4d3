/**
 * `<out>/vlm.json`: what ties a VLM export's two graph folders together (export writes it
 * last; `run`, `compile` and the editor read it) — the one reader and writer, through the
 * zod schema.
 */
import path from 'node:path';
import { z } from 'zod';
import { FormatError } from '../errors';
import { EXPORT_DTYPES } from '../formats/dtype';
import { readJsonTextSync } from '../paths';
import { VLM_MANIFEST_FILE } from '../spec/file-names';

const int = z.number().int();
/** A graph folder: a plain name inside the export directory. */
const graphDir = z.string();

const vlmSchema = z.object({
  tool: z.literal('weight-spec export'),
  kind: z.literal('vlm'),
  model_type: z.string(),
  config: z.string(),
  graphs: z.object({ vision: graphDir, language: graphDir }),
  image_token_id: int,
  video_token_id: int,
  vision_start_token_id: int,
  vision: z.looseObject({ patch_size: int, temporal_patch_size: int, spatial_merge_size: int, in_channels: int, num_feature_layers: int }),
  /** Gemma 3 / LLaVA: the processor's fixed square size and the image tokens per image (per tile for LLaVA-NeXT; absent for the Qwen VLMs). */
  image_size: int.optional(),
  mm_tokens_per_image: int.optional(),
  /** Gemma 3: the end-of-image token closing each expanded image (`eoi_token_index`). */
  image_end_token_id: int.optional(),
  /** LLaVA-NeXT: the anyres resolutions `[height, width]` (`image_grid_pinpoints`); LLaVA's image_size / mm_tokens_per_image are per tile. */
  image_grid_pinpoints: z.array(z.tuple([int, int])).optional(),
  text: z.looseObject({ hidden_size: int, num_hidden_layers: int }),
  dtype: z.enum(EXPORT_DTYPES),
});

/** What `run` reads from `<out>/vlm.json`. */
export type VlmManifest = z.infer<typeof vlmSchema>;

/** Reads and checks `<dir>/vlm.json` (FormatError naming the file). */
export function readVlmManifest(dir: string): VlmManifest {
  const file = path.join(dir, VLM_MANIFEST_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readJsonTextSync(file));
  } catch (e) {
    throw new FormatError(file, `cannot read: ${(e as Error).message.split('\n')[0]}`);
  }
  const r = vlmSchema.safeParse(raw);
  if (!r.success) throw new FormatError(file, 'not a weight-spec VLM export manifest (kind "vlm", token ids, vision sizes, graphs)');
  const m = r.data;
  for (const g of [m.graphs.vision, m.graphs.language])
    if (g.includes('/') || g.includes('\\') || g === '..' || g === '.')
      throw new FormatError(file, `graph directory "${g}" must be a plain name`);
  return m;
}

/** The text export writes as vlm.json. */
export function vlmManifestText(m: VlmManifest): string {
  return JSON.stringify(m, null, 2) + '\n';
}
