/**
 * What is at a text offset of a checked spec — an input's key or name, a file path — and the
 * facts the last check read about it (tensor info from the header, graph input from the ONNX
 * summary). Pure lookups over core's results: no file is read here.
 */
import type { CheckRun } from '../../core/src/check';
import type { OffsetRange } from '../../core/src/errors';
import type { TensorInfo } from '../../core/src/formats/safetensors';
import type { ValueSummary } from '../../core/src/formats/onnx';
import type { JsonPath } from '../../core/src/spec';

/** The thing under the cursor. */
export type Target =
  | { kind: 'key'; input: number; range: OffsetRange }
  | { kind: 'name'; input: number; range: OffsetRange }
  | { kind: 'file'; file: number; range: OffsetRange };

function contains(r: OffsetRange | undefined, offset: number): r is OffsetRange {
  return !!r && r.start <= offset && offset <= r.end;
}

/** The index of the input whose object contains `offset` (binary search: inputs are in order). */
export function inputAtOffset(run: CheckRun, offset: number): number | undefined {
  const spec = run.parsed.spec;
  const sources = run.parsed.sources;
  if (!spec || !sources) return undefined;
  let lo = 0;
  let hi = spec.inputs.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = run.parsed.offsets.value(sources.inputs.at(mid)!.node);
    if (!r) return undefined;
    if (offset < r.start) hi = mid - 1;
    else if (offset > r.end) lo = mid + 1;
    else return mid;
  }
  return undefined;
}

/** The key, name or file path at `offset`, if any. */
export function targetAt(run: CheckRun, offset: number): Target | undefined {
  const { spec, sources, offsets } = run.parsed;
  if (!spec || !sources) return undefined;
  const i = inputAtOffset(run, offset);
  if (i !== undefined) {
    const src = sources.inputs.at(i)!;
    const key = offsets.value(src.key);
    if (contains(key, offset)) return { kind: 'key', input: i, range: key };
    const name = offsets.value(src.name);
    if (contains(name, offset)) return { kind: 'name', input: i, range: name };
    return undefined;
  }
  for (const [j, f] of sources.files.entries()) {
    const r = offsets.value(f.path);
    if (contains(r, offset)) return { kind: 'file', file: j, range: r };
  }
  return undefined;
}

/** The header entry of input `i`'s key (looked up in its file, or in any file for v1 `-1`). */
export function tensorOf(run: CheckRun, i: number): { info: TensorInfo; file: number } | undefined {
  const input = run.parsed.spec?.inputs[i];
  if (!input) return undefined;
  const fi = input.location.file;
  const key = input.location.key;
  if (fi >= 0) {
    const info = run.files[fi]?.header?.tensors.get(key);
    return info ? { info, file: fi } : undefined;
  }
  for (const [j, f] of run.files.entries()) {
    const info = f.header?.tensors.get(key);
    if (info) return { info, file: j };
  }
  return undefined;
}

/** The companion ONNX's graph input named `name`. */
export function graphInput(run: CheckRun, name: string): ValueSummary | undefined {
  return run.onnx?.summary?.inputs.find((v) => v.name === name);
}

/** Path equality. */
export function samePath(a: JsonPath, b: JsonPath): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** `[64, 32]` (symbolic dims as written). */
export function shapeText(shape: readonly (number | string | null)[]): string {
  return `[${shape.map((d) => (d === null ? '?' : String(d))).join(', ')}]`;
}
