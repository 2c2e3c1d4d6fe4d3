/**
 * The spec inside an ONNX model: QEfficient stores it as `metadata_props` key
 * `com.qti.aisw.extdata` (compact sorted JSON), which is how the QAIC compiler finds the
 * weights. These helpers work on a ModelProto's `metadataProps` list (protobufjs `toObject`
 * shape) so they need nothing from the ONNX codec itself.
 */
import { FormatError } from '../errors';
import type { ModelProto } from '../formats/onnx';
import { parseSpecText, type ParsedSpec } from './parse';
import { SPEC_METADATA_KEY, type WeightSpec } from './types';
import { specMetadataValue } from './write';

/** One ONNX `StringStringEntryProto`. */
export interface MetadataEntry {
  key?: string | null;
  value?: string | null;
}

/**
 * Returns `props` with the spec entry set to `spec` (replacing an existing one in place,
 * appending otherwise). The input list is not modified.
 */
export function embedSpec<T extends MetadataEntry>(props: readonly T[] | undefined, spec: WeightSpec): (T | MetadataEntry)[] {
  const value = specMetadataValue(spec);
  const out: (T | MetadataEntry)[] = [];
  let done = false;
  for (const p of props ?? []) {
    if (p.key === SPEC_METADATA_KEY) {
      if (!done) out.push({ ...p, key: SPEC_METADATA_KEY, value });
      done = true;
    } else {
      out.push(p);
    }
  }
  if (!done) out.push({ key: SPEC_METADATA_KEY, value });
  return out;
}

/** The raw metadata string of the spec entry, if present. */
export function specMetadataText(props: readonly MetadataEntry[] | undefined): string | undefined {
  const hit = (props ?? []).find((p) => p.key === SPEC_METADATA_KEY);
  return hit ? (hit.value ?? '') : undefined;
}

/** Parses the embedded spec (with problems) or returns undefined when there is none. */
export function parseEmbeddedSpec(props: readonly MetadataEntry[] | undefined, file: string): ParsedSpec | undefined {
  const text = specMetadataText(props);
  return text === undefined ? undefined : parseSpecText(text, `${file} (metadata ${SPEC_METADATA_KEY})`);
}

/**
 * Extracts the embedded spec; undefined when the model has none, {@link FormatError} (naming
 * `file`) when the entry is not a valid spec.
 */
export function extractSpec(props: readonly MetadataEntry[] | undefined, file: string): WeightSpec | undefined {
  const parsed = parseEmbeddedSpec(props, file);
  if (!parsed) return undefined;
  const err = parsed.problems.find((p) => p.severity === 'error');
  if (err || !parsed.spec) {
    throw new FormatError(file, `metadata ${SPEC_METADATA_KEY} is not a valid weight spec: ${err?.message ?? 'unreadable'}`);
  }
  return parsed.spec;
}

/** A copy of `model` whose metadata carries `spec` (QEfficient's `com.qti.aisw.extdata`). */
export function embedSpecInModel(model: ModelProto, spec: WeightSpec): ModelProto {
  return { ...model, metadataProps: embedSpec(model.metadataProps, spec) as ModelProto['metadataProps'] };
}

/** The spec embedded in `model` (read from `file`), or undefined; FormatError when broken. */
export function extractSpecFromModel(model: ModelProto, file: string): WeightSpec | undefined {
  return extractSpec(model.metadataProps, file);
}
