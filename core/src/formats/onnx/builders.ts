/**
 * Builders for ONNX messages in `toObject` shape (what exporters, the compiler and tests
 * assemble models from), tensor bytes from either storage form, and metadata_props access.
 */
import { isDType, onnxTypeOf, type DType } from '../dtype';
import {
  AttributeType,
  elementSize,
  rawByteLength,
  type AttributeProto,
  type ModelProto,
  type NodeProto,
  type TensorProto,
  type ValueInfoProto,
} from './types';

/** A dtype name (`'F32'`) or a TensorProto.DataType number. */
export type DataTypeLike = DType | number;

function dataTypeOf(t: DataTypeLike): number {
  if (typeof t === 'number') return t;
  if (!isDType(t)) throw new TypeError(`unknown dtype ${String(t)}`);
  return onnxTypeOf(t);
}

function checkDims(dims: number[]): void {
  if (!dims.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new TypeError(`invalid dims [${dims.join(', ')}]`);
}

/** An initializer with its bytes in raw_data; `raw.length` must match dims × element size. */
export function makeTensor(name: string, dtype: DataTypeLike, dims: number[], raw: Uint8Array): TensorProto {
  const dataType = dataTypeOf(dtype);
  checkDims(dims);
  const want = rawByteLength(
    dataType,
    dims.reduce((a, b) => a * b, 1),
  );
  if (want !== undefined && want !== raw.length) {
    throw new TypeError(`makeTensor(${name}): ${raw.length} bytes given, dims [${dims.join(', ')}] need ${want}`);
  }
  return { name, dataType, dims: [...dims], rawData: raw };
}

/**
 * An initializer whose bytes live in another file (`location` relative to the model's
 * directory), `offset`/`length` in bytes — e.g. straight into a `.safetensors` shard.
 */
export function externalTensor(
  name: string,
  dataType: DataTypeLike,
  dims: number[],
  ext: { location: string; offset: number; length?: number },
): TensorProto {
  const dt = dataTypeOf(dataType);
  checkDims(dims);
  const length =
    ext.length ??
    rawByteLength(
      dt,
      dims.reduce((a, b) => a * b, 1),
    );
  const externalData = [
    { key: 'location', value: ext.location },
    { key: 'offset', value: String(ext.offset) },
  ];
  if (length !== undefined) externalData.push({ key: 'length', value: String(length) });
  return { name, dataType: dt, dims: [...dims], externalData, dataLocation: 1 };
}

/** Attribute value kinds {@link makeAttribute} builds. */
export type AttrKind = 'int' | 'float' | 'ints' | 'floats' | 'string' | 'strings' | 'tensor';

/** An AttributeProto of the given kind (JS numbers cannot say int or float, so the kind is explicit). */
export function makeAttribute(name: string, kind: 'int' | 'float', value: number): AttributeProto;
export function makeAttribute(name: string, kind: 'ints' | 'floats', value: number[]): AttributeProto;
export function makeAttribute(name: string, kind: 'string', value: string | Uint8Array): AttributeProto;
export function makeAttribute(name: string, kind: 'strings', value: (string | Uint8Array)[]): AttributeProto;
export function makeAttribute(name: string, kind: 'tensor', value: TensorProto): AttributeProto;
export function makeAttribute(name: string, kind: AttrKind, value: unknown): AttributeProto {
  const bytes = (s: string | Uint8Array) => (typeof s === 'string' ? new TextEncoder().encode(s) : s);
  switch (kind) {
    case 'int':
      if (!Number.isSafeInteger(value)) throw new TypeError(`attribute ${name}: ${String(value)} is not an integer`);
      return { name, type: AttributeType.INT, i: value as number };
    case 'float':
      return { name, type: AttributeType.FLOAT, f: value as number };
    case 'ints':
      if (!(value as number[]).every((v) => Number.isSafeInteger(v))) throw new TypeError(`attribute ${name}: not all integers`);
      return { name, type: AttributeType.INTS, ints: [...(value as number[])] };
    case 'floats':
      return { name, type: AttributeType.FLOATS, floats: [...(value as number[])] };
    case 'string':
      return { name, type: AttributeType.STRING, s: bytes(value as string | Uint8Array) };
    case 'strings':
      return { name, type: AttributeType.STRINGS, strings: (value as (string | Uint8Array)[]).map(bytes) };
    case 'tensor':
      return { name, type: AttributeType.TENSOR, t: value as TensorProto };
    default:
      throw new TypeError(`unknown attribute kind ${String(kind)}`);
  }
}

/** A NodeProto; `domain` only when not the default ONNX domain. */
export function makeNode(
  opType: string,
  inputs: string[],
  outputs: string[],
  attrs: AttributeProto[] = [],
  name?: string,
  domain?: string,
): NodeProto {
  const n: NodeProto = { input: [...inputs], output: [...outputs], opType, attribute: attrs };
  if (name !== undefined) n.name = name;
  if (domain) n.domain = domain;
  return n;
}

/**
 * A tensor ValueInfoProto; a dim is a number (fixed), a string (symbolic) or null (unknown).
 * `dims` undefined leaves the shape out (rank unknown).
 */
export function makeValueInfo(name: string, elemType: DataTypeLike, dims?: (number | string | null)[]): ValueInfoProto {
  const tensorType: NonNullable<ValueInfoProto['type']>['tensorType'] = { elemType: dataTypeOf(elemType) };
  if (dims) tensorType!.shape = { dim: dims.map((d) => (d === null ? {} : typeof d === 'number' ? { dimValue: d } : { dimParam: d })) };
  return { name, type: { tensorType } };
}

function le(values: ArrayLike<number>, width: 1 | 2 | 4): Uint8Array {
  const out = new Uint8Array(values.length * width);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (width === 1) out[i] = v & 0xff;
    else if (width === 2) dv.setUint16(i * 2, v & 0xffff, true);
    else dv.setInt32(i * 4, v | 0, true);
  }
  return out;
}

function le64(values: ArrayLike<number>, signed: boolean): Uint8Array {
  const out = new Uint8Array(values.length * 8);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < values.length; i++) {
    const b = BigInt(Math.trunc(values[i]!));
    if (signed) dv.setBigInt64(i * 8, b, true);
    else dv.setBigUint64(i * 8, BigInt.asUintN(64, b), true);
  }
  return out;
}

/**
 * The tensor's data as little-endian bytes, whether in raw_data or in a typed field (the
 * layout raw_data would have). External and STRING tensors have no such bytes here: use
 * `readInitializerBytes` for the former; the latter throw.
 */
export function tensorBytes(t: TensorProto): Uint8Array {
  const dt = t.dataType ?? 0;
  if (t.dataLocation === 1 || (t.externalData?.length ?? 0) > 0) {
    throw new TypeError(`tensor ${t.name ?? ''} stores its data externally: read it with readInitializerBytes`);
  }
  if (dt === 8) throw new TypeError(`tensor ${t.name ?? ''} is a STRING tensor: it has no fixed-width bytes`);
  if (t.rawData) return t.rawData;
  if (t.floatData?.length) return new Uint8Array(Float32Array.from(t.floatData).buffer);
  if (t.doubleData?.length) return new Uint8Array(Float64Array.from(t.doubleData).buffer);
  if (t.int64Data?.length) return le64(t.int64Data, true);
  if (t.uint64Data?.length)
    return dt === 12
      ? le(
          t.uint64Data.map((v) => v >>> 0),
          4,
        )
      : le64(t.uint64Data, false);
  if (t.int32Data?.length) {
    // 4-bit types hold one packed byte (two elements) per int32; others one element each.
    const w = dt >= 21 && dt <= 23 ? 1 : elementSize(dt);
    if (w !== 1 && w !== 2 && w !== 4) throw new TypeError(`tensor ${t.name ?? ''}: int32_data cannot hold data_type ${dt}`);
    return le(t.int32Data, w);
  }
  return new Uint8Array(0);
}

/** The value of metadata_props `key`, or undefined (the last entry wins on duplicates). */
export function getMetadata(model: ModelProto, key: string): string | undefined {
  let v: string | undefined;
  for (const p of model.metadataProps ?? []) if (p.key === key) v = p.value ?? '';
  return v;
}

/** metadata_props as a record. */
export function metadataRecord(model: ModelProto): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const p of model.metadataProps ?? []) out[p.key ?? ''] = p.value ?? '';
  return out;
}

/**
 * Sets (or with `undefined` removes) metadata_props `key` in place, keeping the other entries
 * and their order; a key that occurred several times is left once. Returns `model`.
 */
export function setMetadata(model: ModelProto, key: string, value: string | undefined): ModelProto {
  const props = model.metadataProps ?? [];
  const at = props.findIndex((p) => p.key === key);
  const rest = props.filter((p) => p.key !== key);
  if (value !== undefined) rest.splice(at < 0 ? rest.length : at, 0, { key, value });
  model.metadataProps = rest;
  return model;
}
