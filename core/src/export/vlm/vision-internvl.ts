/**
 * The InternVL vision graph: HF `InternVLVisionModel` and `InternVLModel.get_image_features`
 * with `InternVLMultiModalProjector` (models/internvl/modeling_internvl.py), weight-free.
 *   input   pixel_values [batched_num_patches, C, S, S] — the processor's tiles (S = vision image_size)
 *   output  vision_embeds [1, vision_size, text hidden], (S/patch/n)² rows per tile in row-major
 *           order, tile after tile: the rows the `<IMG_CONTEXT>` tokens take
 * (QEfficient's dynamic axes and its encoder wrapper's `[1, tiles·tile_tokens, hidden]` output.)
 * Tower: patch conv (with bias) → CLS prepended → + position_embeddings (the table as is: tiles
 * are always S×S, so HF's interpolate_pos_encoding returns it unchanged) → blocks of
 * layernorm_before → attention (q/k/v, optional whole-width RMSNorm on q and k, eps 1e-6) →
 * × lambda_1 → residual → layernorm_after → fc1 → act → fc2 → × lambda_2 → residual; a final
 * LayerNorm only when `use_mean_pooling` is false. Features: drop CLS, reshape to the patch
 * square, pixel shuffle by n = 1/downsample_ratio — output cell (i, j) channel
 * `ki·n·D + kj·D + d` is patch (n·i + ki, n·j + kj)'s d — then LayerNorm (eps 1e-5) → linear_1
 * → act → linear_2. QEfficient's QEffInternEncoderWrapper (QEfficient/transformers/models/
 * internvl/modeling_internvl.py) runs the remote-code `extract_feature` (the same shuffle) with
 * the same output.
 */
import type { LinearSpec, NormKind } from '../blocks/arch';
import { norm } from '../blocks/norms';
import { finishVision, visionFrame, type BuiltVision, type VisionIo, type VisionOptions } from './vision';
import { activation, linear, reshape, transpose, weight } from '../blocks/ops';
import type { InternVLArch } from './config-internvl';

/** Builds the vision graph (InternViT tower + pixel shuffle + projector). */
export function buildInternVision(a: InternVLArch, o: VisionOptions): BuiltVision & { io: VisionIo } {
  const { g, c } = visionFrame(o);
  const v = a.vision;
  const D = v.hidden;
  const hd = D / v.nHeads;
  const side = v.imageSize / v.patch;
  const N = side * side + 1;
  const n = a.shuffle;
  const T = a.text.hidden;
  const P = 'vision_tower';
  const kind: NormKind = { kind: v.norm, eps: v.eps, plusOne: false };
  const lin = (name: string, out: number, inp: number, bias = true): LinearSpec => ({
    weight: `${name}.weight`,
    out,
    in: inp,
    ...(bias ? { bias: `${name}.bias` } : {}),
  });
  const pixels = g.input('pixel_values', o.dtype, ['batched_num_patches', v.channels, v.imageSize, v.imageSize]);

  // embeddings: conv → [B, side², D], CLS first, + positions
  let h = g.within('embeddings', () => {
    const conv = g.op(
      'Conv',
      [
        pixels,
        weight(c, `${P}.embeddings.patch_embeddings.projection.weight`, [D, v.channels, v.patch, v.patch]),
        weight(c, `${P}.embeddings.patch_embeddings.projection.bias`, [D]),
      ],
      { kernel_shape: [v.patch, v.patch], strides: [v.patch, v.patch] },
    );
    const patches = transpose(c, reshape(c, conv, [0, D, -1]), [0, 2, 1]); // [B, side², D]
    const batch = g.op('Gather', [g.op('Shape', [patches]), g.ints([0])], { axis: 0 }); // [1]
    const cls = g.op('Expand', [weight(c, `${P}.embeddings.cls_token`, [1, 1, D]), g.op('Concat', [batch, g.ints([1, D])], { axis: 0 })]);
    const x = g.op('Concat', [cls, patches], { axis: 1 }); // [B, N, D]
    const y = v.positions ? g.op('Add', [x, weight(c, `${P}.embeddings.position_embeddings`, [1, N, D])]) : x;
    return reshape(c, y, [-1, D]); // [B·N, D]: the linears are Gemm
  });

  const blocks = a.featureLayer;
  for (let i = 0; i < blocks; i++) {
    const p = `${P}.encoder.layer.${i}`;
    g.within(`layer.${i}`, () => {
      const att = g.within('attention', () => {
        const x = norm(c, h, { weight: `${p}.layernorm_before.weight`, bias: `${p}.layernorm_before.bias`, size: D }, kind);
        const proj = (name: string) => {
          const y = linear(c, x, lin(`${p}.attention.${name}_proj`, D, D, v.qkvBias));
          // use_qk_norm: InternVLVisionRMSNorm(embed_dim) (default eps 1e-6) before the head split
          return v.qkNorm && name !== 'v'
            ? norm(c, y, { weight: `${p}.attention.${name}_norm.weight`, size: D }, { kind: 'rms', eps: 1e-6, plusOne: false })
            : y;
        };
        const heads = (name: string) => transpose(c, reshape(c, proj(name), [-1, N, v.nHeads, hd]), [0, 2, 1, 3]); // [B,nh,N,hd]
        const scores = g.op('Mul', [
          g.op('MatMul', [heads('q'), transpose(c, heads('k'), [0, 1, 3, 2])]),
          g.scalar(o.dtype, Math.pow(hd, -0.5), 'scale'),
        ]);
        const ctx = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), heads('v')]);
        const out = linear(c, reshape(c, transpose(c, ctx, [0, 2, 1, 3]), [-1, D]), lin(`${p}.attention.projection_layer`, D, D));
        return g.op('Mul', [weight(c, `${p}.lambda_1`, [D]), out]);
      });
      h = g.op('Add', [att, h]);
      const mlp = g.within('mlp', () => {
        const x = norm(c, h, { weight: `${p}.layernorm_after.weight`, bias: `${p}.layernorm_after.bias`, size: D }, kind);
        const y = activation(c, linear(c, x, lin(`${p}.mlp.fc1`, v.intermediate, D)), v.act);
        return g.op('Mul', [weight(c, `${p}.lambda_2`, [D]), linear(c, y, lin(`${p}.mlp.fc2`, D, v.intermediate))]);
      });
      h = g.op('Add', [mlp, h]);
    });
  }
  // last_hidden_state (feature layer -1) goes through InternVLVisionModel.layernorm; hidden_states[k] does not
  if (v.finalNorm && a.lastHidden)
    h = norm(
      c,
      h,
      { weight: `${P}.layernorm.weight`, bias: `${P}.layernorm.bias`, size: D },
      { kind: 'layer', eps: v.eps, plusOne: false },
    );

  const out = g.within('multi_modal_projector', () => {
    // drop CLS → [B, side, side, D] → cells [B, i, ki, j, kj, D] → [B, i, j, ki, kj, D]
    const patches = g.op('Slice', [reshape(c, h, [-1, N, D]), g.ints([1]), g.ints([N]), g.ints([1])]);
    const cells = reshape(c, patches, [-1, side / n, n, side / n, n, D]);
    const W = D * n * n;
    const shuffled = reshape(c, transpose(c, cells, [0, 1, 3, 2, 4, 5]), [-1, W]); // [B·tile_tokens, W]
    const x = norm(
      c,
      shuffled,
      { weight: 'multi_modal_projector.layer_norm.weight', bias: 'multi_modal_projector.layer_norm.bias', size: W },
      { kind: 'layer', eps: 1e-5, plusOne: false },
    );
    const y = activation(c, linear(c, x, lin('multi_modal_projector.linear_1', T, W)), a.projector.act);
    return reshape(c, linear(c, y, lin('multi_modal_projector.linear_2', T, T)), [1, -1, T]);
  });
  g.output(out, 'vision_embeds', o.dtype, [1, 'vision_size', T]);
  return { ...finishVision(c, 'internvl', o), io: { inputs: ['pixel_values'], outputs: ['vision_embeds'] } };
}
