/**
 * The Gemma 3 VLM's vision side as one weight-free graph: HF `SiglipVisionModel`
 * (models/siglip/modeling_siglip.py: Conv2d patch embed with bias, learned positions, pre-LN
 * blocks with biased q/k/v/out, tanh-GELU MLP, post_layernorm; the pooling head is unused) and
 * `Gemma3MultiModalProjector` (models/gemma3/modeling_gemma3.py): `[n, g², D]` → transpose to
 * `[n, D, g, g]`, AvgPool2d with kernel = stride = g / √mm_tokens_per_image, row-major flatten,
 * `mm_soft_emb_norm` as Gemma3RMSNorm (x · (1 + w), eps = vision layer_norm_eps), then
 * `x @ mm_input_projection_weight` ([D, text hidden], not transposed).
 *   input   pixel_values [batch_size, C, image_size, image_size] (the processor's fixed resize)
 *   output  vision_embeds [batch_size, mm_tokens_per_image, text hidden]
 * export-vlm.ts pairs it with language-gemma3.ts.
 */
import { z } from 'zod';
import type { NormKind } from '../blocks/arch';
import { parseWith, refuse } from '../families/config';
import { norm } from '../blocks/norms';
import { finishVision, visionFrame, type BuiltVision, type VisionOptions } from './vision';
import { reshape, transpose, weight } from '../blocks/ops';
import { clipConfig, clipEncoderLayer, clipVisionArch, type ClipVisionArch } from './clip-tower';

/** The SigLIP tower (a {@link ClipVisionArch} of kind siglip) and the projector of `Gemma3ForConditionalGeneration`. */
export interface Gemma3VisionArch extends ClipVisionArch {
  /** Pooled tokens per side (√mm_tokens_per_image). */
  tokensPerSide: number;
  textHidden: number;
}

const int = z.number().int().positive();
const cfgSchema = z.looseObject({
  mm_tokens_per_image: int.optional(),
  text_config: z.looseObject({ hidden_size: int.optional() }).optional(),
  // checked here, within the whole config, so that a wrong type is named by its full path
  vision_config: clipConfig.optional(),
});

/** Parses the vision side of a Gemma 3 VLM config.json (defaults: HF SiglipVisionConfig / Gemma3Config). */
export function gemma3VisionArch(raw: unknown, file: string): Gemma3VisionArch {
  const c = parseWith(cfgSchema, raw, file);
  // Gemma3Config builds SiglipVisionConfig(**vision_config), whatever model_type the dict names
  const tower = clipVisionArch({ ...c.vision_config, model_type: 'siglip_vision_model' }, file, 'vision_tower.vision_model');
  const side = tower.side;
  const mm = c.mm_tokens_per_image ?? 256;
  const tokensPerSide = Math.round(Math.sqrt(mm));
  if (tokensPerSide * tokensPerSide !== mm) refuse(file, 'mm_tokens_per_image', `(${mm}) is not a square`);
  // AvgPool2d(kernel = stride = side // tokens_per_side) must tile the patch grid exactly to give mm tokens
  if (side % tokensPerSide !== 0)
    refuse(file, 'mm_tokens_per_image', `(${mm}): ${tokensPerSide} tokens per side do not divide the ${side}×${side} patch grid`);
  return { ...tower, tokensPerSide, textHidden: c.text_config?.hidden_size ?? 2304 };
}

/** Builds the vision graph (SigLIP tower + multimodal projector). */
export function buildGemma3Vision(v: Gemma3VisionArch, o: VisionOptions): BuiltVision {
  const { g, c } = visionFrame(o);
  const P = 'vision_tower.vision_model';
  const D = v.hidden;
  const N = v.side * v.side;
  const LN: NormKind = { kind: 'layer', eps: v.eps, plusOne: false };
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: D });
  const pixels = g.input('pixel_values', o.dtype, ['batch_size', v.channels, v.imageSize, v.imageSize]);

  // SiglipVisionEmbeddings: conv → [B, D, g, g] → [B, g², D] + position_embedding
  let h = g.within('embeddings', () => {
    const w = weight(c, `${P}.embeddings.patch_embedding.weight`, [D, v.channels, v.patch, v.patch]);
    const b = weight(c, `${P}.embeddings.patch_embedding.bias`, [D]);
    const conv = g.op('Conv', [pixels, w, b], { kernel_shape: [v.patch, v.patch], strides: [v.patch, v.patch] });
    const tokens = transpose(c, reshape(c, conv, [0, D, N]), [0, 2, 1]);
    const pos = weight(c, `${P}.embeddings.position_embedding.weight`, [N, D]);
    return reshape(c, g.op('Add', [tokens, pos]), [-1, D]); // [B·N, D]
  });

  for (let i = 0; i < v.layers; i++)
    h = g.within(`layers.${i}`, () => clipEncoderLayer(c, v, h, `${P}.encoder.layers.${i}`, N, 'siglip_scale'));
  h = norm(c, h, ln(`${P}.post_layernorm`), LN);

  const out = g.within('multi_modal_projector', () => {
    const k = v.side / v.tokensPerSide;
    const grid = reshape(c, transpose(c, reshape(c, h, [-1, N, D]), [0, 2, 1]), [-1, D, v.side, v.side]); // [B,D,g,g]
    const pooled = g.op('AveragePool', [grid], { kernel_shape: [k, k], strides: [k, k] });
    const mm = v.tokensPerSide * v.tokensPerSide;
    const flat = reshape(c, transpose(c, reshape(c, pooled, [0, D, mm]), [0, 2, 1]), [-1, D]); // [B·mm, D]
    // Gemma3RMSNorm: x · rsqrt(mean(x²) + eps) · (1 + w)
    const normed = norm(
      c,
      flat,
      { weight: 'multi_modal_projector.mm_soft_emb_norm.weight', size: D },
      { kind: 'rms', eps: v.eps, plusOne: true },
    );
    const proj = g.op('MatMul', [normed, weight(c, 'multi_modal_projector.mm_input_projection_weight', [D, v.textHidden])]);
    return reshape(c, proj, [-1, mm, v.textHidden]);
  });
  g.output(out, 'vision_embeds', o.dtype, ['batch_size', v.tokensPerSide * v.tokensPerSide, v.textHidden]);
  return finishVision(c, 'gemma3', o);
}
