/**
 * The Mistral 3 vision graph: HF `PixtralVisionModel` (models/pixtral/modeling_pixtral.py) and
 * `Mistral3MultiModalProjector` (models/mistral3/modeling_mistral3.py), weight-free.
 *   input   pixel_values [batch_size, C, image_height, image_width] — images of one size, each
 *           a multiple of patch · spatial_merge_size (the processor's resize; no padding)
 *   output  vision_embeds [batch_size, image_tokens, text hidden], (h/m)·(w/m) rows per image
 *           in row-major merged-cell order: the rows the `[IMG]` tokens take
 * Tower: patch conv (no bias) → `ln_pre` (RMSNorm, eps 1e-5) → blocks of RMSNorm → attention
 * with Pixtral's 2-D rotary → RMSNorm → gated MLP. The rotary of the patch at (row, col) is
 * HF's table row `id = row · max_patches_per_side + col` (position_ids_in_meshgrid): the first
 * head_dim/4 frequencies are the EVEN ones of `1/θ^(2k/head_dim)` times the table row's row, the
 * next head_dim/4 the ODD ones times its column, the whole repeated (rotate_half). Row and column
 * are recovered from `id` so that a width above max_patches_per_side wraps as HF's lookup does.
 * HF attends over all images' patches at once with a block-diagonal mask (one block per image,
 * generate_block_attention_mask); here each batch row is one image, which is the same blocks.
 * Projector: RMSNorm (text rms_norm_eps) → patch merger (F.unfold over m×m cells: feature
 * `d·m² + ki·m + kj` of a cell is patch (m·i + ki, m·j + kj)'s feature d) → merging_layer →
 * linear_1 → act → linear_2. QEfficient's QEFFMistral3EncoderWrapper (QEfficient/transformers/
 * models/mistral3/modeling_mistral3.py) takes square `[batch, 3, image_size, image_size]` and
 * gives 2-D `[vision_size, hidden]`; the graph computes the same thing.
 */
import type { LinearSpec, NormKind } from '../blocks/arch';
import { norm } from '../blocks/norms';
import { finishVision, visionFrame, type BuiltVision, type VisionIo, type VisionOptions } from './vision';
import { activation, cast, linear, reshape, split, transpose, unsqueeze, weight } from '../blocks/ops';
import { TensorDataType } from '../../formats/onnx/types';
import type { Mistral3Arch } from './config-mistral3';
import { mlpProjector } from './vision-llava';

const f = Math.fround;

/**
 * The even (row) and odd (column) frequencies of Pixtral's rotary, as PixtralRotaryEmbedding
 * computes them in float32: `1 / base ** (arange(0, dim, 2).float() / dim)`.
 */
export function pixtralFrequencies(headDim: number, theta: number): { rows: number[]; cols: number[] } {
  const freqs: number[] = [];
  for (let k = 0; k < headDim; k += 2) freqs.push(f(1 / f(Math.pow(theta, f(k / headDim)))));
  return { rows: freqs.filter((_, i) => i % 2 === 0), cols: freqs.filter((_, i) => i % 2 === 1) };
}

/** Builds the vision graph (Pixtral tower + Mistral 3 projector). */
export function buildPixtralVision(a: Mistral3Arch, o: VisionOptions): BuiltVision & { io: VisionIo } {
  const { g, c } = visionFrame(o);
  const v = a.vision;
  const D = v.hidden;
  const hd = v.headDim;
  const m = a.merge;
  const T = a.text.hidden;
  const RMS: NormKind = { kind: 'rms', eps: 1e-5, plusOne: false };
  const lin = (name: string, out: number, inp: number): LinearSpec => ({ weight: `${name}.weight`, out, in: inp });
  const pixels = g.input('pixel_values', o.dtype, ['batch_size', v.channels, 'image_height', 'image_width']);
  const dimOf = (x: string, k: number) => g.op('Gather', [g.op('Shape', [x]), g.ints([k])], { axis: 0 }); // [1]
  const shapeOf = (...parts: (string | number)[]) =>
    g.op(
      'Concat',
      parts.map((p) => (typeof p === 'number' ? g.ints([p]) : p)),
      { axis: 0 },
    );

  // patch_conv → [B, D, h, w] → tokens [B·h·w, D] (row-major patches), ln_pre
  const conv = g.op('Conv', [pixels, weight(c, 'vision_tower.patch_conv.weight', [D, v.channels, v.patch, v.patch])], {
    kernel_shape: [v.patch, v.patch],
    strides: [v.patch, v.patch],
  });
  const B = dimOf(conv, 0);
  const hp = dimOf(conv, 2);
  const wp = dimOf(conv, 3);
  let h = reshape(c, transpose(c, reshape(c, conv, [0, D, -1]), [0, 2, 1]), [-1, D]);
  h = norm(c, h, { weight: 'vision_tower.ln_pre.weight', size: D }, RMS);

  // the 2-D rotary: cos/sin [1, 1, N, hd]
  const rope = g.within('rope', () => {
    const n = g.op('Mul', [hp, wp]);
    const idx = g.op('Range', [g.int(0), reshape(c, n, []), g.int(1)]); // [N]
    const wpS = reshape(c, wp, []);
    const side = g.int(v.maxSide);
    const id = g.op('Add', [g.op('Mul', [g.op('Div', [idx, wpS]), side]), g.op('Mod', [idx, wpS])]);
    const asF = (x: string) => unsqueeze(c, g.op('Cast', [x], { to: TensorDataType.FLOAT }), [-1]); // [N,1]
    const fr = pixtralFrequencies(hd, v.ropeTheta);
    const fh = g.op('Mul', [asF(g.op('Div', [id, side])), g.constant('float32', [fr.rows.length], fr.rows, 'freq_rows')]);
    const fw = g.op('Mul', [asF(g.op('Mod', [id, side])), g.constant('float32', [fr.cols.length], fr.cols, 'freq_cols')]);
    const half = g.op('Concat', [fh, fw], { axis: -1 });
    const emb = g.op('Concat', [half, half], { axis: -1 }); // [N, hd]
    const t = (op: 'Cos' | 'Sin') => unsqueeze(c, cast(c, g.op(op, [emb]), 'float32', o.dtype), [0, 1]);
    return { cos: t('Cos'), sin: t('Sin') };
  });
  const rotate = (x: string) => {
    const [x1, x2] = split(c, x, -1, [hd / 2, hd / 2]);
    const rot = g.op('Concat', [g.op('Neg', [x2!]), x1!], { axis: -1 });
    return g.op('Add', [g.op('Mul', [x, rope.cos]), g.op('Mul', [rot, rope.sin])]);
  };

  const headsShape = shapeOf(B, -1, v.nHeads, hd);
  for (let i = 0; i < a.featureLayer; i++) {
    const p = `vision_tower.transformer.layers.${i}`;
    g.within(`layers.${i}`, () => {
      const att = g.within('attention', () => {
        const x = norm(c, h, { weight: `${p}.attention_norm.weight`, size: D }, RMS);
        const heads = (name: string) =>
          transpose(c, g.op('Reshape', [linear(c, x, lin(`${p}.attention.${name}`, D, D)), headsShape]), [0, 2, 1, 3]); // [B,nh,N,hd]
        const q = rotate(heads('q_proj'));
        const k = rotate(heads('k_proj'));
        const scores = g.op('Mul', [g.op('MatMul', [q, transpose(c, k, [0, 1, 3, 2])]), g.scalar(o.dtype, Math.pow(hd, -0.5), 'scale')]);
        const ctx = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), heads('v_proj')]);
        return linear(c, reshape(c, transpose(c, ctx, [0, 2, 1, 3]), [-1, D]), lin(`${p}.attention.o_proj`, D, D));
      });
      h = g.op('Add', [h, att]);
      const mlp = g.within('feed_forward', () => {
        const x = norm(c, h, { weight: `${p}.ffn_norm.weight`, size: D }, RMS);
        const I = v.intermediate;
        const gate = activation(c, linear(c, x, lin(`${p}.feed_forward.gate_proj`, I, D)), v.act);
        return linear(
          c,
          g.op('Mul', [gate, linear(c, x, lin(`${p}.feed_forward.up_proj`, I, D))]),
          lin(`${p}.feed_forward.down_proj`, D, I),
        );
      });
      h = g.op('Add', [h, mlp]);
    });
  }

  const out = g.within('multi_modal_projector', () => {
    const x = norm(c, h, { weight: 'multi_modal_projector.norm.weight', size: D }, { kind: 'rms', eps: a.projector.eps, plusOne: false });
    const mInt = g.ints([m]);
    const cells = g.op('Reshape', [x, shapeOf(B, g.op('Div', [hp, mInt]), m, g.op('Div', [wp, mInt]), m, D)]); // [B,i,ki,j,kj,D]
    const merged = reshape(c, transpose(c, cells, [0, 1, 3, 5, 2, 4]), [-1, D * m * m]); // [B·cells, D·m²]
    const y = linear(c, merged, lin('multi_modal_projector.patch_merger.merging_layer', D, D * m * m));
    const proj = mlpProjector(c, y, { prefix: 'multi_modal_projector', inDim: D, outDim: T, act: a.projector.act, bias: a.projector.bias });
    return g.op('Reshape', [proj, shapeOf(B, -1, T)]);
  });
  g.output(out, 'vision_embeds', o.dtype, ['batch_size', 'image_tokens', T]);
  return { ...finishVision(c, 'mistral3', o), io: { inputs: ['pixel_values'], outputs: ['vision_embeds'] } };
}
