/**
 * The two graphs of each vision-language family for `export --config` (export-vlm.ts writes
 * them): per family, its vision tower and language decoder built from config.json, its text
 * architecture, the vision graph's interface, the fields it adds to vlm.json (one builder for
 * the square-image families) and the summary's note.
 */
import type { ExportDtype } from '../../formats/dtype';
import type { ModelObj } from '../blocks/builder';
import type { ArchSpec } from '../blocks/arch';
import { refuse } from '../families/config';
import { windowCacheArch, type SlidingCache } from '../blocks/attention-window';
import { vlmArchFromConfig } from './vlm-arch';
import { buildLanguage, type LanguageOptions } from './language';
import { buildGemma3Language, gemma3LanguageArch } from './language-gemma3';
import { buildVision, type BuiltVision } from './vision';
import { buildGemma3Vision, gemma3VisionArch } from './vision-gemma3';
import { llavaArch } from './config-llava';
import { buildLlavaVision } from './vision-llava';
import { buildLlavaLanguage } from './language-llava';
import { mistral3Arch } from './config-mistral3';
import { buildPixtralVision } from './vision-pixtral';
import { internvlArch } from './config-internvl';
import { llama4VlmArch } from './config-llama4';
import { buildLlama4Vision } from './vision-llama4';
import { buildInternVision } from './vision-internvl';
import type { VlmManifest } from '../../artifacts/vlm-manifest';

/** The vision graph's options (the language graph's add {@link LanguageOptions}). */
export type Opts = { dtype: ExportDtype; opset?: number; name: string };
/** What a family adds to vlm.json (export-vlm.ts writes the rest). */
export type ManifestPart = Omit<VlmManifest, 'tool' | 'kind' | 'model_type' | 'config' | 'graphs' | 'dtype'>;
/** What the families' parts read from the export options. */
export interface PartsSource {
  raw: unknown;
  cfgFile: string;
  slidingCache?: SlidingCache;
}

/** One family's two graphs, its text architecture, its vision graph's interface, its vlm.json fields and summary note. */
export interface Parts {
  vision: BuiltVision;
  language: { model: ModelObj; weights: { name: string; shape: number[] }[]; io: { inputs: string[]; outputs: string[] } };
  text: ArchSpec;
  visionIo: { inputs: string[]; outputs: string[] };
  manifest: ManifestPart;
  note: string;
}

/** A token id config.json may give (`x`, when an integer) or leave to the family's default `d`. */
const intOr = (x: unknown, d: number): number => (typeof x === 'number' && Number.isInteger(x) ? x : d);

/** The family's parts by model type (Qwen3-VL / Qwen2.5-VL otherwise). */
export function vlmParts(modelType: string, o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  if (modelType === 'gemma3') return gemma3Parts(o, vo, lo);
  if (modelType === 'llava' || modelType === 'llava_next') return llavaParts(o, vo, lo);
  if (modelType === 'mistral3') return mistral3Parts(o, vo, lo);
  if (modelType === 'internvl') return internvlParts(o, vo, lo);
  if (modelType === 'llama4') return llama4Parts(o, vo, lo);
  return qwenParts(o, vo, lo);
}
/**
 * vlm.json's fields for a family whose tower takes square images of `image_size` (all but Qwen's):
 * no video, no vision-start token unless `tokens` names one, one frame, no deepstack, in the
 * order the families have always written them — `tokens` right after the token ids (an override
 * keeps its key's place), `tail` after image_size.
 */
function imageManifest(o: {
  imageTokenId: number;
  tokens?: Partial<Pick<ManifestPart, 'vision_start_token_id' | 'image_end_token_id'>>;
  vision: { patch: number; channels: number; imageSize: number };
  merge?: number;
  text: ArchSpec;
  tail?: Partial<ManifestPart>;
}): ManifestPart {
  return {
    image_token_id: o.imageTokenId,
    video_token_id: -1,
    vision_start_token_id: -1,
    ...o.tokens,
    vision: {
      patch_size: o.vision.patch,
      temporal_patch_size: 1,
      spatial_merge_size: o.merge ?? 1,
      in_channels: o.vision.channels,
      num_feature_layers: 0,
    },
    text: { hidden_size: o.text.hidden, num_hidden_layers: o.text.layers.length },
    image_size: o.vision.imageSize,
    ...o.tail,
  };
}

/** What {@link imageManifest} takes besides the ids, tower and text every family passes alike. */
type ManifestExtras = Omit<Parameters<typeof imageManifest>[0], 'imageTokenId' | 'vision' | 'text'>;

/**
 * A family under QEfficient's LLaVA-style language wrapper (language-llava.ts: LLaVA(-NeXT),
 * Mistral 3, InternVL, Llama 4): its built vision graph, the text layers of `a.text`, vlm.json by
 * {@link imageManifest} from its tower's sizes, and the summary note.
 */
function llavaStyleParts(
  a: Parameters<typeof buildLlavaLanguage>[0] & { vision: { patch: number; channels: number; imageSize: number } },
  vision: BuiltVision & { io: Parts['visionIo'] },
  lo: Opts & LanguageOptions,
  extras: ManifestExtras,
  note: string,
): Parts {
  return {
    vision,
    language: buildLlavaLanguage(a, lo),
    text: a.text,
    visionIo: vision.io,
    manifest: imageManifest({ imageTokenId: a.imageTokenId, vision: a.vision, text: a.text, ...extras }),
    note,
  };
}

/** Qwen3-VL(-MoE) and Qwen2.5-VL: vision.ts + language.ts over one {@link VlmArch}. */
function qwenParts(o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  const arch = vlmArchFromConfig(o.raw, o.cfgFile);
  const moe = arch.text.layers.find((l) => l.mlp.kind === 'moe')?.mlp;
  const w = arch.vision.window;
  const visionNote = w
    ? `window ${w.units}×${w.units}, full attention [${w.fullAtt.join(', ')}]`
    : `deepstack [${arch.vision.deepstack.join(', ')}]`;
  return {
    vision: buildVision(arch.vision, vo),
    language: buildLanguage(arch, lo),
    text: arch.text,
    visionIo: {
      inputs: ['pixel_values', 'image_grid_thw'],
      outputs: ['vision_embeds', ...(arch.vision.deepstack.length ? ['deepstack_features'] : [])],
    },
    manifest: {
      image_token_id: arch.imageTokenId,
      video_token_id: arch.videoTokenId,
      vision_start_token_id: arch.visionStartTokenId,
      vision: {
        patch_size: arch.vision.patch,
        temporal_patch_size: arch.vision.temporalPatch,
        spatial_merge_size: arch.vision.merge,
        in_channels: arch.vision.inChannels,
        num_feature_layers: arch.vision.deepstack.length,
      },
      text: { hidden_size: arch.text.hidden, num_hidden_layers: arch.text.layers.length },
    },
    note: `vision ${arch.vision.depth} blocks, ${visionNote}; text ${arch.text.layers.length} layers${moe?.kind === 'moe' ? `, ${moe.weights.experts} experts top-${moe.topK}` : ''}`,
  };
}

/** Gemma 3: the SigLIP tower + projector (vision-gemma3.ts) and the gemma3_text layers (language-gemma3.ts). */
function gemma3Parts(o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  const raw = o.raw as Record<string, unknown>;
  const v = gemma3VisionArch(raw, o.cfgFile);
  const l0 = gemma3LanguageArch(raw, o.cfgFile);
  const l = o.slidingCache === 'window' ? { ...l0, text: windowCacheArch(l0.text, o.cfgFile) } : l0;
  if (v.textHidden !== l.text.hidden)
    refuse(o.cfgFile, 'text_config.hidden_size', `(${l.text.hidden}) differs from the projector's output (${v.textHidden})`);
  const sliding = l.text.layers.filter((x) => x.slidingWindow !== undefined).length;
  return {
    vision: buildGemma3Vision(v, vo),
    language: buildGemma3Language(l, lo),
    text: l.text,
    visionIo: { inputs: ['pixel_values'], outputs: ['vision_embeds'] },
    // no video in Gemma 3; the begin-of-image token stands where Qwen's vision-start does
    manifest: imageManifest({
      imageTokenId: l.imageTokenId,
      tokens: { vision_start_token_id: intOr(raw.boi_token_index, 255999) },
      vision: v,
      text: l.text,
      tail: { mm_tokens_per_image: l.mmTokens, image_end_token_id: intOr(raw.eoi_token_index, 256000) },
    }),
    note: `vision ${v.layers} SigLIP layers, ${v.side}×${v.side} patches pooled to ${l.mmTokens} tokens; text ${l.text.layers.length} layers (${sliding} sliding)`,
  };
}

/**
 * LLaVA / LLaVA-NeXT: the CLIP tower + projector (vision-llava.ts; LLaVA-NeXT packs the tiles in
 * that graph by a host-computed index) and the text_config family's layers (language-llava.ts).
 */
function llavaParts(o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  const a = llavaArch(o.raw, o.cfgFile);
  const v = a.vision;
  const vision = buildLlavaVision(a, vo);
  const layers = a.featureLayers.map((l) => l - v.layers - 1);
  // no video and no begin-of-image token in LLaVA
  return llavaStyleParts(
    a,
    vision,
    lo,
    { tail: { mm_tokens_per_image: a.tileTokens, ...(a.pinpoints ? { image_grid_pinpoints: a.pinpoints } : {}) } },
    `vision ${v.layers} CLIP layers, hidden states [${layers.join(', ')}] (${a.strategy}), ${a.tileTokens} tokens per ${a.pinpoints ? 'tile' : 'image'}` +
      `${a.pinpoints ? `, anyres ${a.pinpoints.map(([h, w]) => `${h}×${w}`).join(' ')}` : ''}; text ${a.text.modelType} ${a.text.layers.length} layers`,
  );
}

/**
 * Mistral 3: the Pixtral tower + projector (vision-pixtral.ts) and the text_config family's
 * layers under QEfficient's LLaVA-style language wrapper (language-llava.ts; QEFFMistral3DecoderWrapper is the same).
 */
function mistral3Parts(o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  const a = mistral3Arch(o.raw, o.cfgFile);
  const v = a.vision;
  const vision = buildPixtralVision(a, vo);
  // no video and no begin-of-image token: [IMG_BREAK] / [IMG_END] come from the tokenizer
  return llavaStyleParts(
    a,
    vision,
    lo,
    { merge: a.merge },
    `vision ${v.layers} Pixtral layers (hidden state ${a.featureLayer}), ${a.merge}×${a.merge} patch merger; text ${a.text.modelType} ${a.text.layers.length} layers`,
  );
}

/**
 * InternVL: the InternViT tower + pixel shuffle + projector (vision-internvl.ts) and the
 * text_config family's layers under the LLaVA-style language wrapper (language-llava.ts;
 * QEfficient's QEffInternDecoderWrapper gathers the image rows the same way).
 */
function internvlParts(o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  const a = internvlArch(o.raw, o.cfgFile);
  const v = a.vision;
  const vision = buildInternVision(a, vo);
  // no video; <img> / </img> come from the tokenizer
  return llavaStyleParts(
    a,
    vision,
    lo,
    { merge: a.shuffle, tail: { mm_tokens_per_image: a.tileTokens } },
    `vision ${v.layers} InternViT layers (hidden state ${a.featureLayer}), pixel shuffle ${a.shuffle}×${a.shuffle}, ${a.tileTokens} tokens per tile; text ${a.text.modelType} ${a.text.layers.length} layers`,
  );
}

/**
 * Llama 4: the vision tower + pixel-shuffle adapter + projector (vision-llama4.ts) and the llama4
 * family's text layers unchanged under the LLaVA-style language wrapper (language-llava.ts), the
 * image rows at the `<|patch|>` tokens.
 */
function llama4Parts(o: PartsSource, vo: Opts, lo: Opts & LanguageOptions): Parts {
  const a = llama4VlmArch(o.raw, o.cfgFile);
  const v = a.vision;
  const raw = o.raw as Record<string, unknown>;
  const vision = buildLlama4Vision(a, vo);
  const moe = a.text.layers.find((l) => l.mlp.kind === 'moe')?.mlp;
  // <|image_start|> / <|image_end|> (Llama4Config boi_token_index / eoi_token_index)
  return llavaStyleParts(
    a,
    vision,
    lo,
    {
      tokens: { vision_start_token_id: intOr(raw.boi_token_index, 200080), image_end_token_id: intOr(raw.eoi_token_index, 200081) },
      tail: { mm_tokens_per_image: a.tileTokens },
    },
    `vision ${v.layers} layers, ${v.side}×${v.side} patches shuffled to ${a.tileTokens} tokens per tile; ` +
      `text ${a.text.layers.length} layers${moe?.kind === 'moe' ? `, ${moe.weights.experts} experts top-${moe.topK}` : ''}`,
  );
}
