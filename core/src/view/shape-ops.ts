/**
 * The per-op rules of shape-infer.ts (MatMul, Reshape, Gather, Slice, Concat, Split, …) and
 * the value record they share. Each returns what it can tell; an unknown dim stays undefined.
 */
import { DTYPES, dtypeOfName, nameOfDtype, type DtypeName } from '../formats/dtype';
import type { NodeAttr } from './graph-attrs';
import type { RawNode } from './onnx-graph';
import { add, attrInt, attrInts, broadcast, div, eq, isNum, mul, num, parseTensorText, product, type Dim } from './shape-dims';

/** What is known of one value: dtype, shape (dims may be unknown), and for small int tensors the elements. */
export interface Info {
  dt?: string;
  sh?: Dim[];
  v?: Dim[];
}

/** Integer dtypes (as the file summary spells them: `I64`, `I32`, …), whose small tensors' elements are carried. */
export const INT = /^[IU]\d+$/;
/** Slice ends past this mean "to the end" (torch writes INT64_MAX). */
export const BIG = 2 ** 31;

const NAMES = new Set<string>(DTYPES.map(nameOfDtype));
const isDtypeName = (n: string): n is DtypeName => NAMES.has(n);
/** A tensor attribute's dtype name (`int64`) as the summary's code (`I64`). */
export const code = (name: string): string => (isDtypeName(name) ? dtypeOfName(name) : name);

/** Ints of a value whose elements are all known numbers. */
export function ints(i: Info | undefined): number[] | undefined {
  if (!i?.v || !i.v.every((d) => isNum(d))) return undefined;
  return i.v.map((d) => d!.c);
}

/** An axis counted from the end (`-1`) as its index. */
export const norm = (axis: number, rank: number) => (axis < 0 ? axis + rank : axis);

/** A record with only the dtype (when known). */
export const withDt = (dt: string | undefined): Info => (dt ? { dt } : {});

/**
 * One element of Equal on int elements, as 1/0: numbers compare; a dim (a symbol, never
 * negative) differs from a negative number; equal monomials are equal; anything else is unknown.
 */
export function equal(x: Dim, y: Dim): Dim {
  if (!x || !y) return undefined;
  if (isNum(x) && isNum(y)) return num(x.c === y.c ? 1 : 0);
  if (eq(x, y)) return num(1);
  if ((isNum(x) && x.c < 0 && y.c > 0) || (isNum(y) && y.c < 0 && x.c > 0)) return num(0);
  return undefined;
}

/** Element rules of binary ops on small int tensors (the values of shapes being computed). */
export const ELEMENTWISE: Record<string, (x: Dim, y: Dim) => Dim> = {
  Mul: mul,
  Div: div,
  Add: add,
  Sub: (x, y) => add(x, y && mul(y, num(-1))),
  Equal: (x, y) => equal(x, y),
};

/** The shape after reducing `axes` (kept as 1s with `keepdims`). */
export function reduceShape(sh: Dim[], axes: number[], keep: number): Dim[] {
  const set = new Set(axes);
  return keep ? sh.map((d, i) => (set.has(i) ? num(1) : d)) : sh.filter((_, i) => !set.has(i));
}

/** A Constant node's value: dtype, shape and (small int tensors) elements. */
export function constant(A: NodeAttr[]): Info | undefined {
  const x = A[0];
  if (!x) return undefined;
  if (x.name === 'value') {
    const t = parseTensorText(x.value);
    if (!t) return undefined;
    return { dt: code(t.dtype), sh: t.dims.map(num), ...(t.ints ? { v: t.ints.map(num) } : {}) };
  }
  if (x.name === 'value_int') return { dt: 'I64', sh: [], v: [num(Number(x.value))] };
  if (x.name === 'value_float') return { dt: 'F32', sh: [] };
  const list = attrInts(A, x.name);
  if (x.name === 'value_ints' && list) return { dt: 'I64', sh: [num(list.length)], v: list.map(num) };
  return undefined;
}

/** MatMul: batch dims broadcast, then `[m, k] × [k, n]` (1-D operands per numpy). */
export function matmul(a: Info | undefined, b: Info | undefined): Info {
  const dt = withDt(a?.dt ?? b?.dt);
  if (!a?.sh?.length || !b?.sh?.length) return dt;
  const x = a.sh.length === 1 ? [num(1), a.sh[0]] : a.sh;
  const y = b.sh.length === 1 ? [b.sh[0], num(1)] : b.sh;
  const batch = broadcast([x.slice(0, -2), y.slice(0, -2)]);
  const sh = [...batch, ...(a.sh.length > 1 ? [x[x.length - 2]] : []), ...(b.sh.length > 1 ? [y[y.length - 1]] : [])];
  return { ...dt, sh };
}

/** Reshape to the elements of the shape input: `0` copies the input's dim, `-1` is what is left. */
export function reshape(a: Info | undefined, s: Info | undefined, allowzero: number): Info {
  const dt = withDt(a?.dt);
  const target = s?.v;
  if (!target) {
    const len = s?.sh?.length === 1 && isNum(s.sh[0]) ? s.sh[0].c : undefined;
    return len === undefined ? dt : { ...dt, sh: Array.from({ length: len }, () => undefined) };
  }
  const sh: Dim[] = target.map((d, i) => (isNum(d, 0) && !allowzero ? a?.sh?.[i] : isNum(d, -1) ? undefined : d));
  const free = target.findIndex((d) => isNum(d, -1));
  if (free >= 0 && a?.sh) sh[free] = div(product(a.sh), product(sh.filter((_, i) => i !== free)));
  return { ...dt, sh, ...(a?.v && sh.length <= 1 ? { v: a.v } : {}) };
}

/** Gather along `axis`; on a small int tensor with known indices, its elements too. */
export function gather(a: Info | undefined, ix: Info | undefined, axis: number): Info {
  const dt = withDt(a?.dt);
  if (!a?.sh || !ix?.sh) return dt;
  const ax = norm(axis, a.sh.length);
  const sh = [...a.sh.slice(0, ax), ...ix.sh, ...a.sh.slice(ax + 1)];
  const at = ints(ix);
  let v: Dim[] | undefined;
  if (a.v && a.sh.length === 1 && at && ix.sh.length <= 1) {
    const len = a.v.length;
    v = at.map((i) => a.v![i < 0 ? i + len : i]);
    if (v.some((d, j) => at[j]! >= len || at[j]! < -len || d === undefined)) v = undefined;
  }
  return { ...dt, sh, ...(v ? { v } : {}) };
}

/** One sliced dim: exact for a known length, the whole dim for `0:end:1`, else unknown. */
function sliceDim(d: Dim, start: number, end: number, step: number): Dim {
  if (isNum(d)) {
    const n = d.c;
    const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x < 0 ? x + n : x));
    if (step > 0) {
      const s = clamp(start, 0, n);
      const e = clamp(end, 0, n);
      return num(Math.max(0, Math.ceil((e - s) / step)));
    }
    const s = clamp(start, 0, n - 1);
    const e = clamp(end, -1, n - 1);
    return num(Math.max(0, Math.ceil((e - s) / step)));
  }
  return start === 0 && end >= BIG && step === 1 ? d : undefined;
}

/** Slice with its starts, ends, axes and steps inputs (opset ≥ 10). */
export function slice(a: Info | undefined, ins: (Info | undefined)[]): Info {
  const dt = withDt(a?.dt);
  const [starts, ends, axesIn, steps] = [ints(ins[1]), ints(ins[2]), ints(ins[3]), ints(ins[4])];
  if (!a?.sh) return dt;
  const r = a.sh.length;
  if (!starts || !ends || (ins[3] && !axesIn) || (ins[4] && !steps)) {
    // Unknown bounds: the rank is known, and the dims of axes not sliced (when the axes are).
    if (!axesIn) return { ...dt, sh: a.sh.map(() => undefined) };
    const set = new Set(axesIn.map((x) => norm(x, r)));
    return { ...dt, sh: a.sh.map((d, i) => (set.has(i) ? undefined : d)) };
  }
  const axes = (axesIn ?? starts.map((_, i) => i)).map((x) => norm(x, r));
  const sh = [...a.sh];
  axes.forEach((ax, i) => (sh[ax] = sliceDim(a.sh![ax], starts[i]!, ends[i]!, steps?.[i] ?? 1)));
  let v: Dim[] | undefined;
  if (a.v && r === 1 && axes[0] === 0 && (steps?.[0] ?? 1) === 1) {
    const n = a.v.length;
    const c = (x: number) => Math.min(n, Math.max(0, x < 0 ? x + n : x));
    v = a.v.slice(c(starts[0]!), c(ends[0]!));
  }
  return { ...dt, sh, ...(v ? { v } : {}) };
}

/** Concat along `axis`: the sum of the parts' dims there, their elements for 1-D parts. */
export function concat(ins: (Info | undefined)[], axis: number): Info {
  const parts = ins;
  const dt = withDt(parts.find((x) => x?.dt)?.dt);
  if (!parts.length || parts.some((x) => !x?.sh)) return dt;
  const r = parts[0]!.sh!.length;
  if (parts.some((x) => x!.sh!.length !== r)) return dt;
  const ax = norm(axis, r);
  const sh: Dim[] = [];
  for (let i = 0; i < r; i++) {
    if (i === ax) sh.push(parts.map((x) => x!.sh![i]).reduce<Dim>((s, d) => add(s, d), num(0)));
    // Other dims agree in a valid graph: a number is the surest, else the first known.
    else sh.push(parts.map((x) => x!.sh![i]).find((d) => isNum(d)) ?? parts.map((x) => x!.sh![i]).find((d) => d));
  }
  const v = r === 1 && parts.every((x) => x!.v) ? parts.flatMap((x) => x!.v!) : undefined;
  return { ...dt, sh, ...(v ? { v } : {}) };
}

/**
 * Conv (explicit pads, no auto_pad): `[N, M, …]` with each spatial dim
 * `⌊(d + pads − dilation·(k − 1) − 1) / stride⌋ + 1` when `d` is a number, else unknown.
 */
export function conv(x: Info | undefined, w: Info | undefined, A: NodeAttr[]): Info {
  const dt = withDt(x?.dt ?? w?.dt);
  const auto = A.find((a) => a.name === 'auto_pad')?.value;
  if (!x?.sh || !w?.sh || x.sh.length < 3 || w.sh.length !== x.sh.length || (auto && auto !== '"NOTSET"')) return dt;
  const n = x.sh.length - 2;
  const k = attrInts(A, 'kernel_shape') ?? w.sh.slice(2).map((d) => (isNum(d) ? d.c : NaN));
  const strides = attrInts(A, 'strides') ?? Array<number>(n).fill(1);
  const dil = attrInts(A, 'dilations') ?? Array<number>(n).fill(1);
  const pads = attrInts(A, 'pads') ?? Array<number>(2 * n).fill(0);
  const spatial = x.sh.slice(2).map((d, i) => {
    const ki = k[i]!;
    if (!isNum(d) || !Number.isInteger(ki)) return undefined;
    return num(Math.floor((d.c + pads[i]! + pads[i + n]! - dil[i]! * (ki - 1) - 1) / strides[i]!) + 1);
  });
  return { ...dt, sh: [x.sh[0], w.sh[0], ...spatial] };
}

/** Split along `axis` by the split input or attribute, else in equal parts. */
export function split(n: RawNode, a: Info | undefined, s: Info | undefined, A: NodeAttr[]): (Info | undefined)[] {
  const dt = withDt(a?.dt);
  const outs = n.outputs.length;
  if (!a?.sh) return n.outputs.map(() => dt);
  const ax = norm(attrInt(A, 'axis') ?? 0, a.sh.length);
  const sizes: Dim[] | undefined = s?.v ?? attrInts(A, 'split')?.map(num);
  const each = sizes ?? Array.from({ length: outs }, () => div(a.sh![ax], num(outs)));
  if (s && !s.v) return n.outputs.map(() => ({ ...dt, sh: a.sh!.map((d, i) => (i === ax ? undefined : d)) }));
  return each.map((d) => ({ ...dt, sh: a.sh!.map((x, i) => (i === ax ? d : x)) }));
}
