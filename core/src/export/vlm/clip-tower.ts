/**
 * The CLIP vision tower as a graph block (HF `CLIPVisionTransformer`, models/clip/modeling_clip.py),
 * and its SigLIP sibling (HF `SiglipVisionTransformer`, models/siglip/modeling_siglip.py: no class
 * row, no pre_layrnorm, a patch conv with bias, tanh-GELU; the tower Granite Vision's LLaVA-NeXT
 * checkpoints use). CLIP:
 * Conv2d patch embedding without bias, the class embedding prepended, learned positions over
 * `1 + (image_size / patch_size)²` rows, `pre_layrnorm`, then pre-LN encoder layers (biased
 * q/k/v/out, scale head_dim^-0.5, MLP fc1 → act (quick_gelu by default) → fc2). HF's
 * `hidden_states` tuple is what {@link clipHiddenStates} returns: `[0]` after pre_layrnorm, `[i]`
 * the output of layer i-1; `post_layernorm` is not applied (LLaVA reads hidden states, never the
 * pooled output). Only the layers up to the deepest one asked for are built.
 *
 * Shared by the LLaVA family (vision-llava.ts); a later VLM on CLIP (or a CLIP-like tower) parses
 * its vision_config with {@link clipVisionArch} and calls the block.
 */
import { z } from 'zod';
import type { Act, LinearSpec, NormKind } from '../blocks/arch';
import { norm } from '../blocks/norms';
import { activation, linear, reshape, transpose, weight, type Ctx } from '../blocks/ops';
import { actOf, parseWith, refuse } from '../families/config';

/** A CLIP vision tower (`vision_config`, HF CLIPVisionConfig). */
export interface ClipVisionArch {
  /** `clip_vision_model` (class row, pre_layrnorm, conv without bias) or `siglip_vision_model`. */
  kind: 'clip' | 'siglip';
  /** num_hidden_layers (the tower's depth; hidden states 0 … layers). */
  layers: number;
  hidden: number;
  nHeads: number;
  headDim: number;
  intermediate: number;
  act: Act;
  channels: number;
  imageSize: number;
  patch: number;
  eps: number;
  /** Patches per side (image_size / patch_size); the sequence is side² rows, after the class row (CLIP). */
  side: number;
  /** Key prefix of the tower (`vision_tower.vision_model` in LLaVA's Hub checkpoints). */
  prefix: string;
}

const int = z.number().int().positive();
/** The fields of a CLIP / SigLIP `vision_config` the tower reads (HF CLIPVisionConfig, SiglipVisionConfig). */
export const clipConfig = z.looseObject({
  hidden_size: int.optional(),
  intermediate_size: int.optional(),
  num_hidden_layers: int.optional(),
  num_attention_heads: int.optional(),
  num_channels: int.optional(),
  image_size: int.optional(),
  patch_size: int.optional(),
  hidden_act: z.string().optional(),
  layer_norm_eps: z.number().positive().optional(),
  model_type: z.string().optional(),
});

/** HF activation names of a CLIP config: CLIP's own quick_gelu, else the builder's (families/config.ts actOf). */
export function clipActOf(name: string, file: string, field: string): Act {
  return name === 'quick_gelu' ? 'quick_gelu' : actOf(name, file, field);
}

/**
 * Parses `vision_config` (defaults: HF CLIPVisionConfig — 768 wide, 12 layers of 12 heads,
 * 224 px, patch 32, quick_gelu, eps 1e-5; SiglipVisionConfig — patch 16, gelu_pytorch_tanh,
 * eps 1e-6). `at` prefixes the field names in refusals.
 */
export function clipVisionArch(raw: unknown, file: string, prefix: string, at = 'vision_config.'): ClipVisionArch {
  const v = parseWith(clipConfig, raw ?? {}, file);
  const type = v.model_type ?? 'clip_vision_model';
  if (type !== 'clip_vision_model' && type !== 'siglip_vision_model')
    refuse(
      file,
      `${at}model_type`,
      `is "${type}" (the CLIP and SigLIP vision towers, clip_vision_model and siglip_vision_model, are implemented)`,
    );
  const siglip = type === 'siglip_vision_model';
  const hidden = v.hidden_size ?? 768;
  const nHeads = v.num_attention_heads ?? 12;
  if (hidden % nHeads !== 0) refuse(file, `${at}hidden_size`, `(${hidden}) is not divisible by num_attention_heads (${nHeads})`);
  const imageSize = v.image_size ?? 224;
  const patch = v.patch_size ?? (siglip ? 16 : 32);
  if (imageSize % patch !== 0) refuse(file, `${at}image_size`, `(${imageSize}) is not a multiple of patch_size (${patch})`);
  return {
    kind: siglip ? 'siglip' : 'clip',
    layers: v.num_hidden_layers ?? 12,
    hidden,
    nHeads,
    headDim: hidden / nHeads,
    intermediate: v.intermediate_size ?? 3072,
    act: clipActOf(v.hidden_act ?? (siglip ? 'gelu_pytorch_tanh' : 'quick_gelu'), file, `${at}hidden_act`),
    channels: v.num_channels ?? 3,
    imageSize,
    patch,
    eps: v.layer_norm_eps ?? (siglip ? 1e-6 : 1e-5),
    side: imageSize / patch,
    prefix,
  };
}

/** Rows of the tower's sequence: the class token (CLIP) and side² patches. */
export const clipTokens = (v: ClipVisionArch): number => (v.kind === 'clip' ? 1 : 0) + v.side * v.side;

/**
 * The tower over `pixels` `[B, C, S, S]` (compute dtype): hidden states 0 … `upTo`, each 2-D
 * `[B·T, D]` (T = {@link clipTokens}); `bs` is `[B]` from the pixels' shape.
 */
export function clipHiddenStates(c: Ctx, v: ClipVisionArch, pixels: string, upTo: number): { states: string[]; batch: string } {
  const g = c.g;
  const P = v.prefix;
  const D = v.hidden;
  const N = v.side * v.side;
  const T = clipTokens(v);
  const LN: NormKind = { kind: 'layer', eps: v.eps, plusOne: false };
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: D });
  const batch = g.op('Slice', [g.op('Shape', [pixels]), g.ints([0]), g.ints([1]), g.ints([0])]); // [1]: B

  // CLIPVisionEmbeddings: cat(class, conv patches) + position_embedding(arange(T)), then pre_layrnorm;
  // SiglipVisionEmbeddings: conv (with bias) patches + position_embedding, nothing before the encoder
  const clip = v.kind === 'clip';
  let h = g.within('embeddings', () => {
    const w = weight(c, `${P}.embeddings.patch_embedding.weight`, [D, v.channels, v.patch, v.patch]);
    const ins = clip ? [pixels, w] : [pixels, w, weight(c, `${P}.embeddings.patch_embedding.bias`, [D])];
    const conv = g.op('Conv', ins, { kernel_shape: [v.patch, v.patch], strides: [v.patch, v.patch] });
    const patches = transpose(c, reshape(c, conv, [0, D, N]), [0, 2, 1]); // [B,N,D]
    let seq = patches;
    if (clip) {
      const cls = reshape(c, weight(c, `${P}.embeddings.class_embedding`, [D]), [1, 1, D]);
      const clsB = g.op('Expand', [cls, g.op('Concat', [batch, g.ints([1, D])], { axis: 0 })]); // [B,1,D]
      seq = g.op('Concat', [clsB, patches], { axis: 1 }); // [B,T,D]
    }
    const pos = weight(c, `${P}.embeddings.position_embedding.weight`, [T, D]);
    return reshape(c, g.op('Add', [seq, pos]), [-1, D]);
  });
  if (clip) h = norm(c, h, ln(`${P}.pre_layrnorm`), LN);
  const states = [h];
  for (let i = 0; i < upTo; i++) {
    h = g.within(`layers.${i}`, () => clipEncoderLayer(c, v, h, `${P}.encoder.layers.${i}`, T, 'clip_scale'));
    states.push(h);
  }
  return { states, batch };
}

/**
 * One CLIPEncoderLayer / SiglipEncoderLayer (HF clip/modeling_clip.py, siglip/modeling_siglip.py:
 * the same pre-LN block) over `h` `[B·tokens, D]`: layer_norm1 → biased q/k/v, softmax(q·kᵀ ·
 * head_dim^-0.5) over all `tokens` rows, out_proj, residual; layer_norm2 → fc1 → act → fc2,
 * residual. Its weights are under `p` (`<tower>.encoder.layers.<i>`); `scaleName` names the
 * scale constant (each tower keeps its own name, so its graph stays as it was).
 */
export function clipEncoderLayer(
  c: Ctx,
  v: Pick<ClipVisionArch, 'hidden' | 'nHeads' | 'headDim' | 'intermediate' | 'act' | 'eps'>,
  h: string,
  p: string,
  tokens: number,
  scaleName: string,
): string {
  const g = c.g;
  const D = v.hidden;
  const hd = v.headDim;
  const LN: NormKind = { kind: 'layer', eps: v.eps, plusOne: false };
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: D });
  const lin = (name: string, out: number, inp: number): LinearSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, out, in: inp });
  const att = g.within('attn', () => {
    const x = norm(c, h, ln(`${p}.layer_norm1`), LN);
    const heads = (name: string, perm: number[]) =>
      transpose(c, reshape(c, linear(c, x, lin(`${p}.self_attn.${name}`, D, D)), [-1, tokens, v.nHeads, hd]), perm);
    const q = heads('q_proj', [0, 2, 1, 3]); // [B,nh,T,hd]
    const k = heads('k_proj', [0, 2, 3, 1]); // [B,nh,hd,T]
    const vv = heads('v_proj', [0, 2, 1, 3]);
    const scores = g.op('Mul', [g.op('MatMul', [q, k]), g.scalar(c.dtype, Math.pow(hd, -0.5), scaleName)]);
    const ctx = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), vv]);
    return linear(c, reshape(c, transpose(c, ctx, [0, 2, 1, 3]), [-1, D]), lin(`${p}.self_attn.out_proj`, D, D));
  });
  const mid = g.op('Add', [h, att]);
  const mlp = g.within('mlp', () => {
    const x = norm(c, mid, ln(`${p}.layer_norm2`), LN);
    return linear(c, activation(c, linear(c, x, lin(`${p}.mlp.fc1`, v.intermediate, D)), v.act), lin(`${p}.mlp.fc2`, D, v.intermediate));
  });
  return g.op('Add', [mid, mlp]);
}

/**
 * LLaVA's feature selection over {@link clipHiddenStates}: the hidden states at `layers` (indices
 * into 0 … v.layers) concatenated on the hidden axis, then `default` drops the class row
 * (`[:, 1:]`) and `full` keeps it. Returns `[B, rows, D · layers.length]`.
 */
export function selectFeatures(c: Ctx, v: ClipVisionArch, states: string[], layers: number[], strategy: 'default' | 'full'): string {
  const g = c.g;
  const T = clipTokens(v);
  const picked = layers.map((l) => reshape(c, states[l]!, [-1, T, v.hidden]));
  const cat = picked.length === 1 ? picked[0]! : g.op('Concat', picked, { axis: -1 });
  return strategy === 'default' ? g.op('Slice', [cat, g.ints([1]), g.ints([T]), g.ints([1])]) : cat;
}
