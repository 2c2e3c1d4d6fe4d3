/**
 * Mistral 3 (Mistral-Small-3.1 / 3.2) config.json → what both graphs need: the Pixtral tower
 * (HF models/pixtral/configuration_pixtral.py PixtralVisionConfig), the projector
 * (models/mistral3/modeling_mistral3.py Mistral3MultiModalProjector: RMSNorm with the text
 * model's eps, `spatial_merge_size` patch merger, linear-act-linear with biases when
 * `multimodal_projector_bias`), the image token and the text model of `text_config` (any
 * registry family, keys under `language_model.`). Defaults follow Mistral3Config.
 */
import { z } from 'zod';
import type { Act, ArchSpec } from '../blocks/arch';
import { actOf, parseWith, refuse } from '../families/config';
import { wrappedTextArch } from './config-llava';

/** The Pixtral vision tower (PixtralVisionModel). */
export interface PixtralArch {
  layers: number;
  hidden: number;
  nHeads: number;
  headDim: number;
  intermediate: number;
  act: Act;
  channels: number;
  /** image_size / patch_size: the rotary table's side (HF `max_patches_per_side`). */
  maxSide: number;
  imageSize: number;
  patch: number;
  ropeTheta: number;
}

/** Both graphs' view of a `mistral3` config. */
export interface Mistral3Arch {
  modelType: 'mistral3';
  vision: PixtralArch;
  /** Hidden state (0 = ln_pre's output … layers) the projector reads. */
  featureLayer: number;
  merge: number;
  projector: { act: Act; bias: boolean; eps: number };
  text: ArchSpec;
  imageTokenId: number;
}

const int = z.number().int();
const pos = int.positive();
const visionSchema = z.looseObject({
  hidden_size: pos.optional(),
  intermediate_size: pos.optional(),
  num_hidden_layers: pos.optional(),
  num_attention_heads: pos.optional(),
  num_channels: pos.optional(),
  image_size: pos.optional(),
  patch_size: pos.optional(),
  hidden_act: z.string().optional(),
  rope_theta: z.number().positive().optional(),
  head_dim: pos.nullable().optional(),
  rope_parameters: z.looseObject({ rope_type: z.string().optional(), rope_theta: z.number().positive().optional() }).optional(),
});
const schema = z.looseObject({
  image_token_index: int.nonnegative().optional(),
  image_token_id: int.nonnegative().optional(),
  vision_feature_layer: z.union([int, z.array(int)]).optional(),
  projector_hidden_act: z.string().optional(),
  multimodal_projector_bias: z.boolean().optional(),
  spatial_merge_size: pos.optional(),
  tie_word_embeddings: z.boolean().optional(),
  text_config: z.record(z.string(), z.unknown()).optional(),
  vision_config: visionSchema.optional(),
});

function pixtralArch(raw: z.infer<typeof visionSchema>, file: string): PixtralArch {
  const at = (f: string) => `vision_config.${f}`;
  const hidden = raw.hidden_size ?? 1024;
  const nHeads = raw.num_attention_heads ?? 16;
  if (hidden % nHeads !== 0) refuse(file, at('hidden_size'), `(${hidden}) is not divisible by num_attention_heads (${nHeads})`);
  // PixtralAttention splits heads by hidden_size // num_attention_heads while the rotary table is
  // built over head_dim: a config where they differ has no consistent reading
  const headDim = hidden / nHeads;
  if (raw.head_dim != null && raw.head_dim !== headDim)
    refuse(
      file,
      at('head_dim'),
      `(${raw.head_dim}) differs from hidden_size / num_attention_heads (${headDim}), which PixtralAttention uses`,
    );
  if (headDim % 4 !== 0)
    refuse(file, at('head_dim'), `(${headDim}) is not a multiple of 4 (the 2-D rotary splits head_dim / 2 into rows and columns)`);
  const ropeType = raw.rope_parameters?.rope_type;
  if (ropeType !== undefined && ropeType !== 'default')
    refuse(file, at('rope_parameters.rope_type'), `is "${ropeType}" (Pixtral only has the default 2-D rotary)`);
  const imageSize = raw.image_size ?? 1024;
  const patch = raw.patch_size ?? 16;
  return {
    layers: raw.num_hidden_layers ?? 24,
    hidden,
    nHeads,
    headDim,
    intermediate: raw.intermediate_size ?? 4096,
    act: actOf(raw.hidden_act ?? 'gelu', file, at('hidden_act')),
    channels: raw.num_channels ?? 3,
    maxSide: Math.floor(imageSize / patch),
    imageSize,
    patch,
    ropeTheta: raw.rope_parameters?.rope_theta ?? raw.rope_theta ?? 10000,
  };
}

/** Parses a `mistral3` config.json. */
export function mistral3Arch(raw: unknown, file: string): Mistral3Arch {
  const c = parseWith(schema, raw, file);
  const vision = pixtralArch(c.vision_config ?? {}, file);
  const layer = c.vision_feature_layer ?? -1;
  // Mistral3MultiModalProjector's norm and patch merger are sized for ONE hidden state
  if (Array.isArray(layer))
    refuse(file, 'vision_feature_layer', 'is a list: the Mistral 3 projector (RMSNorm, patch merger) is sized for one hidden state');
  const featureLayer = layer < 0 ? vision.layers + 1 + layer : layer;
  if (featureLayer < 0 || featureLayer > vision.layers)
    refuse(file, 'vision_feature_layer', `names hidden state ${layer}, but the tower has ${vision.layers + 1} (0 … ${vision.layers})`);
  const text = wrappedTextArch(c.text_config, c.tie_word_embeddings, 'mistral', file, 'Mistral 3');
  const eps = (c.text_config?.rms_norm_eps as number | undefined) ?? 1e-6;
  return {
    modelType: 'mistral3',
    vision,
    featureLayer,
    merge: c.spatial_merge_size ?? 2,
    projector: {
      act: actOf(c.projector_hidden_act ?? 'gelu', file, 'projector_hidden_act'),
      bias: c.multimodal_projector_bias ?? false,
      eps,
    },
    text,
    imageTokenId: c.image_token_index ?? c.image_token_id ?? 10,
  };
}
