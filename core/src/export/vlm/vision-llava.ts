/**
 * The LLaVA / LLaVA-NeXT vision graph: the CLIP tower (clip-tower.ts) over every image (LLaVA) or
 * every tile (LLaVA-NeXT), the selected hidden states, and the multi-modal projector
 * (HF `LlavaMultiModalProjector`, models/llava/modeling_llava.py: linear_1 → projector_hidden_act →
 * linear_2). QEfficient's encoder wrappers (QEfficient/transformers/models/llava/, llava_next/)
 * do the same on the same weights.
 *
 *   LLaVA       pixel_values [batch_size, C, S, S] → vision_embeds [batch_size, tile_tokens, text hidden]
 *   LLaVA-NeXT  pixel_values [batch_size, num_patches, C, S, S] (base image first, then the tiles
 *               row-major), pack_index int64 [vision_size] → vision_embeds [1, vision_size, text hidden]
 *
 * LLaVA-NeXT's `pack_image_features` is a gather here: row k of the output is row pack_index[k] of
 * the projected tiles flattened to `[batch·patches·tile_tokens, H]`, or `image_newline` where
 * pack_index[k] is -1. The index is geometry only (select_best_resolution, unpad; run/vlm/anyres.ts
 * computes it on the host from the image size), so the graph packs and no weight leaves it.
 * QEfficient's wrapper packs in the graph too, with the image size traced in as a constant.
 */
import type { LinearSpec } from '../blocks/arch';
import { activation, linear, reshape, unsqueeze, weight, type Ctx } from '../blocks/ops';
import { clipHiddenStates, selectFeatures } from './clip-tower';
import { finishVision, visionFrame, type BuiltVision, type VisionIo, type VisionOptions } from './vision';
import type { LlavaArch } from './config-llava';

/** The projector's keys and sizes (`multi_modal_projector.linear_{1,2}`). */
export interface MlpProjector {
  prefix: string;
  inDim: number;
  outDim: number;
  act: LlavaArch['projector']['act'];
  bias: boolean;
}

/** linear_1 → act → linear_2 over 2-D `x` `[rows, inDim]` (HF LlavaMultiModalProjector). */
export function mlpProjector(c: Ctx, x: string, p: MlpProjector): string {
  const lin = (n: string, out: number, inp: number): LinearSpec => ({
    weight: `${p.prefix}.${n}.weight`,
    out,
    in: inp,
    ...(p.bias ? { bias: `${p.prefix}.${n}.bias` } : {}),
  });
  return c.g.within('multi_modal_projector', () =>
    linear(c, activation(c, linear(c, x, lin('linear_1', p.outDim, p.inDim)), p.act), lin('linear_2', p.outDim, p.outDim)),
  );
}

/** Builds the vision graph of a LLaVA(-NeXT) architecture. */
export function buildLlavaVision(a: LlavaArch, o: VisionOptions): BuiltVision & { io: VisionIo } {
  const { g, c } = visionFrame(o);
  const v = a.vision;
  const S = v.imageSize;
  const H = a.text.hidden;
  const next = a.modelType === 'llava_next';
  const pixels = next
    ? g.input('pixel_values', o.dtype, ['batch_size', 'num_patches', v.channels, S, S])
    : g.input('pixel_values', o.dtype, ['batch_size', v.channels, S, S]);
  const packIndex = next ? g.input('pack_index', 'int64', ['vision_size']) : undefined;
  const tiles = next ? reshape(c, pixels, [-1, v.channels, S, S]) : pixels;
  const { states } = clipHiddenStates(c, v, tiles, Math.max(...a.featureLayers));
  const selected = selectFeatures(c, v, states, a.featureLayers, a.strategy); // [B, T, D·L]
  const projected = mlpProjector(c, reshape(c, selected, [-1, a.projector.inDim]), {
    prefix: 'multi_modal_projector',
    inDim: a.projector.inDim,
    outDim: H,
    act: a.projector.act,
    bias: a.projector.bias,
  }); // [B·T, H]
  if (!packIndex) {
    g.output(reshape(c, projected, [-1, a.tileTokens, H]), 'vision_embeds', o.dtype, ['batch_size', a.tileTokens, H]);
  } else {
    const packed = g.within('pack', () => {
      const newline = reshape(c, weight(c, 'image_newline', [H]), [1, H]);
      const table = g.op('Concat', [projected, newline], { axis: 0 }); // [rows + 1, H]: the newline last
      const rows = g.op('Gather', [g.op('Shape', [projected]), g.int(0)], { axis: 0 });
      const isNewline = g.op('Less', [packIndex, g.int(0)]);
      const idx = g.op('Where', [isNewline, rows, packIndex]);
      return unsqueeze(c, g.op('Gather', [table, idx], { axis: 0 }), [0]); // [1, vision_size, H]
    });
    g.output(packed, 'vision_embeds', o.dtype, [1, 'vision_size', H]);
  }
  return {
    ...finishVision(c, a.modelType, o),
    io: { inputs: ['pixel_values', ...(next ? ['pack_index'] : [])], outputs: ['vision_embeds'] },
  };
}
