/**
 * The data the editor's read-only viewers show, computed by core from file headers (never
 * tensor data) and posted to a webview as JSON. The webview only lays it out, so everything a
 * user reads on the page (sizes, groupings, problems) is decided and tested here.
 */
import type { Severity } from '../errors';

/** One tensor of a checkpoint page. `shard` indexes {@link CheckpointPage.files}. */
export interface TensorEntry {
  key: string;
  dtype: string;
  shape: number[];
  bytes: number;
  shard: number;
}

/** Where a spec input uses a checkpoint key: enough to open the spec at that input. */
export interface SpecLink {
  /** Absolute path of the spec file. */
  spec: string;
  /** `inputs[i]` of the spec's source document. */
  input: number;
  /** The input's (ONNX graph input) name. */
  name: string;
}

/** A safetensors file or a sharded checkpoint folder. */
export interface CheckpointPage {
  kind: 'checkpoint';
  /** The file the user opened. */
  opened: string;
  /** The checkpoint's directory. */
  dir: string;
  /** `index` (model.safetensors.index.json), `single` or `directory` (every shard). */
  layout: string;
  /** The shards (paths relative to `dir`) with their tensor counts and data bytes. */
  files: { name: string; tensors: number; bytes: number }[];
  /** Tensors in storage order (shard, then data offset). */
  tensors: TensorEntry[];
  totalBytes: number;
  /** Spec inputs using each key, for the specs that reference this checkpoint. */
  links: Record<string, SpecLink[]>;
  /** The specs that were searched and reference this checkpoint. */
  linkedSpecs: string[];
  /** `__metadata__` of the opened file (e.g. {"format": "pt"}). */
  metadata?: Record<string, string>;
}

/** A graph input or output with symbolic dims (`''` = an unnamed unknown dim). */
export interface ValueEntry {
  name: string;
  dtype: string;
  dims: (number | string)[];
}

/** Weight inputs (or initializers) of one layer. */
export interface WeightGroup {
  /** "layer 3", or "other" for embeddings, final norm, head. */
  label: string;
  /** The layer index; -1 for the "other" group. */
  layer: number;
  weights: ValueEntry[];
  /** Sum of the weights' elements. */
  params: number;
}

/** A problem of the embedded spec, as the language server would word it. */
export interface PageProblem {
  code: string;
  severity: Severity;
  message: string;
  /** JSON path in the spec, e.g. `inputs[3].location.key`. */
  path: string;
}

/** One node group of the graph (a decoder layer, the prologue, the head): a block of the graph explorer. */
export interface GraphGroupInfo {
  id: string;
  label: string;
  nodes: number;
}

/** An ONNX model: the summary `weight-spec inspect` prints, as a page. */
export interface OnnxPage {
  kind: 'onnx';
  opened: string;
  fileSize: number;
  irVersion: number;
  producer?: string;
  graphName?: string;
  opsets: { domain: string; version: number }[];
  nodeCount: number;
  /** Op types with their counts, most frequent first. */
  opTypes: { op: string; count: number }[];
  /** Runtime inputs (ids, positions, KV cache) — the graph inputs that are not weights. */
  inputs: ValueEntry[];
  outputs: ValueEntry[];
  /** Weight inputs (weight-free graphs) or initializers (legacy graphs), grouped by layer. */
  weightGroups: WeightGroup[];
  /** Where the weights are: graph inputs (weight-free) or initializers stored in the file. */
  weightsAre: 'inputs' | 'initializers' | 'none';
  /** Serving features (CCL, on-device sampler), one line each. */
  serving: string[];
  /** Metadata entries; long values are cut (`length` is the full length). */
  metadata: { key: string; value: string; length: number }[];
  /** The spec embedded as `com.qti.aisw.extdata`, with its problems. */
  spec?: {
    version: number;
    modelName?: string;
    files: string[];
    inputs: number;
    problems: PageProblem[];
  };
  /** Files the summary links to (they exist): the spec beside the graph, a checkpoint shard. */
  links?: { spec?: string; checkpoint?: string; checkpointIs?: 'prepared' | 'source' };
}

/** What a viewer page shows: the data, or one line saying what is wrong with the file. */
export type ViewerPage = CheckpointPage | OnnxPage | { kind: 'error'; opened: string; message: string };
