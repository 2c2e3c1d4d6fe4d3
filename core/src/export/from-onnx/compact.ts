/**
 * Compaction of a legacy graph's structure. Once the weights are gone, what remains of a
 * `torch.onnx.export` file is mostly names: every node carries a path-like name
 * (`/model/layers.0/self_attn/Mul_3`) and every intermediate value one more
 * (`/model/layers.0/self_attn/Mul_3_output_0`). Neither is part of the model's interface,
 * so by default nodes lose their names and doc strings and intermediate values get short
 * names; graph inputs, outputs and initializers keep theirs. Graphs with subgraphs (If,
 * Loop, Scan) are left as they are, since a subgraph may name outer values.
 */
import { attributeHoldsGraph, FIELD, WIRE } from '../../formats/onnx/fields';
import { WireWriter } from '../../formats/onnx/wire-writer';
import type { FileField, FileWire } from './file-wire';

/** Renames intermediate values; `undefined` when the graph cannot be compacted safely. */
export interface Compactor {
  node(f: FileField): Uint8Array;
  valueInfo(f: FileField): Uint8Array;
}

const { NodeProto: NP, ValueInfoProto: VI } = FIELD;

function hasSubgraph(w: FileWire, node: FileField): boolean {
  for (const a of w.fields(node.vStart, node.vEnd)) {
    if (a.field === NP.attribute && a.wire === WIRE.LEN && attributeHoldsGraph(w.fields(a.vStart, a.vEnd))) return true;
  }
  return false;
}

/**
 * Builds a compactor for the graph whose node fields are `nodes`. `keep` holds every name
 * that must survive (graph inputs and outputs, initializers, names the rewrite produces).
 */
export function createCompactor(w: FileWire, nodes: readonly FileField[], keep: ReadonlySet<string>): Compactor | undefined {
  if (nodes.some((n) => hasSubgraph(w, n))) return undefined;
  const short = new Map<string, string>();
  const rename = (name: string): string => {
    if (name === '' || keep.has(name)) return name;
    let s = short.get(name);
    if (s === undefined) {
      s = `v${short.size}`;
      // Never collide with a name that is kept.
      while (keep.has(s)) s = `${s}_`;
      short.set(name, s);
    }
    return s;
  };
  return {
    node(f) {
      const out = new WireWriter();
      for (const x of w.fields(f.vStart, f.vEnd)) {
        if (x.field === NP.name || x.field === NP.doc_string) continue;
        if ((x.field === NP.input || x.field === NP.output) && x.wire === WIRE.LEN) out.string(x.field, rename(w.string(x)));
        else out.raw(w.bytes(x.start, x.end));
      }
      return out.finish();
    },
    valueInfo(f) {
      const out = new WireWriter();
      for (const x of w.fields(f.vStart, f.vEnd)) {
        if (x.field === VI.name && x.wire === WIRE.LEN) out.string(VI.name, rename(w.string(x)));
        else if (x.field !== VI.doc_string) out.raw(w.bytes(x.start, x.end));
      }
      return out.finish();
    },
  };
}
