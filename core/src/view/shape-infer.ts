/**
 * Shape inference for the graph explorer's edge labels. A weight-free export writes no
 * `value_info`, so the file states shapes only for graph inputs, outputs and weights; this
 * walks the nodes once in file order (ONNX graphs are topologically sorted) and propagates
 * dtypes and symbolic shapes (shape-dims.ts) through the ops our exports and torch.onnx.export
 * write. It also carries the values of small integer tensors (`Shape` → `[batch_size,
 * seq_len]`, sliced, concatenated with constants), so a `Reshape` to a computed shape gets
 * its dims. An op it does not know, or a dim it cannot tell, is left unknown: the explorer
 * shows `?` or no label, never a wrong shape. core/test/view/shape-infer.test.ts holds every
 * result against ONNX's own shape inference.
 */
import { dtypeOfOnnx } from '../formats/dtype';
import type { NodeAttr } from './graph-attrs';
import type { RawNode } from './onnx-graph';
import { attrInt, attrInts, broadcast, fromDim, isNum, mul, num, parseTensorText, product, toDim, type Dim } from './shape-dims';
import {
  code,
  concat,
  constant,
  conv,
  ELEMENTWISE,
  gather,
  INT,
  ints,
  matmul,
  norm,
  reduceShape,
  reshape,
  slice,
  split,
  withDt,
  type Info,
} from './shape-ops';
import type { ValueEntry } from './types';

/** Ops whose output has the first input's shape and dtype. */
const SAME = new Set([
  'Identity', 'Neg', 'Sqrt', 'Reciprocal', 'Sin', 'Cos', 'Sigmoid', 'Tanh', 'Erf', 'Relu', 'Exp', 'Log', 'Abs', 'Floor',
  'Ceil', 'Round', 'Softmax', 'LogSoftmax', 'Clip', 'CumSum', 'Trilu', 'ScatterND', 'ScatterElements', 'Dropout', 'Gelu',
  'HardSigmoid', 'LeakyRelu', 'Not', 'IsNaN', 'IsInf', 'Sign', 'Softplus', 'Elu', 'Selu', 'Mish',
]); // prettier-ignore
const BOOL_OUT = new Set(['Equal', 'Less', 'Greater', 'LessOrEqual', 'GreaterOrEqual', 'And', 'Or', 'Xor', 'IsNaN', 'IsInf', 'Not']);
const BINARY = new Set(['Add', 'Sub', 'Mul', 'Div', 'Pow', 'Max', 'Min', 'Mod', 'PRelu', ...BOOL_OUT]);
const REDUCE = new Set(['ReduceMean', 'ReduceSum', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL2', 'ReduceSumSquare']);

/** Infers the outputs of one node from its inputs' infos; undefined entries are unknown. */
function inferNode(n: RawNode, ins: (Info | undefined)[]): (Info | undefined)[] {
  const a = ins[0];
  const A: NodeAttr[] = n.attrs ?? [];
  const op = n.domain && n.domain !== 'ai.onnx' ? '' : n.op;
  const axesOf = () => ints(ins[1]) ?? attrInts(A, 'axes');
  if (op === 'Constant') return [constant(A)];
  if (SAME.has(op)) {
    const dt = BOOL_OUT.has(op) ? 'BOOL' : a?.dt;
    const v = op === 'Identity' ? a?.v : op === 'Neg' && a?.v?.every((d) => isNum(d)) ? a.v.map((d) => num(-d!.c)) : undefined;
    return [{ ...(dt ? { dt } : {}), ...(a?.sh ? { sh: a.sh } : {}), ...(v ? { v } : {}) }];
  }
  if (BINARY.has(op)) {
    const b = ins[1];
    const dt = BOOL_OUT.has(op) ? 'BOOL' : (a?.dt ?? b?.dt);
    const sh = a?.sh && b?.sh ? broadcast([a.sh, b.sh]) : undefined;
    let v: Dim[] | undefined;
    if (a?.v && b?.v && sh && sh.length <= 1 && (a.v.length === b.v.length || a.v.length === 1 || b.v.length === 1)) {
      const len = Math.max(a.v.length, b.v.length);
      const at = (x: Dim[], i: number) => (x.length === 1 ? x[0] : x[i]);
      // Elements of small int tensors (shapes being computed): products, exact quotients, sums of like terms, equality.
      const f = INT.test(a.dt ?? '') ? ELEMENTWISE[op] : undefined;
      if (f) v = Array.from({ length: len }, (_, i) => f(at(a.v!, i), at(b.v!, i)));
    }
    return [{ ...(dt ? { dt } : {}), ...(sh ? { sh } : {}), ...(v ? { v } : {}) }];
  }
  switch (op) {
    case 'Cast': {
      const to = dtypeOfOnnx(attrInt(A, 'to') ?? -1);
      // Elements carry over to an integer type, and to a float one while exact (|x| < 2^24).
      const exact = to === 'F32' || to === 'F64' ? a?.v?.every((d) => isNum(d) && Math.abs(d.c) < 2 ** 24) : !!to && INT.test(to);
      return [{ ...(to ? { dt: to } : {}), ...(a?.sh ? { sh: a.sh } : {}), ...(exact && a?.v ? { v: a.v } : {}) }];
    }
    case 'Shape': {
      if (!a?.sh) return [{ dt: 'I64' }];
      const r = a.sh.length;
      const s = Math.max(0, Math.min(r, norm(attrInt(A, 'start') ?? 0, r)));
      const e = Math.max(0, Math.min(r, norm(attrInt(A, 'end') ?? r, r)));
      const v = a.sh.slice(s, Math.max(s, e));
      return [{ dt: 'I64', sh: [num(v.length)], v }];
    }
    case 'Size':
      return [{ dt: 'I64', sh: [], ...(a?.sh ? { v: [product(a.sh)] } : {}) }];
    case 'Where': {
      const [c, x, y] = ins;
      const sh = c?.sh && x?.sh && y?.sh ? broadcast([c.sh, x.sh, y.sh]) : undefined;
      const dt = x?.dt ?? y?.dt;
      // torch's expand(-1) writes Where(Equal(shape, -1), ones, shape): pick the elements.
      let v: Dim[] | undefined;
      const cv = ints(c);
      if (cv && x?.v && y?.v && sh && sh.length <= 1) {
        const n = Math.max(cv.length, x.v.length, y.v.length);
        const at = <T>(xs: T[], i: number) => (xs.length === 1 ? xs[0] : xs[i]);
        if ([cv, x.v, y.v].every((xs) => xs.length === 1 || xs.length === n))
          v = Array.from({ length: n }, (_, i) => (at(cv, i) ? at(x.v!, i) : at(y.v!, i)));
      }
      return [{ ...(dt ? { dt } : {}), ...(sh ? { sh } : {}), ...(v ? { v } : {}) }];
    }
    case 'MatMul':
      return [matmul(a, ins[1])];
    case 'Gemm': {
      const b = ins[1];
      if (a?.sh?.length !== 2 || b?.sh?.length !== 2) return [withDt(a?.dt)];
      const m = attrInt(A, 'transA') ? a.sh[1] : a.sh[0];
      const k = attrInt(A, 'transB') ? b.sh[0] : b.sh[1];
      return [{ ...withDt(a.dt), sh: [m, k] }];
    }
    case 'Reshape':
      return [reshape(a, ins[1], attrInt(A, 'allowzero') ?? 0)];
    case 'Transpose': {
      if (!a?.sh) return [withDt(a?.dt)];
      const perm = attrInts(A, 'perm') ?? a.sh.map((_, i) => a.sh!.length - 1 - i);
      return [{ ...withDt(a.dt), sh: perm.map((p) => a.sh![p]) }];
    }
    case 'Unsqueeze': {
      const axes = axesOf();
      if (!a?.sh || !axes) return [withDt(a?.dt)];
      const r = a.sh.length + axes.length;
      const set = new Set(axes.map((x) => norm(x, r)));
      const rest = [...a.sh];
      const sh = Array.from({ length: r }, (_, i) => (set.has(i) ? num(1) : rest.shift()));
      return [{ ...withDt(a.dt), sh, ...(a.v && a.sh.length === 0 ? { v: a.v } : {}) }];
    }
    case 'Squeeze': {
      if (!a?.sh) return [withDt(a?.dt)];
      const axes = axesOf();
      const r = a.sh.length;
      let sh: Dim[];
      if (axes) {
        const set = new Set(axes.map((x) => norm(x, r)));
        sh = a.sh.filter((_, i) => !set.has(i));
      } else if (a.sh.every((d) => isNum(d))) sh = a.sh.filter((d) => !isNum(d, 1));
      else return [withDt(a.dt)];
      return [{ ...withDt(a.dt), sh, ...(a.v && sh.length === 0 ? { v: a.v } : {}) }];
    }
    case 'Gather':
      return [gather(a, ins[1], attrInt(A, 'axis') ?? 0)];
    case 'GatherElements':
      return [{ ...withDt(a?.dt), ...(ins[1]?.sh ? { sh: ins[1].sh } : {}) }];
    case 'GatherND': {
      const ix = ins[1]?.sh;
      const last = ix?.[ix.length - 1];
      const b = attrInt(A, 'batch_dims') ?? 0;
      if (!a?.sh || !ix || !isNum(last)) return [withDt(a?.dt)];
      // The leading `b` dims are shared; each index row picks `last` dims of the rest.
      return [{ ...withDt(a.dt), sh: [...ix.slice(0, -1), ...a.sh.slice(b + last.c)] }];
    }
    case 'Slice':
      return [slice(a, ins)];
    case 'Concat':
      return [concat(ins, attrInt(A, 'axis') ?? 0)];
    case 'Expand': {
      const shape = ins[1]?.v;
      if (!a?.sh || !shape) return [withDt(a?.dt)];
      return [{ ...withDt(a.dt), sh: broadcast([a.sh, shape]) }];
    }
    case 'Tile': {
      const rep = ins[1]?.v;
      if (!a?.sh || !rep || rep.length !== a.sh.length) return [withDt(a?.dt)];
      return [{ ...withDt(a.dt), sh: a.sh.map((d, i) => mul(d, rep[i])) }];
    }
    case 'Range': {
      const [s, l, d] = ins.map((x) => (x?.v?.length === 1 ? x.v[0] : undefined));
      let len: Dim;
      if (isNum(s) && isNum(l) && isNum(d) && d.c !== 0) len = num(Math.max(0, Math.ceil((l.c - s.c) / d.c)));
      else if (isNum(s, 0) && isNum(d, 1) && l) len = l;
      return [{ ...withDt(a?.dt), sh: [len] }];
    }
    case 'ConstantOfShape': {
      const t = parseTensorText(A.find((x) => x.name === 'value')?.value ?? '');
      const dt = t ? code(t.dtype) : 'F32';
      const sh = ins[0]?.v;
      // A short 1-D int fill (torch's expand pattern) keeps its elements.
      const n = sh?.length === 1 && isNum(sh[0]) && sh[0].c <= 64 ? sh[0].c : undefined;
      const fill = t?.ints?.length === 1 && INT.test(dt) && n !== undefined ? Array.from({ length: n }, () => num(t.ints![0]!)) : undefined;
      return [{ dt, ...(sh ? { sh } : {}), ...(fill ? { v: fill } : {}) }];
    }
    case 'TopK': {
      const k = ins[1]?.v?.[0];
      if (!a?.sh) return [withDt(a?.dt), { dt: 'I64' }];
      const ax = norm(attrInt(A, 'axis') ?? -1, a.sh.length);
      const sh = a.sh.map((d, i) => (i === ax ? k : d));
      return [
        { ...withDt(a.dt), sh },
        { dt: 'I64', sh },
      ];
    }
    case 'ArgMax':
    case 'ArgMin': {
      if (!a?.sh) return [{ dt: 'I64' }];
      const ax = norm(attrInt(A, 'axis') ?? 0, a.sh.length);
      return [{ dt: 'I64', sh: reduceShape(a.sh, [ax], attrInt(A, 'keepdims') ?? 1) }];
    }
    case 'Split':
      return split(n, a, ins[1], A);
    case 'LayerNormalization':
      return [{ ...withDt(a?.dt), ...(a?.sh ? { sh: a.sh } : {}) }];
    case 'Conv':
      return [conv(a, ins[1], A)];
  }
  if (REDUCE.has(op)) {
    if (!a?.sh) return [withDt(a?.dt)];
    const axes = axesOf();
    const keep = attrInt(A, 'keepdims') ?? 1;
    if (!axes && (attrInt(A, 'noop_with_empty_axes') ?? 0)) return [{ ...withDt(a.dt), sh: a.sh }];
    const all = axes?.length ? axes.map((x) => norm(x, a.sh!.length)) : a.sh.map((_, i) => i);
    return [{ ...withDt(a.dt), sh: reduceShape(a.sh, all, keep) }];
  }
  return [];
}

/** A value's inferred dtype and dims (`''` for an unknown dim). */
export interface InferredValue {
  dtype?: string;
  dims?: (number | string)[];
}

/**
 * Dtypes and shapes of the values `nodes` compute, given what the file states (`known`:
 * inputs, outputs, weights, value_info). Stated values are kept as stated; values with
 * nothing known are left out.
 */
export function inferShapes(nodes: RawNode[], known: Iterable<ValueEntry>): Map<string, InferredValue> {
  const info = new Map<string, Info>();
  for (const k of known) if (!info.has(k.name)) info.set(k.name, { dt: k.dtype, sh: k.dims.map(fromDim) });
  const stated = new Set(info.keys());
  for (const n of nodes) {
    let outs: (Info | undefined)[];
    try {
      outs = inferNode(
        n,
        n.inputs.map((v) => (v ? info.get(v) : undefined)),
      );
    } catch {
      outs = []; // a malformed node (attributes out of range) gives nothing, not a wrong shape
    }
    n.outputs.forEach((o, i) => {
      const x = outs[i];
      if (!o || !x) return;
      const s = info.get(o);
      // A stated value keeps the file's dims, and gains the elements of a small int tensor.
      if (stated.has(o)) {
        if (s && x.v && !s.v && x.sh && s.sh?.length === x.sh.length) s.v = x.v;
        return;
      }
      info.set(o, x);
    });
  }
  const out = new Map<string, InferredValue>();
  // Values share shape arrays (an elementwise op passes its input's on): each is written out once.
  const texts = new Map<Dim[], (number | string)[]>();
  const text = (sh: Dim[]) => {
    let t = texts.get(sh);
    if (!t) texts.set(sh, (t = sh.map(toDim)));
    return t;
  };
  for (const [name, x] of info) {
    if (stated.has(name) || (!x.dt && !x.sh)) continue;
    out.set(name, x.dt && x.sh ? { dtype: x.dt, dims: text(x.sh) } : x.sh ? { dims: text(x.sh) } : { dtype: x.dt! });
  }
  return out;
}
