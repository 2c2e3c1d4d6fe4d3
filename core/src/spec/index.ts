/**
 * weight_spec.json: read every QEfficient version (v1…v6) with source offsets, write v5
 * byte-for-byte like QEfficient, embed/extract the spec in ONNX metadata.
 */
export * from './types';
export { MAX_JSON_DEPTH, parseSpecText, readSpec, specFromText, specTextOf, type ParsedSpec } from './parse';
export { writeSpecText, writeSpec, specMetadataValue, specDocument } from './write';
export {
  embedSpec,
  embedSpecInModel,
  extractSpec,
  extractSpecFromModel,
  parseEmbeddedSpec,
  specMetadataText,
  type MetadataEntry,
} from './embed';
export { SpecOffsets, formatPath } from './offsets';
export { pyJsonDumps, pyString, pyNumber, codePointCompare } from './py-json';
export { SpecSchema, InputSchema, LocationSchema, FileEntrySchema, QuantizationSchema } from './schema';
export { patchParsedSpec, diffTexts, type PatchResult, type TextEdit as SpecTextEdit } from './patch';
