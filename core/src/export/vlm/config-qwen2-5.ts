/**
 * Qwen2.5-VL config.json → {@link VlmArch}. Field meanings and defaults follow HF
 * `models/qwen2_5_vl/configuration_qwen2_5_vl.py` (Qwen2_5_VLVisionConfig, Qwen2_5_VLConfig):
 * the text fields sit at the top level in the published layout (newer saves nest them in
 * `text_config`, read when present), the checkpoint uses the Hub's keys `visual.*`, `model.*`
 * and `lm_head.*` (absent when the head is tied).
 */
import { z } from 'zod';
import { actOf, parseWith, refuse } from '../families/config';
import { textArch, type VisionArch, type VlmArch } from './config';

const int = z.number().int().positive();
const visionConfig = z.looseObject({
  depth: int.optional(),
  hidden_size: int.optional(),
  hidden_act: z.string().optional(),
  intermediate_size: int.optional(),
  num_heads: int.optional(),
  in_channels: int.optional(),
  patch_size: int.optional(),
  spatial_merge_size: int.optional(),
  temporal_patch_size: int.optional(),
  window_size: int.optional(),
  out_hidden_size: int.optional(),
  fullatt_block_indexes: z.array(z.number().int().nonnegative()).optional(),
});
const topConfig = z.looseObject({
  image_token_id: z.number().int().nonnegative().optional(),
  video_token_id: z.number().int().nonnegative().optional(),
  vision_start_token_id: z.number().int().nonnegative().optional(),
  tie_word_embeddings: z.boolean().optional(),
  text_config: z.record(z.string(), z.unknown()).optional(),
  vision_config: z.record(z.string(), z.unknown()).optional(),
});

/** Qwen2_5_VLTextConfig's defaults for the fields the llama-like parser requires or defaults otherwise. */
const TEXT_DEFAULTS = {
  vocab_size: 152064,
  hidden_size: 8192,
  intermediate_size: 29568,
  num_hidden_layers: 80,
  num_attention_heads: 64,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
};

function visionArch(raw: Record<string, unknown>, file: string): VisionArch {
  const v = parseWith(visionConfig, raw, file);
  const at = (f: string) => `vision_config.${f}`;
  // Qwen2_5_VLVisionConfig defaults (the 7B tower)
  const hidden = v.hidden_size ?? 3584;
  const nHeads = v.num_heads ?? 16;
  const depth = v.depth ?? 32;
  const patch = v.patch_size ?? 14;
  const merge = v.spatial_merge_size ?? 2;
  if (hidden % nHeads !== 0) refuse(file, at('hidden_size'), `(${hidden}) is not divisible by num_heads (${nHeads})`);
  const headDim = hidden / nHeads;
  if (headDim % 4 !== 0) refuse(file, at('num_heads'), `gives head_dim ${headDim}; the 2-D vision rotary needs a multiple of 4`);
  // get_window_index: vit_merger_window_size = window_size // spatial_merge_size // patch_size
  const units = Math.floor(Math.floor((v.window_size ?? 112) / merge) / patch);
  if (units < 1) refuse(file, at('window_size'), `(${v.window_size}) is smaller than spatial_merge_size · patch_size (${merge * patch})`);
  const fullAtt = v.fullatt_block_indexes ?? [7, 15, 23, 31];
  for (const b of fullAtt) if (b >= depth) refuse(file, at('fullatt_block_indexes'), `names block ${b} but depth is ${depth}`);
  return {
    kind: 'qwen2_5_vl',
    depth,
    hidden,
    nHeads,
    headDim,
    intermediate: v.intermediate_size ?? 3420,
    act: actOf(v.hidden_act ?? 'silu', file, at('hidden_act')),
    patch,
    temporalPatch: v.temporal_patch_size ?? 2,
    inChannels: v.in_channels ?? 3,
    merge,
    outHidden: v.out_hidden_size ?? 3584,
    numPositions: 0,
    side: 0,
    deepstack: [],
    prefix: 'visual',
    window: { units, fullAtt },
  };
}

/** Parses a Qwen2.5-VL config.json into both architectures. */
export function qwen25VlArch(raw: Record<string, unknown>, file: string): VlmArch {
  const c = parseWith(topConfig, raw, file);
  const vision = visionArch(c.vision_config ?? {}, file);
  const nested = c.text_config !== undefined;
  const textRaw: Record<string, unknown> = { ...TEXT_DEFAULTS, ...(c.text_config ?? raw) };
  const tied = c.tie_word_embeddings ?? (textRaw.tie_word_embeddings as boolean | undefined) ?? false;
  const { text, section } = textArch('qwen2_5_vl', textRaw, tied, file, { field: nested ? 'text_config.' : '', keys: 'model' });
  if (vision.outHidden !== text.hidden)
    refuse(file, 'vision_config.out_hidden_size', `(${vision.outHidden}) differs from the text hidden_size (${text.hidden})`);
  return {
    modelType: 'qwen2_5_vl',
    vision,
    text,
    mropeSection: section,
    mropeInterleaved: false,
    imageTokenId: c.image_token_id ?? 151655,
    videoTokenId: c.video_token_id ?? 151656,
    visionStartTokenId: c.vision_start_token_id ?? 151652,
  };
}
