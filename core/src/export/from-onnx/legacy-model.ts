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

function readInitializer(w: FileWire, f: FileField, dir: string, roots: string[] | undefined): LegacyInitializer {
  let name = '';
  let dataType = 0;
  const dims: number[] = [];
  let raw: FileField | undefined;
  let packedFloats: FileField | undefined;
  const external: Record<string, string> = Object.create(null) as Record<string, string>;
  let dataLocation = 0;
  for (const t of w.fields(f.vStart, f.vEnd, 'TensorProto')) {
    if (t.field === 1 && t.wire === 0) dims.push(t.int!);
    else if (t.field === 1 && t.wire === 2) {
      for (let p = t.vStart; p < t.vEnd; ) {
        const [v, next] = w.varint(p, t.vEnd);
        dims.push(v);
        p = next;
      }
    } else if (t.field === 2 && t.wire === 0) dataType = t.int!;
    else if (t.field === 8 && t.wire === 2) name = w.string(t);
    else if (t.field === 9 && t.wire === 2) raw = t;
    // float_data / double_data, packed: fixed-width little-endian, i.e. raw bytes.
    else if ((t.field === 4 || t.field === 10) && t.wire === 2) packedFloats = t;
    else if (t.field === 13 && t.wire === 2) {
      let k = '';
      let v = '';
      for (const e of w.fields(t.vStart, t.vEnd, 'StringStringEntryProto')) {
        if (e.field === 1) k = w.string(e);
        else if (e.field === 2) v = w.string(e);
      }
      external[k] = v;
    } else if (t.field === 14 && t.wire === 0) dataLocation = t.int!;
  }
  const dtype = dtypeOfOnnx(dataType);
  const numel = dims.reduce((a, b) => a * b, 1);
  const byteLength = dtype ? numel * DTYPE_SIZE[dtype] : 0;
  const init: LegacyInitializer = { name, dataType, dtype, dims, field: f, byteLength };
  if (dataLocation === 1 || external.location !== undefined) {
    const rp = resolveReadPath(dir, external.location ?? '', roots);
    const offset = Number(external.offset ?? 0);
    const length = external.length !== undefined ? Number(external.length) : byteLength;
    if (!Number.isSafeInteger(offset) || length !== byteLength || offset + length > statSync(rp.abs).size) {
      throw new FormatError(w.file, `initializer "${name}": external data ${external.location} offset/length out of range`);
    }
    Object.assign(init, { file: rp.abs, offset });
  } else if (raw) {
    if (raw.vEnd - raw.vStart !== byteLength) {
      throw new FormatError(w.file, `initializer "${name}": raw_data has ${raw.vEnd - raw.vStart} bytes, dims say ${byteLength}`, raw.start);
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
    const graph = fields.find((f) => f.field === 7 && f.wire === 2);
    if (!graph) throw new FormatError(file, 'not an ONNX model (no graph)');
    const graphFields = wire.fields(graph.vStart, graph.vEnd, 'GraphProto');
    const dir = path.dirname(path.resolve(file));
    const initializers: LegacyInitializer[] = [];
    const inputNames: string[] = [];
    for (const g of graphFields) {
      if (g.field === 5 && g.wire === 2) initializers.push(readInitializer(wire, g, dir, roots));
      else if (g.field === 11 && g.wire === 2) {
        const name = wire.fields(g.vStart, g.vEnd).find((x) => x.field === 1 && x.wire === 2);
        inputNames.push(name ? wire.string(name) : '');
      }
    }
    const metadata: { key: string; value: string }[] = [];
    let opsetVersion: number | undefined;
    for (const f of fields) {
      if (f.field === 14 && f.wire === 2) {
        const entry = { key: '', value: '' };
        for (const x of wire.fields(f.vStart, f.vEnd)) {
          if (x.field === 1 && x.wire === 2) entry.key = wire.string(x);
          else if (x.field === 2 && x.wire === 2) entry.value = wire.string(x);
        }
        metadata.push(entry);
      } else if (f.field === 8 && f.wire === 2) {
        let domain = '';
        let version = 0;
        for (const x of wire.fields(f.vStart, f.vEnd)) {
          if (x.field === 1 && x.wire === 2) domain = wire.string(x);
          else if (x.field === 2 && x.wire === 0) version = x.int!;
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
