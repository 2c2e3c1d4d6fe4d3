/**
 * The Qwen3-VL vision tower as one weight-free graph, with QEfficient's vision interface
 * (`QEffQwen3VLEncoderWrapper`, QEfficient/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py):
 *   inputs  pixel_values [grid_height, grid_width] (the processor's patches in merge-block order,
 *           grid_width = C·tp·p·p), image_grid_thw int64 [batch_size, time, grid_h, grid_w] — only
 *           its SHAPE carries the grid; Qwen2.5-VL's has dim 1 fixed at 1 (no `time` symbol)
 *   outputs vision_embeds [batch_size, vision_size, out_hidden],
 *           deepstack_features [num_feature_layers, batch_size, vision_size, out_hidden]
 * The symbols are QEfficient's `get_onnx_dynamic_axes` (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81: qwen3_vl_moe/, qwen3_vl/ and
 * qwen2_5_vl/modeling_*.py), so the compile's specializations name every dim.
 * The math is HF `Qwen3VLMoeVisionModel` (transformers 4.57): Conv3d patch embed; the learned
 * position table bilinearly interpolated to the grid with `linspace(0, side-1, n)` (align
 * corners) and reordered into merge blocks; 2-D rotary (row, column) in float32; LayerNorm
 * blocks with tanh-GELU MLPs; attention within each image frame only; the patch merger and the
 * deepstack mergers (post-shuffle LayerNorm) with erf-GELU.
 */
import type { LinearSpec, NormKind } from '../blocks/arch';
import { GraphBuilder, type ModelObj } from '../blocks/builder';
import { norm } from '../blocks/norms';
import { activation, cast, linear, reshape, split, transpose, unsqueeze, weight, type Ctx } from '../blocks/ops';
import type { ExportDtype } from '../../formats/dtype';
import type { VisionArch } from './config';
import { TensorDataType } from '../../formats/onnx/types';

const LAYER_NORM: NormKind = { kind: 'layer', eps: 1e-6, plusOne: false };
/** Qwen2.5-VL's vision norms: Qwen2RMSNorm(eps=1e-6). */
const RMS_NORM: NormKind = { kind: 'rms', eps: 1e-6, plusOne: false };

/** A built vision graph and its weight inputs (checkpoint keys) in first-use order. */
export interface BuiltVision {
  model: ModelObj;
  weights: { name: string; shape: number[] }[];
}

/** What every vision graph builder takes (Qwen's adds metadata). */
export interface VisionOptions {
  dtype: ExportDtype;
  opset?: number;
  name?: string;
}

/** A vision graph's inputs and outputs by name (the manifest and the compile step read them). */
export interface VisionIo {
  inputs: string[];
  outputs: string[];
}

/** A new vision graph and its build context (compute dtype `o.dtype`; the weights it declares are collected in `c.declared`). */
export function visionFrame(o: VisionOptions): { g: GraphBuilder; c: Ctx } {
  const g = new GraphBuilder(o.opset);
  return { g, c: { g, dtype: o.dtype, declared: new Set() } };
}

/**
 * Builds the vision graph of `c`: its weights are the graph inputs `c` declared as weights, with
 * their shapes (0 for a symbolic dim); its metadata names the graph `vision` and the model type
 * `<family>_vision` (then `extra`); its name is `o.name`, else `<family>-vision`.
 */
export function finishVision(c: Ctx, family: string, o: VisionOptions, extra: Record<string, string> = {}): BuiltVision {
  const g = c.g;
  const weights = g.inputs
    .filter((i) => c.declared.has(i.name))
    .map((i) => ({ name: i.name, shape: i.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : 0)) }));
  const metadata = { 'weight_spec.graph': 'vision', 'weight_spec.model_type': `${family}_vision`, ...extra };
  return { model: g.build(o.name ?? `${family}-vision`, metadata), weights };
}

/** Scalar int64 → 1-element vector (for Concat into shapes). */
function vec(c: Ctx, s: string): string {
  return unsqueeze(c, s, [0]);
}

/**
 * HF 4.57 `fast_pos_embed_interpolate` for one frame, as a graph over the runtime grid:
 * `[gh·gw, hidden]` in merge-block order (float32 weights, as torch computes them).
 */
function positionEmbeds(c: Ctx, v: VisionArch, gh: string, gw: string, table: string): string {
  const g = c.g;
  const n = v.side;
  // torch.linspace(0, n-1, steps) in float32: step = (n-1)/(steps-1); i < steps/2 → i·step, else (n-1) − (steps-1-i)·step
  const linspace = (steps: string) => {
    const i = g.op('Range', [g.int(0), steps, g.int(1)]);
    const fi = g.op('Cast', [i], { to: TensorDataType.FLOAT });
    const denom = g.op('Cast', [g.op('Max', [g.op('Sub', [steps, g.int(1)]), g.int(1)])], { to: TensorDataType.FLOAT });
    const step = g.op('Div', [g.scalar('float32', n - 1, 'side_m1'), denom]);
    const fwd = g.op('Mul', [fi, step]);
    const back = g.op('Sub', [
      g.scalar('float32', n - 1, 'side_m1'),
      g.op('Mul', [g.op('Cast', [g.op('Sub', [g.op('Sub', [steps, g.int(1)]), i])], { to: TensorDataType.FLOAT }), step]),
    ]);
    return g.op('Where', [g.op('Less', [i, g.op('Div', [steps, g.int(2)])]), fwd, back]);
  };
  const axis = (steps: string) => {
    const x = linspace(steps);
    const floor = g.op('Cast', [x], { to: TensorDataType.INT64 }); // positive: truncation = floor
    const ceil = g.op('Min', [g.op('Add', [floor, g.int(1)]), g.int(n - 1)]);
    const d = g.op('Sub', [x, g.op('Cast', [floor], { to: TensorDataType.FLOAT })]);
    return { floor, ceil, d, oneMinus: g.op('Sub', [g.scalar('float32', 1, 'one_f'), d]) };
  };
  return g.within('pos_embed', () => {
    const h = axis(gh);
    const w = axis(gw);
    const col = (t: string) => unsqueeze(c, t, [1]); // [gh,1]
    const row = (t: string) => unsqueeze(c, t, [0]); // [1,gw]
    const side = g.int(n);
    const terms: [string, string, string, string][] = [
      [h.floor, w.floor, h.oneMinus, w.oneMinus],
      [h.floor, w.ceil, h.oneMinus, w.d],
      [h.ceil, w.floor, h.d, w.oneMinus],
      [h.ceil, w.ceil, h.d, w.d],
    ];
    let sum: string | undefined;
    for (const [hi, wi, hw, ww] of terms) {
      const idx = g.op('Add', [col(g.op('Mul', [hi, side])), row(wi)]); // [gh,gw]
      const wt = cast(c, g.op('Mul', [col(hw), row(ww)]), 'float32', c.dtype); // [gh,gw]
      const e = g.op('Mul', [g.op('Gather', [table, idx], { axis: 0 }), unsqueeze(c, wt, [-1])]); // [gh,gw,C]
      sum = sum ? g.op('Add', [sum, e]) : e;
    }
    return mergeOrder(c, v, sum!, gh, gw, v.hidden);
  });
}

/** `[gh, gw, F]` → `[gh·gw, F]` in merge-block order (block row, block col, row in block, col in block). */
function mergeOrder(c: Ctx, v: VisionArch, x: string, gh: string, gw: string, features: number): string {
  const g = c.g;
  const m = g.int(v.merge);
  const shape = g.op(
    'Concat',
    [vec(c, g.op('Div', [gh, m])), g.ints([v.merge]), vec(c, g.op('Div', [gw, m])), g.ints([v.merge, features])],
    { axis: 0 },
  );
  const blocks = transpose(c, g.op('Reshape', [x, shape]), [0, 2, 1, 3, 4]);
  return reshape(c, blocks, [-1, features]);
}

/** Builds the vision graph. */
export function buildVision(v: VisionArch, o: VisionOptions & { metadata?: Record<string, string> }): BuiltVision {
  const { g, c } = visionFrame(o);
  const P = v.prefix;
  const qwen25 = v.kind === 'qwen2_5_vl';
  const normKind = qwen25 ? RMS_NORM : LAYER_NORM;
  const pixels = g.input('pixel_values', o.dtype, ['grid_height', 'grid_width']);
  // Qwen2.5-VL's dynamic axes name dims 0, 2, 3 only: its dummy grid (1, 1, 98, 146) fixes time at 1
  const thw = g.input('image_grid_thw', 'int64', ['batch_size', qwen25 ? 1 : 'time', 'grid_h', 'grid_w']);
  const lin = (name: string, out: number, inp: number): LinearSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, out, in: inp });
  const ln = (name: string, size: number) => ({ weight: `${name}.weight`, ...(qwen25 ? {} : { bias: `${name}.bias` }), size });

  const dims = g.op('Shape', [thw]);
  const dim = (k: number) => g.op('Gather', [dims, g.int(k)], { axis: 0 });
  const [B, T, gh, gw] = [dim(0), dim(1), dim(2), dim(3)];
  const frame = g.op('Mul', [gh, gw]); // tokens per frame
  const frames = g.op('Mul', [B, T]);

  // Conv3d patch embed: [N, C, tp, p, p] → [N, hidden]
  let h = g.within('patch_embed', () => {
    // the patch count from dim 0 (grid_height) rather than -1: grid_width is symbolic, and
    // grid_height·grid_width / (C·tp·p·p) would leave every later shape unknown to shape inference
    const n = vec(c, g.op('Gather', [g.op('Shape', [pixels]), g.int(0)], { axis: 0 }));
    const x = g.op('Reshape', [pixels, g.op('Concat', [n, g.ints([v.inChannels, v.temporalPatch, v.patch, v.patch])], { axis: 0 })]);
    const k = [v.temporalPatch, v.patch, v.patch];
    const w = weight(c, `${P}.patch_embed.proj.weight`, [v.hidden, v.inChannels, ...k]);
    // Qwen2.5-VL's Conv3d has no bias
    const b = qwen25 ? [] : [weight(c, `${P}.patch_embed.proj.bias`, [v.hidden])];
    return reshape(c, g.op('Conv', [x, w, ...b], { kernel_shape: k, strides: k }), [-1, v.hidden]);
  });
  if (!qwen25) {
    const table = weight(c, `${P}.pos_embed.weight`, [v.numPositions, v.hidden]);
    const pos = positionEmbeds(c, v, gh, gw, table);
    h = g.op('Add', [h, g.op('Tile', [pos, g.op('Concat', [vec(c, frames), g.ints([1])], { axis: 0 })])]);
  }

  // 2-D rotary: per token (row, col) in merge-block order; freqs = [row·inv | col·inv], emb = [freqs | freqs]
  const { cos, sin } = g.within('rotary', () => {
    const rows = g.op('Range', [g.int(0), gh, g.int(1)]);
    const cols = g.op('Range', [g.int(0), gw, g.int(1)]);
    const grid = g.op(
      'Concat',
      [
        g.op('Expand', [unsqueeze(c, rows, [1, 2]), g.op('Concat', [vec(c, gh), vec(c, gw), g.ints([1])], { axis: 0 })]),
        g.op('Expand', [unsqueeze(c, cols, [0, 2]), g.op('Concat', [vec(c, gh), vec(c, gw), g.ints([1])], { axis: 0 })]),
      ],
      { axis: -1 },
    ); // [gh,gw,2]
    const ordered = g.op('Tile', [mergeOrder(c, v, grid, gh, gw, 2), g.op('Concat', [vec(c, frames), g.ints([1])], { axis: 0 })]); // [N,2]
    const dim = v.headDim / 2;
    const inv: number[] = [];
    for (let i = 0; i < dim; i += 2) inv.push(Math.fround(1 / Math.pow(10000, i / dim)));
    const freqs = reshape(
      c,
      g.op('Mul', [
        unsqueeze(c, g.op('Cast', [ordered], { to: TensorDataType.FLOAT }), [-1]),
        g.constant('float32', [inv.length], inv, 'vision_inv_freq'),
      ]),
      [-1, dim],
    );
    const emb = unsqueeze(c, g.op('Concat', [freqs, freqs], { axis: -1 }), [1]); // [N,1,hd]
    return { cos: g.op('Cos', [emb]), sin: g.op('Sin', [emb]) };
  });

  // attention only within a frame: token i belongs to frame ⌊i / (gh·gw)⌋
  const { frameMask, windowMask } = g.within('mask', () => {
    const n = g.op('Mul', [frames, frame]);
    const i = g.op('Range', [g.int(0), n, g.int(1)]);
    const same = (id: string) => g.op('Equal', [unsqueeze(c, id, [1]), unsqueeze(c, id, [0])]); // [N,N]
    const frameMask = same(g.op('Div', [i, frame]));
    if (!v.window) return { frameMask, windowMask: undefined };
    // Qwen2.5-VL get_window_index pads each frame's merged grid to whole windows of `units`
    // merged tokens, permutes tokens window by window before the blocks and back after the
    // merger, and window blocks attend within cu_window_seqlens (unique_consecutive drops the
    // empty windows the padding adds). Attention under a mask is permutation-equivariant and
    // every other op is per token (the merger's groups of merge² rows move as a whole), so
    // permute → window-segment attention → inverse permute equals attention masked to "same
    // frame and same window" in the original order: merged token (bh, bw) is in window
    // (⌊bh / units⌋, ⌊bw / units⌋), and empty windows hold no token.
    const gwm = g.op('Div', [gw, g.int(v.merge)]);
    const merged = g.op('Div', [g.op('Mod', [i, frame]), g.int(v.merge * v.merge)]);
    const u = g.int(v.window.units);
    const win = g.op('Add', [
      g.op('Mul', [g.op('Div', [g.op('Div', [merged, gwm]), u]), gwm]),
      g.op('Div', [g.op('Mod', [merged, gwm]), u]),
    ]);
    return { frameMask, windowMask: g.op('And', [frameMask, same(win)]) };
  });

  const D = v.hidden;
  const hd = v.headDim;
  const rope = (x: string) => {
    const xf = cast(c, x, o.dtype, 'float32');
    const [x1, x2] = split(c, xf, -1, [hd / 2, hd / 2]);
    const rotated = g.op('Concat', [g.op('Neg', [x2!]), x1!], { axis: -1 });
    return cast(c, g.op('Add', [g.op('Mul', [xf, cos]), g.op('Mul', [rotated, sin])]), 'float32', o.dtype);
  };
  const merger = (name: string, x: string, postShuffle: boolean) =>
    g.within(name.slice(P.length + 1), () => {
      const wide = D * v.merge * v.merge;
      const normed = postShuffle
        ? norm(c, reshape(c, x, [-1, wide]), ln(`${name}.norm`, wide), LAYER_NORM)
        : reshape(c, norm(c, x, ln(`${name}.norm`, D), LAYER_NORM), [-1, wide]);
      const hidden = activation(c, linear(c, normed, lin(`${name}.linear_fc1`, wide, wide)), 'gelu'); // nn.GELU(): erf
      return linear(c, hidden, lin(`${name}.linear_fc2`, v.outHidden, wide));
    });

  const deep: string[] = [];
  for (let i = 0; i < v.depth; i++) {
    const p = `${P}.blocks.${i}`;
    g.within(`blocks.${i}`, () => {
      const att = g.within('attn', () => {
        const x = norm(c, h, ln(`${p}.norm1`, D), normKind);
        const qkv = reshape(c, linear(c, x, lin(`${p}.attn.qkv`, 3 * D, D)), [-1, 3, v.nHeads, hd]);
        const [q, k, vv] = split(c, qkv, 1, [1, 1, 1]).map((t) => reshape(c, t, [-1, v.nHeads, hd])) as [string, string, string];
        const qh = transpose(c, rope(q), [1, 0, 2]); // [nh,N,hd]
        const kh = transpose(c, rope(k), [1, 2, 0]); // [nh,hd,N]
        const vh = transpose(c, vv, [1, 0, 2]);
        const scores = g.op('Mul', [g.op('MatMul', [qh, kh]), g.scalar(o.dtype, Math.pow(hd, -0.5), 'vision_scale')]);
        const mask = windowMask && !v.window!.fullAtt.includes(i) ? windowMask : frameMask;
        const masked = g.op('Where', [mask, cast(c, scores, o.dtype, 'float32'), g.scalar('float32', -3.4028234663852886e38, 'neg_max')]);
        const probs = cast(c, g.op('Softmax', [masked], { axis: -1 }), 'float32', o.dtype);
        const ctx = reshape(c, transpose(c, g.op('MatMul', [probs, vh]), [1, 0, 2]), [-1, D]);
        return linear(c, ctx, lin(`${p}.attn.proj`, D, D));
      });
      h = g.op('Add', [h, att]);
      const mlp = g.within('mlp', () => {
        const x = norm(c, h, ln(`${p}.norm2`, D), normKind);
        if (qwen25) {
          // Qwen2_5_VLMLP: down(act(gate(x)) · up(x)), all with biases
          const gate = activation(c, linear(c, x, lin(`${p}.mlp.gate_proj`, v.intermediate, D)), v.act);
          const up = linear(c, x, lin(`${p}.mlp.up_proj`, v.intermediate, D));
          return linear(c, g.op('Mul', [gate, up]), lin(`${p}.mlp.down_proj`, D, v.intermediate));
        }
        return linear(
          c,
          activation(c, linear(c, x, lin(`${p}.mlp.linear_fc1`, v.intermediate, D)), v.act),
          lin(`${p}.mlp.linear_fc2`, D, v.intermediate),
        );
      });
      h = g.op('Add', [h, mlp]);
    });
    const k = v.deepstack.indexOf(i);
    if (k >= 0) deep[k] = merger(`${P}.deepstack_merger_list.${k}`, h, true);
  }
  const merged = qwen25
    ? g.within('merger', () => {
        // Qwen2_5_VLPatchMerger: ln_q (RMSNorm over hidden), merge² rows side by side, mlp.0 → GELU (erf) → mlp.2
        const wide = D * v.merge * v.merge;
        const normed = reshape(c, norm(c, h, ln(`${P}.merger.ln_q`, D), RMS_NORM), [-1, wide]);
        const hidden = activation(c, linear(c, normed, lin(`${P}.merger.mlp.0`, wide, wide)), 'gelu');
        return linear(c, hidden, lin(`${P}.merger.mlp.2`, v.outHidden, wide));
      })
    : merger(`${P}.merger`, h, false);

  // QEfficient: [N/4, out] → [batch, N/4/batch, out]
  const perImage = (x: string) => g.op('Reshape', [x, g.op('Concat', [vec(c, B), g.ints([-1, v.outHidden])], { axis: 0 })]);
  g.output(perImage(merged), 'vision_embeds', o.dtype, ['batch_size', 'vision_size', v.outHidden]);
  if (deep.length > 0) {
    const stacked = g.op(
      'Concat',
      deep.map((d) => unsqueeze(c, perImage(d), [0])),
      { axis: 0 },
    );
    g.output(stacked, 'deepstack_features', o.dtype, ['num_feature_layers', 'batch_size', 'vision_size', v.outHidden]);
  }

  return finishVision(c, v.kind, o, o.metadata ?? {});
}
