/**
 * The vocabulary size of a model: the row count of the table `input_ids` indexes (the `Gather`
 * whose indices are `input_ids`, directly or through a `Cast` or `Reshape`) — an initializer of a bound model
 * or a graph input of a weight-free one — which is what an id must be below; else the logits'
 * last dimension. Read from the wire bytes the runner already
 * holds — nodes and initializer dims only, no tensor data and no full decode.
 */
import { FIELD, WIRE } from '../formats/onnx/fields';
import { scanFields, type WireField, type WireModel } from '../formats/onnx/wire-model';

const { GraphProto: GP, NodeProto: NP, TensorProto: TP } = FIELD;

const dec = new TextDecoder();
/** Ops whose output holds the same ids as their first input. */
const SAME_VALUES: ReadonlySet<string> = new Set(['Cast', 'Reshape', 'Flatten', 'Squeeze', 'Unsqueeze', 'Identity']);
const text = (m: WireModel, f: WireField) => dec.decode(m.bytes.subarray(f.vStart, f.vEnd));

/** Rows of the table that `ids` (a graph input name) indexes, or undefined when no Gather reads it. */
export function gatheredRows(m: WireModel, ids = 'input_ids', file = 'model'): number | undefined {
  const nodes: { op: string; inputs: string[]; outputs: string[] }[] = [];
  for (const g of m.graphFields) {
    if (g.field !== GP.node || g.wire !== WIRE.LEN) continue;
    const n = { op: '', inputs: [] as string[], outputs: [] as string[] };
    for (const f of scanFields(m.bytes, g.vStart, g.vEnd, file)) {
      if (f.wire !== WIRE.LEN) continue;
      if (f.field === NP.input) n.inputs.push(text(m, f));
      else if (f.field === NP.output) n.outputs.push(text(m, f));
      else if (f.field === NP.op_type) n.op = text(m, f);
    }
    nodes.push(n);
  }
  // `input_ids` and what a Cast or a reshaping op (which keep the values) makes of it; nodes
  // are in topological order, so one pass follows a chain.
  const names = new Set([ids]);
  for (const n of nodes) if (SAME_VALUES.has(n.op) && names.has(n.inputs[0]!)) n.outputs.forEach((o) => names.add(o));
  const tables = new Set(nodes.filter((n) => n.op === 'Gather' && names.has(n.inputs[1] ?? '')).map((n) => n.inputs[0]!));
  if (tables.size === 0) return undefined;
  let rows: number | undefined;
  // A weight-free graph: the table is a graph input (its declared [rows, hidden]).
  for (const i of m.inputs) {
    const first = i.dims[0];
    if (tables.has(i.name) && typeof first === 'number') rows = Math.min(rows ?? first, first);
  }
  for (const g of m.graphFields) {
    if (g.field !== GP.initializer || g.wire !== WIRE.LEN) continue;
    const fields = scanFields(m.bytes, g.vStart, g.vEnd, file);
    const nameField = fields.find((f) => f.field === TP.name && f.wire === WIRE.LEN);
    if (!nameField || !tables.has(text(m, nameField))) continue;
    const first = firstDim(m, fields);
    if (first !== undefined) rows = Math.min(rows ?? first, first);
  }
  return rows;
}

/** TensorProto.dims[0], packed (wire 2) or not (wire 0). */
function firstDim(m: WireModel, fields: WireField[]): number | undefined {
  const d = fields.find((f) => f.field === TP.dims);
  if (!d) return undefined;
  if (d.wire === WIRE.VARINT) return d.int;
  if (d.wire !== WIRE.LEN) return undefined;
  // A packed varint list: the first varint.
  let v = 0;
  let mul = 1;
  for (let i = d.vStart; i < d.vEnd; i++) {
    const b = m.bytes[i]!;
    v += (b & 0x7f) * mul;
    if (b < 0x80) return v;
    mul *= 128;
  }
  return undefined;
}
