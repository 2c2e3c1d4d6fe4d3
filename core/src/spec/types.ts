/**
 * The normalized in-memory form of a weight_spec.json, whatever QEfficient version it was
 * read from. Readers normalize v1…v6 into this shape; the writer emits it as v5 (v6 when an
 * input carries `quantization`). Fields this tool does not know are kept as they were read,
 * so a read → write round trip loses nothing.
 */
import type { OffsetRange } from '../errors';

/** The newest weight_spec version this tool knows. */
export const LATEST_SPEC_VERSION = 6;

/** The version the writer emits for specs without quantized inputs (QEfficient's current). */
export const WRITE_SPEC_VERSION = 5;

/** ONNX metadata_props key that carries the spec (how the QAIC compiler finds the weights). */
export const SPEC_METADATA_KEY = 'com.qti.aisw.extdata';

/** One checkpoint file the spec's inputs point into. */
export interface SpecFile {
  /** Path as written, relative to the spec's directory (v3 `weights_root` is folded in). */
  path: string;
  /** Storage format; QEfficient only writes `safetensors`. */
  format: string;
  [extra: string]: unknown;
}

/** v6 per-input quantization (e.g. `mxfp6_e2m3` packed as `inline_e8m0_fp6_lsb_v1`). */
export interface SpecQuantization {
  format: string;
  block_size?: number;
  axis?: number;
  layout?: string;
  dequantized_axis_size?: number;
  logical_dtype?: string;
  [extra: string]: unknown;
}

/** Where an input's bytes live: `file` indexes {@link WeightSpec.files}, `key` is the tensor key. */
export interface SpecLocation {
  /**
   * Index into `files`. `-1` only for v1 specs that named no file while listing several
   * checkpoint files: the checker then looks the key up in every file.
   */
  file: number;
  key: string;
  [extra: string]: unknown;
}

/** One ONNX graph input bound to a checkpoint tensor. */
export interface SpecInput {
  /** The ONNX graph input name (v1 specs without `name` use their `fqn`). */
  name: string;
  location: SpecLocation;
  /** Absent means `"weight"` (see {@link roleOf}); not filled in, so writes stay byte-exact. */
  role?: string;
  weight_input?: string;
  metadata?: Record<string, unknown>;
  quantization?: SpecQuantization;
  /** v1 facts, kept when present: parameter path, kind, shape and dtype. */
  fqn?: string;
  kind?: string;
  shape?: number[];
  dtype?: string;
  [extra: string]: unknown;
}

/** A weight_spec.json in normalized form. */
export interface WeightSpec {
  /** The version the file declared (the writer emits v5/v6 regardless). */
  version: number;
  files: SpecFile[];
  inputs: SpecInput[];
  model_id?: string;
  model_name?: string;
  [extra: string]: unknown;
}

/** A JSON path: property names and array indices, e.g. `["inputs", 3, "location", "key"]`. */
export type JsonPath = (string | number)[];

/**
 * For each normalized file and input: the JSON paths in the *source document* of the values
 * it came from (a v1 `checkpoint_files` string, a v1 `fqn` standing in for a key, …), so that
 * a diagnostic about `inputs[3].location.key` can point at the text that produced it.
 */
export interface SpecSources {
  files: { node: JsonPath; path: JsonPath; format?: JsonPath }[];
  inputs: InputSources;
}

/** Where one input's parts are in the document. */
export interface InputSource {
  node: JsonPath;
  name: JsonPath;
  key: JsonPath;
  file: JsonPath;
}

/**
 * The sources of the normalized inputs, by index (`at(i)`, as an array has). Made on demand
 * from a few bytes per input: the language server keeps the parse of every open spec.
 */
export interface InputSources {
  readonly length: number;
  at(i: number): InputSource | undefined;
}

/** Value and property-name ranges for JSON paths of one document. */
export interface SpecOffsetsView {
  /** Range of the value at `path` (strings include their quotes), if it exists. */
  value(path: Readonly<JsonPath>): OffsetRange | undefined;
  /** Range of the property name (with quotes) whose value is at `path`, if any. */
  key(path: Readonly<JsonPath>): OffsetRange | undefined;
  /** The deepest existing prefix of `path` and its value range. */
  nearest(path: Readonly<JsonPath>): { path: JsonPath; range: OffsetRange } | undefined;
  /** A short range to flag `path` with (the scalar value, else the property name holding it). */
  anchor(path: Readonly<JsonPath>): OffsetRange | undefined;
}

/** The role of an input (`"weight"` when the spec does not say). */
export function roleOf(input: SpecInput): string {
  return input.role ?? 'weight';
}
