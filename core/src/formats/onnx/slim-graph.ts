/**
 * Slimming of a graph for a runtime artifact (the compile step's bound model).
 *
 * Once the weights are external, what is left of a model is its structure, and most of that
 * is for human readers: node names and doc strings, long intermediate value names
 * (`/model/layers.0/self_attn/Mul_3_output_0`), and — in `torch.onnx.export` graphs — one
 * `Constant` node per use of a scalar (a 4-layer Llama export holds 223 Constant nodes with
 * 20 distinct values). A runtime needs none of it, so the bound model:
 *
 * - drops node names and doc strings and the graph's doc string;
 * - shares identical `Constant` nodes (same attributes, domain and metadata; no inputs, one
 *   output that is not a graph output): the first stays, later ones are dropped and their
 *   uses read the first one's output — ONNX graphs are topologically sorted, so the first
 *   occurrence precedes every use of a later one;
 * - gives intermediate values the shortest free names (base 36, in order of appearance).
 *
 * Graph inputs, outputs and initializers keep their names: they are the model's interface and
 * the weights' link to weight_spec.json, and so do the values subgraphs (If, Loop, Scan
 * attributes) mention: a subgraph may name values of the enclosing graph, and its own names
 * stay as written (the short names avoid them). Graphs with quantization annotations or
 * training info may name values from elsewhere, so there only names and doc strings are
 * dropped. The result computes exactly what the input does.
 */
import { attributeHoldsGraph, FIELD, WIRE } from './fields';
import { scanFields, type WireField, type WireModel } from './wire-model';
import { WireWriter } from './wire-writer';

const { NodeProto: NP, GraphProto: GP, ValueInfoProto: VI, AttributeProto: AP, TensorProto: TP } = FIELD;
const NODE_INPUT = NP.input;
const NODE_OUTPUT = NP.output;
const NODE_NAME = NP.name;
const NODE_DOC = NP.doc_string;

const dec = new TextDecoder('utf-8', { fatal: false });

/** What {@link slimGraph} decided: replacement bytes per graph field (`null` = drop it). */
export interface SlimResult {
  replace: Map<WireField, Uint8Array | null>;
  /** Constant nodes dropped as duplicates. */
  sharedConstants: number;
}

interface ParsedNode {
  field: WireField;
  parts: WireField[];
  inputs: string[];
  outputs: string[];
  opType: string;
  domain: string;
}

function parseNode(bytes: Uint8Array, f: WireField, file: string): ParsedNode {
  const parts = scanFields(bytes, f.vStart, f.vEnd, file, 'node');
  const s = (x: WireField) => dec.decode(bytes.subarray(x.vStart, x.vEnd));
  const node: ParsedNode = { field: f, parts, inputs: [], outputs: [], opType: '', domain: '' };
  for (const x of parts) {
    if (x.wire !== WIRE.LEN) continue;
    if (x.field === NODE_INPUT) node.inputs.push(s(x));
    else if (x.field === NODE_OUTPUT) node.outputs.push(s(x));
    else if (x.field === NP.op_type) node.opType = s(x);
    else if (x.field === NP.domain) node.domain = s(x);
  }
  return node;
}

function hasSubgraph(bytes: Uint8Array, n: ParsedNode, file: string): boolean {
  for (const a of n.parts) {
    if (a.field === NP.attribute && a.wire === WIRE.LEN && attributeHoldsGraph(scanFields(bytes, a.vStart, a.vEnd, file, 'attribute')))
      return true;
  }
  return false;
}

/** Adds every value name `n`'s subgraphs mention (node inputs and outputs, graph inputs, outputs, value_info, initializers), recursively. */
function subgraphNames(bytes: Uint8Array, n: ParsedNode, file: string, out: Set<string>): void {
  for (const a of n.parts) {
    if (a.field !== NP.attribute || a.wire !== WIRE.LEN) continue;
    for (const x of scanFields(bytes, a.vStart, a.vEnd, file, 'attribute')) {
      if ((x.field !== AP.g && x.field !== AP.graphs) || x.wire !== WIRE.LEN) continue;
      for (const f of scanFields(bytes, x.vStart, x.vEnd, file, 'graph')) {
        if (f.wire !== WIRE.LEN) continue;
        if (f.field === GP.node) {
          const sub = parseNode(bytes, f, file);
          for (const name of [...sub.inputs, ...sub.outputs]) out.add(name);
          subgraphNames(bytes, sub, file, out);
        } else if (f.field === GP.input || f.field === GP.output || f.field === GP.value_info || f.field === GP.initializer) {
          const nameField = f.field === GP.initializer ? TP.name : VI.name;
          for (const y of scanFields(bytes, f.vStart, f.vEnd, file, 'value')) {
            if (y.field === nameField && y.wire === WIRE.LEN) out.add(dec.decode(bytes.subarray(y.vStart, y.vEnd)));
          }
        }
      }
    }
  }
}

/** The identity of a Constant node: every field but its output, name and doc string. */
function constantKey(bytes: Uint8Array, n: ParsedNode): string | undefined {
  if (n.opType !== 'Constant' || (n.domain !== '' && n.domain !== 'ai.onnx') || n.inputs.length > 0 || n.outputs.length !== 1)
    return undefined;
  const kept = n.parts.filter((x) => x.field !== NODE_OUTPUT && x.field !== NODE_NAME && x.field !== NODE_DOC);
  const w = new WireWriter();
  for (const x of kept) w.raw(bytes.subarray(x.start, x.end));
  return Buffer.from(w.finish()).toString('latin1');
}

/**
 * Plans the slimming of `m`'s graph (see the module comment). `keep` names values that must
 * keep their names besides the graph's inputs, outputs and initializers (e.g. initializers
 * about to be added). The model itself is not changed; pass `replace` to `rewriteModel`.
 */
export function slimGraph(m: WireModel, keep: ReadonlySet<string>, file: string): SlimResult {
  const bytes = m.bytes;
  const replace = new Map<WireField, Uint8Array | null>();
  const nodes = m.graphFields.filter((f) => f.field === GP.node && f.wire === WIRE.LEN).map((f) => parseNode(bytes, f, file));
  const fixed = new Set<string>([...keep, ...m.inputs.map((i) => i.name), ...m.outputs.map((o) => o.name), ...m.initializerNames, '']);
  const renameAll =
    !m.fields.some((f) => f.field === FIELD.ModelProto.training_info) /* its bindings name graph values */ &&
    !m.graphFields.some((f) => f.field === GP.quantization_annotation);
  // values a subgraph names keep their names, and no short name takes one of a subgraph's own
  if (renameAll) for (const n of nodes) if (hasSubgraph(bytes, n, file)) subgraphNames(bytes, n, file, fixed);

  // Shared constants: later duplicates read the first one's output.
  const alias = new Map<string, string>();
  const dropped = new Set<WireField>();
  if (renameAll) {
    const first = new Map<string, string>();
    for (const n of nodes) {
      const key = constantKey(bytes, n);
      const out = n.outputs[0];
      if (key === undefined || out === undefined || fixed.has(out)) continue;
      const seen = first.get(key);
      if (seen === undefined) first.set(key, out);
      else {
        alias.set(out, seen);
        dropped.add(n.field);
      }
    }
  }

  const short = new Map<string, string>();
  let counter = 0;
  const rename = (name: string): string => {
    if (!renameAll || fixed.has(name)) return name;
    const target = alias.get(name) ?? name;
    let s = short.get(target);
    if (s === undefined) {
      do s = (counter++).toString(36);
      while (fixed.has(s));
      short.set(target, s);
    }
    return s;
  };

  for (const n of nodes) {
    if (dropped.has(n.field)) {
      replace.set(n.field, null);
      continue;
    }
    const w = new WireWriter();
    for (const x of n.parts) {
      if (x.field === NODE_NAME || x.field === NODE_DOC) continue;
      if ((x.field === NODE_INPUT || x.field === NODE_OUTPUT) && x.wire === WIRE.LEN)
        w.string(x.field, rename(dec.decode(bytes.subarray(x.vStart, x.vEnd))));
      else w.raw(bytes.subarray(x.start, x.end));
    }
    replace.set(n.field, w.finish());
  }
  for (const f of m.graphFields) {
    if (f.field === GP.doc_string) replace.set(f, null);
    else if (f.field === GP.value_info && f.wire === WIRE.LEN && renameAll) {
      const parts = scanFields(bytes, f.vStart, f.vEnd, file, 'value_info');
      const nameField = parts.find((x) => x.field === VI.name && x.wire === WIRE.LEN);
      const name = nameField ? dec.decode(bytes.subarray(nameField.vStart, nameField.vEnd)) : '';
      // The shape of a dropped duplicate is already given by its original's entry.
      if (alias.has(name)) {
        replace.set(f, null);
        continue;
      }
      const w = new WireWriter();
      for (const x of parts) {
        if (x === nameField) w.string(VI.name, rename(name));
        else if (x.field !== VI.doc_string) w.raw(bytes.subarray(x.start, x.end));
      }
      replace.set(f, w.finish());
    }
  }
  return { replace, sharedConstants: dropped.size };
}
