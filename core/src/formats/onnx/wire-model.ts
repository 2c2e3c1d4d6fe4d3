/**
 * Byte-level view of an ONNX ModelProto held in memory (the compile step's binder, the runner).
 *
 * Binding a weight-free graph only has to (a) read the graph's inputs, (b) drop the weight
 * inputs and (c) append initializers that point at external data. Doing that on the protobuf
 * wire, field by field, keeps every other byte of the graph exactly as the exporter wrote it
 * (unknown or newer fields included) and costs one pass over a few megabytes, where a full
 * decode/encode of a large graph would build millions of objects. Field numbers are
 * onnx.proto's (ModelProto.graph = 7, GraphProto.input = 11, …).
 */
import { FormatError } from '../../errors';
import { FileReader } from './wire-reader';

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
const enc = new TextEncoder();

/** Splits `buf[start, end)` into its top-level protobuf fields (validated like the summary path). */
export function scanFields(buf: Uint8Array, start: number, end: number, file: string, msg = 'message'): WireField[] {
  const out: WireField[] = [];
  FileReader.fromBytes(buf, file).each(start, end, msg, (h) =>
    out.push({ field: h.field, wire: h.wire, start: h.start, end: h.vEnd, vStart: h.vStart, vEnd: h.vEnd, int: h.wire === 0 ? h.int : undefined }),
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
    if (g.field === 1 && g.wire === 2) name = str(buf, g);
    else if (g.field === 2 && g.wire === 2) {
      // TypeProto.tensor_type = 1 → elem_type = 1, shape = 2 → dim = 1 → dim_value = 1 | dim_param = 2
      for (const t of scanFields(buf, g.vStart, g.vEnd, file)) {
        if (t.field !== 1 || t.wire !== 2) continue;
        for (const tt of scanFields(buf, t.vStart, t.vEnd, file)) {
          if (tt.field === 1 && tt.wire === 0) elemType = tt.int!;
          else if (tt.field === 2 && tt.wire === 2) {
            for (const d of scanFields(buf, tt.vStart, tt.vEnd, file)) {
              if (d.field !== 1 || d.wire !== 2) continue;
              let dim: number | string = '';
              for (const dv of scanFields(buf, d.vStart, d.vEnd, file)) {
                if (dv.field === 1 && dv.wire === 0) dim = dv.int!;
                else if (dv.field === 2 && dv.wire === 2) dim = str(buf, dv);
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
  const graph = fields.find((f) => f.field === 7 && f.wire === 2);
  if (!graph) throw new FormatError(file, 'not an ONNX model (no graph)');
  const graphFields = scanFields(bytes, graph.vStart, graph.vEnd, file);
  const inputs: WireValueInfo[] = [];
  const outputs: WireValueInfo[] = [];
  const initializerNames: string[] = [];
  for (const g of graphFields) {
    if (g.wire !== 2) continue;
    if (g.field === 11) inputs.push(parseValueInfo(bytes, g, file));
    else if (g.field === 12) outputs.push(parseValueInfo(bytes, g, file));
    else if (g.field === 5) {
      const name = scanFields(bytes, g.vStart, g.vEnd, file).find((t) => t.field === 8 && t.wire === 2);
      initializerNames.push(name ? str(bytes, name) : '');
    }
  }
  const metadata: { key: string; value: string }[] = [];
  for (const f of fields) {
    if (f.field !== 14 || f.wire !== 2) continue;
    let key = '';
    let value = '';
    for (const e of scanFields(bytes, f.vStart, f.vEnd, file)) {
      if (e.field === 1 && e.wire === 2) key = str(bytes, e);
      else if (e.field === 2 && e.wire === 2) value = str(bytes, e);
    }
    metadata.push({ key, value });
  }
  return { bytes, fields, graph, graphFields, inputs, outputs, initializerNames, metadata };
}

/** Minimal protobuf writer for the few messages the binder creates. */
export class WireWriter {
  private parts: Uint8Array[] = [];
  private size = 0;
  private push(b: Uint8Array): void {
    this.parts.push(b);
    this.size += b.length;
  }
  private varintBytes(v: number): Uint8Array {
    const out: number[] = [];
    while (v >= 0x80) {
      out.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    out.push(v);
    return Uint8Array.from(out);
  }
  int(field: number, v: number): this {
    this.push(this.varintBytes(field * 8));
    this.push(this.varintBytes(v));
    return this;
  }
  bytes(field: number, b: Uint8Array): this {
    this.push(this.varintBytes(field * 8 + 2));
    this.push(this.varintBytes(b.length));
    this.push(b);
    return this;
  }
  string(field: number, s: string): this {
    return this.bytes(field, enc.encode(s));
  }
  /** Appends bytes already in wire format (whole fields copied from another message). */
  raw(b: Uint8Array): this {
    this.push(b);
    return this;
  }
  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const p of this.parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
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

/** Encodes one external-data TensorProto (dims = 1, data_type = 2, name = 8, external_data = 13, data_location = 14). */
export function encodeExternalTensor(t: ExternalInitializer): Uint8Array {
  const w = new WireWriter();
  for (const d of t.dims) w.int(1, d);
  w.int(2, t.dataType);
  w.string(8, t.name);
  const entry = (k: string, v: string) => new WireWriter().string(1, k).string(2, v).finish();
  w.bytes(13, entry('location', t.location));
  w.bytes(13, entry('offset', String(t.offset)));
  w.bytes(13, entry('length', String(t.length)));
  w.int(14, 1);
  return w.finish();
}

/** Encodes a StringStringEntryProto (ModelProto.metadata_props = 14). */
export function encodeMetadataEntry(key: string, value: string): Uint8Array {
  return new WireWriter().string(1, key).string(2, value).finish();
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
    if (f.field === 11 && f.wire === 2) {
      const name = m.inputs[inputIndex++]!.name;
      if (opts.dropInputs?.has(name)) continue;
    }
    const r = opts.replace?.get(f);
    if (r === null) continue;
    if (r !== undefined) g.bytes(f.field, r);
    else g.raw(b.subarray(f.start, f.end));
  }
  for (const t of opts.initializers ?? []) g.bytes(5, encodeExternalTensor(t));
  const graphBytes = g.finish();

  const setKeys = new Set(Object.keys(opts.setMetadata ?? {}));
  const w = new WireWriter();
  let metaIndex = 0;
  for (const f of m.fields) {
    if (f === m.graph) {
      w.bytes(7, graphBytes);
      continue;
    }
    if (f.field === 14 && f.wire === 2) {
      const key = m.metadata[metaIndex++]!.key;
      if (setKeys.has(key) || opts.dropMetadata?.has(key)) continue;
    }
    w.raw(b.subarray(f.start, f.end));
  }
  for (const k of [...setKeys].sort()) w.bytes(14, encodeMetadataEntry(k, opts.setMetadata![k]!));
  return w.finish();
}
