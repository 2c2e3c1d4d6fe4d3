/**
 * The vocabulary size of a bound model: the row count of the table `input_ids` indexes (the
 * `Gather` whose indices are `input_ids`, directly or through a `Cast`), which is what an id
 * must be below; else the logits' last dimension. Read from the wire bytes the runner already
 * holds — nodes and initializer dims only, no tensor data and no full decode.
 */
import { scanFields, type WireField, type WireModel } from '../formats/onnx/wire-model';

// onnx.proto field numbers: GraphProto.node = 1, .initializer = 5; NodeProto.input = 1,
// .output = 2, .op_type = 4; TensorProto.dims = 1, .name = 8.
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_OP_TYPE = 4;
const TENSOR_DIMS = 1;
const TENSOR_NAME = 8;

const dec = new TextDecoder();
const text = (m: WireModel, f: WireField) => dec.decode(m.bytes.subarray(f.vStart, f.vEnd));

/** Rows of the table that `ids` (a graph input name) indexes, or undefined when no Gather reads it. */
export function gatheredRows(m: WireModel, ids = 'input_ids', file = 'model'): number | undefined {
  const nodes: { op: string; inputs: string[]; outputs: string[] }[] = [];
  for (const g of m.graphFields) {
    if (g.field !== GRAPH_NODE || g.wire !== 2) continue;
    const n = { op: '', inputs: [] as string[], outputs: [] as string[] };
    for (const f of scanFields(m.bytes, g.vStart, g.vEnd, file)) {
      if (f.wire !== 2) continue;
      if (f.field === NODE_INPUT) n.inputs.push(text(m, f));
      else if (f.field === NODE_OUTPUT) n.outputs.push(text(m, f));
      else if (f.field === NODE_OP_TYPE) n.op = text(m, f);
    }
    nodes.push(n);
  }
  // `input_ids` and what a Cast makes of it.
  const names = new Set([ids]);
  for (const n of nodes) if (n.op === 'Cast' && names.has(n.inputs[0]!)) n.outputs.forEach((o) => names.add(o));
  const tables = new Set(nodes.filter((n) => n.op === 'Gather' && names.has(n.inputs[1] ?? '')).map((n) => n.inputs[0]!));
  if (tables.size === 0) return undefined;
  let rows: number | undefined;
  for (const g of m.graphFields) {
    if (g.field !== GRAPH_INITIALIZER || g.wire !== 2) continue;
    const fields = scanFields(m.bytes, g.vStart, g.vEnd, file);
    const nameField = fields.find((f) => f.field === TENSOR_NAME && f.wire === 2);
    if (!nameField || !tables.has(text(m, nameField))) continue;
    const first = firstDim(m, fields);
    if (first !== undefined) rows = Math.min(rows ?? first, first);
  }
  return rows;
}

/** TensorProto.dims[0], packed (wire 2) or not (wire 0). */
function firstDim(m: WireModel, fields: WireField[]): number | undefined {
  const d = fields.find((f) => f.field === TENSOR_DIMS);
  if (!d) return undefined;
  if (d.wire === 0) return d.int;
  if (d.wire !== 2) return undefined;
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
