/**
 * Rotary position embeddings: the inverse-frequency table per HF `rope_type` (default,
 * linear, llama3), cos/sin from `position_ids` (float32, as HF computes them with autocast off),
 * and `rotate_half` (or GPT-J's interleaved `rotate_every_two`) application with optional partial
 * rotary dims.
 */
import { FormatError } from '../../errors';
import type { RopeSpec } from './arch';
import { cast, reshape, split, unsqueeze, type Ctx } from './ops';
import { TensorDataType } from '../../formats/onnx/types';

/** rope_scaling / rope_parameters as found in config.json. */
export interface RopeScaling {
  rope_type?: string;
  type?: string;
  factor?: number;
  low_freq_factor?: number;
  high_freq_factor?: number;
  original_max_position_embeddings?: number;
  [k: string]: unknown;
}

/**
 * HF `_compute_default_rope_parameters` (+ linear / llama3 variants). Any other rope type
 * changes the math in ways this builder does not implement, so it is refused by name.
 */
export function ropeSpec(
  theta: number,
  rotaryDim: number,
  scaling: RopeScaling | null | undefined,
  file: string,
  positions?: { max?: number; originalMax?: number },
): RopeSpec {
  const base: number[] = [];
  for (let i = 0; i < rotaryDim; i += 2) base.push(1 / Math.pow(theta, i / rotaryDim));
  const type = scaling ? (scaling.rope_type ?? scaling.type ?? 'default') : 'default';
  const need = (k: keyof RopeScaling): number => {
    const v = scaling?.[k];
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      throw new FormatError(file, `rope_scaling type "${type}" needs a numeric "${String(k)}"`);
    }
    return v;
  };
  let invFreq: number[];
  switch (type) {
    case 'default':
      invFreq = base;
      break;
    case 'linear': {
      const factor = need('factor');
      invFreq = base.map((f) => f / factor);
      break;
    }
    case 'llama3': {
      const factor = need('factor');
      const low = need('low_freq_factor');
      const high = need('high_freq_factor');
      const oldCtx = need('original_max_position_embeddings');
      const lowWavelen = oldCtx / low;
      const highWavelen = oldCtx / high;
      invFreq = base.map((f) => {
        const wavelen = (2 * Math.PI) / f;
        const scaled = wavelen > lowWavelen ? f / factor : f;
        const medium = !(wavelen < highWavelen) && !(wavelen > lowWavelen);
        if (!medium) return scaled;
        const smooth = (oldCtx / wavelen - low) / (high - low);
        return ((1 - smooth) * scaled) / factor + smooth * scaled;
      });
      break;
    }
    case 'longrope':
    case 'su':
      return longRope(theta, rotaryDim, scaling!, file, positions ?? {});
    case 'yarn':
      return yarnRope(theta, rotaryDim, scaling!, file, positions ?? {});
    default:
      throw new FormatError(
        file,
        `rope_scaling type "${type}" is not supported (supported: default, linear, llama3, longrope, yarn); refusing to build a graph with different position math`,
      );
  }
  return { invFreq: invFreq.map((f) => Math.fround(f)), rotaryDim, attentionScale: 1 };
}

/**
 * HF `_compute_longrope_parameters`: inv_freq = 1 / (ext · θ^(2i/d)) with the short or long
 * factors, attention factor √(1 + ln(f) / ln(original_max)) for f = max / original_max unless
 * given; the long table applies while max(position_ids) + 1 > original_max (HF's dynamic update).
 */
function longRope(theta: number, dim: number, s: RopeScaling, file: string, p: { max?: number; originalMax?: number }): RopeSpec {
  const factors = (k: 'short_factor' | 'long_factor'): number[] => {
    const v = s[k];
    if (!Array.isArray(v) || v.length !== dim / 2 || !v.every((x) => typeof x === 'number' && x > 0)) {
      throw new FormatError(file, `rope_scaling "${k}" must be ${dim / 2} positive numbers (rotary dim / 2)`);
    }
    return v as number[];
  };
  const short = factors('short_factor');
  const long = factors('long_factor');
  const originalMax = p.originalMax ?? p.max;
  if (!originalMax) throw new FormatError(file, `longrope needs "original_max_position_embeddings" or "max_position_embeddings"`);
  const factor = p.originalMax !== undefined && p.max !== undefined ? p.max / p.originalMax : typeof s.factor === 'number' ? s.factor : 1;
  const given = s.attention_factor;
  const attentionScale = typeof given === 'number' ? given : factor <= 1 ? 1 : Math.sqrt(1 + Math.log(factor) / Math.log(originalMax));
  const table = (ext: number[]) => ext.map((e, i) => Math.fround(1 / (e * Math.pow(theta, (2 * i) / dim))));
  return { invFreq: table(short), rotaryDim: dim, attentionScale, long: { invFreq: table(long), threshold: originalMax } };
}

/**
 * HF `_compute_yarn_parameters` (transformers `modeling_rope_utils.py`): frequencies blended
 * between θ^(-2i/d) (extrapolation) and that / factor (interpolation) by a linear ramp over
 * the dims whose rotation count at `original_max_position_embeddings` lies between beta_slow
 * and beta_fast — the ramp bounds floored/ceiled unless `truncate` is false (GPT-OSS) — and an
 * attention factor on cos/sin: `attention_factor`, else mscale / mscale_all_dim, else
 * 0.1·ln(factor) + 1.
 */
function yarnRope(theta: number, dim: number, s: RopeScaling, file: string, p: { max?: number }): RopeSpec {
  const num = (k: string): number | undefined => {
    const v = s[k];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new FormatError(file, `rope_scaling "${k}" must be a number`);
    return v;
  };
  const factor = num('factor');
  if (factor === undefined || factor <= 0) throw new FormatError(file, `rope_scaling type "yarn" needs a positive numeric "factor"`);
  const originalMax = num('original_max_position_embeddings') || p.max;
  if (!originalMax) throw new FormatError(file, `yarn needs "original_max_position_embeddings" or "max_position_embeddings"`);
  if (s.truncate !== undefined && typeof s.truncate !== 'boolean') throw new FormatError(file, `rope_scaling "truncate" must be a boolean`);
  const truncate = s.truncate ?? true;
  const mscaleOf = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  const mscale = num('mscale');
  const mscaleAll = num('mscale_all_dim');
  const attentionScale =
    num('attention_factor') ?? (mscale && mscaleAll ? mscaleOf(factor, mscale) / mscaleOf(factor, mscaleAll) : mscaleOf(factor));
  const betaFast = num('beta_fast') || 32;
  const betaSlow = num('beta_slow') || 1;
  const corrDim = (rot: number) => (dim * Math.log(originalMax / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
  let low = corrDim(betaFast);
  let high = corrDim(betaSlow);
  if (truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001; // HF: prevent a singular ramp
  const invFreq: number[] = [];
  for (let i = 0; i < dim / 2; i++) {
    const posFreq = Math.fround(Math.pow(theta, Math.fround((2 * i) / dim)));
    const extrapolation = Math.fround(1 / posFreq);
    const interpolation = Math.fround(1 / Math.fround(factor * posFreq));
    const ramp = Math.fround(Math.min(1, Math.max(0, (i - low) / (high - low))));
    const extrapolationFactor = Math.fround(1 - ramp);
    invFreq.push(Math.fround(interpolation * Math.fround(1 - extrapolationFactor) + extrapolation * extrapolationFactor));
  }
  return { invFreq, rotaryDim: dim, attentionScale };
}

/** cos and sin `[B, S, 1, rotaryDim]` in the compute dtype, from int64 positions `[B, S]`. */
/** The cos/sin tables `[B, S, 1, head_dim]` a rope spec gives for the positions. */
export interface RopeTables {
  cos: string;
  sin: string;
}

export function ropeTables(c: Ctx, positionIds: string, r: RopeSpec): RopeTables {
  const g = c.g;
  return g.within('rope', () => {
    const pos = unsqueeze(c, g.op('Cast', [positionIds], { to: TensorDataType.FLOAT }), [-1]); // [B,S,1] float32
    let inv = g.constant('float32', [r.invFreq.length], r.invFreq, 'inv_freq');
    if (r.long) {
      const maxPos = g.op('ReduceMax', [positionIds], { keepdims: 0 });
      const useLong = g.op('Greater', [g.op('Add', [maxPos, g.int(1)]), g.int(r.long.threshold)]);
      inv = g.op('Where', [useLong, g.constant('float32', [r.long.invFreq.length], r.long.invFreq, 'inv_freq_long'), inv]);
    }
    const freqs = g.op('Mul', [pos, inv]); // [B,S,rd/2]
    // rotate_half pairs dim i with i + rd/2 (cat(freqs, freqs)); rotate_every_two pairs 2i with
    // 2i+1 (GPT-J's repeat_interleave(sin, 2))
    const emb = r.interleaved
      ? reshape(c, g.op('Concat', [unsqueeze(c, freqs, [-1]), unsqueeze(c, freqs, [-1])], { axis: -1 }), [0, 0, -1])
      : g.op('Concat', [freqs, freqs], { axis: -1 });
    let cos = g.op('Cos', [emb]);
    let sin = g.op('Sin', [emb]);
    if (r.attentionScale !== 1) {
      const s = g.scalar('float32', r.attentionScale, 'rope_scale');
      cos = g.op('Mul', [cos, s]);
      sin = g.op('Mul', [sin, s]);
    }
    return {
      cos: unsqueeze(c, cast(c, cos, 'float32', c.dtype), [2]),
      sin: unsqueeze(c, cast(c, sin, 'float32', c.dtype), [2]),
    };
  });
}

/** x·cos + rotate_half(x)·sin on `x [B, S, heads, headDim]` (first `rotaryDim` dims rotate). */
export function applyRope(c: Ctx, x: string, t: { cos: string; sin: string }, r: RopeSpec, headDim: number): string {
  const g = c.g;
  const partial = r.rotaryDim < headDim;
  const [rot, pass] = partial ? split(c, x, -1, [r.rotaryDim, headDim - r.rotaryDim]) : [x, undefined];
  let rotated: string;
  if (r.interleaved) {
    // rotate_every_two: stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)
    const [even, odd] = split(c, reshape(c, rot!, [0, 0, 0, -1, 2]), -1, [1, 1]);
    rotated = reshape(c, g.op('Concat', [g.op('Neg', [odd!]), even!], { axis: -1 }), [0, 0, 0, -1]);
  } else {
    const half = r.rotaryDim / 2;
    const [x1, x2] = split(c, rot!, -1, [half, half]);
    rotated = g.op('Concat', [g.op('Neg', [x2!]), x1!], { axis: -1 });
  }
  const out = g.op('Add', [g.op('Mul', [rot!, t.cos]), g.op('Mul', [rotated, t.sin])]);
  return partial ? g.op('Concat', [out, pass!], { axis: -1 }) : out;
}
