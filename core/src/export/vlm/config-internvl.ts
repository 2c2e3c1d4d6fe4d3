/**
 * InternVL 3 / 3.5 (Hugging Face's native `internvl` model_type) config.json → what both graphs
 * need: the InternViT tower (HF models/internvl/configuration_internvl.py InternVLVisionConfig),
 * the pixel shuffle by `downsample_ratio`, the projector (LayerNorm, linear, act, linear), the
 * `<IMG_CONTEXT>` token and the text model of `text_config` (any registry family, keys under
 * `language_model.`; Qwen2 by default). Defaults follow InternVLConfig / InternVLVisionConfig.
 * QEfficient (QEfficient/transformers/models/internvl/) loads the remote-code layout
 * (`vision_model.*`, `mlp1.*`) instead; the math is the same.
 */
import { z } from 'zod';
import type { Act, ArchSpec } from '../blocks/arch';
import { actOf, parseWith, refuse } from '../families/config';
import { wrappedTextArch } from './config-llava';

/** The InternViT tower (InternVLVisionModel). */
export interface InternVisionArch {
  layers: number;
  hidden: number;
  nHeads: number;
  intermediate: number;
  act: Act;
  channels: number;
  imageSize: number;
  patch: number;
  /** `norm_type`: the blocks' layernorm_before / layernorm_after. */
  norm: 'layer' | 'rms';
  eps: number;
  /** `attention_bias`: q/k/v projections carry biases (projection_layer always does). */
  qkvBias: boolean;
  /** `use_qk_norm`: RMSNorm over the whole width of q and k before the head split. */
  qkNorm: boolean;
  /** `use_absolute_position_embeddings`. */
  positions: boolean;
  /** `use_mean_pooling` false: a final LayerNorm on last_hidden_state. */
  finalNorm: boolean;
}

/** Both graphs' view of an `internvl` config. */
export interface InternVLArch {
  modelType: 'internvl';
  vision: InternVisionArch;
  /** Hidden state (0 = embeddings … layers) the projector reads. */
  featureLayer: number;
  /** `vision_feature_layer` -1: last_hidden_state (after the final LayerNorm when there is one), not hidden_states[layers]. */
  lastHidden: boolean;
  /** 1 / downsample_ratio: the pixel shuffle's cell side. */
  shuffle: number;
  projector: { act: Act };
  /** Tokens per tile: (S/patch / shuffle)². */
  tileTokens: number;
  text: ArchSpec;
  imageTokenId: number;
}

const int = z.number().int();
const pos = int.positive();
const side = z.union([pos, z.array(pos).length(2)]);
const visionSchema = z.looseObject({
  hidden_size: pos.optional(),
  intermediate_size: pos.optional(),
  num_hidden_layers: pos.optional(),
  num_attention_heads: pos.optional(),
  num_channels: pos.optional(),
  image_size: side.optional(),
  patch_size: side.optional(),
  hidden_act: z.string().optional(),
  norm_type: z.string().optional(),
  layer_norm_eps: z.number().positive().optional(),
  attention_bias: z.boolean().optional(),
  use_qk_norm: z.boolean().optional(),
  use_absolute_position_embeddings: z.boolean().optional(),
  use_mean_pooling: z.boolean().optional(),
  use_mask_token: z.boolean().optional(),
});
const schema = z.looseObject({
  image_token_id: int.nonnegative().optional(),
  image_token_index: int.nonnegative().optional(),
  image_seq_length: pos.optional(),
  downsample_ratio: z.number().positive().optional(),
  vision_feature_layer: z.union([int, z.array(int)]).optional(),
  vision_feature_select_strategy: z.string().optional(),
  projector_hidden_act: z.string().optional(),
  tie_word_embeddings: z.boolean().optional(),
  text_config: z.record(z.string(), z.unknown()).optional(),
  vision_config: visionSchema.optional(),
});

/** An int or a square [h, w] pair (HF accepts both); a non-square one is refused by name. */
function squareSide(x: number | number[] | undefined, dflt: number, file: string, field: string): number {
  if (x === undefined) return dflt;
  if (typeof x === 'number') return x;
  if (x[0] !== x[1]) refuse(file, field, `is ${x[0]}×${x[1]}; InternVL reshapes the patches to a square (feature_size²)`);
  return x[0]!;
}

function visionArch(raw: z.infer<typeof visionSchema>, file: string): InternVisionArch {
  const at = (f: string) => `vision_config.${f}`;
  const hidden = raw.hidden_size ?? 1024;
  const nHeads = raw.num_attention_heads ?? 16;
  if (hidden % nHeads !== 0) refuse(file, at('hidden_size'), `(${hidden}) is not divisible by num_attention_heads (${nHeads})`);
  const normType = raw.norm_type ?? 'layer_norm';
  if (normType !== 'layer_norm' && normType !== 'rms_norm')
    refuse(file, at('norm_type'), `is "${normType}" (InternVLVisionLayer has layer_norm and rms_norm)`);
  const imageSize = squareSide(raw.image_size, 448, file, at('image_size'));
  const patch = squareSide(raw.patch_size, 14, file, at('patch_size'));
  if (imageSize % patch !== 0) refuse(file, at('image_size'), `(${imageSize}) is not a multiple of patch_size (${patch})`);
  return {
    layers: raw.num_hidden_layers ?? 24,
    hidden,
    nHeads,
    intermediate: raw.intermediate_size ?? 4096,
    act: actOf(raw.hidden_act ?? 'gelu', file, at('hidden_act')),
    channels: raw.num_channels ?? 3,
    imageSize,
    patch,
    norm: normType === 'rms_norm' ? 'rms' : 'layer',
    eps: raw.layer_norm_eps ?? 1e-6,
    qkvBias: raw.attention_bias ?? false,
    qkNorm: raw.use_qk_norm ?? false,
    positions: raw.use_absolute_position_embeddings ?? true,
    finalNorm: !(raw.use_mean_pooling ?? true),
  };
}

/** Parses an `internvl` config.json. */
export function internvlArch(raw: unknown, file: string): InternVLArch {
  const c = parseWith(schema, raw, file);
  const vision = visionArch(c.vision_config ?? {}, file);
  const layer = c.vision_feature_layer ?? -1;
  // InternVLModel.get_image_features reshapes ONE hidden state into the square the shuffle cuts
  if (Array.isArray(layer)) refuse(file, 'vision_feature_layer', 'is a list: InternVL reads one hidden state');
  const featureLayer = layer < 0 ? vision.layers + 1 + layer : layer;
  if (featureLayer < 0 || featureLayer > vision.layers)
    refuse(file, 'vision_feature_layer', `names hidden state ${layer}, but the tower has ${vision.layers + 1} (0 … ${vision.layers})`);
  const strategy = c.vision_feature_select_strategy ?? 'default';
  if (strategy !== 'default' && strategy !== 'full')
    refuse(file, 'vision_feature_select_strategy', `is "${strategy}" (InternVL has "default" and "full")`);
  // "full" keeps CLS: 1 + side² rows do not form the square get_image_features reshapes to
  if (strategy === 'full') refuse(file, 'vision_feature_select_strategy', 'is "full": CLS + patches do not reshape to a square');
  const ratio = c.downsample_ratio ?? 0.5;
  const shuffle = Math.round(1 / ratio);
  const grid = vision.imageSize / vision.patch;
  if (Math.abs(shuffle * ratio - 1) > 1e-9 || grid % shuffle !== 0)
    refuse(file, 'downsample_ratio', `(${ratio}) must be 1/n with n dividing the ${grid}×${grid} patch grid`);
  const tileTokens = (grid / shuffle) ** 2;
  if (c.image_seq_length !== undefined && c.image_seq_length !== tileTokens)
    refuse(
      file,
      'image_seq_length',
      `(${c.image_seq_length}) differs from the tower's tokens per tile ((${grid}/${shuffle})² = ${tileTokens})`,
    );
  return {
    modelType: 'internvl',
    vision,
    featureLayer,
    lastHidden: layer === -1,
    shuffle,
    projector: { act: actOf(c.projector_hidden_act ?? 'gelu', file, 'projector_hidden_act') },
    tileTokens,
    text: wrappedTextArch(c.text_config, c.tie_word_embeddings, 'qwen2', file, 'InternVL'),
    imageTokenId: c.image_token_id ?? c.image_token_index ?? 151667,
  };
}
