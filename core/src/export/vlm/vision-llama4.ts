/**
 * The Llama 4 vision graph: HF `Llama4VisionModel` + `Llama4MultiModalProjector`
 * (models/llama4/modeling_llama4.py), weight-free.
 *   input   pixel_values [max_num_tiles, C, image_size, image_size] — the processor's tiles, then
 *           its global tile (Llama4ImageProcessorFast), one image_size square each
 *   output  vision_embeds [max_num_tiles, tile_tokens, text hidden]: per tile the (side·r)² rows the
 *           tile's `<|patch|>` tokens take, in the processor's order
 * Tower: `Llama4UnfoldConvolution` (nn.Unfold by patch_size then a bias-free linear over the
 * `c·p² + ki·p + kj` features: a Conv with the linear's weight viewed `[D, C, p, p]`), the class
 * embedding APPENDED after the patches, `positional_embedding_vlm` over side² + 1 rows,
 * `layernorm_pre`, pre-LayerNorm encoder layers (biased q/k/v/o, the 2-D rotary on interleaved
 * pairs, non-causal softmax(q·kᵀ·head_dim^-0.5), fc1 → GELU → fc2 with biases),
 * `layernorm_post`, the class row dropped. Adapter (`Llama4VisionPixelShuffleMLP`):
 * `pixel_shuffle` by pixel_shuffle_ratio r, then fc1 → GELU → fc2 → GELU, no biases.
 * Projector: `linear_1`, no bias.
 * The rotary (`Llama4VisionRotaryEmbedding`) is fixed by the config: row i < side² is the patch
 * at (y, x) = (i // side, i % side) whose first head_dim/4 pairs turn by (x+1)·f_k and next
 * head_dim/4 by (y+1)·f_k, f_k = 1/θ^(4k/head_dim); the class row does not turn. It is a
 * constant table here, as it is a buffer there.
 */
import type { LinearSpec, NormKind } from '../blocks/arch';
import { norm } from '../blocks/norms';
import { finishVision, visionFrame, type BuiltVision, type VisionIo, type VisionOptions } from './vision';
import { activation, cast, linear, reshape, split, transpose, weight } from '../blocks/ops';
import type { Llama4VlmArch } from './config-llama4';

const f = Math.fround;

/**
 * The rotary angles `[side² + 1, head_dim / 2]` of Llama4VisionRotaryEmbedding, in float32 as
 * torch computes them (`(coord + 1) · rope_freq`); the last (class) row is zero.
 */
export function llama4VisionAngles(side: number, headDim: number, theta: number): number[][] {
  const freqDim = headDim / 2;
  const freqs: number[] = [];
  for (let k = 0; k < freqDim / 2; k++) freqs.push(f(1 / f(Math.pow(theta, f((2 * k) / freqDim)))));
  const rows: number[][] = [];
  for (let i = 0; i < side * side; i++) {
    const x = (i % side) + 1;
    const y = Math.floor(i / side) + 1;
    rows.push([...freqs.map((q) => f(x * q)), ...freqs.map((q) => f(y * q))]);
  }
  rows.push(new Array<number>(freqDim).fill(0));
  return rows;
}

/** Builds the vision graph (tower, pixel-shuffle adapter and projector). */
export function buildLlama4Vision(a: Llama4VlmArch, o: VisionOptions): BuiltVision & { io: VisionIo } {
  const { g, c } = visionFrame(o);
  const v = a.vision;
  const D = v.hidden;
  const hd = v.headDim;
  const S = v.imageSize;
  const N = v.side * v.side;
  const T = a.text.hidden;
  const LN: NormKind = { kind: 'layer', eps: v.eps, plusOne: false };
  const P = 'vision_model';
  const lin = (name: string, out: number, inp: number, bias = true): LinearSpec => ({
    weight: `${name}.weight`,
    out,
    in: inp,
    ...(bias ? { bias: `${name}.bias` } : {}),
  });
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: D });
  const pixels = g.input('pixel_values', o.dtype, ['max_num_tiles', v.channels, S, S]);
  const batch = g.op('Gather', [g.op('Shape', [pixels]), g.ints([0])], { axis: 0 }); // [1]
  const shapeOf = (...parts: (string | number)[]) =>
    g.op(
      'Concat',
      parts.map((p) => (typeof p === 'number' ? g.ints([p]) : p)),
      { axis: 0 },
    );

  // unfold + linear = a Conv over the linear's weight viewed [D, C, p, p] → [B, N, D]
  let h = g.within('patch_embedding', () => {
    const w = weight(c, `${P}.patch_embedding.linear.weight`, [D, v.channels * v.patch * v.patch]);
    const conv = g.op('Conv', [pixels, reshape(c, w, [D, v.channels, v.patch, v.patch])], {
      kernel_shape: [v.patch, v.patch],
      strides: [v.patch, v.patch],
    });
    const patches = transpose(c, reshape(c, conv, [0, D, N]), [0, 2, 1]);
    const cls = g.op('Expand', [reshape(c, weight(c, `${P}.class_embedding`, [D]), [1, 1, D]), shapeOf(batch, 1, D)]);
    const withCls = g.op('Concat', [patches, cls], { axis: 1 }); // [B, N+1, D]: the class row last
    const positioned = g.op('Add', [withCls, weight(c, `${P}.positional_embedding_vlm`, [N + 1, D])]);
    return reshape(c, positioned, [-1, D]); // [B·(N+1), D]: the linears take rows
  });
  h = norm(c, h, ln(`${P}.layernorm_pre`), LN);

  // the rotary on interleaved pairs (view_as_complex over the last axis), in float32: [1, N+1, 1, hd/2, 1]
  const angles = llama4VisionAngles(v.side, hd, v.ropeTheta).flat();
  const table = (fn: (x: number) => number, name: string) =>
    g.constant('float32', [1, N + 1, 1, hd / 2, 1], Float32Array.from(angles, fn), name);
  const cos = table(Math.cos, 'rope_cos');
  const sin = table(Math.sin, 'rope_sin');
  const rotate = (x: string) => {
    const pairs = reshape(c, cast(c, x, o.dtype, 'float32'), [-1, N + 1, v.nHeads, hd / 2, 2]);
    const [re, im] = split(c, pairs, -1, [1, 1]);
    const outRe = g.op('Sub', [g.op('Mul', [re!, cos]), g.op('Mul', [im!, sin])]);
    const outIm = g.op('Add', [g.op('Mul', [re!, sin]), g.op('Mul', [im!, cos])]);
    return cast(c, reshape(c, g.op('Concat', [outRe, outIm], { axis: -1 }), [-1, N + 1, v.nHeads, hd]), 'float32', o.dtype);
  };

  for (let i = 0; i < v.layers; i++) {
    const p = `${P}.model.layers.${i}`;
    g.within(`layers.${i}`, () => {
      const att = g.within('self_attn', () => {
        const x = norm(c, h, ln(`${p}.input_layernorm`), LN);
        const heads = (name: string) => reshape(c, linear(c, x, lin(`${p}.self_attn.${name}`, D, D)), [-1, N + 1, v.nHeads, hd]); // [B,N+1,nh,hd]
        const q = transpose(c, rotate(heads('q_proj')), [0, 2, 1, 3]);
        const k = transpose(c, rotate(heads('k_proj')), [0, 2, 3, 1]);
        const scores = g.op('Mul', [g.op('MatMul', [q, k]), g.scalar(o.dtype, Math.pow(hd, -0.5), 'scale')]);
        const ctx = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), transpose(c, heads('v_proj'), [0, 2, 1, 3])]);
        return linear(c, reshape(c, transpose(c, ctx, [0, 2, 1, 3]), [-1, D]), lin(`${p}.self_attn.o_proj`, D, D));
      });
      h = g.op('Add', [h, att]);
      const mlp = g.within('mlp', () => {
        const x = norm(c, h, ln(`${p}.post_attention_layernorm`), LN);
        const up = activation(c, linear(c, x, lin(`${p}.mlp.fc1`, v.intermediate, D)), v.act);
        return linear(c, up, lin(`${p}.mlp.fc2`, D, v.intermediate));
      });
      h = g.op('Add', [h, mlp]);
    });
  }
  h = norm(c, h, ln(`${P}.layernorm_post`), LN);

  const out = g.within('vision_adapter', () => {
    const patches = g.op('Slice', [reshape(c, h, [-1, N + 1, D]), g.ints([0]), g.ints([N]), g.ints([1])]); // the class row dropped
    // pixel_shuffle: [B, s, s, D] → [B, s, s·r, D/r] → ᵀ(1,2) → [B, s·r, s·r, D/r²] → ᵀ(1,2) → [B, (s·r)², D/r²]
    const s = v.side;
    const r = v.shuffleRatio;
    const a1 = transpose(c, reshape(c, patches, [-1, s, s * r, D / r]), [0, 2, 1, 3]);
    const a2 = transpose(c, reshape(c, a1, [-1, s * r, s * r, D / (r * r)]), [0, 2, 1, 3]);
    const shuffled = reshape(c, a2, [-1, D / (r * r)]);
    const fc1 = activation(c, linear(c, shuffled, lin(`${P}.vision_adapter.mlp.fc1`, v.projectorInput, v.intermediate, false)), 'gelu');
    return activation(c, linear(c, fc1, lin(`${P}.vision_adapter.mlp.fc2`, v.projectorOutput, v.projectorInput, false)), 'gelu');
  });
  const projected = g.within('multi_modal_projector', () => linear(c, out, lin('multi_modal_projector.linear_1', T, v.outputDim, false)));
  g.output(reshape(c, projected, [-1, a.tileTokens, T]), 'vision_embeds', o.dtype, ['max_num_tiles', a.tileTokens, T]);
  return { ...finishVision(c, 'llama4', o), io: { inputs: ['pixel_values'], outputs: ['vision_embeds'] } };
}
