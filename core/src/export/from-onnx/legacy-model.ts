/**
 * What the legacy-ONNX converter needs of a model, read from the file by offsets: the graph's
 * fields, its inputs and nodes' op types, and every initializer with the location of its
 * bytes (inside the file for `raw_data` or packed `float_data`; an external file for
 * external data). Initializer payloads are never read here.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { dtypeOfOnnx, DTYPE_SIZE, type DType } from '../../formats/dtype';
import { FormatError } from '../../errors';
import { DataLocation, FIELD, WIRE } from '../../formats/onnx/fields';
import { resolveReadPath } from '../../paths';
import { FileWire, type FileField } from './file-wire';

/** An initializer and where its bytes are. `offset` is undefined when they cannot be addressed. */
export interface LegacyInitializer {
  name: string;
  dataType: number;
  dtype?: DType;
  dims: number[];
  field: FileField;
  file?: string;
  offset?: number;
  byteLength: number;
}

/** The model's structure, by offsets into the file. */
export interface LegacyModel {
  wire: FileWire;
  fields: FileField[];
  graph: FileField;
  graphFields: FileField[];
  initializers: LegacyInitializer[];
  inputNames: string[];
  metadata: { key: string; value: string }[];
  opsetVersion?: number;
}

const { ModelProto: MP, GraphProto: GP, TensorProto: TP, StringStringEntryProto: SSE, OperatorSetIdProto: OS } = FIELD;

function readInitializer(w: FileWire, f: FileField, dir: string, roots: string[] | undefined): LegacyInitializer {
  let name = '';
  let dataType = 0;
  const dims: number[] = [];
  let raw: FileField | undefined;
  let packedFloats: FileField | undefined;
  const external: Record<string, string> = Object.create(null) as Record<string, string>;
  let dataLocation = 0;
  for (const t of w.fields(f.vStart, f.vEnd, 'TensorProto')) {
    if (t.field === TP.dims && t.wire === WIRE.VARINT) dims.push(t.int!);
    else if (t.field === TP.dims && t.wire === WIRE.LEN) {
      for (let p = t.vStart; p < t.vEnd;) {
        const [v, next] = w.varint(p, t.vEnd);
        dims.push(v);
        p = next;
      }
    } else if (t.field === TP.data_type && t.wire === WIRE.VARINT) dataType = t.int!;
    else if (t.field === TP.name && t.wire === WIRE.LEN) name = w.string(t);
    else if (t.field === TP.raw_data && t.wire === WIRE.LEN) raw = t;
    // float_data / double_data, packed: fixed-width little-endian, i.e. raw bytes.
    else if ((t.field === TP.float_data || t.field === TP.double_data) && t.wire === WIRE.LEN) packedFloats = t;
    else if (t.field === TP.external_data && t.wire === WIRE.LEN) {
      let k = '';
      let v = '';
      for (const e of w.fields(t.vStart, t.vEnd, 'StringStringEntryProto')) {
        if (e.field === SSE.key) k = w.string(e);
        else if (e.field === SSE.value) v = w.string(e);
      }
      external[k] = v;
    } else if (t.field === TP.data_location && t.wire === WIRE.VARINT) dataLocation = t.int!;
  }
  const dtype = dtypeOfOnnx(dataType);
  const numel = dims.reduce((a, b) => a * b, 1);
  const byteLength = dtype ? numel * DTYPE_SIZE[dtype] : 0;
  const init: LegacyInitializer = { name, dataType, dtype, dims, field: f, byteLength };
  if (dataLocation === DataLocation.EXTERNAL || external.location !== undefined) {
    const rp = resolveReadPath(dir, external.location ?? '', roots);
    const offset = Number(external.offset ?? 0);
    const length = external.length !== undefined ? Number(external.length) : byteLength;
    if (!Number.isSafeInteger(offset) || length !== byteLength || offset + length > statSync(rp.abs).size) {
      throw new FormatError(w.file, `initializer "${name}": external data ${external.location} offset/length out of range`);
    }
    Object.assign(init, { file: rp.abs, offset });
  } else if (raw) {
    if (raw.vEnd - raw.vStart !== byteLength) {
      throw new FormatError(
        w.file,
        `initializer "${name}": raw_data has ${raw.vEnd - raw.vStart} bytes, dims say ${byteLength}`,
        raw.start,
      );
    }
    Object.assign(init, { file: w.file, offset: raw.vStart });
  } else if (packedFloats && (dtype === 'F32' || dtype === 'F64') && packedFloats.vEnd - packedFloats.vStart === byteLength) {
    Object.assign(init, { file: w.file, offset: packedFloats.vStart });
  }
  return init;
}

/**
 * Scans `file` (a ModelProto). External-data locations resolve relative to the ONNX's
 * directory under the path policy (`roots` widens it). The caller closes `wire`.
 */
export function scanLegacyModel(file: string, roots?: string[]): LegacyModel {
  const wire = FileWire.open(file);
  try {
    const fields = wire.fields(0, wire.size, 'ModelProto');
    const graph = fields.find((f) => f.field === MP.graph && f.wire === WIRE.LEN);
    if (!graph) throw new FormatError(file, 'not an ONNX model (no graph)');
    const graphFields = wire.fields(graph.vStart, graph.vEnd, 'GraphProto');
    const dir = path.dirname(path.resolve(file));
    const initializers: LegacyInitializer[] = [];
    const inputNames: string[] = [];
    for (const g of graphFields) {
      if (g.field === GP.initializer && g.wire === WIRE.LEN) initializers.push(readInitializer(wire, g, dir, roots));
      else if (g.field === GP.input && g.wire === WIRE.LEN) {
        const name = wire.fields(g.vStart, g.vEnd).find((x) => x.field === FIELD.ValueInfoProto.name && x.wire === WIRE.LEN);
        inputNames.push(name ? wire.string(name) : '');
      }
    }
    const metadata: { key: string; value: string }[] = [];
    let opsetVersion: number | undefined;
    for (const f of fields) {
      if (f.field === MP.metadata_props && f.wire === WIRE.LEN) {
        const entry = { key: '', value: '' };
        for (const x of wire.fields(f.vStart, f.vEnd)) {
          if (x.field === SSE.key && x.wire === WIRE.LEN) entry.key = wire.string(x);
          else if (x.field === SSE.value && x.wire === WIRE.LEN) entry.value = wire.string(x);
        }
        metadata.push(entry);
      } else if (f.field === MP.opset_import && f.wire === WIRE.LEN) {
        let domain = '';
        let version = 0;
        for (const x of wire.fields(f.vStart, f.vEnd)) {
          if (x.field === OS.domain && x.wire === WIRE.LEN) domain = wire.string(x);
          else if (x.field === OS.version && x.wire === WIRE.VARINT) version = x.int!;
        }
        if (domain === '' || domain === 'ai.onnx') opsetVersion = version;
      }
    }
    return { wire, fields, graph, graphFields, initializers, inputNames, metadata, opsetVersion };
  } catch (e) {
    wire.close();
    throw e;
  }
}
