/**
 * Shared node helpers: linear layers, activations, dtype casts. Hidden states travel as 2-D
 * `[tokens, features]` between blocks so every linear is one `Gemm` with `transB=1` against the
 * checkpoint's `[out, in]` weight — no `Transpose` of a weight, which ONNX Runtime would copy.
 */
import { type Act, type LinearSpec, type NBitsSpec } from './arch';
import { nbitsInputs } from './weight-inputs';
import { onnxTypeOfName, type DtypeName, type ExportDtype } from '../../formats/dtype';
import type { GraphBuilder } from './builder';

/** Builder plus the compute dtype, passed to every block. */
export interface Ctx {
  g: GraphBuilder;
  /** The model's compute dtype. */
  dtype: ExportDtype;
  /** Weight input names already declared (each is declared once, on first use). */
  declared: Set<string>;
  /** Called with each {@link linear}'s input, spec and output; returns the output to use (LoRA adapters: lora.ts). */
  afterLinear?: (x: string, l: LinearSpec, y: string) => string;
}

/** Declares (once) and returns the graph input for a weight (in the compute dtype unless `elem` says). */
export function weight(c: Ctx, name: string, shape: number[], elem?: DtypeName): string {
  if (!c.declared.has(name)) {
    c.declared.add(name);
    c.g.input(name, elem ?? c.dtype, shape);
  }
  return name;
}

/** `Cast` to `to` (skipped when `from === to`). */
export function cast(c: Ctx, x: string, from: DtypeName, to: DtypeName): string {
  return from === to ? x : c.g.op('Cast', [x], { to: onnxTypeOfName(to) });
}

/** y = x·Wᵀ + b for 2-D x `[N, in]` (Conv1D weights `[in, out]`: y = x·W + b). */
export function linear(c: Ctx, x: string, l: LinearSpec): string {
  if (l.nbits) return matMulNBits(c, x, { ...l, nbits: l.nbits });
  const w = weight(c, l.weight, l.conv1d ? [l.in, l.out] : [l.out, l.in]);
  const ins = [x, w];
  if (l.bias) ins.push(weight(c, l.bias, [l.out]));
  const y = c.g.op('Gemm', ins, { transB: l.conv1d ? 0 : 1 });
  return c.afterLinear ? c.afterLinear(x, l, y) : y;
}

/**
 * y = x·Wᵀ + b for a kept int4 Linear: `com.microsoft` MatMulNBits over the packed inputs (bits 4,
 * block_size the group size, g_idx under act-order), as QEfficient's QuantLinearORT exports it
 * (`QEfficient/customop/matmulnbits.py` `QuantLinearTorchFunction.symbolic`: K, N, bits, block_size).
 */
function matMulNBits(c: Ctx, x: string, l: LinearSpec & { nbits: NBitsSpec }): string {
  const ins = [x, ...nbitsInputs(l).map((w) => weight(c, w.name, w.shape, w.elem))];
  const attrs = { K: l.in, N: l.out, bits: 4, block_size: l.nbits.blockSize };
  const y = c.g.custom('com.microsoft', 'MatMulNBits', ins, attrs, { elem: c.dtype, dims: ['nbits_rows', l.out] });
  return l.bias ? c.g.op('Add', [y, weight(c, l.bias, [l.out])]) : y;
}

/** Elementwise activation in the compute dtype, matching HF's ACT2FN definitions. */
export function activation(c: Ctx, x: string, act: Act): string {
  const g = c.g;
  switch (act) {
    case 'silu':
      return g.op('Mul', [x, g.op('Sigmoid', [x])]);
    case 'relu':
      return g.op('Relu', [x]);
    case 'gelu': {
      // 0.5·x·(1 + erf(x/√2))
      const erf = g.op('Erf', [g.op('Div', [x, g.scalar(c.dtype, Math.SQRT2, 'sqrt2')])]);
      return g.op('Mul', [g.op('Mul', [x, g.scalar(c.dtype, 0.5, 'half')]), g.op('Add', [erf, g.scalar(c.dtype, 1, 'one')])]);
    }
    case 'gelu_tanh': {
      // HF NewGELU / gelu_pytorch_tanh: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
      const x3 = g.op('Mul', [g.op('Mul', [x, x]), x]);
      const inner = g.op('Add', [x, g.op('Mul', [x3, g.scalar(c.dtype, 0.044715, 'gelu_c')])]);
      const t = g.op('Tanh', [g.op('Mul', [inner, g.scalar(c.dtype, Math.sqrt(2 / Math.PI), 'sqrt2pi')])]);
      return g.op('Mul', [g.op('Mul', [x, g.scalar(c.dtype, 0.5, 'half')]), g.op('Add', [t, g.scalar(c.dtype, 1, 'one')])]);
    }
    case 'quick_gelu':
      // HF QuickGELUActivation (CLIP): x · σ(1.702·x)
      return g.op('Mul', [x, g.op('Sigmoid', [g.op('Mul', [x, g.scalar(c.dtype, 1.702, 'quick_gelu')])])]);
  }
}

/** Reshape with a constant target shape (0 copies the input's dim, -1 infers). */
export function reshape(c: Ctx, x: string, shape: number[]): string {
  return c.g.op('Reshape', [x, c.g.ints(shape, 'shape')]);
}

/** Transpose with a permutation. */
export function transpose(c: Ctx, x: string, perm: number[]): string {
  return c.g.op('Transpose', [x], { perm });
}

/** Unsqueeze at constant axes (opset 13+: axes is an input). */
export function unsqueeze(c: Ctx, x: string, axes: number[]): string {
  return c.g.op('Unsqueeze', [x, c.g.ints(axes, 'axes')]);
}

/** Split along `axis` into pieces of the given sizes. */
export function split(c: Ctx, x: string, axis: number, sizes: number[]): string[] {
  return c.g.opN('Split', [x, c.g.ints(sizes, 'split')], { axis }, sizes.length);
}

/** Gemma-2 soft-capping: cap · tanh(x / cap), in `elem`. */
export function softcap(c: Ctx, x: string, cap: number, elem: DtypeName): string {
  const k = c.g.constant(elem, [], [cap], 'softcap');
  return c.g.op('Mul', [c.g.op('Tanh', [c.g.op('Div', [x, k])]), k]);
}
