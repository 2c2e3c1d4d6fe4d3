/**
 * The arithmetic of shape inference (shape-infer.ts): a dim is a monomial `c·a·b…` of the
 * graph's symbolic dims (`batch_size`, `seq_len`, `ctx_len`), so `Reshape(input_ids, [-1])`
 * reads `batch_size*seq_len` and a head split of it `8*seq_len`. Sums of different symbols
 * (`seq_len + ctx_len`) are not monomials and become unknown: an unknown dim is shown as `?`,
 * never guessed. Also here: reading the numbers back from a node's attribute text
 * (graph-attrs.ts writes `perm = [0, 2, 1, 3]`, `int64[2] [1, -1]`).
 */
import type { NodeAttr } from './graph-attrs';

/** A known dim: `c` times the product of the symbols `s` (sorted). */
export interface Mono {
  c: number;
  s: string[];
}

/** A dim that may be unknown. */
export type Dim = Mono | undefined;

/** A plain number as a dim. */
export const num = (c: number): Mono => ({ c, s: [] });

/** A dim as the file states it: a number, a named symbol, or `''` (unknown). */
export function fromDim(d: number | string): Dim {
  if (typeof d === 'number') return num(d);
  return d ? { c: 1, s: [d] } : undefined;
}

/** The dim as text for the explorer: `4096`, `batch_size`, `8*seq_len`, `''` when unknown. */
export function toDim(d: Dim): number | string {
  if (!d) return '';
  if (!d.s.length) return d.c;
  return `${d.c === 1 ? '' : `${d.c}*`}${d.s.join('*')}`;
}

/** True for a known number (equal to `c` when given). */
export const isNum = (d: Dim, c?: number): d is Mono => !!d && !d.s.length && (c === undefined || d.c === c);

/** Both known and the same monomial. */
export function eq(a: Dim, b: Dim): boolean {
  return !!a && !!b && a.c === b.c && a.s.length === b.s.length && a.s.every((x, i) => x === b.s[i]);
}

/** The product (unknown when either is). */
export function mul(a: Dim, b: Dim): Dim {
  if (!a || !b) return undefined;
  return { c: a.c * b.c, s: [...a.s, ...b.s].sort() };
}

/** `a / b` when it divides exactly (as numbers and as symbols), else unknown. */
export function div(a: Dim, b: Dim): Dim {
  if (!a || !b || b.c === 0 || a.c % b.c !== 0) return undefined;
  const rest = [...a.s];
  for (const x of b.s) {
    const i = rest.indexOf(x);
    if (i < 0) return undefined;
    rest.splice(i, 1);
  }
  return { c: a.c / b.c, s: rest };
}

/** `a + b` for numbers or multiples of the same symbols (`64*x + 64*x`), else unknown. */
export function add(a: Dim, b: Dim): Dim {
  if (!a || !b) return undefined;
  const same = a.s.length === b.s.length && a.s.every((x, i) => x === b.s[i]);
  return same && (a.s.length === 0 || a.c + b.c > 0) ? { c: a.c + b.c, s: a.s } : undefined;
}

/** The product of all (unknown when any is). */
export const product = (ds: Dim[]): Dim => ds.reduce<Dim>((p, d) => mul(p, d), num(1));

/**
 * One dim of a broadcast (numpy rules): a 1 gives way to the other; equal dims stay; a number
 * other than 1 wins over a symbol or an unknown (a valid graph has the other be 1 or equal).
 */
export function broadcastDim(a: Dim, b: Dim): Dim {
  if (isNum(a, 1)) return b;
  if (isNum(b, 1)) return a;
  if (eq(a, b)) return a;
  if (isNum(a)) return a;
  if (isNum(b)) return b;
  return undefined;
}

/** The broadcast of shapes (right-aligned). */
export function broadcast(shapes: Dim[][]): Dim[] {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    let d: Dim = num(1);
    let first = true;
    for (const s of shapes) {
      const j = s.length - rank + i;
      if (j < 0) continue;
      d = first ? s[j] : broadcastDim(d, s[j]);
      first = false;
    }
    out.push(d);
  }
  return out;
}

// ---- attributes (the text graph-attrs.ts writes) ----

const attr = (attrs: NodeAttr[], name: string) => attrs.find((a) => a.name === name)?.value;

/** An integer attribute (`axis = 1`). */
export function attrInt(attrs: NodeAttr[], name: string): number | undefined {
  const v = attr(attrs, name);
  const n = v === undefined ? NaN : Number(v);
  return Number.isInteger(n) ? n : undefined;
}

/** A list of integers (`perm = [0, 2, 1, 3]`); undefined when cut (`…`) or absent. */
export function attrInts(attrs: NodeAttr[], name: string): number[] | undefined {
  const v = attr(attrs, name);
  return v === undefined ? undefined : intList(v);
}

function intList(text: string): number[] | undefined {
  const m = /^\[(.*)\]$/.exec(text.trim());
  if (!m || m[1]!.includes('…')) return undefined;
  if (!m[1]!.trim()) return [];
  const xs = m[1]!.split(',').map((x) => Number(x.trim()));
  return xs.every((x) => Number.isInteger(x)) ? xs : undefined;
}

/**
 * A tensor attribute's text (`int64[2] [1, -1]`): dtype, dims, and the integer elements when all
 * are shown — of an integer tensor, or of a float one whose elements all print as integers
 * (graph-attrs.ts prints those exactly: `float32[] 2` is a Range's step).
 */
export function parseTensorText(text: string): { dtype: string; dims: number[]; ints?: number[] } | undefined {
  const m = /^([a-z][a-z0-9_]*)\[([\d, ]*)\](?: (.*))?$/.exec(text);
  if (!m) return undefined;
  const dims = m[2]!.trim() ? m[2]!.split(',').map((x) => Number(x.trim())) : [];
  const dtype = m[1]!;
  const rest = m[3];
  const float = /^float(32|64)$/.test(dtype);
  if ((!/^u?int\d+$/.test(dtype) && !float) || rest === undefined) return { dtype, dims };
  if (float && !/^[-\d\s,[\]]+$/.test(rest)) return { dtype, dims };
  if (dims.length === 0) {
    const x = /^-?\d+$/.test(rest) ? Number(rest) : NaN;
    return Number.isInteger(x) ? { dtype, dims, ints: [x] } : { dtype, dims };
  }
  const ints = rest === '[]' ? [] : intList(rest);
  return ints ? { dtype, dims, ints } : { dtype, dims };
}
