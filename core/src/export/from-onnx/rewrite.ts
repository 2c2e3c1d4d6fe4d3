/**
 * The weight-free rewrite of a legacy model, on the wire: resolved initializers are dropped
 * and replaced by graph inputs named by their prepared checkpoint keys, with the few nodes
 * that turn an input back into exactly the tensor the graph consumed (Gather of one expert
 * from a stacked MoE tensor, Transpose where the export stored `W.T`, Reshape where only the
 * rank differs, Cast where the prepared dtype is not the graph's). Every other byte of the
 * model is copied as it was, so unknown or newer fields survive.
 */
import { WireWriter } from '../../formats/onnx/wire-model';
import { PipelineError } from '../../errors';
import { createCompactor } from './compact';
import type { FileField } from './file-wire';
import type { LegacyModel } from './legacy-model';

/** How one dropped initializer is rebuilt from a graph input. */
export interface Rebuild {
  /** The initializer's (and so the consumers') tensor name. */
  name: string;
  /** Graph input holding the prepared tensor. */
  input: string;
  /** Index along axis 0 of the input (one expert of a stacked tensor). */
  gather?: number;
  /**
   * A second graph input alternated with `input` along the last axis (`input` on even
   * positions): GPT-OSS's fused gate/up rebuilt from the prepared gate and up. First step.
   */
  interleave?: string;
  /** Dims of `input` and of `interleave` (equal). */
  interleaveDims?: number[];
  /** A second graph input joined after `input` along the last axis (Qwen3-VL-MoE's gate_up_proj). First step. */
  concat?: string;
  /** Rank of `input` (the concat's last axis is rank − 1; the wire writer takes no negative ints). */
  concatRank?: number;
  transpose?: boolean;
  /** The transpose's permutation (default `[1, 0]`; `[0, 2, 1]` for a whole stacked `[E, a, b]` tensor). */
  transposePerm?: number[];
  /** Target dims when only the rank differs. */
  reshape?: number[];
  /** ONNX elem type to cast to when the prepared dtype differs from the graph's. */
  castTo?: number;
  /** A constant the legacy export folded in (f32 graphs only): `+ add` or `× mul`, last. */
  affine?: { add?: number; mul?: number };
}

/** A new graph input. */
export interface NewInput {
  name: string;
  elemType: number;
  dims: number[];
}

function attrInt(name: string, v: number): Uint8Array {
  return new WireWriter().string(1, name).int(3, v).int(20, 2).finish();
}

function attrInts(name: string, vs: number[]): Uint8Array {
  const w = new WireWriter().string(1, name);
  for (const v of vs) w.int(8, v);
  return w.int(20, 7).finish();
}

function node(op: string, inputs: string[], outputs: string[], name: string, attrs: Uint8Array[] = []): Uint8Array {
  const w = new WireWriter();
  for (const i of inputs) w.string(1, i);
  for (const o of outputs) w.string(2, o);
  w.string(3, name).string(4, op);
  for (const a of attrs) w.bytes(5, a);
  return w.finish();
}

function int64Tensor(name: string, values: number[], scalar: boolean): Uint8Array {
  const raw = new Uint8Array(values.length * 8);
  const dv = new DataView(raw.buffer);
  values.forEach((v, i) => dv.setBigInt64(i * 8, BigInt(v), true));
  const w = new WireWriter();
  if (!scalar) w.int(1, values.length);
  return w.int(2, 7).string(8, name).bytes(9, raw).finish();
}

/** Encodes a ValueInfoProto of a tensor with fixed dims. */
export function valueInfo(name: string, elemType: number, dims: number[]): Uint8Array {
  const shape = new WireWriter();
  for (const d of dims) shape.bytes(1, new WireWriter().int(1, d).finish());
  const tensorType = new WireWriter().int(1, elemType).bytes(2, shape.finish()).finish();
  return new WireWriter().string(1, name).bytes(2, new WireWriter().bytes(1, tensorType).finish()).finish();
}

/** Nodes and constant initializers that rebuild every dropped initializer. */
export function rebuildNodes(rebuilds: readonly Rebuild[]): { nodes: Uint8Array[]; constants: Uint8Array[] } {
  const nodes: Uint8Array[] = [];
  const constants: Uint8Array[] = [];
  rebuilds.forEach((r, n) => {
    const tag = `weight_spec/${n}`;
    let cur = r.input;
    const steps: ((out: string) => void)[] = [];
    if (r.interleave !== undefined) {
      if (!r.interleaveDims) throw new PipelineError(`initializer "${r.name}": interleave needs the inputs' dims`);
      const dims = r.interleaveDims;
      // [..., n] → [..., n, 1] each, concatenated on the new axis → [..., n, 2] → [..., 2n]
      steps.push((out) => {
        constants.push(int64Tensor(`${tag}/pair_shape`, [...dims, 1], false));
        constants.push(int64Tensor(`${tag}/interleaved_shape`, [...dims.slice(0, -1), 2 * dims[dims.length - 1]!], false));
        nodes.push(node('Reshape', [cur, `${tag}/pair_shape`], [`${tag}/even`], `${tag}/ReshapeEven`));
        nodes.push(node('Reshape', [r.interleave!, `${tag}/pair_shape`], [`${tag}/odd`], `${tag}/ReshapeOdd`));
        nodes.push(node('Concat', [`${tag}/even`, `${tag}/odd`], [`${tag}/pairs`], `${tag}/Concat`, [attrInt('axis', dims.length)]));
        nodes.push(node('Reshape', [`${tag}/pairs`, `${tag}/interleaved_shape`], [out], `${tag}/Interleave`));
      });
    }
    if (r.concat !== undefined) steps.push((out) => nodes.push(node('Concat', [cur, r.concat!], [out], `${tag}/ConcatLast`, [attrInt('axis', (r.concatRank ?? 1) - 1)])));
    if (r.gather !== undefined) {
      steps.push((out) => {
        constants.push(int64Tensor(`${tag}/expert`, [r.gather!], true));
        nodes.push(node('Gather', [cur, `${tag}/expert`], [out], `${tag}/Gather`, [attrInt('axis', 0)]));
      });
    }
    if (r.transpose) steps.push((out) => nodes.push(node('Transpose', [cur], [out], `${tag}/Transpose`, [attrInts('perm', r.transposePerm ?? [1, 0])])));
    if (r.reshape) {
      steps.push((out) => {
        constants.push(int64Tensor(`${tag}/shape`, r.reshape!, false));
        nodes.push(node('Reshape', [cur, `${tag}/shape`], [out], `${tag}/Reshape`));
      });
    }
    if (r.castTo !== undefined) steps.push((out) => nodes.push(node('Cast', [cur], [out], `${tag}/Cast`, [attrInt('to', r.castTo!)])));
    for (const [op, c] of [['Add', r.affine?.add], ['Mul', r.affine?.mul]] as const) {
      if (c === undefined) continue;
      steps.push((out) => {
        const raw = new Uint8Array(new Float32Array([c]).buffer);
        constants.push(new WireWriter().int(2, 1).string(8, `${tag}/${op}_const`).bytes(9, raw).finish());
        nodes.push(node(op, [cur, `${tag}/${op}_const`], [out], `${tag}/${op}`));
      });
    }
    if (steps.length === 0) {
      // The input already is the tensor the graph consumes (same name, dtype and layout).
      if (r.name === r.input) return;
      steps.push((out) => nodes.push(node('Identity', [cur], [out], `${tag}/Identity`)));
    } else if (r.name === r.input) {
      throw new PipelineError(`initializer "${r.name}" has its checkpoint key's name but a different layout; it cannot be rebuilt under the same name`);
    }
    steps.forEach((step, i) => {
      const out = i === steps.length - 1 ? r.name : `${tag}/${i}`;
      step(out);
      cur = out;
    });
  });
  return { nodes, constants };
}

/**
 * Assembles the rewritten model's bytes: rebuild nodes first (so the node list stays
 * topologically sorted), the original graph fields without the dropped initializers (and
 * any graph inputs of theirs, as IR < 4 models list), then the new constants and inputs;
 * top-level fields copied, `metadata_props` replaced by `metadata`.
 */
export function assembleModel(
  m: LegacyModel,
  drop: ReadonlySet<string>,
  rebuilds: readonly Rebuild[],
  inputs: readonly NewInput[],
  metadata: readonly { key: string; value: string }[],
  compact = true,
): Uint8Array {
  const w = m.wire;
  const copy = (f: FileField): Uint8Array => w.bytes(f.start, f.end);
  const { nodes, constants } = rebuildNodes(rebuilds);
  const inputNames = new Set(inputs.map((i) => i.name));
  const compactor = compact && !m.graphFields.some((f) => f.field === 15) ? createCompactor(w, m.graphFields.filter((f) => f.field === 1 && f.wire === 2), interfaceNames(m, inputNames)) : undefined;
  const g = new WireWriter();
  for (const n of nodes) g.bytes(1, n);
  let initIndex = 0;
  let inputIndex = 0;
  for (const f of m.graphFields) {
    if (f.field === 5 && f.wire === 2) {
      if (drop.has(m.initializers[initIndex++]!.name)) continue;
    } else if (f.field === 11 && f.wire === 2) {
      const name = m.inputNames[inputIndex++]!;
      if (drop.has(name) || inputNames.has(name)) continue;
    } else if (compactor && f.field === 1 && f.wire === 2) {
      g.bytes(1, compactor.node(f));
      continue;
    } else if (compactor && f.field === 13 && f.wire === 2) {
      g.bytes(13, compactor.valueInfo(f));
      continue;
    } else if (compactor && f.field === 10) {
      continue; // the graph's doc_string
    }
    g.raw(copy(f));
  }
  for (const c of constants) g.bytes(5, c);
  for (const i of inputs) g.bytes(11, valueInfo(i.name, i.elemType, i.dims));
  const graphBytes = g.finish();

  const out = new WireWriter();
  for (const f of m.fields) {
    if (f === m.graph) out.bytes(7, graphBytes);
    else if (!(f.field === 14 && f.wire === 2)) out.raw(copy(f));
  }
  for (const { key, value } of metadata) out.bytes(14, new WireWriter().string(1, key).string(2, value).finish());
  return out.finish();
}

/** Names a compaction must keep: the graph's inputs, outputs and initializers, and new inputs. */
function interfaceNames(m: LegacyModel, inputs: ReadonlySet<string>): Set<string> {
  const keep = new Set<string>([...inputs, ...m.inputNames, ...m.initializers.map((i) => i.name)]);
  for (const f of m.graphFields) {
    if (f.field !== 12 || f.wire !== 2) continue;
    const name = m.wire.fields(f.vStart, f.vEnd).find((x) => x.field === 1 && x.wire === 2);
    if (name) keep.add(m.wire.string(name));
  }
  return keep;
}
