/**
 * The weight-free rewrite of a legacy model, on the wire: resolved initializers are dropped
 * and replaced by graph inputs named by their prepared checkpoint keys, with the few nodes
 * that turn an input back into exactly the tensor the graph consumed (Gather of one expert
 * from a stacked MoE tensor, Transpose where the export stored `W.T`, Reshape where only the
 * rank differs, Cast where the prepared dtype is not the graph's). Every other byte of the
 * model is copied as it was, so unknown or newer fields survive.
 */
import { FIELD, WIRE } from '../../formats/onnx/fields';
import { AttributeType, TensorDataType } from '../../formats/onnx/types';
import { encodeStringEntry, tensorValueInfo } from '../../formats/onnx/wire-model';
import { WireWriter } from '../../formats/onnx/wire-writer';
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
  /** A block along one axis, after the Gather (one piece of a fused weight). */
  slice?: { axis: number; start: number; end: number };
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

const { ModelProto: MP, GraphProto: GP, NodeProto: NP, AttributeProto: AP, TensorProto: TP } = FIELD;

function attrInt(name: string, v: number): Uint8Array {
  return new WireWriter().string(AP.name, name).int(AP.i, v).int(AP.type, AttributeType.INT).finish();
}

function attrInts(name: string, vs: number[]): Uint8Array {
  const w = new WireWriter().string(AP.name, name);
  for (const v of vs) w.int(AP.ints, v);
  return w.int(AP.type, AttributeType.INTS).finish();
}

function node(op: string, inputs: string[], outputs: string[], name: string, attrs: Uint8Array[] = []): Uint8Array {
  const w = new WireWriter();
  for (const i of inputs) w.string(NP.input, i);
  for (const o of outputs) w.string(NP.output, o);
  w.string(NP.name, name).string(NP.op_type, op);
  for (const a of attrs) w.bytes(NP.attribute, a);
  return w.finish();
}

function int64Tensor(name: string, values: number[], scalar: boolean): Uint8Array {
  const raw = new Uint8Array(values.length * 8);
  const dv = new DataView(raw.buffer);
  values.forEach((v, i) => dv.setBigInt64(i * 8, BigInt(v), true));
  const w = new WireWriter();
  if (!scalar) w.int(TP.dims, values.length);
  return w.int(TP.data_type, TensorDataType.INT64).string(TP.name, name).bytes(TP.raw_data, raw).finish();
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
    if (r.concat !== undefined)
      steps.push((out) =>
        nodes.push(node('Concat', [cur, r.concat!], [out], `${tag}/ConcatLast`, [attrInt('axis', (r.concatRank ?? 1) - 1)])),
      );
    if (r.gather !== undefined) {
      steps.push((out) => {
        constants.push(int64Tensor(`${tag}/expert`, [r.gather!], true));
        nodes.push(node('Gather', [cur, `${tag}/expert`], [out], `${tag}/Gather`, [attrInt('axis', 0)]));
      });
    }
    if (r.slice) {
      const sl = r.slice;
      steps.push((out) => {
        constants.push(int64Tensor(`${tag}/slice_starts`, [sl.start], false));
        constants.push(int64Tensor(`${tag}/slice_ends`, [sl.end], false));
        constants.push(int64Tensor(`${tag}/slice_axes`, [sl.axis], false));
        nodes.push(node('Slice', [cur, `${tag}/slice_starts`, `${tag}/slice_ends`, `${tag}/slice_axes`], [out], `${tag}/Slice`));
      });
    }
    if (r.transpose)
      steps.push((out) => nodes.push(node('Transpose', [cur], [out], `${tag}/Transpose`, [attrInts('perm', r.transposePerm ?? [1, 0])])));
    if (r.reshape) {
      steps.push((out) => {
        constants.push(int64Tensor(`${tag}/shape`, r.reshape!, false));
        nodes.push(node('Reshape', [cur, `${tag}/shape`], [out], `${tag}/Reshape`));
      });
    }
    if (r.castTo !== undefined) steps.push((out) => nodes.push(node('Cast', [cur], [out], `${tag}/Cast`, [attrInt('to', r.castTo!)])));
    for (const [op, c] of [
      ['Add', r.affine?.add],
      ['Mul', r.affine?.mul],
    ] as const) {
      if (c === undefined) continue;
      steps.push((out) => {
        const raw = new Uint8Array(new Float32Array([c]).buffer);
        constants.push(
          new WireWriter().int(TP.data_type, TensorDataType.FLOAT).string(TP.name, `${tag}/${op}_const`).bytes(TP.raw_data, raw).finish(),
        );
        nodes.push(node(op, [cur, `${tag}/${op}_const`], [out], `${tag}/${op}`));
      });
    }
    if (steps.length === 0) {
      // The input already is the tensor the graph consumes (same name, dtype and layout).
      if (r.name === r.input) return;
      steps.push((out) => nodes.push(node('Identity', [cur], [out], `${tag}/Identity`)));
    } else if (r.name === r.input) {
      throw new PipelineError(
        `initializer "${r.name}" has its checkpoint key's name but a different layout; it cannot be rebuilt under the same name`,
      );
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
  const compactor =
    compact && !m.graphFields.some((f) => f.field === GP.sparse_initializer)
      ? createCompactor(
          w,
          m.graphFields.filter((f) => f.field === GP.node && f.wire === WIRE.LEN),
          interfaceNames(m, inputNames),
        )
      : undefined;
  const g = new WireWriter();
  for (const n of nodes) g.bytes(GP.node, n);
  let initIndex = 0;
  let inputIndex = 0;
  for (const f of m.graphFields) {
    const len = f.wire === WIRE.LEN;
    if (f.field === GP.initializer && len) {
      if (drop.has(m.initializers[initIndex++]!.name)) continue;
    } else if (f.field === GP.input && len) {
      const name = m.inputNames[inputIndex++]!;
      if (drop.has(name) || inputNames.has(name)) continue;
    } else if (compactor && f.field === GP.node && len) {
      g.bytes(GP.node, compactor.node(f));
      continue;
    } else if (compactor && f.field === GP.value_info && len) {
      g.bytes(GP.value_info, compactor.valueInfo(f));
      continue;
    } else if (compactor && f.field === GP.doc_string) {
      continue;
    }
    g.raw(copy(f));
  }
  for (const c of constants) g.bytes(GP.initializer, c);
  for (const i of inputs) g.bytes(GP.input, tensorValueInfo(i.name, i.elemType, i.dims));
  const graphBytes = g.finish();

  const out = new WireWriter();
  for (const f of m.fields) {
    if (f === m.graph) out.bytes(MP.graph, graphBytes);
    else if (!(f.field === MP.metadata_props && f.wire === WIRE.LEN)) out.raw(copy(f));
  }
  for (const { key, value } of metadata) out.bytes(MP.metadata_props, encodeStringEntry(key, value));
  return out.finish();
}

/** Names a compaction must keep: the graph's inputs, outputs and initializers, and new inputs. */
function interfaceNames(m: LegacyModel, inputs: ReadonlySet<string>): Set<string> {
  const keep = new Set<string>([...inputs, ...m.inputNames, ...m.initializers.map((i) => i.name)]);
  for (const f of m.graphFields) {
    if (f.field !== GP.output || f.wire !== WIRE.LEN) continue;
    const name = m.wire.fields(f.vStart, f.vEnd).find((x) => x.field === FIELD.ValueInfoProto.name && x.wire === WIRE.LEN);
    if (name) keep.add(m.wire.string(name));
  }
  return keep;
}
