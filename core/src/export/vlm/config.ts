/**
 * Qwen3-VL / Qwen3-VL-MoE config.json → the two architectures the VLM graphs are built from:
 * the vision tower ({@link VisionArch}) and the text model (an {@link ArchSpec} over the
 * checkpoint's `model.language_model.*` keys, plus the MRoPE section). Field meanings and
 * defaults follow HF `models/qwen3_vl_moe/configuration_qwen3_vl_moe.py` and
 * `modeling_qwen3_vl_moe.py`; anything the graphs do not implement is refused by name.
 */
import { z } from 'zod';
import { FormatError } from '../../errors';
import { archDims, type ArchSpec, type LayerSpec, type LinearSpec, type MlpSpec } from '../blocks/arch';
import { actOf, llamaLike, parseWith, refuse } from '../families/config';
import { familyOfConfig } from '../families/registry';
import { canonicalMoeKeys } from '../blocks/moe';
import { ropeSpec, type RopeScaling } from '../blocks/rope';

/** The VLM model types `export --config` builds as two graphs. */
export const VLM_MODEL_TYPES = ['qwen3_vl_moe', 'qwen3_vl', 'qwen2_5_vl', 'gemma3', 'llava', 'llava_next', 'mistral3', 'internvl'] as const;
/** One supported VLM model type. */
export type VlmModelType = (typeof VLM_MODEL_TYPES)[number];

/**
 * Each supported VLM's image processor as `run --image` ports it (Hugging Face's class and what
 * it does), for the model table the README and MODULES.md generate from this file.
 */
export const VLM_PROCESSORS: Readonly<Record<VlmModelType, string>> = {
  qwen3_vl_moe: 'Qwen2VLImageProcessor: `smart_resize` to patch multiples, patches in merge-block order',
  qwen3_vl: 'Qwen2VLImageProcessor: `smart_resize` to patch multiples, patches in merge-block order',
  qwen2_5_vl: 'Qwen2VLImageProcessor: `smart_resize` to patch multiples, patches in merge-block order',
  gemma3: 'Gemma3ImageProcessor: bilinear resize to its square size, `<start_of_image>` expanded to `mm_tokens_per_image` tokens',
  llava: 'CLIPImageProcessor: bicubic shortest-edge resize, center crop, CLIP mean/std; `<image>` expanded to the feature rows',
  llava_next: 'LlavaNextImageProcessor: anyres `select_best_resolution`, resize + pad, tiles + base image, packed with `image_newline`',
  mistral3: 'PixtralImageProcessor: resize to patch multiples under `longest_edge`; `[IMG]` rows with `[IMG_BREAK]`, `[IMG_END]` last',
  internvl:
    'GotOcr2ImageProcessor: `crop_to_patches` tiles (closest aspect ratio, row-major) + thumbnail; `<img>` `<IMG_CONTEXT>`×n `</img>` per image',
};

/** Known VLM families this tool does not build (refused by name rather than as "unknown"). */
export const OTHER_VLMS = ['qwen2_vl', 'qwen3_omni_moe', 'mllama', 'internvl_chat', 'idefics3', 'granite_vision'];

/** True when `raw` is a config whose model_type is a VLM (supported or known-unsupported). */
export function isVlmConfig(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null) return false;
  const r = raw as Record<string, unknown>;
  const t = r.model_type;
  // A model type the family registry builds exports its text model even with a vision_config:
  // Llama 4 (every published checkpoint is Llama4ForConditionalGeneration, families/llama4.ts)
  // and Qwen3.5-MoE's multimodal checkpoints (families/qwen3-5-moe.ts; no vision tower yet).
  if (typeof t === 'string' && familyOfConfig(raw) !== undefined) return false;
  return (
    typeof t === 'string' &&
    ((VLM_MODEL_TYPES as readonly string[]).includes(t) ||
      OTHER_VLMS.includes(t) ||
      (typeof r.vision_config === 'object' && r.vision_config !== null))
  );
}

/** The vision tower (HF `Qwen3VLMoeVisionModel`, or `Qwen2_5_VisionTransformerPretrainedModel` when `kind` says so). */
export interface VisionArch {
  /**
   * qwen3_vl: learned positions, LayerNorm, plain MLP, deepstack mergers. qwen2_5_vl: no
   * position table, RMSNorm, gated MLP with biases, window attention, `merger.ln_q`.
   */
  kind: 'qwen3_vl' | 'qwen2_5_vl';
  depth: number;
  hidden: number;
  nHeads: number;
  headDim: number;
  intermediate: number;
  /** Block MLP activation (`hidden_act`, gelu_pytorch_tanh in every released model). */
  act: 'gelu' | 'gelu_tanh' | 'silu' | 'relu';
  patch: number;
  temporalPatch: number;
  inChannels: number;
  merge: number;
  outHidden: number;
  /** Learned position table rows (a square: side × side). */
  numPositions: number;
  side: number;
  deepstack: number[];
  /** Key prefix of the tower, `model.visual` (Qwen3-VL) or `visual` (Qwen2.5-VL's Hub keys). */
  prefix: string;
  /** Qwen2.5-VL window attention: window side in merged tokens and the blocks that attend over the whole frame. */
  window?: { units: number; fullAtt: number[] };
}

/** Everything both graphs need. */
export interface VlmArch {
  modelType: VlmModelType;
  vision: VisionArch;
  text: ArchSpec;
  /** MRoPE sections (t, h, w) over head_dim / 2 frequencies. */
  mropeSection: [number, number, number];
  /** Qwen3-VL interleaves the sections (t h w t h w …); Qwen2.5-VL takes them as contiguous chunks. */
  mropeInterleaved: boolean;
  imageTokenId: number;
  videoTokenId: number;
  visionStartTokenId: number;
}

const int = z.number().int().positive();
const visionConfig = z.looseObject({
  depth: int,
  hidden_size: int,
  intermediate_size: int,
  num_heads: int,
  patch_size: int,
  temporal_patch_size: int.optional(),
  in_channels: int.optional(),
  spatial_merge_size: int.optional(),
  out_hidden_size: int,
  num_position_embeddings: int,
  deepstack_visual_indexes: z.array(z.number().int().nonnegative()),
  hidden_act: z.string().optional(),
  interpolation_mode: z.string().optional(),
  interpolation_align_corners: z.boolean().optional(),
});
const vlmConfig = z.looseObject({
  model_type: z.string(),
  image_token_id: z.number().int().nonnegative(),
  video_token_id: z.number().int().nonnegative(),
  vision_start_token_id: z.number().int().nonnegative(),
  tie_word_embeddings: z.boolean().optional(),
  text_config: z.record(z.string(), z.unknown()),
  vision_config: z.record(z.string(), z.unknown()),
});

/** The config's VLM model type, refused with one line unless supported. */
export function vlmModelTypeOf(raw: unknown, file: string): VlmModelType {
  const t = (raw as Record<string, unknown>).model_type;
  if (!(VLM_MODEL_TYPES as readonly string[]).includes(String(t))) {
    throw new FormatError(
      file,
      `vision-language model_type "${String(t)}" is not supported by --config export (supported VLMs: ${VLM_MODEL_TYPES.join(', ')})`,
    );
  }
  if ((raw as Record<string, unknown>).quantization_config != null) {
    throw new FormatError(file, `"quantization_config" is set; quantized checkpoints are not supported by --config export`);
  }
  return t as VlmModelType;
}

function visionArch(raw: Record<string, unknown>, file: string): VisionArch {
  const v = parseWith(visionConfig, raw, file);
  const at = (f: string) => `vision_config.${f}`;
  if (v.hidden_size % v.num_heads !== 0)
    refuse(file, at('hidden_size'), `(${v.hidden_size}) is not divisible by num_heads (${v.num_heads})`);
  const headDim = v.hidden_size / v.num_heads;
  if (headDim % 4 !== 0) refuse(file, at('num_heads'), `gives head_dim ${headDim}; the 2-D vision rotary needs a multiple of 4`);
  const side = Math.round(Math.sqrt(v.num_position_embeddings));
  if (side * side !== v.num_position_embeddings)
    refuse(file, at('num_position_embeddings'), `(${v.num_position_embeddings}) is not a square (the learned grid is side × side)`);
  if (v.interpolation_mode !== undefined && v.interpolation_mode !== 'bilinear')
    refuse(
      file,
      at('interpolation_mode'),
      `"${v.interpolation_mode}" is not supported (only bilinear position interpolation is implemented)`,
    );
  if (v.interpolation_align_corners === false)
    refuse(file, at('interpolation_align_corners'), 'is false (only align-corners interpolation, linspace(0, side-1, n), is implemented)');
  if (v.deepstack_visual_indexes.length === 0)
    refuse(file, at('deepstack_visual_indexes'), 'is empty (the graphs implement deepstack; a model without it is not supported)');
  for (const [k, d] of v.deepstack_visual_indexes.entries()) {
    if (d >= v.depth) refuse(file, at('deepstack_visual_indexes'), `names block ${d} but depth is ${v.depth}`);
    if (v.deepstack_visual_indexes.indexOf(d) !== k) refuse(file, at('deepstack_visual_indexes'), `lists block ${d} twice`);
  }
  return {
    kind: 'qwen3_vl',
    depth: v.depth,
    hidden: v.hidden_size,
    nHeads: v.num_heads,
    headDim,
    intermediate: v.intermediate_size,
    act: actOf(v.hidden_act ?? 'gelu_pytorch_tanh', file, at('hidden_act')),
    patch: v.patch_size,
    temporalPatch: v.temporal_patch_size ?? 2,
    inChannels: v.in_channels ?? 3,
    merge: v.spatial_merge_size ?? 2,
    outHidden: v.out_hidden_size,
    numPositions: v.num_position_embeddings,
    side,
    deepstack: v.deepstack_visual_indexes,
    prefix: 'model.visual',
  };
}

const lin = (weight: string, out: number, inp: number, bias?: boolean): LinearSpec => ({
  weight,
  out,
  in: inp,
  ...(bias ? { bias: weight.replace(/weight$/, 'bias') } : {}),
});

/** Where the text model's fields and keys live: Qwen3-VL nests them (`text_config`, `model.language_model.*`); Qwen2.5-VL keeps the Hub's flat layout. */
interface TextLayout {
  /** Config path of the text fields in refusals (`text_config.` or ``). */
  field: string;
  /** Key prefix of the text model (`model.language_model` or `model`). */
  keys: string;
}

/** @internal Shared by the Qwen3-VL and Qwen2.5-VL parsers. */
export function textArch(
  type: VlmModelType,
  raw: Record<string, unknown>,
  tied: boolean,
  file: string,
  layout: TextLayout = { field: 'text_config.', keys: 'model.language_model' },
): { text: ArchSpec; section: [number, number, number] } {
  const c = parseWith(llamaLike, { model_type: type, ...raw }, file);
  const at = (f: string) => `${layout.field}${f}`;
  const qwen25 = type === 'qwen2_5_vl';
  const H = c.hidden_size;
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? nh;
  if (nh % nKv !== 0) refuse(file, at('num_key_value_heads'), `(${nKv}) does not divide num_attention_heads (${nh})`);
  const hd = c.head_dim ?? H / nh;
  if (!Number.isInteger(hd))
    refuse(file, at('hidden_size'), `(${H}) is not divisible by num_attention_heads (${nh}) and head_dim is not given`);
  const scaling = (c.rope_scaling ?? c.rope_parameters ?? {}) as RopeScaling & { mrope_section?: unknown; mrope_interleaved?: unknown };
  // Qwen2.5-VL's modeling reads rope_scaling["mrope_section"] unconditionally: no default to fall back on
  if (qwen25 && scaling.mrope_section === undefined) refuse(file, at('rope_scaling.mrope_section'), 'is missing (Qwen2.5-VL needs it)');
  const section = scaling.mrope_section ?? [24, 20, 20];
  if (!Array.isArray(section) || section.length !== 3 || !section.every((s) => Number.isInteger(s) && s >= 0)) {
    refuse(file, at('rope_scaling.mrope_section'), 'must be three non-negative integers (t, h, w)');
  }
  const sec = section as [number, number, number];
  if (sec[0] + sec[1] + sec[2] !== hd / 2)
    refuse(file, at('rope_scaling.mrope_section'), `sums to ${sec[0] + sec[1] + sec[2]} but head_dim / 2 is ${hd / 2}`);
  // HF Qwen3-VL always interleaves (apply_interleaved_mrope); a config saying otherwise means another model.
  if (!qwen25 && scaling.mrope_interleaved === false)
    refuse(file, at('rope_scaling.mrope_interleaved'), 'is false (only interleaved MRoPE, as Qwen3-VL uses, is implemented)');
  // HF Qwen2.5-VL (apply_multimodal_rotary_pos_emb) takes the sections as contiguous chunks
  if (qwen25 && scaling.mrope_interleaved === true)
    refuse(file, at('rope_scaling.mrope_interleaved'), 'is true (Qwen2.5-VL takes the MRoPE sections as contiguous chunks)');
  const theta = c.rope_theta ?? (typeof scaling.rope_theta === 'number' ? scaling.rope_theta : qwen25 ? 1000000 : 5000000);
  const { mrope_section: _s, mrope_interleaved: _i, ...plain } = scaling;
  // Qwen2_5_VLConfig rewrites rope_scaling type "mrope" to "default"
  if (plain.type === 'mrope') delete plain.type;
  if (plain.rope_type === 'mrope') delete plain.rope_type;
  const rope = ropeSpec(theta, hd, Object.keys(plain).length ? plain : null, file);
  if (c.use_sliding_window) refuse(file, at('use_sliding_window'), 'is true (sliding windows are not implemented for the VLM text models)');
  const act = actOf(c.hidden_act ?? 'silu', file, at('hidden_act'));
  // Qwen2 attention: q/k/v always carry biases, o_proj never; Qwen3 follows attention_bias
  const bias = !!c.attention_bias;
  const qkvBias = qwen25 || bias;
  const layers: LayerSpec[] = [];
  const experts = type === 'qwen3_vl_moe' ? c.num_experts : undefined;
  if (type === 'qwen3_vl_moe' && (!experts || !c.num_experts_per_tok || !c.moe_intermediate_size)) {
    refuse(file, at('num_experts'), ', num_experts_per_tok and moe_intermediate_size are required for qwen3_vl_moe');
  }
  if (experts && c.num_experts_per_tok! > experts)
    refuse(file, at('num_experts_per_tok'), `(${c.num_experts_per_tok}) exceeds num_experts (${experts})`);
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `${layout.keys}.layers.${i}`;
    const sparse = !!experts && !(c.mlp_only_layers ?? []).includes(i) && (i + 1) % (c.decoder_sparse_step ?? 1) === 0;
    let mlp: MlpSpec;
    if (sparse) {
      // HF's Qwen3VLMoeTextTopKRouter always renormalizes the top-k probabilities.
      mlp = {
        kind: 'moe',
        router: `${p}.mlp.gate.weight`,
        weights: { ...canonicalMoeKeys(`${p}.mlp`), experts: experts!, hidden: H, intermediate: c.moe_intermediate_size! },
        topK: c.num_experts_per_tok!,
        normTopK: true,
      };
    } else {
      const I = c.intermediate_size;
      mlp = {
        kind: 'gated',
        gate: lin(`${p}.mlp.gate_proj.weight`, I, H),
        up: lin(`${p}.mlp.up_proj.weight`, I, H),
        down: lin(`${p}.mlp.down_proj.weight`, H, I),
      };
    }
    layers.push({
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn: {
        kind: 'separate',
        q: lin(`${p}.self_attn.q_proj.weight`, nh * hd, H, qkvBias),
        k: lin(`${p}.self_attn.k_proj.weight`, nKv * hd, H, qkvBias),
        v: lin(`${p}.self_attn.v_proj.weight`, nKv * hd, H, qkvBias),
      },
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd, bias && !qwen25),
      ...(qwen25
        ? {}
        : { qNorm: { weight: `${p}.self_attn.q_norm.weight`, size: hd }, kNorm: { weight: `${p}.self_attn.k_norm.weight`, size: hd } }),
      mlp,
    });
  }
  const text: ArchSpec = {
    ...archDims(type, c.vocab_size, H, { nh, nKv, hd }),
    norm: { kind: 'rms', eps: c.rms_norm_eps ?? 1e-6, plusOne: false },
    act,
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    embed: `${layout.keys}.embed_tokens.weight`,
    finalNorm: { weight: `${layout.keys}.norm.weight`, size: H },
    ...(tied ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
  return { text, section: sec };
}

/** Parses a Qwen3-VL(-MoE) config.json into both architectures (vlm-arch.ts dispatches by model_type). */
export function qwen3VlArch(raw: unknown, file: string, modelType: VlmModelType): VlmArch {
  const c = parseWith(vlmConfig, raw, file);
  const vision = visionArch(c.vision_config, file);
  const tied = c.tie_word_embeddings ?? (c.text_config.tie_word_embeddings as boolean | undefined) ?? false;
  const { text, section } = textArch(modelType, c.text_config, tied, file);
  if (vision.outHidden !== text.hidden)
    refuse(file, 'vision_config.out_hidden_size', `(${vision.outHidden}) differs from text_config.hidden_size (${text.hidden})`);
  return {
    modelType,
    vision,
    text,
    mropeSection: section,
    mropeInterleaved: true,
    imageTokenId: c.image_token_id,
    videoTokenId: c.video_token_id,
    visionStartTokenId: c.vision_start_token_id,
  };
}
