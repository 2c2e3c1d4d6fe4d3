/**
 * A bfloat16 graph made runnable on ONNX Runtime's CPU provider, with bf16 arithmetic emulated.
 *
 * Measured on onnxruntime-node 1.30.0 (a one-node model per op, bf16 input and output):
 * the CPU provider has bf16 kernels only for data movement — Cast, Concat, Gather, GatherND,
 * Reshape, ScatterND, Slice, Split, Unsqueeze — and none for arithmetic: Add, Sub, Mul, Div,
 * MatMul, Gemm, Neg, Sqrt, Reciprocal, ReduceMean, ReduceMax (so Softmax), Sigmoid, Where,
 * Expand, Tile, Less, … fail with "Could not find an implementation for …". And the Node binding
 * cannot hand over a bf16 tensor at all: a session whose graph input or output is bf16 fails
 * ("Unsupported data type: 16").
 *
 * So, like the fp16 cast insertion ORT does itself for CPU: every node without a bf16 kernel
 * that reads a bf16 value reads it cast to float32, computes in float32, and its bf16 outputs
 * are cast back to bf16 — one RNE rounding per op, as a bf16 kernel rounds its result (a MatMul
 * accumulates in float32, as bf16 GEMMs do). bf16 graph inputs (the KV cache) become float32
 * inputs cast to bf16 first, bf16 outputs are cast to float32 last: the values are unchanged
 * (every bf16 is a float32). Initializers (the bound weights) stay bf16.
 */
import { makeAttribute, makeNode } from './builders';
import type { ModelProto, NodeProto, ValueInfoProto } from './types';

const BF16 = 16;
const F32 = 1;
const I64 = 7;
const BOOL = 9;

/** Ops ORT's CPU provider runs on bf16 (measured; see the file comment), plus the type-free ones. */
export const BF16_CPU_KERNELS: ReadonlySet<string> = new Set([
  'Cast',
  'Concat',
  'Gather',
  'GatherND',
  'Reshape',
  'ScatterND',
  'Slice',
  'Split',
  'Unsqueeze',
  'Shape',
  'Constant',
]);

const BOOL_OUT = new Set(['Less', 'LessOrEqual', 'Greater', 'GreaterOrEqual', 'Equal', 'And', 'Or', 'Not', 'Xor', 'IsNaN', 'IsInf']);
const INT64_OUT = new Set(['Shape', 'ArgMax', 'ArgMin', 'NonZero', 'Size']);

/** The element type of a node's output `k` from its inputs' (the ops a decoder graph uses). */
function outputType(n: NodeProto, k: number, typeOf: (v: string) => number | undefined): number | undefined {
  const op = n.opType ?? '';
  if (op === 'Cast') return Number(n.attribute?.find((a) => a.name === 'to')?.i ?? 0);
  if (op === 'Constant') return n.attribute?.find((a) => a.name === 'value')?.t?.dataType ?? undefined;
  if (BOOL_OUT.has(op)) return BOOL;
  if (INT64_OUT.has(op)) return I64;
  if (op === 'TopK') return k === 1 ? I64 : typeOf(n.input![0]!);
  if (op === 'Where') return typeOf(n.input![1]!);
  return typeOf(n.input?.[0] ?? '');
}

/** What {@link emulateBf16OnCpu} changed. */
export interface Bf16Emulation {
  /** Nodes now computing in float32, by op type. */
  emulated: Record<string, number>;
  /** Graph inputs and outputs retyped bf16 → float32. */
  retyped: string[];
}

/** Rewrites `model` in place (see the file comment); a graph without bf16 comes back unchanged. */
export function emulateBf16OnCpu(model: ModelProto): Bf16Emulation {
  const g = model.graph!;
  const types = new Map<string, number>();
  const elemOf = (v: ValueInfoProto) => v.type?.tensorType?.elemType ?? 0;
  for (const i of g.input ?? []) types.set(i.name!, elemOf(i));
  for (const t of g.initializer ?? []) types.set(t.name!, t.dataType ?? 0);
  const typeOf = (v: string) => types.get(v);
  const out: NodeProto[] = [];
  const emulated: Record<string, number> = {};
  const retyped: string[] = [];
  let fresh = 0;
  const name = (base: string) => `${base}__bf16emu${fresh++}`;
  const asF32 = new Map<string, string>();
  const toF32 = (v: string) => {
    let c = asF32.get(v);
    if (!c) {
      c = name(v);
      out.push(makeNode('Cast', [v], [c], [makeAttribute('to', 'int', F32)]));
      asF32.set(v, c);
    }
    return c;
  };
  // bf16 graph inputs: float32 in (same name, what a caller feeds), cast to bf16 for the nodes
  const rename = new Map<string, string>();
  for (const i of g.input ?? []) {
    if (elemOf(i) !== BF16) continue;
    const inner = name(i.name!);
    out.push(makeNode('Cast', [i.name!], [inner], [makeAttribute('to', 'int', BF16)]));
    rename.set(i.name!, inner);
    retyped.push(i.name!);
    i.type!.tensorType!.elemType = F32;
    types.set(i.name!, F32);
    types.set(inner, BF16);
  }
  for (const n of g.node ?? []) {
    n.input = (n.input ?? []).map((v) => rename.get(v) ?? v);
    const op = n.opType ?? '';
    const reads = (n.input ?? []).some((v) => v !== '' && typeOf(v) === BF16);
    const outTypes = (n.output ?? []).map((_, k) => outputType(n, k, typeOf));
    if (!reads || BF16_CPU_KERNELS.has(op) || (n.domain ?? '') !== '') {
      (n.output ?? []).forEach((o, k) => types.set(o, outTypes[k] ?? 0));
      out.push(n);
      continue;
    }
    emulated[op] = (emulated[op] ?? 0) + 1;
    n.input = (n.input ?? []).map((v) => (v !== '' && typeOf(v) === BF16 ? toF32(v) : v));
    const finals = n.output ?? [];
    n.output = finals.map((o, k) => (outTypes[k] === BF16 ? name(o) : o));
    out.push(n);
    finals.forEach((o, k) => {
      types.set(o, outTypes[k] ?? 0);
      if (outTypes[k] === BF16) out.push(makeNode('Cast', [n.output![k]!], [o], [makeAttribute('to', 'int', BF16)]));
    });
  }
  // bf16 graph outputs: cast to float32 under the output's name
  for (const o of g.output ?? []) {
    if (elemOf(o) !== BF16) continue;
    const inner = name(o.name!);
    for (const n of out) n.output = (n.output ?? []).map((v) => (v === o.name ? inner : v));
    for (const n of out) n.input = (n.input ?? []).map((v) => (v === o.name ? inner : v));
    out.push(makeNode('Cast', [inner], [o.name!], [makeAttribute('to', 'int', F32)]));
    o.type!.tensorType!.elemType = F32;
    retyped.push(o.name!);
  }
  g.node = out;
  // value_info entries name the old (bf16) types of renamed values: drop them, ORT infers its own
  g.valueInfo = [];
  return { emulated, retyped };
}
