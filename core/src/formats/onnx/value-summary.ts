/**
 * The summary's per-value decoders: a graph input or output (ValueInfoProto: name, element type,
 * shape) and an initializer (TensorProto: dims, type, where its bytes are, checked against its
 * dims), read by positional reads as summary.ts walks the file.
 */
import { dtypeOfOnnx, type DType } from '../dtype';
import { DataLocation, FIELD, WIRE } from './fields';
import { rawByteLength, TensorDataType as T } from './types';
import { fieldLabel, FileReader, quoted, type FieldHead } from './wire-reader';

const { TensorProto: TP, StringStringEntryProto: SSE } = FIELD;
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

export function pairs(r: FileReader, h: FieldHead, msg: string): [string, string] {
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

export function str(r: FileReader, h: FieldHead, msg: string, name: string): string {
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

export function initializer(r: FileReader, h: FieldHead): InitializerSummary {
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
