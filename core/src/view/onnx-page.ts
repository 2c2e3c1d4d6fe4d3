/**
 * The ONNX viewer's page: what `weight-spec inspect` prints (IR, opsets, runtime inputs and
 * outputs with symbolic dims, metadata), the weights grouped by layer, the embedded weight
 * spec checked as the language server checks a spec file; the graph index (node groups) is
 * returned beside the page for the graph explorer. Everything comes from the metadata walk and
 * one node walk; no tensor data is read.
 */
import path from 'node:path';
import { checkSpec, type HeaderCache } from '../check';
import { servingSummary } from '../artifacts/graph-metadata';
import { summarizeOnnx, type OnnxSummary, type ValueSummary } from '../formats/onnx';
import { layerNumberOf } from '../foundation/layer-number';
import { formatPath, parseSpecText, SPEC_METADATA_KEY } from '../spec';
import { indexGraph, readGraph, type GraphIndex } from './onnx-graph';
import { onnxLinks } from './onnx-links';
import type { OnnxPage, PageProblem, ValueEntry, WeightGroup } from './types';

/** Metadata values longer than this are cut on the page. */
export const METADATA_CLIP = 240;

/** Options of {@link buildOnnxPage}. */
export interface OnnxPageOptions {
  /** Extra read roots for the embedded spec's file paths (the workspace folders). */
  roots?: string[];
  cache?: HeaderCache;
  signal?: AbortSignal;
}

const valueEntry = (v: ValueSummary): ValueEntry => ({ name: v.name, dtype: v.dtype ?? `elem_type ${v.elemType}`, dims: v.dims });

/** Weights by layer in layer order, then the rest ("other": embeddings, final norm, head). */
export function groupWeights(weights: ValueEntry[]): WeightGroup[] {
  const byLayer = new Map<number, WeightGroup>();
  for (const w of weights) {
    const layer = layerNumberOf(w.name) ?? -1;
    let g = byLayer.get(layer);
    if (!g) byLayer.set(layer, (g = { label: layer < 0 ? 'other' : `layer ${layer}`, layer, weights: [], params: 0 }));
    g.weights.push(w);
    if (w.dims.every((d) => typeof d === 'number')) g.params += (w.dims as number[]).reduce((a, b) => a * b, 1);
  }
  return [...byLayer.values()].sort((a, b) => (a.layer < 0 ? 1 : b.layer < 0 ? -1 : a.layer - b.layer));
}

async function embeddedSpec(file: string, s: OnnxSummary, opts: OnnxPageOptions): Promise<{ page?: OnnxPage['spec']; names: Set<string> }> {
  const text = s.metadata[SPEC_METADATA_KEY];
  if (text === undefined) return { names: new Set() };
  const shown = `${file} (metadata ${SPEC_METADATA_KEY})`;
  const parsed = parseSpecText(text, shown);
  // The embedded spec's paths are relative to the ONNX's folder (as QEfficient writes them),
  // and its names are checked against this very graph.
  const problems = parsed.spec
    ? await checkSpec(file, text, {
        onnx: file,
        ...(opts.roots ? { roots: opts.roots } : {}),
        ...(opts.cache ? { cache: opts.cache } : {}),
        ...(opts.signal ? { signal: opts.signal } : {}),
      })
    : parsed.problems;
  const list: PageProblem[] = problems.map((p) => ({ code: p.code, severity: p.severity, message: p.message, path: formatPath(p.path) }));
  const spec = parsed.spec;
  return {
    names: new Set(spec?.inputs.map((i) => i.name) ?? []),
    page: {
      version: spec?.version ?? 0,
      ...(spec?.model_name ? { modelName: spec.model_name } : {}),
      files: spec?.files.map((f) => f.path) ?? [],
      inputs: spec?.inputs.length ?? 0,
      problems: list,
    },
  };
}

/** The page of `file` and the graph index the graph explorer's model is built from. FormatError on a bad file. */
export async function buildOnnxPage(file: string, opts: OnnxPageOptions = {}): Promise<{ page: OnnxPage; graph: GraphIndex }> {
  const abs = path.resolve(file);
  const s = await summarizeOnnx(abs);
  const spec = await embeddedSpec(abs, s, opts);
  const initializers = new Set(s.initializers.map((t) => t.name));
  // Weights: the spec's inputs, else initializers, else (a weight-free graph without its spec)
  // inputs named like module parameters.
  const isWeight = (name: string) =>
    spec.names.has(name) || initializers.has(name) || (spec.names.size === 0 && /\.(weight|bias)$/.test(name));
  const weightInputs = s.inputs.filter((v) => isWeight(v.name)).map(valueEntry);
  const inits = s.initializers.filter((t) => !s.inputs.some((v) => v.name === t.name));
  const weights = [...weightInputs, ...inits.map((t) => ({ name: t.name, dtype: t.dtype ?? `data_type ${t.dataType}`, dims: t.dims }))];
  const read = readGraph(abs);
  const graph = indexGraph(read.nodes, {
    weights: weights.map((w) => w.name),
    inputs: s.inputs.map((v) => v.name),
    outputs: s.outputs.map((v) => v.name),
    values: [...weights, ...s.inputs.map(valueEntry), ...s.outputs.map(valueEntry), ...read.valueInfo.map(valueEntry)],
  });
  const metaEntries = Object.entries(s.metadata);
  const page: OnnxPage = {
    kind: 'onnx',
    opened: abs,
    fileSize: s.fileSize,
    irVersion: s.irVersion,
    ...(s.producer ? { producer: s.producer } : {}),
    ...(s.graphName ? { graphName: s.graphName } : {}),
    opsets: s.opsets.map((o) => ({ domain: o.domain || 'ai.onnx', version: o.version })),
    nodeCount: s.nodeCount,
    opTypes: Object.entries(s.opTypes)
      .map(([op, count]) => ({ op, count }))
      .sort((a, b) => b.count - a.count || a.op.localeCompare(b.op)),
    inputs: s.inputs.filter((v) => !isWeight(v.name)).map(valueEntry),
    outputs: s.outputs.map(valueEntry),
    weightGroups: groupWeights(weights),
    weightsAre: weightInputs.length ? 'inputs' : weights.length ? 'initializers' : 'none',
    serving: servingSummary(
      abs,
      s.inputs,
      s.outputs,
      metaEntries.map(([key, value]) => ({ key, value })),
    ),
    metadata: metaEntries.map(([key, value]) => ({
      key,
      value: value.length > METADATA_CLIP ? `${value.slice(0, METADATA_CLIP)}…` : value,
      length: value.length,
    })),
    ...(spec.page ? { spec: spec.page } : {}),
    links: onnxLinks(abs, spec.page?.files ?? []),
  };
  return { page, graph };
}
