/**
 * onnx.proto's field numbers: the one table for the code that walks or writes the protobuf wire
 * format itself (the summary walk, wire-model, the legacy reader and rewriter, the graph
 * encoder) and for the field names in its error text. Field names are onnx.proto's (snake_case);
 * `core/test/onnx/onnx-fields.test.ts` checks every number against the schema text in `schema.ts`.
 */
import { AttributeType } from './types';

/** Wire types of the protobuf encoding. */
export const WIRE = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 } as const;

/** Field numbers by message and field name. */
export const FIELD = {
  ModelProto: {
    ir_version: 1,
    producer_name: 2,
    producer_version: 3,
    domain: 4,
    model_version: 5,
    doc_string: 6,
    graph: 7,
    opset_import: 8,
    metadata_props: 14,
    training_info: 20,
    functions: 25,
  },
  GraphProto: {
    node: 1,
    name: 2,
    initializer: 5,
    doc_string: 10,
    input: 11,
    output: 12,
    value_info: 13,
    quantization_annotation: 14,
    sparse_initializer: 15,
    metadata_props: 16,
  },
  NodeProto: { input: 1, output: 2, name: 3, op_type: 4, attribute: 5, doc_string: 6, domain: 7, overload: 8, metadata_props: 9 },
  AttributeProto: { name: 1, f: 2, i: 3, s: 4, t: 5, g: 6, floats: 7, ints: 8, strings: 9, tensors: 10, graphs: 11, type: 20 },
  TensorProto: {
    dims: 1,
    data_type: 2,
    segment: 3,
    float_data: 4,
    int32_data: 5,
    string_data: 6,
    int64_data: 7,
    name: 8,
    raw_data: 9,
    double_data: 10,
    uint64_data: 11,
    doc_string: 12,
    external_data: 13,
    data_location: 14,
    metadata_props: 16,
  },
  ValueInfoProto: { name: 1, type: 2, doc_string: 3, metadata_props: 4 },
  TypeProto: { tensor_type: 1, sequence_type: 4, map_type: 5, denotation: 6, sparse_tensor_type: 8, optional_type: 9 },
  'TypeProto.Tensor': { elem_type: 1, shape: 2 },
  TensorShapeProto: { dim: 1 },
  'TensorShapeProto.Dimension': { dim_value: 1, dim_param: 2, denotation: 3 },
  OperatorSetIdProto: { domain: 1, version: 2 },
  StringStringEntryProto: { key: 1, value: 2 },
} as const;

/** A message of {@link FIELD}. */
export type MessageName = keyof typeof FIELD;

/** `TensorProto.data_location` values. */
export const DataLocation = { DEFAULT: 0, EXTERNAL: 1 } as const;

const NAMES = new Map<string, Map<number, string>>(
  Object.entries(FIELD).map(([msg, fields]) => [msg, new Map(Object.entries(fields).map(([name, n]) => [n as number, name]))]),
);

/**
 * True when an AttributeProto, given as its scanned fields, holds a subgraph (`g`/`graphs`, or
 * type GRAPH/GRAPHS): a subgraph may name outer values, so graph rewrites that rename leave it be.
 */
export function attributeHoldsGraph(fields: Iterable<{ field: number; wire: number; int?: number }>): boolean {
  const A = FIELD.AttributeProto;
  for (const x of fields) {
    if ((x.field === A.g || x.field === A.graphs) && x.wire === WIRE.LEN) return true;
    if (x.field === A.type && x.wire === WIRE.VARINT && (x.int === AttributeType.GRAPH || x.int === AttributeType.GRAPHS)) return true;
  }
  return false;
}

/** onnx.proto's name of field `n` of `msg`, if the table has it. */
export function fieldName(msg: string, n: number): string | undefined {
  return NAMES.get(msg)?.get(n);
}
