/**
 * The graph explorer's data types (built by graph-model.ts in the extension, posted to the
 * webview as JSON) and the small helpers both sides use. No Node imports: the webview bundles it.
 */
import type { NodeAttr } from './graph-attrs';

/** A value (edge) of the graph. `producer`/`consumers` index {@link GraphModel.nodes}. */
export interface GxValue {
  name: string;
  kind: 'input' | 'weight' | 'output' | 'const' | 'inner';
  dtype?: string;
  /** Symbolic dims: a number, a dim name, a product (`8*seq_len`), or `''` when unknown. */
  dims?: (number | string)[];
  /** The dtype and dims were inferred (shape-infer.ts), not stated by the file. */
  inferred?: boolean;
  /** A folded constant's value as text. */
  text?: string;
  /** -1 for a graph input, weight or folded constant. */
  producer: number;
  consumers: number[];
}

/** An operator. `inputs`/`outputs` index {@link GraphModel.values}; -1 is an omitted optional input. */
export interface GxNode {
  op: string;
  domain?: string;
  name: string;
  inputs: number[];
  outputs: number[];
  attrs: NodeAttr[];
  /** Index into {@link GraphModel.sections}. */
  section: number;
}

/** A run of nodes drawn as one block (a decoder layer, the prologue, the head). */
export interface GxSection {
  id: string;
  label: string;
  layer?: number;
  nodes: number[];
  /** Weight inputs read by the section's nodes. */
  weights: number;
  /** The most frequent op types, `Mul 21 · Gemm 5 · …`. */
  ops: string;
}

/** Where a weight input's bytes come from, per the export's spec. */
export interface WeightSource {
  /** `inputs[i]` of the spec. */
  input: number;
  key: string;
  /** Absolute path of the checkpoint file (`files[location.file]`). */
  file?: string;
  /** The spec's input entry as JSON text. */
  entry: string;
}

/** The graph explorer's data for one ONNX file. */
export interface GraphModel {
  file: string;
  nodes: GxNode[];
  values: GxValue[];
  sections: GxSection[];
  /** The weight_spec.json beside the model, when there is one. */
  spec?: string;
  /** Weight name → its spec entry and checkpoint tensor. */
  sources: Record<string, WeightSource>;
  /** Constant nodes folded into their consumers. */
  folded: number;
}

/** The nodes next to `node`: producers of its inputs and consumers of its outputs (keyboard navigation). */
export function neighbors(m: GraphModel, node: number): { up: number[]; down: number[] } {
  const n = m.nodes[node]!;
  const up = [...new Set(n.inputs.filter((v) => v >= 0).map((v) => m.values[v]!.producer))].filter((p) => p >= 0);
  const down = [...new Set(n.outputs.filter((v) => v >= 0).flatMap((v) => m.values[v]!.consumers))];
  return { up, down };
}

/** A weight's display name: the module path with its layer number (`layers.3.self_attn.v_proj.weight`). */
export function weightLabel(name: string): string {
  return name.replace(/^model\.(?=.)/, '');
}

/** `[a, b, c]` for a shape with symbolic dims (`?` for an unnamed one). */
export function dimsText(d: (number | string)[]): string {
  return `[${d.map((x) => (x === '' ? '?' : String(x))).join(', ')}]`;
}

/** The shape label an edge carrying `v` gets (`F32[batch_size, 8]`), or undefined without a shape. */
export function shapeLabel(v: GxValue): string | undefined {
  return v.dims ? `${v.dtype ?? ''}${dimsText(v.dims)}` : undefined;
}
