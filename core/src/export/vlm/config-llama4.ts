/**
 * Llama 4 (`Llama4ForConditionalGeneration`, model_type `llama4` with a `vision_config`)
 * config.json → what both graphs need: the vision tower (HF models/llama4/configuration_llama4.py
 * Llama4VisionConfig; defaults as there), the image token (`image_token_index`, the `<|patch|>`
 * token) and the text model, which is the llama4 family's ArchSpec unchanged
 * (families/llama4.ts: `text_config`, keys under `language_model.`).
 */
import { z } from 'zod';
import type { Act, ArchSpec } from '../blocks/arch';
import { parseWith, refuse } from '../families/config';
import { llama4Arch } from '../families/llama4';

/** The Llama 4 vision tower, its pixel-shuffle adapter and the projector's sizes. */
export interface Llama4VisionArch {
  layers: number;
  hidden: number;
  nHeads: number;
  headDim: number;
  intermediate: number;
  act: Act;
  channels: number;
  imageSize: number;
  patch: number;
  /** image_size / patch_size: the patch grid's side (the rotary table and positions are fixed to it). */
  side: number;
  eps: number;
  ropeTheta: number;
  /** pixel_shuffle_ratio (0.5 in every released model): the adapter's side is side · ratio. */
  shuffleRatio: number;
  projectorInput: number;
  projectorOutput: number;
  /** vision_output_dim: the multi-modal projector's input. */
  outputDim: number;
}

/** Both graphs' view of a `llama4` config. */
export interface Llama4VlmArch {
  modelType: 'llama4';
  vision: Llama4VisionArch;
  text: ArchSpec;
  /** `<|patch|>`: the tokens the image features replace. */
  imageTokenId: number;
  /** Rows of vision_embeds per tile: (side · ratio)². */
  tileTokens: number;
}

const int = z.number().int();
const pos = int.positive();
const visionSchema = z.looseObject({
  model_type: z.string().optional(),
  hidden_size: pos.optional(),
  intermediate_size: pos.optional(),
  num_hidden_layers: pos.optional(),
  num_attention_heads: pos.optional(),
  num_channels: pos.optional(),
  image_size: pos.optional(),
  patch_size: pos.optional(),
  hidden_act: z.string().optional(),
  norm_eps: z.number().positive().optional(),
  rope_theta: z.number().positive().optional(),
  pixel_shuffle_ratio: z.number().positive().optional(),
  projector_input_dim: pos.optional(),
  projector_output_dim: pos.optional(),
  vision_output_dim: pos.optional(),
  vision_feature_layer: int.optional(),
  multi_modal_projector_bias: z.boolean().optional(),
});
const schema = z.looseObject({
  image_token_index: int.nonnegative().optional(),
  vision_config: visionSchema,
});

/** Parses a `llama4` config.json that has a vision_config. */
export function llama4VlmArch(raw: unknown, file: string): Llama4VlmArch {
  const c = parseWith(schema, raw, file);
  const v = c.vision_config;
  const at = (f: string) => `vision_config.${f}`;
  if (v.model_type !== undefined && v.model_type !== 'llama4_vision_model')
    refuse(file, at('model_type'), `is "${v.model_type}" (the Llama 4 vision tower is llama4_vision_model)`);
  const hidden = v.hidden_size ?? 768;
  const nHeads = v.num_attention_heads ?? 16;
  if (hidden % nHeads !== 0) refuse(file, at('hidden_size'), `(${hidden}) is not divisible by num_attention_heads (${nHeads})`);
  const headDim = hidden / nHeads;
  // Llama4VisionRotaryEmbedding: head_dim / 2 complex pairs, half over x and half over y
  if (headDim % 4 !== 0) refuse(file, at('num_attention_heads'), `gives head_dim ${headDim}; the 2-D vision rotary needs a multiple of 4`);
  const imageSize = v.image_size ?? 448;
  const patch = v.patch_size ?? 14;
  if (imageSize % patch !== 0) refuse(file, at('image_size'), `(${imageSize}) is not a multiple of patch_size (${patch})`);
  const side = imageSize / patch;
  const ratio = v.pixel_shuffle_ratio ?? 0.5;
  // pixel_shuffle views [side, side·r, D/r] then [side·r, side·r, D/r²]: each must be whole
  if (!Number.isInteger(side * ratio) || !Number.isInteger(hidden / ratio) || !Number.isInteger(hidden / (ratio * ratio)))
    refuse(file, at('pixel_shuffle_ratio'), `(${ratio}) does not divide the ${side}×${side} patch grid of ${hidden} features evenly`);
  const intermediate = v.intermediate_size ?? 5632;
  // Llama4VisionMLP2.fc1 takes intermediate_size features: the shuffled D / r²
  if (intermediate !== hidden / (ratio * ratio))
    refuse(
      file,
      at('intermediate_size'),
      `(${intermediate}) differs from hidden_size / pixel_shuffle_ratio² (${hidden / (ratio * ratio)}), the adapter's input`,
    );
  const projectorInput = v.projector_input_dim ?? 4096;
  const projectorOutput = v.projector_output_dim ?? 4096;
  const outputDim = v.vision_output_dim ?? 7680;
  // Llama4VisionMLP2: fc1 [intermediate → projector_input_dim], fc2 [projector_output_dim → projector_output_dim]
  if (projectorInput !== projectorOutput)
    refuse(
      file,
      at('projector_input_dim'),
      `(${projectorInput}) differs from projector_output_dim (${projectorOutput}); the adapter's fc2 takes fc1's output`,
    );
  if (outputDim !== projectorOutput)
    refuse(file, at('vision_output_dim'), `(${outputDim}) differs from projector_output_dim (${projectorOutput}), the adapter's output`);
  if (v.vision_feature_layer !== undefined && v.vision_feature_layer !== -1)
    refuse(file, at('vision_feature_layer'), `is ${v.vision_feature_layer} (Llama 4 reads the last hidden state, -1)`);
  if (v.multi_modal_projector_bias === true)
    refuse(file, at('multi_modal_projector_bias'), 'is true (Llama4MultiModalProjector has no bias)');
  const text = llama4Arch(raw, file);
  return {
    modelType: 'llama4',
    vision: {
      layers: v.num_hidden_layers ?? 34,
      hidden,
      nHeads,
      headDim,
      intermediate,
      // Llama4VisionMLP / MLP2 hard-code nn.GELU() ("# ACT2FN[config.hidden_act]" is commented out)
      act: 'gelu',
      channels: v.num_channels ?? 3,
      imageSize,
      patch,
      side,
      eps: v.norm_eps ?? 1e-5,
      ropeTheta: v.rope_theta ?? 10000,
      shuffleRatio: ratio,
      projectorInput,
      projectorOutput,
      outputDim,
    },
    text,
    imageTokenId: c.image_token_index ?? 200092,
    tileTokens: (side * ratio) ** 2,
  };
}
