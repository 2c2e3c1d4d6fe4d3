/**
 * Byte-level view of an ONNX ModelProto held in memory (the compile step's binder, the runner).
 *
 * Binding a weight-free graph only has to (a) read the graph's inputs, (b) drop the weight
 * inputs and (c) append initializers that point at external data. Doing that on the protobuf
 * wire, field by field, keeps every other byte of the graph exactly as the exporter wrote it
 * (unknown or newer fields included) and costs one pass over a few megabytes, where a full
 * decode/encode of a large graph would build millions of objects. Field numbers: fields.ts.
 */
import { FormatError } from '../../errors';
import { DataLocation, FIELD, WIRE } from './fields';
import { FileReader } from './wire-reader';
import { WireWriter } from './wire-writer';

const { ModelProto: MP, GraphProto: GP, TensorProto: TP, ValueInfoProto: VI, StringStringEntryProto: SSE } = FIELD;
const TT = FIELD['TypeProto.Tensor'];
const DIM = FIELD['TensorShapeProto.Dimension'];

/** One top-level field of a message: `[start, end)` spans the tag; `[vStart, vEnd)` the value. */
export interface WireField {
  field: number;
  wire: number;
  start: number;
  end: number;
  vStart: number;
  vEnd: number;
  /** The varint value (wire type 0 only). */
  int?: number;
}

/** A graph input as the runner and the binder need it. */
export interface WireValueInfo {
  name: string;
  /** TensorProto.DataType of the tensor type, 0 when not a tensor / unknown. */
  elemType: number;
  /** Fixed dims as numbers, symbolic dims as their name ('' when unnamed). */
  dims: (number | string)[];
}

/** The parts of a model the compile and run steps look at. */
export interface WireModel {
  bytes: Uint8Array;
  fields: WireField[];
  graph: WireField;
  graphFields: WireField[];
  inputs: WireValueInfo[];
  outputs: WireValueInfo[];
  initializerNames: string[];
  metadata: { key: string; value: string }[];
}

const dec = new TextDecoder('utf-8', { fatal: false });

/** Splits `buf[start, end)` into its top-level protobuf fields (validated like the summary path). */
export function scanFields(buf: Uint8Array, start: number, end: number, file: string, msg = 'message'): WireField[] {
  const out: WireField[] = [];
  FileReader.fromBytes(buf, file).each(start, end, msg, (h) =>
    out.push({
      field: h.field,
      wire: h.wire,
      start: h.start,
      end: h.vEnd,
      vStart: h.vStart,
      vEnd: h.vEnd,
      int: h.wire === 0 ? h.int : undefined,
    }),
  );
  return out;
}

function str(buf: Uint8Array, f: WireField): string {
  return dec.decode(buf.subarray(f.vStart, f.vEnd));
}

function parseValueInfo(buf: Uint8Array, f: WireField, file: string): WireValueInfo {
  let name = '';
  let elemType = 0;
  const dims: (number | string)[] = [];
  for (const g of scanFields(buf, f.vStart, f.vEnd, file)) {
    if (g.field === VI.name && g.wire === WIRE.LEN) name = str(buf, g);
    else if (g.field === VI.type && g.wire === WIRE.LEN) {
      for (const t of scanFields(buf, g.vStart, g.vEnd, file)) {
        if (t.field !== FIELD.TypeProto.tensor_type || t.wire !== WIRE.LEN) continue;
        for (const tt of scanFields(buf, t.vStart, t.vEnd, file)) {
          if (tt.field === TT.elem_type && tt.wire === WIRE.VARINT) elemType = tt.int!;
          else if (tt.field === TT.shape && tt.wire === WIRE.LEN) {
            for (const d of scanFields(buf, tt.vStart, tt.vEnd, file)) {
              if (d.field !== FIELD.TensorShapeProto.dim || d.wire !== WIRE.LEN) continue;
              let dim: number | string = '';
              for (const dv of scanFields(buf, d.vStart, d.vEnd, file)) {
                if (dv.field === DIM.dim_value && dv.wire === WIRE.VARINT) dim = dv.int!;
                else if (dv.field === DIM.dim_param && dv.wire === WIRE.LEN) dim = str(buf, dv);
              }
              dims.push(dim);
            }
          }
        }
      }
    }
  }
  return { name, elemType, dims };
}

/** Parses the fields of a ModelProto the compile step needs; FormatError on a non-model. */
export function parseWireModel(bytes: Uint8Array, file: string): WireModel {
  const fields = scanFields(bytes, 0, bytes.length, file);
  const graph = fields.find((f) => f.field === MP.graph && f.wire === WIRE.LEN);
  if (!graph) throw new FormatError(file, 'not an ONNX model (no graph)');
  const graphFields = scanFields(bytes, graph.vStart, graph.vEnd, file);
  const inputs: WireValueInfo[] = [];
  const outputs: WireValueInfo[] = [];
  const initializerNames: string[] = [];
  for (const g of graphFields) {
    if (g.wire !== WIRE.LEN) continue;
    if (g.field === GP.input) inputs.push(parseValueInfo(bytes, g, file));
    else if (g.field === GP.output) outputs.push(parseValueInfo(bytes, g, file));
    else if (g.field === GP.initializer) {
      const name = scanFields(bytes, g.vStart, g.vEnd, file).find((t) => t.field === TP.name && t.wire === WIRE.LEN);
      initializerNames.push(name ? str(bytes, name) : '');
    }
  }
  const metadata: { key: string; value: string }[] = [];
  for (const f of fields) {
    if (f.field !== MP.metadata_props || f.wire !== WIRE.LEN) continue;
    let key = '';
    let value = '';
    for (const e of scanFields(bytes, f.vStart, f.vEnd, file)) {
      if (e.field === SSE.key && e.wire === WIRE.LEN) key = str(bytes, e);
      else if (e.field === SSE.value && e.wire === WIRE.LEN) value = str(bytes, e);
    }
    metadata.push({ key, value });
  }
  return { bytes, fields, graph, graphFields, inputs, outputs, initializerNames, metadata };
}

/** An initializer whose bytes live in an external file (TensorProto, data_location = EXTERNAL). */
export interface ExternalInitializer {
  name: string;
  dataType: number;
  dims: number[];
  location: string;
  offset: number;
  length: number;
}

/** Encodes one external-data TensorProto. */
export function encodeExternalTensor(t: ExternalInitializer): Uint8Array {
  const w = new WireWriter();
  for (const d of t.dims) w.int(TP.dims, d);
  w.int(TP.data_type, t.dataType);
  w.string(TP.name, t.name);
  w.bytes(TP.external_data, encodeStringEntry('location', t.location));
  w.bytes(TP.external_data, encodeStringEntry('offset', String(t.offset)));
  w.bytes(TP.external_data, encodeStringEntry('length', String(t.length)));
  w.int(TP.data_location, DataLocation.EXTERNAL);
  return w.finish();
}

/** Encodes a ValueInfoProto of a tensor (fixed or named dims). */
export function tensorValueInfo(name: string, elemType: number, dims: readonly (number | string)[]): Uint8Array {
  const shape = new WireWriter();
  for (const d of dims) {
    shape.msg(FIELD.TensorShapeProto.dim, (x) => void (typeof d === 'number' ? x.int(DIM.dim_value, d) : x.string(DIM.dim_param, d)));
  }
  const tensorType = new WireWriter().int(TT.elem_type, elemType).bytes(TT.shape, shape.finish()).finish();
  return new WireWriter()
    .string(VI.name, name)
    .bytes(VI.type, new WireWriter().bytes(FIELD.TypeProto.tensor_type, tensorType).finish())
    .finish();
}

/** Encodes a StringStringEntryProto (metadata_props, external_data). */
export function encodeStringEntry(key: string, value: string): Uint8Array {
  return new WireWriter().string(SSE.key, key).string(SSE.value, value).finish();
}

/**
 * Rewrites a model: graph inputs named in `dropInputs` are removed, `initializers` appended
 * to the graph, graph fields in `replace` replaced by the given value bytes (`null` drops the
 * field), metadata entries with a key in `setMetadata` replaced (or added) and those in
 * `dropMetadata` removed. Every other byte is copied as it was.
 */
export function rewriteModel(
  m: WireModel,
  opts: {
    dropInputs?: Set<string>;
    initializers?: ExternalInitializer[];
    replace?: ReadonlyMap<WireField, Uint8Array | null>;
    setMetadata?: Record<string, string>;
    dropMetadata?: ReadonlySet<string>;
  },
): Uint8Array {
  const b = m.bytes;
  const g = new WireWriter();
  let inputIndex = 0;
  for (const f of m.graphFields) {
    if (f.field === GP.input && f.wire === WIRE.LEN) {
      const name = m.inputs[inputIndex++]!.name;
      if (opts.dropInputs?.has(name)) continue;
    }
    const r = opts.replace?.get(f);
    if (r === null) continue;
    if (r !== undefined) g.bytes(f.field, r);
    else g.raw(b.subarray(f.start, f.end));
  }
  for (const t of opts.initializers ?? []) g.bytes(GP.initializer, encodeExternalTensor(t));
  const graphBytes = g.finish();

  const setKeys = new Set(Object.keys(opts.setMetadata ?? {}));
  const w = new WireWriter();
  let metaIndex = 0;
  for (const f of m.fields) {
    if (f === m.graph) {
      w.bytes(MP.graph, graphBytes);
      continue;
    }
    if (f.field === MP.metadata_props && f.wire === WIRE.LEN) {
      const key = m.metadata[metaIndex++]!.key;
      if (setKeys.has(key) || opts.dropMetadata?.has(key)) continue;
    }
    w.raw(b.subarray(f.start, f.end));
  }
  for (const k of [...setKeys].sort()) w.bytes(MP.metadata_props, encodeStringEntry(k, opts.setMetadata![k]!));
  return w.finish();
}
