/**
 * Non-finite weights that prepare itself would write (issue #28): values beyond a narrower
 * dtype's range turning ±Inf (bf16/f32 above 65504 → f16), NaN/±Inf sources kept NaN/±Inf by
 * a narrowing conversion, and FP8 NaN codes. The kernels count them in the pass that converts
 * (kernels.ts, fp8-kernel.ts, simd/convert.wat: no second look at the weights); a task reads
 * the tally around each output tensor and refuses it unless `--allow-overflow`, in which case
 * the count per tensor goes into the manifest (`non_finite`) and prepare's summary.
 */
import { PipelineError } from '../errors';
import { nameOfDtype, type DType } from '../formats/dtype';
import type { NonFinite, Task, TaskStats } from './types';

/**
 * The per-thread tally the kernels add to. One task runs at a time per thread (worker or, with
 * no workers, the main thread one after another), so the converters keep their signatures
 * (they are called from a dozen places) and the task takes differences.
 */
export const narrowingTally = {
  /** Results of narrowing conversions ({@link narrows}) that are ±Inf or NaN. */
  nonFinite: 0,
  /** FP8 NaN codes met while dequantizing. */
  fp8Nan: 0,
};

/** Whether `from` → `to` can turn finite values into ±Inf: the conversions whose non-finite results are counted. */
export function narrows(from: DType, to: DType): boolean {
  if (to === 'F16') return from !== 'F16';
  return to === 'BF16' && (from === 'F32' || from === 'F64');
}

/** A reading of the tally, to take differences from. */
export type TallyMark = { nonFinite: number; fp8Nan: number };

/** The tally now. */
export function markTally(): TallyMark {
  return { ...narrowingTally };
}

/** The tally's growth since `m`. */
export function tallySince(m: TallyMark): TallyMark {
  return { nonFinite: narrowingTally.nonFinite - m.nonFinite, fp8Nan: narrowingTally.fp8Nan - m.fp8Nan };
}

/** The non-finite values an output tensor of dtype `to` got from raw tally growth `d`. */
export function nonFiniteOf(d: TallyMark, to: DType): NonFinite {
  // Into f16/bf16 every non-finite result is counted by the narrowing kernel (NaN codes
  // included); into f32 the NaN codes are the non-finite results.
  return { n: to === 'F32' ? d.nonFinite + d.fp8Nan : d.nonFinite, fp8Nan: d.fp8Nan };
}

/** Refuses output tensor `key` of dtype `to` (made from `file`) holding non-finite values, unless `allow`. */
export function checkNonFinite(file: string, key: string, to: DType, got: NonFinite, allow: boolean): void {
  const n = Math.max(got.n, got.fp8Nan);
  if (n === 0 || allow) return;
  const parts: string[] = [];
  const narrowed = got.n - Math.min(got.n, got.fp8Nan);
  if (got.fp8Nan > 0) parts.push(`${got.fp8Nan} FP8 NaN code${got.fp8Nan === 1 ? '' : 's'}`);
  if (narrowed > 0) parts.push(`${narrowed} ±Inf or NaN in ${nameOfDtype(to)}`);
  throw new PipelineError(
    `${file}: "${key}" would hold ${n} non-finite value${n === 1 ? '' : 's'} (${parts.join(', ')}); ` +
      'refusing to prepare them (--allow-overflow keeps them and records the count)',
  );
}

/** `key (n), …` for prepare's summary, largest first. */
export function formatNonFinite(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([k, n]) => `${k} (${n})`)
    .join(', ');
}

/** The source file an output tensor of `task` is made from (its first source), for the refusal. */
function sourceFileOf(task: Task, key: string): string {
  const t = task.tensors.find((x) => x.key === key);
  const r = t?.recipe;
  const first = !r ? undefined : r.kind === 'convert' ? r.src : r.slots[0] && ('src' in r.slots[0] ? r.slots[0].src : r.slots[0].blocks);
  return (first && task.sources[first]?.file) ?? task.file;
}

/**
 * Refuses a finished task (every piece in) whose outputs got non-finite values, unless `allow`;
 * otherwise returns their counts (output key → values) for the manifest.
 */
export function checkTaskNonFinite(task: Task, stats: TaskStats, allow: boolean): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, got] of Object.entries(stats.nonFinite ?? {})) {
    const t = task.tensors.find((x) => x.key === key);
    checkNonFinite(sourceFileOf(task, key), key, t?.dtype ?? 'F32', got, allow);
    out[key] = Math.max(got.n, got.fp8Nan);
  }
  return out;
}
