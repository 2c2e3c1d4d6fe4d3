/**
 * ONNX messages as plain objects, in protobufjs's `toObject` shape: camelCase fields, int64
 * as `number`, bytes as `Uint8Array`, enums as numbers, repeated fields as arrays (always
 * present after {@link decodeModel}; optional when building). Only fields of onnx.proto exist.
 */

/** `StringStringEntryProto`: metadata_props, external_data. */
export interface StringStringEntryProto {
  key?: string;
  value?: string;
}

/** `OperatorSetIdProto`. */
export interface OperatorSetIdProto {
  domain?: string;
  version?: number;
}

/** `TensorShapeProto.Dimension`: a fixed size or a symbolic name. */
export interface DimensionProto {
  dimValue?: number;
  dimParam?: string;
  denotation?: string;
}

/** `TensorShapeProto`. */
export interface TensorShapeProto {
  dim?: DimensionProto[];
}

/** `TypeProto` (tensor types are what weight-spec uses; the others are kept as data). */
export interface TypeProto {
  tensorType?: { elemType?: number; shape?: TensorShapeProto };
  sequenceType?: { elemType?: TypeProto };
  mapType?: { keyType?: number; valueType?: TypeProto };
  optionalType?: { elemType?: TypeProto };
  sparseTensorType?: { elemType?: number; shape?: TensorShapeProto };
  denotation?: string;
}

/** `ValueInfoProto`. */
export interface ValueInfoProto {
  name?: string;
  type?: TypeProto;
  docString?: string;
  metadataProps?: StringStringEntryProto[];
}

/** `TensorProto`. */
export interface TensorProto {
  dims?: number[];
  dataType?: number;
  segment?: { begin?: number; end?: number };
  floatData?: number[];
  int32Data?: number[];
  stringData?: Uint8Array[];
  int64Data?: number[];
  name?: string;
  docString?: string;
  rawData?: Uint8Array;
  externalData?: StringStringEntryProto[];
  /** 0 = DEFAULT, 1 = EXTERNAL. */
  dataLocation?: number;
  doubleData?: number[];
  uint64Data?: number[];
  metadataProps?: StringStringEntryProto[];
}

/** `SparseTensorProto`. */
export interface SparseTensorProto {
  values?: TensorProto;
  indices?: TensorProto;
  dims?: number[];
}

/** `AttributeProto` (`type` is an `AttributeType` number, see {@link AttributeType}). */
export interface AttributeProto {
  name?: string;
  refAttrName?: string;
  docString?: string;
  type?: number;
  f?: number;
  i?: number;
  s?: Uint8Array;
  t?: TensorProto;
  g?: GraphProto;
  sparseTensor?: SparseTensorProto;
  tp?: TypeProto;
  floats?: number[];
  ints?: number[];
  strings?: Uint8Array[];
  tensors?: TensorProto[];
  graphs?: GraphProto[];
  sparseTensors?: SparseTensorProto[];
  typeProtos?: TypeProto[];
}

/** `NodeProto`. */
export interface NodeProto {
  input?: string[];
  output?: string[];
  name?: string;
  opType?: string;
  domain?: string;
  overload?: string;
  attribute?: AttributeProto[];
  docString?: string;
  metadataProps?: StringStringEntryProto[];
  /** onnx 1.18 multi-device configuration (kept as data). */
  deviceConfigurations?: unknown[];
}

/** `TensorAnnotation`. */
export interface TensorAnnotation {
  tensorName?: string;
  quantParameterTensorNames?: StringStringEntryProto[];
}

/** `GraphProto`. */
export interface GraphProto {
  node?: NodeProto[];
  name?: string;
  initializer?: TensorProto[];
  sparseInitializer?: SparseTensorProto[];
  docString?: string;
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
  valueInfo?: ValueInfoProto[];
  quantizationAnnotation?: TensorAnnotation[];
  metadataProps?: StringStringEntryProto[];
}

/** `FunctionProto`. */
export interface FunctionProto {
  name?: string;
  input?: string[];
  output?: string[];
  attribute?: string[];
  attributeProto?: AttributeProto[];
  node?: NodeProto[];
  docString?: string;
  opsetImport?: OperatorSetIdProto[];
  domain?: string;
  overload?: string;
  valueInfo?: ValueInfoProto[];
  metadataProps?: StringStringEntryProto[];
}

/** `ModelProto`: the top-level message of a `.onnx` file. */
export interface ModelProto {
  irVersion?: number;
  opsetImport?: OperatorSetIdProto[];
  producerName?: string;
  producerVersion?: string;
  domain?: string;
  modelVersion?: number;
  docString?: string;
  graph?: GraphProto;
  metadataProps?: StringStringEntryProto[];
  trainingInfo?: unknown[];
  functions?: FunctionProto[];
  /** onnx 1.18 multi-device configurations: `{name, numDevices, device[]}`. */
  configuration?: { name?: string; numDevices?: number; device?: string[] }[];
}

/** Highest IR version a reader can sensibly meet (onnx 1.18 writes 11); leaves room for new releases. */
export const MAX_IR_VERSION = 32;

/** `TensorProto.DataType` values (onnx 1.18). */
export const TensorDataType = {
  UNDEFINED: 0,
  FLOAT: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  STRING: 8,
  BOOL: 9,
  FLOAT16: 10,
  DOUBLE: 11,
  UINT32: 12,
  UINT64: 13,
  COMPLEX64: 14,
  COMPLEX128: 15,
  BFLOAT16: 16,
  FLOAT8E4M3FN: 17,
  FLOAT8E4M3FNUZ: 18,
  FLOAT8E5M2: 19,
  FLOAT8E5M2FNUZ: 20,
  UINT4: 21,
  INT4: 22,
  FLOAT4E2M1: 23,
  FLOAT8E8M0: 24,
} as const;

/** `AttributeProto.AttributeType` values. */
export const AttributeType = {
  UNDEFINED: 0,
  FLOAT: 1,
  INT: 2,
  STRING: 3,
  TENSOR: 4,
  GRAPH: 5,
  FLOATS: 6,
  INTS: 7,
  STRINGS: 8,
  TENSORS: 9,
  GRAPHS: 10,
  SPARSE_TENSOR: 11,
  SPARSE_TENSORS: 12,
  TYPE_PROTO: 13,
  TYPE_PROTOS: 14,
} as const;

/** Bytes per element of a fixed-width `TensorProto.DataType`; undefined for STRING, 4-bit types, UNDEFINED. */
export function elementSize(dataType: number): number | undefined {
  const T = TensorDataType;
  switch (dataType) {
    case T.FLOAT:
    case T.INT32:
    case T.UINT32:
      return 4;
    case T.UINT8:
    case T.INT8:
    case T.BOOL:
    case T.FLOAT8E4M3FN:
    case T.FLOAT8E4M3FNUZ:
    case T.FLOAT8E5M2:
    case T.FLOAT8E5M2FNUZ:
    case T.FLOAT8E8M0:
      return 1;
    case T.UINT16:
    case T.INT16:
    case T.FLOAT16:
    case T.BFLOAT16:
      return 2;
    case T.INT64:
    case T.DOUBLE:
    case T.UINT64:
    case T.COMPLEX64:
      return 8;
    case T.COMPLEX128:
      return 16;
    default:
      return undefined;
  }
}

/** Byte length of `count` elements of `dataType` in raw_data (4-bit types pack two per byte). */
export function rawByteLength(dataType: number, count: number): number | undefined {
  const T = TensorDataType;
  if (dataType === T.UINT4 || dataType === T.INT4 || dataType === T.FLOAT4E2M1) return Math.ceil(count / 2);
  const size = elementSize(dataType);
  return size === undefined ? undefined : size * count;
}
