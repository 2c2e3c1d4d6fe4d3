/**
 * RMSNorm (Llama/Qwen/Mistral/Phi-3, Gemma's (1 + w) variant) and LayerNorm (GPT-2), with
 * HF's precision rules: statistics in float32, Llama-style weight multiply in the model dtype
 * after casting back, Gemma's (1 + w) multiply in float32 before casting back.
 * Opset 18 has no RMSNormalization, so it is composed from elementwise ops.
 */
import type { NormKind, NormSpec } from './arch';
import { cast, weight, type Ctx } from './ops';

/** Normalizes `x` over its last axis. `x` is in the compute dtype; so is the result. */
export function norm(c: Ctx, x: string, n: NormSpec, kind: NormKind): string {
  return kind.kind === 'rms' ? rmsNorm(c, x, n, kind) : layerNorm(c, x, n, kind);
}

function rmsNorm(c: Ctx, x: string, n: NormSpec, kind: NormKind): string {
  const g = c.g;
  const w = weight(c, n.weight, [n.size]);
  const xf = cast(c, x, c.dtype, 'float32');
  // variance = mean(x²); x · rsqrt(variance + eps)
  const variance = g.reduce('ReduceMean', g.op('Mul', [xf, xf]), [-1], 1);
  const inv = g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [variance, g.scalar('float32', kind.eps, 'eps')])])]);
  const normed = g.op('Mul', [xf, inv]);
  if (kind.plusOne) {
    const w1 = g.op('Add', [cast(c, w, c.dtype, 'float32'), g.scalar('float32', 1, 'one')]);
    return cast(c, g.op('Mul', [normed, w1]), 'float32', c.dtype);
  }
  if (kind.weightInFloat32) return cast(c, g.op('Mul', [cast(c, w, c.dtype, 'float32'), normed]), 'float32', c.dtype);
  return g.op('Mul', [w, cast(c, normed, 'float32', c.dtype)]);
}

function layerNorm(c: Ctx, x: string, n: NormSpec, kind: NormKind): string {
  const g = c.g;
  const w = cast(c, weight(c, n.weight, [n.size]), c.dtype, 'float32');
  const ins = [cast(c, x, c.dtype, 'float32'), w];
  if (n.bias) ins.push(cast(c, weight(c, n.bias, [n.size]), c.dtype, 'float32'));
  const y = g.op('LayerNormalization', ins, { axis: -1, epsilon: { float: kind.eps } });
  return cast(c, y, 'float32', c.dtype);
}
