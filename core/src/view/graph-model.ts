/**
 * The graph explorer's data: the whole graph in one JSON-able object, posted to the webview
 * once, which lays it out and draws it. Built from the viewer's {@link GraphIndex}:
 *
 * - sections are the index's groups (prologue, one per decoder layer, head), so the picture
 *   shows one block per layer that expands in place;
 * - Constant nodes are folded: their output becomes a `const` value whose text (`int64[2]
 *   [1, -1]`) the consumer shows beside its attributes, as Netron does, instead of a box
 *   named `/const/ints_16`;
 * - each value knows its dtype and shape when the file says (graph inputs, outputs, weights,
 *   `value_info`) or shape-infer.ts infers them (marked `inferred`), its producer and consumers;
 * - weight inputs carry their entry of the export's weight_spec.json (the spec beside the
 *   model) and the checkpoint file and key it points to.
 *
 * The types (and helpers the webview uses) are in graph-data.ts, which has no Node imports.
 */
import { existsSync } from 'node:fs';
import { readJsonTextSync } from '../paths';
import path from 'node:path';
import { parseSpecText } from '../spec';
import { specFileResolver } from '../artifacts/spec-files';
import type { GraphModel, GxNode, GxSection, GxValue, WeightSource } from './graph-data';
import type { GraphIndex } from './onnx-graph';
import { inferShapes } from './shape-infer';
import type { ValueEntry } from './types';

/** Op types whose (input-free) node is folded into its consumers. */
const FOLDED_OPS = new Set(['Constant']);

/** The op summary of a section: its most frequent op types with counts. */
function opSummary(ops: string[], keep = 4): string {
  const counts = new Map<string, number>();
  for (const o of ops) counts.set(o, (counts.get(o) ?? 0) + 1);
  const top = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return top
    .slice(0, keep)
    .map(([o, c]) => `${o} ${c}`)
    .concat(top.length > keep ? ['…'] : [])
    .join(' · ');
}

/** The weight sources of the spec `specFile` (its text `text`): input name → entry, file, key. */
export function weightSources(specFile: string, text: string): Record<string, WeightSource> {
  const spec = parseSpecText(text, specFile).spec;
  const out: Record<string, WeightSource> = {};
  if (!spec) return out;
  // Through the one resolver: the spec's paths, else the prepared folder the export's report names.
  const resolver = specFileResolver(path.dirname(specFile));
  spec.inputs.forEach((inp, i) => {
    const f = spec.files[inp.location.file];
    out[inp.name] = {
      input: i,
      key: inp.location.key,
      ...(f ? { file: resolver.file(f.path).abs } : {}),
      entry: JSON.stringify(inp, null, 2),
    };
  });
  return out;
}

/** The spec beside `onnxFile` (`weight_spec.json`, else `<stem>.weight_spec.json`), if present. */
export function siblingSpec(onnxFile: string): string | undefined {
  const dir = path.dirname(onnxFile);
  const stem = path.basename(onnxFile).replace(/\.onnx$/i, '');
  return [path.join(dir, 'weight_spec.json'), path.join(dir, `${stem}.weight_spec.json`)].find((f) => existsSync(f));
}

/** The explorer's model of the indexed graph; `values` gives dtypes and shapes where known. */
export function buildGraphModel(
  ix: GraphIndex,
  o: { file: string; values?: Iterable<ValueEntry>; spec?: { file: string; text: string } },
): GraphModel {
  const known = new Map<string, ValueEntry>();
  for (const v of o.values ?? []) if (!known.has(v.name)) known.set(v.name, v);
  // Inner values a weight-free export leaves without value_info get inferred shapes.
  const inferred = inferShapes(ix.nodes, known.values());
  const values: GxValue[] = [];
  const valueId = new Map<string, number>();
  const value = (name: string): number => {
    let id = valueId.get(name);
    if (id === undefined) {
      const k = known.get(name);
      const kind = ix.weights.has(name) ? 'weight' : ix.inputs.has(name) ? 'input' : ix.outputs.has(name) ? 'output' : 'inner';
      const guess = k ? undefined : inferred.get(name);
      values.push({
        name,
        kind,
        ...(k ? { dtype: k.dtype, dims: k.dims } : guess ? { ...guess, inferred: true } : {}),
        producer: -1,
        consumers: [],
      });
      valueId.set(name, (id = values.length - 1));
    }
    return id;
  };
  const sections: GxSection[] = ix.groups.map((g) => {
    const layer = /^layer-(\d+)$/.exec(g.id);
    return { id: g.id, label: g.label, ...(layer ? { layer: Number(layer[1]) } : {}), nodes: [], weights: 0, ops: '' };
  });
  const nodes: GxNode[] = [];
  let folded = 0;
  ix.nodes.forEach((n, i) => {
    if (FOLDED_OPS.has(n.op) && !n.inputs.some((v) => v) && n.outputs.length === 1) {
      const v = values[value(n.outputs[0]!)]!;
      v.kind = 'const';
      const a = n.attrs?.[0];
      v.text = a ? (a.name === 'value' ? a.value : `${a.name} ${a.value}`) : '(empty)';
      folded++;
      return;
    }
    const id = nodes.length;
    const s = ix.groupOf[i]!;
    const node: GxNode = {
      op: n.op,
      ...(n.domain && n.domain !== 'ai.onnx' ? { domain: n.domain } : {}),
      name: n.name,
      inputs: n.inputs.map((v) => (v ? value(v) : -1)),
      outputs: n.outputs.map((v) => (v ? value(v) : -1)),
      attrs: n.attrs ?? [],
      section: s,
    };
    for (const v of node.outputs) if (v >= 0) values[v]!.producer = id;
    nodes.push(node);
    sections[s]!.nodes.push(id);
  });
  for (const [id, n] of nodes.entries())
    for (const v of new Set(n.inputs))
      if (v >= 0) {
        values[v]!.consumers.push(id);
        if (values[v]!.kind === 'weight') sections[n.section]!.weights++;
      }
  // Graph outputs that no node produces (an input passed through) still appear once.
  for (const name of ix.outputs) value(name);
  for (const s of sections) s.ops = opSummary(s.nodes.map((i) => nodes[i]!.op));
  const used = sections.filter((s) => s.nodes.length > 0);
  if (used.length !== sections.length) {
    // A section left empty by folding (only constants) is dropped; nodes are renumbered to it.
    const remap = new Map(sections.map((s, i) => [i, used.indexOf(s)]));
    for (const n of nodes) n.section = remap.get(n.section)!;
  }
  return {
    file: o.file,
    nodes,
    values,
    sections: used,
    ...(o.spec ? { spec: o.spec.file } : {}),
    sources: o.spec ? weightSources(o.spec.file, o.spec.text) : {},
    folded,
  };
}

/** The model of `ix` with the spec beside `file` (read here, when present). */
export function graphModelOf(ix: GraphIndex, file: string, values?: Iterable<ValueEntry>): GraphModel {
  const spec = siblingSpec(file);
  let text: string | undefined;
  try {
    text = spec ? readJsonTextSync(spec) : undefined;
  } catch {
    // An unreadable spec gives no sources; the graph is still shown.
  }
  return buildGraphModel(ix, {
    file,
    ...(values ? { values } : {}),
    ...(spec && text !== undefined ? { spec: { file: spec, text } } : {}),
  });
}
