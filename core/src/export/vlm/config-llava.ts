/**
 * LLaVA / LLaVA-NeXT config.json → what both graphs need (HF models/llava/configuration_llava.py,
 * models/llava_next/configuration_llava_next.py): the CLIP or SigLIP tower (clip-tower.ts), which hidden
 * states feed the projector (`vision_feature_layer`: an int or a list, concatenated on the hidden
 * axis) and whether the class row stays (`vision_feature_select_strategy`), the projector
 * (linear-act-linear, `projector_hidden_act`, `multimodal_projector_bias`), the image token, and the
 * text model from `text_config` — any family of the registry, its keys under the Hub
 * checkpoint's `language_model.` (`language_model.model.*`, `language_model.lm_head.weight`).
 * LLaVA-NeXT adds `image_grid_pinpoints` and the `image_newline` row.
 */
import { z } from 'zod';
import { FormatError } from '../../errors';
import { type Act, type ArchSpec } from '../blocks/arch';
import { weightInputs } from '../blocks/weight-inputs';
import { parseWith, refuse } from '../families/config';
import { familyOfConfig, SUPPORTED_MODEL_TYPES } from '../families/registry';
import { clipActOf, clipTokens, clipVisionArch, type ClipVisionArch } from './clip-tower';

/** The LLaVA model types built here. */
export const LLAVA_MODEL_TYPES = ['llava', 'llava_next'] as const;

/** Both graphs' view of a LLaVA(-NeXT) config. */
export interface LlavaArch {
  modelType: (typeof LLAVA_MODEL_TYPES)[number];
  vision: ClipVisionArch;
  /** Hidden-state indices (0 … vision.layers) concatenated into the projector's input, in config order. */
  featureLayers: number[];
  strategy: 'default' | 'full';
  projector: { act: Act; bias: boolean; inDim: number };
  /** Rows one tower call gives after selection (side², plus the class row under `full`). */
  tileTokens: number;
  text: ArchSpec;
  imageTokenId: number;
  /** LLaVA-NeXT: the anyres resolutions `[height, width]` and whether `image_newline` closes each row. */
  pinpoints?: [number, number][];
}

const int = z.number().int();
const llavaConfig = z.looseObject({
  model_type: z.string(),
  image_token_index: int.nonnegative().optional(),
  image_token_id: int.nonnegative().optional(),
  vision_feature_layer: z.union([int, z.array(int).min(1)]).optional(),
  vision_feature_select_strategy: z.string().optional(),
  projector_hidden_act: z.string().optional(),
  multimodal_projector_bias: z.boolean().optional(),
  tie_word_embeddings: z.boolean().optional(),
  text_config: z.record(z.string(), z.unknown()).optional(),
  vision_config: z.record(z.string(), z.unknown()).optional(),
  image_grid_pinpoints: z.array(z.array(int.positive()).length(2)).min(1).optional(),
  use_image_newline_parameter: z.boolean().optional(),
});

/**
 * The defaults of the text config classes LLaVA checkpoints are published with (HF
 * configuration_llama.py LlamaConfig: llava-1.5 / vicuna; configuration_mistral.py MistralConfig:
 * llava-v1.6-mistral), for the fields the family parsers require.
 */
const TEXT_DEFAULTS: Readonly<Record<string, Record<string, unknown>>> = {
  llama: {
    vocab_size: 32000,
    hidden_size: 4096,
    intermediate_size: 11008,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    hidden_act: 'silu',
    max_position_embeddings: 2048,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
  },
  mistral: {
    vocab_size: 32000,
    hidden_size: 4096,
    intermediate_size: 14336,
    num_hidden_layers: 32,
    num_attention_heads: 32,
    num_key_value_heads: 8,
    hidden_act: 'silu',
    max_position_embeddings: 131072,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
    sliding_window: 4096,
  },
};

/** Key strings of a text architecture moved under `language_model.` (rope specs kept by identity). */
function rekey<T>(x: T, keys: ReadonlySet<string>): T {
  if (typeof x === 'string') return (keys.has(x) ? `language_model.${x}` : x) as T;
  if (Array.isArray(x)) return x.map((y) => rekey(y, keys)) as T;
  if (x && typeof x === 'object' && !('invFreq' in x))
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, rekey(v, keys)])) as T;
  return x;
}

/**
 * The text model of a multimodal config's `text_config` (LLaVA, Mistral 3): any registry family
 * but Gemma 3, over its config class's defaults (the wrappers build
 * `CONFIG_MAPPING[model_type](**text_config)` and the published configs leave those defaults
 * out), keys under `language_model.`. `tie`: the wrapper's own `tie_word_embeddings`.
 */
export function wrappedTextArch(
  textConfig: Record<string, unknown> | undefined,
  tie: boolean | undefined,
  defaultType: string,
  file: string,
  wrapper: string,
): ArchSpec {
  const textType = String(textConfig?.model_type ?? defaultType);
  const tc = { ...(TEXT_DEFAULTS[textType] ?? {}), model_type: textType, ...(textConfig ?? {}) } as Record<string, unknown>;
  if (tc.tie_word_embeddings === undefined && tie !== undefined) tc.tie_word_embeddings = tie;
  const row = familyOfConfig(tc);
  if (!row || row.modelType === 'gemma3')
    throw new FormatError(
      file,
      `"text_config.model_type" "${String(tc.model_type)}" is not a text family --config export builds under ${wrapper} (supported: ${SUPPORTED_MODEL_TYPES.filter((t) => t !== 'gemma3').join(', ')})`,
    );
  const text0 = row.build(tc, file, {});
  return rekey(text0, new Set(weightInputs(text0).map((w) => w.name)));
}

/** Parses a `llava` / `llava_next` config.json. */
export function llavaArch(raw: unknown, file: string): LlavaArch {
  const c = parseWith(llavaConfig, raw, file);
  const modelType = c.model_type as LlavaArch['modelType'];
  const vision = clipVisionArch(c.vision_config ?? {}, file, 'vision_tower.vision_model');
  // LlavaConfig: vision_feature_layer -2, strategy "default", projector gelu, image token 32000
  const layerField = c.vision_feature_layer ?? -2;
  const featureLayers = (Array.isArray(layerField) ? layerField : [layerField]).map((l) => {
    const i = l < 0 ? vision.layers + 1 + l : l;
    if (i < 0 || i > vision.layers)
      refuse(file, 'vision_feature_layer', `names hidden state ${l}, but the tower has ${vision.layers + 1} (0 … ${vision.layers})`);
    return i;
  });
  const strategy = c.vision_feature_select_strategy ?? 'default';
  if (strategy !== 'default' && strategy !== 'full')
    refuse(file, 'vision_feature_select_strategy', `is "${strategy}" (HF knows "default" and "full")`);
  // HF's pack_image_features views each tile's rows as a side × side grid: CLIP's class row must go
  // ("default"), SigLIP has none to drop ("full", as Granite Vision configures it)
  const tileTokens = clipTokens(vision) - (strategy === 'default' ? 1 : 0);
  if (modelType === 'llava_next' && tileTokens !== vision.side * vision.side)
    refuse(
      file,
      'vision_feature_select_strategy',
      `is "${strategy}" with the ${vision.kind} tower: ${tileTokens} rows per tile, but LLaVA-NeXT packs each tile as a ${vision.side} × ${vision.side} grid`,
    );

  const text = wrappedTextArch(c.text_config, c.tie_word_embeddings, 'llama', file, 'LLaVA');

  const image = c.image_token_index ?? c.image_token_id ?? 32000;
  const bias = c.multimodal_projector_bias ?? true;
  const pinpoints = modelType === 'llava_next' ? (c.image_grid_pinpoints as [number, number][] | undefined) : undefined;
  if (modelType === 'llava_next') {
    if (!pinpoints) refuse(file, 'image_grid_pinpoints', 'is missing (LLaVA-NeXT needs the anyres resolutions)');
    for (const [h, w] of pinpoints)
      if (h % vision.imageSize || w % vision.imageSize)
        refuse(file, 'image_grid_pinpoints', `holds [${h}, ${w}], not a multiple of vision_config.image_size (${vision.imageSize})`);
    if (c.use_image_newline_parameter === false)
      refuse(file, 'use_image_newline_parameter', 'is false (the graphs implement the image_newline row)');
  }
  return {
    modelType,
    vision,
    featureLayers,
    strategy,
    projector: {
      act: clipActOf(c.projector_hidden_act ?? 'gelu', file, 'projector_hidden_act'),
      bias,
      inDim: vision.hidden * featureLayers.length,
    },
    tileTokens,
    text,
    imageTokenId: image,
    ...(pinpoints ? { pinpoints } : {}),
  };
}
