/**
 * The node structure of an ONNX graph for the graph explorer: one positional walk over the main
 * graph's NodeProtos (initializer payloads are skipped by their lengths, never read), nodes
 * grouped by decoder layer so that the explorer draws one block per layer (graph-model.ts).
 *
 * A node's layer comes from its name (`/layers.3/attn/MatMul`, `/model/layers.3/…`) or the
 * layer weights it reads (`model.layers.3.…`); otherwise it follows its producers (a legacy
 * export names nodes `/MatMul_12`). Nodes before the first layer form the prologue (ids,
 * embedding, KV-cache shapes); nodes after the last layer that read a non-layer weight (final
 * norm, lm_head) start the head. Constant-like nodes (no inputs) join their first consumer.
 */
import { FIELD, WIRE } from '../formats/onnx/fields';
import { FileReader } from '../formats/onnx/wire-reader';
import { layerNumberOf } from '../foundation/layer-number';
import { valueInfo, type ValueSummary } from '../formats/onnx/value-summary';
import { readAttribute, type NodeAttr } from './graph-attrs';
import type { GraphGroupInfo, ValueEntry } from './types';

/** One NodeProto of the main graph. */
export interface RawNode {
  name: string;
  op: string;
  domain: string;
  inputs: string[];
  outputs: string[];
  /** Attributes as text (the graph explorer's side panel, folded constants). */
  attrs?: NodeAttr[];
}

const NP = FIELD.NodeProto;

/** Reads the main graph's nodes of `file` (positional reads; FormatError on a corrupt file). */
export function readGraphNodes(file: string): RawNode[] {
  return readGraph(file).nodes;
}

/** The main graph's nodes with their attributes, and its `value_info` (shapes of inner values, when the file has them). */
export function readGraph(file: string): { nodes: RawNode[]; valueInfo: ValueSummary[] } {
  const r = FileReader.open(file);
  const nodes: RawNode[] = [];
  const infos: ValueSummary[] = [];
  const str = (h: { vStart: number; vEnd: number }) => r.string(h.vStart, h.vEnd);
  try {
    r.each(0, r.size, 'ModelProto', (f) => {
      if (f.field !== FIELD.ModelProto.graph || f.wire !== WIRE.LEN) return;
      r.each(f.vStart, f.vEnd, 'GraphProto', (g) => {
        if (g.field === FIELD.GraphProto.value_info && g.wire === WIRE.LEN) infos.push(valueInfo(r, g, 'value_info'));
        if (g.field !== FIELD.GraphProto.node || g.wire !== WIRE.LEN) return;
        const n: RawNode = { name: '', op: '', domain: '', inputs: [], outputs: [] };
        r.each(g.vStart, g.vEnd, 'NodeProto', (x) => {
          if (x.wire !== WIRE.LEN) return;
          if (x.field === NP.input) n.inputs.push(str(x));
          else if (x.field === NP.output) n.outputs.push(str(x));
          else if (x.field === NP.name) n.name = str(x);
          else if (x.field === NP.op_type) n.op = str(x);
          else if (x.field === NP.domain) n.domain = str(x);
          else if (x.field === NP.attribute) (n.attrs ??= []).push(readAttribute(r, x));
        });
        nodes.push(n);
      });
    });
  } finally {
    r.close();
  }
  return { nodes, valueInfo: infos };
}

/** The graph's nodes with their groups, kept by the viewer to build the graph explorer's model on request. */
export interface GraphIndex {
  nodes: RawNode[];
  /** Group index of each node. */
  groupOf: Int32Array;
  groups: GraphGroupInfo[];
  /** Weight names (spec inputs, initializers). */
  weights: ReadonlySet<string>;
  /** Graph inputs that are not weights. */
  inputs: ReadonlySet<string>;
  outputs: ReadonlySet<string>;
  /** Dtypes and shapes the file states (inputs, outputs, weights, value_info), for the explorer. */
  values?: ValueEntry[];
}

const PROLOGUE = -1;
/** A module parameter path such as `model.norm.weight`. */
const PARAM_PATH = /^[A-Za-z_]\w*(?:\.\w+)+$/;

/** The layer of a node from its name, or undefined (`/layers.3/…` → 3). */
export function nodeNameLayer(name: string): number | undefined {
  return name ? layerNumberOf(name.replace(/\//g, '.')) : undefined;
}

/** Groups `nodes` by layer; see the module comment for the rules. */
export function indexGraph(
  nodes: RawNode[],
  facts: { weights: Iterable<string>; inputs: Iterable<string>; outputs: Iterable<string>; values?: ValueEntry[] },
): GraphIndex {
  const weights = new Set(facts.weights);
  const outputs = new Set(facts.outputs);
  const inputs = new Set([...facts.inputs].filter((n) => !weights.has(n)));
  const rank = new Float64Array(nodes.length);
  const rankOf = new Map<string, number>(); // value → rank of its producer
  let lastLayer = -1;
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i]!;
    let r = nodeNameLayer(n.name) ?? PROLOGUE;
    let readsOtherWeight = false;
    for (const v of n.inputs) {
      if (!v) continue;
      if (weights.has(v)) {
        const l = layerNumberOf(v);
        // Only a parameter path counts (legacy exports rename layer weights `onnx::MatMul_12`).
        if (l === undefined) readsOtherWeight ||= PARAM_PATH.test(v);
        else r = Math.max(r, l);
      } else r = Math.max(r, rankOf.get(v) ?? PROLOGUE);
    }
    // A non-layer weight read after the layers began: final norm or lm_head.
    if (readsOtherWeight && r >= 0 && r >= lastLayer && nodeNameLayer(n.name) === undefined) r = Infinity;
    if (r !== Infinity && r > lastLayer) lastLayer = r;
    rank[i] = r;
    for (const o of n.outputs) if (o) rankOf.set(o, r);
  }
  // Constant-like nodes (no inputs) join their first consumer's group.
  const firstUse = new Map<string, number>();
  for (let i = 0; i < nodes.length; i++) for (const v of nodes[i]!.inputs) if (v && !firstUse.has(v)) firstUse.set(v, i);
  for (let i = nodes.length - 1; i >= 0; i--) {
    const n = nodes[i]!;
    if (n.inputs.some((v) => v) || nodeNameLayer(n.name) !== undefined) continue;
    const uses = n.outputs.map((o) => firstUse.get(o)).filter((u): u is number => u !== undefined);
    if (uses.length) rank[i] = rank[Math.min(...uses)]!;
  }
  const ranks = [...new Set(rank)].sort((a, b) => a - b);
  const layered = ranks.some((r) => r >= 0);
  const groups: GraphGroupInfo[] = ranks.map((r) => ({
    id: !layered ? 'graph' : r === PROLOGUE ? 'prologue' : r === Infinity ? 'head' : `layer-${r}`,
    label: !layered ? 'whole graph' : r === PROLOGUE ? 'inputs and embedding' : r === Infinity ? 'head (final norm, logits)' : `layer ${r}`,
    nodes: 0,
  }));
  const slot = new Map(ranks.map((r, i) => [r, i]));
  const groupOf = new Int32Array(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const g = slot.get(rank[i]!)!;
    groupOf[i] = g;
    groups[g]!.nodes++;
  }
  return { nodes, groupOf, groups, weights, inputs, outputs, ...(facts.values ? { values: facts.values } : {}) };
}
