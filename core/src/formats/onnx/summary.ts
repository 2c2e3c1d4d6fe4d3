/**
 * The fast, metadata-only view of an ONNX file: graph inputs/outputs, initializers (with
 * where their bytes are), opsets, metadata, node and op-type counts — from one walk over the
 * protobuf wire format by positional reads. Tensor payloads (raw_data) are skipped by offset,
 * never read, so a multi-GB model is summarized in about a megabyte of memory.
 */
import { FIELD, WIRE } from './fields';
import { MAX_IR_VERSION } from './types';
import { FileReader, sniffNonOnnx, type FieldHead } from './wire-reader';
import { FormatError } from '../../errors';
import { initializer, pairs, str, valueInfo, type InitializerSummary, type ValueSummary } from './value-summary';

const { ModelProto: MP, GraphProto: GP } = FIELD;

/** What {@link summarizeOnnx} reports. */
export interface OnnxSummary {
  file: string;
  fileSize: number;
  irVersion: number;
  /** `producer_name` and `producer_version` joined by a space, when given. */
  producer?: string;
  producerName?: string;
  producerVersion?: string;
  graphName?: string;
  opsets: { domain: string; version: number }[];
  inputs: ValueSummary[];
  outputs: ValueSummary[];
  initializers: InitializerSummary[];
  metadata: Record<string, string>;
  /** Nodes of the main graph (subgraphs of If/Loop are not counted). */
  nodeCount: number;
  /** Node count per op type (`domain:op` outside the default domain). */
  opTypes: Record<string, number>;
  /**
   * For each graph input/initializer name: the distinct op types of main-graph nodes consuming
   * it (uses inside If/Loop subgraphs are not seen: attributes are skipped unread).
   */
  consumers: Record<string, string[]>;
}

function opKey(domain: string, op: string): string {
  return domain === '' || domain === 'ai.onnx' ? op : `${domain}:${op}`;
}

interface GraphAcc {
  s: OnnxSummary;
  /** Op types consuming each graph input/initializer name, in first-use order. */
  uses: Map<string, string | string[]>;
  /** Spans `[start, end)` of the main graph's NodeProtos, walked once the names are known. */
  nodes: number[];
  known: Set<string>;
}

/** Counts one node and records its uses of `acc.known` names. */
function node(r: FileReader, h: FieldHead, acc: GraphAcc): void {
  const inputs: string[] = [];
  let op = '';
  let domain = '';
  r.each(h.vStart, h.vEnd, 'NodeProto', (f) => {
    if (f.field === FIELD.NodeProto.input) inputs.push(str(r, f, 'NodeProto', 'input'));
    else if (f.field === FIELD.NodeProto.op_type) op = str(r, f, 'NodeProto', 'op_type');
    else if (f.field === FIELD.NodeProto.domain) domain = str(r, f, 'NodeProto', 'domain');
  });
  const key = opKey(domain, op);
  acc.s.nodeCount++;
  acc.s.opTypes[key] = (acc.s.opTypes[key] ?? 0) + 1;
  // Usually one op type per weight: a plain string until a second one appears.
  for (const name of inputs) {
    if (name === '' || !acc.known.has(name)) continue; // '' = an omitted optional input
    const seen = acc.uses.get(name);
    if (seen === undefined) acc.uses.set(name, key);
    else if (typeof seen === 'string') {
      if (seen !== key) acc.uses.set(name, [seen, key]);
    } else if (!seen.includes(key)) seen.push(key);
  }
}

function graph(r: FileReader, h: FieldHead, acc: GraphAcc): void {
  r.expect(h, WIRE.LEN, 'ModelProto', 'graph');
  r.each(h.vStart, h.vEnd, 'GraphProto', (f) => {
    switch (f.field) {
      case GP.node:
        r.expect(f, WIRE.LEN, 'GraphProto', 'node');
        acc.nodes.push(f.vStart, f.vEnd);
        break;
      case GP.name:
        acc.s.graphName = str(r, f, 'GraphProto', 'name');
        break;
      case GP.initializer:
        acc.s.initializers.push(initializer(r, f));
        break;
      case GP.input:
        acc.s.inputs.push(valueInfo(r, f, 'input'));
        break;
      case GP.output:
        acc.s.outputs.push(valueInfo(r, f, 'output'));
        break;
      default:
        break;
    }
  });
}

/** Summarizes `r`'s file; see {@link summarizeOnnx}. */
function summarizeReader(r: FileReader): OnnxSummary {
  const s: OnnxSummary = {
    file: r.file,
    fileSize: r.size,
    irVersion: 0,
    opsets: [],
    inputs: [],
    outputs: [],
    initializers: [],
    metadata: Object.create(null),
    nodeCount: 0,
    opTypes: Object.create(null),
    consumers: Object.create(null),
  };
  const acc: GraphAcc = { s, uses: new Map(), nodes: [], known: new Set() };
  let sawGraph = false;
  let sawIr = false;
  const M = 'ModelProto';
  r.each(0, r.size, M, (f) => {
    switch (f.field) {
      case MP.ir_version:
        r.expect(f, WIRE.VARINT, M, 'ir_version');
        s.irVersion = f.int;
        sawIr = true;
        break;
      case MP.producer_name:
        s.producerName = str(r, f, M, 'producer_name');
        break;
      case MP.producer_version:
        s.producerVersion = str(r, f, M, 'producer_version');
        break;
      case MP.graph:
        graph(r, f, acc);
        sawGraph = true;
        break;
      case MP.opset_import: {
        r.expect(f, WIRE.LEN, M, 'opset_import');
        const o = { domain: '', version: 0 };
        r.each(f.vStart, f.vEnd, 'OperatorSetIdProto', (x) => {
          if (x.field === FIELD.OperatorSetIdProto.domain) o.domain = str(r, x, 'OperatorSetIdProto', 'domain');
          else if (x.field === FIELD.OperatorSetIdProto.version) {
            r.expect(x, WIRE.VARINT, 'OperatorSetIdProto', 'version');
            o.version = x.int;
          }
        });
        s.opsets.push(o);
        break;
      }
      case MP.metadata_props: {
        const [k, v] = pairs(r, f, M);
        s.metadata[k] = v;
        break;
      }
      default:
        break;
    }
  });
  if (!sawGraph) r.fail('not an ONNX model: ModelProto has no graph');
  if (!sawIr) r.fail('not an ONNX model: ModelProto has no ir_version');
  if (!Number.isInteger(s.irVersion) || s.irVersion < 1 || s.irVersion > MAX_IR_VERSION) {
    r.fail(`not an ONNX model: implausible ir_version ${s.irVersion}`);
  }
  // Nodes come first in the wire but only uses of inputs/initializers matter: walk them now
  // (recording every intermediate value's consumers made GC dominate on 200k-node graphs).
  const names = [...s.inputs.map((v) => v.name), ...s.initializers.map((t) => t.name)];
  acc.known = new Set(names);
  const head: FieldHead = { field: GP.node, wire: WIRE.LEN, start: 0, vStart: 0, vEnd: 0, int: 0 };
  for (let i = 0; i < acc.nodes.length; i += 2) {
    head.vStart = acc.nodes[i]!;
    head.vEnd = acc.nodes[i + 1]!;
    node(r, head, acc);
  }
  const producer = [s.producerName, s.producerVersion].filter((x) => x).join(' ');
  if (producer) s.producer = producer;
  for (const name of names) {
    const seen = acc.uses.get(name);
    s.consumers[name] = seen === undefined ? [] : typeof seen === 'string' ? [seen] : [...seen];
  }
  return s;
}

/**
 * Walks a whole model through `r` (also the structural validation `decodeModel` runs before
 * protobufjs, which does not check wire types of known fields). Closes `r`.
 */
export function summarizeWith(r: FileReader): OnnxSummary {
  try {
    if (r.size === 0) r.fail('the file is empty, not an ONNX model');
    try {
      return summarizeReader(r);
    } catch (err) {
      // A non-ONNX file usually fails on its first bytes: say what it looks like instead.
      const sniffed = err instanceof FormatError ? sniffNonOnnx(r.bytes(0, Math.min(64, r.size)), r.size) : undefined;
      if (sniffed) throw new FormatError(r.file, sniffed);
      throw err;
    }
  } finally {
    r.close();
  }
}

/** The summary of a model already in memory (`file` names it in errors). */
export function summarizeOnnxBytes(bytes: Uint8Array, file: string): OnnxSummary {
  return summarizeWith(FileReader.fromBytes(bytes, file));
}

/** Synchronous {@link summarizeOnnx}. */
export function summarizeOnnxSync(file: string): OnnxSummary {
  return summarizeWith(FileReader.open(file));
}

/**
 * The metadata-only summary of an ONNX file, read by positional reads through a 1 MB window:
 * memory stays about constant whatever the file's size. Corrupt input (truncated varints,
 * lengths past the enclosing message or the file, wrong wire types for known fields, groups,
 * raw_data sizes that contradict dims) raises one FormatError naming the file and the byte.
 */
export async function summarizeOnnx(file: string): Promise<OnnxSummary> {
  return summarizeOnnxSync(file);
}
