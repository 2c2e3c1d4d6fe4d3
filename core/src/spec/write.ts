/**
 * Writing a spec the way QEfficient does: `json.dump(spec, f, indent=2, sort_keys=True)` —
 * no trailing newline (json.dump writes none and QEfficient adds none; the sample fixture
 * ends in `}`), non-ASCII escaped. The ONNX metadata copy is the compact form
 * (`separators=(",", ":")`, sorted keys).
 */
import { PipelineError } from '../errors';
import { atomicWriteFile } from '../paths';
import { pyJsonDumps } from './py-json';
import { WRITE_SPEC_VERSION, type WeightSpec } from './types';

/**
 * The document the writer emits: the spec as held (unknown fields included), with the
 * version set to 5 — or 6 when an input is quantized, since v5 readers cannot honour that.
 */
export function specDocument(spec: WeightSpec): Record<string, unknown> {
  for (const [i, input] of spec.inputs.entries()) {
    const f = input.location.file;
    if (!Number.isInteger(f) || f < 0 || f >= spec.files.length) {
      throw new PipelineError(
        `cannot write weight spec: inputs[${i}] (${input.name}) has file index ${f} outside 0..${spec.files.length - 1}`,
      );
    }
  }
  const quantized = spec.inputs.some((i) => i.quantization !== undefined);
  return { ...spec, version: quantized ? 6 : WRITE_SPEC_VERSION };
}

/** QEfficient's v5 bytes for `spec` (indent=2, sorted keys, ensure_ascii, no trailing newline). */
export function writeSpecText(spec: WeightSpec): string {
  return pyJsonDumps(specDocument(spec), { indent: 2, sortKeys: true });
}

/** Compact sorted JSON for the ONNX metadata key `com.qti.aisw.extdata`. */
export function specMetadataValue(spec: WeightSpec): string {
  return pyJsonDumps(specDocument(spec), { separators: [',', ':'], sortKeys: true });
}

/** Writes `spec` to `file` atomically (temp file in the same directory, fsync, rename). */
export async function writeSpec(file: string, spec: WeightSpec): Promise<void> {
  await atomicWriteFile(file, writeSpecText(spec));
}
