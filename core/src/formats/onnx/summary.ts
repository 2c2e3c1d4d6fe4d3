/**
 * The fast, metadata-only view of an ONNX file: graph inputs/outputs, initializers (with
 * where their bytes are), opsets, metadata, node and op-type counts — from one walk over the
 * protobuf wire format by positional reads. Tensor payloads (raw_data) are skipped by offset,
 * never read, so a multi-GB model is summarized in about a megabyte of memory.
 */
import { dtypeOfOnnx, type DType } from '../dtype';
import { DataLocation, FIELD, WIRE } from './fields';
import { MAX_IR_VERSION, rawByteLength, TensorDataType as T } from './types';
import { fieldLabel, FileReader, quoted, sniffNonOnnx, type FieldHead } from './wire-reader';
import { FormatError } from '../../errors';

const { ModelProto: MP, GraphProto: GP, TensorProto: TP, StringStringEntryProto: SSE } = FIELD;
const TT = FIELD['TypeProto.Tensor'];
const DIM = FIELD['TensorShapeProto.Dimension'];

/** A graph input or output. */
export interface ValueSummary {
  name: string;
  /** The safetensors-style dtype of `elemType`, when it has one. */
  dtype?: DType;
  /** TensorProto.DataType of the tensor type; 0 when not a tensor type or not given. */
  elemType: number;
  /** Fixed dims as numbers, symbolic dims by name (`''` when a dim has neither). */
  dims: (number | string)[];
  /** False when the type carries no shape at all (rank unknown; `dims` is then empty). */
  hasShape: boolean;
}

/** An initializer and where its bytes are. */
export interface InitializerSummary {
  name: string;
  dtype?: DType;
  dataType: number;
  dims: number[];
  /** raw_data in this file, typed fields (float_data, int64_data, …) or an external file. */
  storage: 'raw' | 'typed' | 'external';
  /** Absolute offset of raw_data's bytes in this file (storage 'raw'). */
  byteOffset?: number;
  /** Bytes of the tensor's data (raw_data length, external length, or dims × element size). */
  byteLength: number;
  /** external_data entries (storage 'external'); `length` is -1 when the entry is absent. */
  external?: { location: string; offset: number; length: number };
  /** The serialized TensorProto's span in this file (for typed tensors: decode just it). */
  messageOffset: number;
  messageLength: number;
}

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

function pairs(r: FileReader, h: FieldHead, msg: string): [string, string] {
  r.expect(h, WIRE.LEN, msg, 'entry');
  let key = '';
  let value = '';
  r.each(h.vStart, h.vEnd, 'StringStringEntryProto', (e) => {
    if (e.field === SSE.key || e.field === SSE.value) {
      r.expect(e, WIRE.LEN, 'StringStringEntryProto', e.field === SSE.key ? 'key' : 'value');
      if (e.field === SSE.key) key = r.string(e.vStart, e.vEnd);
      else value = r.string(e.vStart, e.vEnd);
    }
  });
  return [key, value];
}

function str(r: FileReader, h: FieldHead, msg: string, name: string): string {
  r.expect(h, WIRE.LEN, msg, name);
  return r.string(h.vStart, h.vEnd);
}

function shapeOf(r: FileReader, h: FieldHead): (number | string)[] {
  const dims: (number | string)[] = [];
  r.each(h.vStart, h.vEnd, 'TensorShapeProto', (d) => {
    if (d.field !== FIELD.TensorShapeProto.dim) return;
    r.expect(d, WIRE.LEN, 'TensorShapeProto', 'dim');
    let dim: number | string = '';
    r.each(d.vStart, d.vEnd, 'TensorShapeProto.Dimension', (x) => {
      if (x.field === DIM.dim_value) {
        r.expect(x, WIRE.VARINT, 'TensorShapeProto.Dimension', 'dim_value');
        dim = x.int;
      } else if (x.field === DIM.dim_param) {
        dim = str(r, x, 'TensorShapeProto.Dimension', 'dim_param');
      }
    });
    dims.push(dim);
  });
  return dims;
}

/** Decodes a ValueInfoProto field of a GraphProto (`what` names the field in errors). */
export function valueInfo(r: FileReader, h: FieldHead, what: string): ValueSummary {
  r.expect(h, WIRE.LEN, 'GraphProto', what);
  const v: ValueSummary = { name: '', elemType: 0, dims: [], hasShape: false };
  r.each(h.vStart, h.vEnd, 'ValueInfoProto', (f) => {
    if (f.field === FIELD.ValueInfoProto.name) v.name = str(r, f, 'ValueInfoProto', 'name');
    if (f.field !== FIELD.ValueInfoProto.type) return;
    r.expect(f, WIRE.LEN, 'ValueInfoProto', 'type');
    r.each(f.vStart, f.vEnd, 'TypeProto', (t) => {
      if (t.field !== FIELD.TypeProto.tensor_type) return; // sequence/map/optional/sparse types keep elemType 0
      r.expect(t, WIRE.LEN, 'TypeProto', 'tensor_type');
      r.each(t.vStart, t.vEnd, 'TypeProto.Tensor', (x) => {
        if (x.field === TT.elem_type) {
          r.expect(x, WIRE.VARINT, 'TypeProto.Tensor', 'elem_type');
          v.elemType = x.int;
        } else if (x.field === TT.shape) {
          r.expect(x, WIRE.LEN, 'TypeProto.Tensor', 'shape');
          v.dims = shapeOf(r, x);
          v.hasShape = true;
        }
      });
    });
  });
  const dtype = dtypeOfOnnx(v.elemType);
  if (dtype) v.dtype = dtype;
  return v;
}

/** Element count a typed field holds, counted without decoding values. */
function typedCount(r: FileReader, t: FieldHead): number {
  if (t.wire === WIRE.I32) return 1;
  if (t.wire === WIRE.I64) return 1;
  if (t.wire === WIRE.VARINT) return 1;
  if (t.field === TP.float_data || t.field === TP.double_data) {
    const width = t.field === TP.float_data ? 4 : 8;
    const n = t.vEnd - t.vStart;
    if (n % width !== 0)
      r.fail(`${fieldLabel('TensorProto', t.field)} is ${n} bytes, not a whole number of ${width}-byte values`, t.vStart);
    return n / width;
  }
  let n = 0;
  for (let p = t.vStart; p < t.vEnd; p++) if ((r.byte(p) & 0x80) === 0) n++;
  return n;
}

function initializer(r: FileReader, h: FieldHead): InitializerSummary {
  r.expect(h, WIRE.LEN, 'GraphProto', 'initializer');
  const M = 'TensorProto';
  const t: InitializerSummary = {
    name: '',
    dataType: 0,
    dims: [],
    storage: 'typed',
    byteLength: 0,
    messageOffset: h.vStart,
    messageLength: h.vEnd - h.vStart,
  };
  let raw: FieldHead | undefined;
  let typed = 0;
  let strings = 0;
  let location = 0;
  const ext: Record<string, string> = Object.create(null);
  r.each(h.vStart, h.vEnd, M, (f) => {
    switch (f.field) {
      case TP.dims:
        for (const d of r.ints(f, M, 'dims')) t.dims.push(d);
        break;
      case TP.data_type:
        r.expect(f, WIRE.VARINT, M, 'data_type');
        t.dataType = f.int;
        break;
      case TP.name:
        t.name = str(r, f, M, 'name');
        break;
      case TP.raw_data:
        r.expect(f, WIRE.LEN, M, 'raw_data');
        raw = f;
        break;
      case TP.string_data:
        r.expect(f, WIRE.LEN, M, 'string_data');
        strings += f.vEnd - f.vStart;
        typed++;
        break;
      case TP.float_data:
      case TP.int32_data:
      case TP.int64_data:
      case TP.double_data:
      case TP.uint64_data:
        typed += typedCount(r, f);
        break;
      case TP.external_data: {
        const [k, v] = pairs(r, f, M);
        ext[k] = v;
        break;
      }
      case TP.data_location:
        r.expect(f, WIRE.VARINT, M, 'data_location');
        location = f.int;
        break;
      default:
        break;
    }
  });
  const where = () => (t.name ? `initializer ${quoted(t.name)}` : `an unnamed initializer`);
  if (t.dims.some((d) => d < 0 || !Number.isSafeInteger(d))) r.fail(`${where()} has invalid dims [${t.dims.join(', ')}]`, h.vStart);
  const count = t.dims.reduce((a, b) => a * b, 1);
  const expected = rawByteLength(t.dataType, count);
  const dtype = dtypeOfOnnx(t.dataType);
  if (dtype) t.dtype = dtype;
  if (location === DataLocation.EXTERNAL || Object.keys(ext).length > 0) {
    t.storage = 'external';
    if (!ext.location) r.fail(`${where()} stores its data externally but names no location`, h.vStart);
    const num = (k: string, dflt: number) => {
      if (ext[k] === undefined) return dflt;
      if (!/^\d+$/.test(ext[k]!)) r.fail(`${where()}: external_data ${k} ${quoted(ext[k]!)} is not a non-negative integer`, h.vStart);
      return Number(ext[k]);
    };
    t.external = { location: ext.location!, offset: num('offset', 0), length: num('length', -1) };
    t.byteLength = t.external.length >= 0 ? t.external.length : (expected ?? 0);
    if (t.external.length >= 0 && expected !== undefined && t.external.length !== expected) {
      r.fail(
        `${where()}: external length ${t.external.length} but dims [${t.dims.join(', ')}] of data_type ${t.dataType} need ${expected} bytes`,
        h.vStart,
      );
    }
  } else if (raw) {
    t.storage = 'raw';
    t.byteOffset = raw.vStart;
    t.byteLength = raw.vEnd - raw.vStart;
    if (expected !== undefined && t.byteLength !== expected) {
      r.fail(
        `${where()}: raw_data has ${t.byteLength} bytes but dims [${t.dims.join(', ')}] of data_type ${t.dataType} need ${expected}`,
        raw.vStart,
      );
    }
  } else {
    t.byteLength = t.dataType === T.STRING ? strings : (expected ?? 0);
    const want = t.dataType === T.COMPLEX64 || t.dataType === T.COMPLEX128 ? 2 * count : count;
    // 4-bit types pack two values per int32_data entry
    const packed = t.dataType === T.UINT4 || t.dataType === T.INT4 || t.dataType === T.FLOAT4E2M1;
    if (t.dataType !== T.STRING && expected !== undefined && typed !== want && !packed) {
      r.fail(`${where()}: typed data holds ${typed} values but dims [${t.dims.join(', ')}] need ${want}`, h.vStart);
    }
  }
  return t;
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
