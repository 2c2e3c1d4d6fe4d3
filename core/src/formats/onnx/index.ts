/**
 * ONNX: protobufjs codec from the official onnx.proto, a metadata-only summary that never
 * reads tensor payloads, builders and tensor-byte helpers. See docs/MODULES.md.
 */
export type {
  AttributeProto,
  DimensionProto,
  FunctionProto,
  GraphProto,
  ModelProto,
  NodeProto,
  OperatorSetIdProto,
  SparseTensorProto,
  StringStringEntryProto,
  TensorAnnotation,
  TensorProto,
  TensorShapeProto,
  TypeProto,
  ValueInfoProto,
} from './types';
export { AttributeType, MAX_IR_VERSION, TensorDataType, elementSize, rawByteLength } from './types';
export { decodeModel, decodeTensor, encodeModel, readModel, writeModel, messageType, onnxRoot } from './codec';
export { summarizeOnnx, summarizeOnnxBytes, summarizeOnnxSync, type OnnxSummary } from './summary';
export type { InitializerSummary, ValueSummary } from './value-summary';
export { readInitializerBytes, externalDataPath } from './initializer-bytes';
export {
  externalTensor,
  getMetadata,
  makeAttribute,
  makeNode,
  makeTensor,
  makeValueInfo,
  metadataRecord,
  setMetadata,
  tensorBytes,
  type AttrKind,
  type DataTypeLike,
} from './builders';
export { ONNX_PROTO } from './schema';
