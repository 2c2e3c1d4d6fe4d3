/**
 * The plan fingerprint: the cache key of a prepared checkpoint and part of its default
 * directory name. It covers everything that changes the output bytes or layout — source
 * files (name, size, mtime), target dtype, expert-parallel P/E, and for every task its
 * transform id, parameters, input and output refs and output file — and nothing else
 * (not the output path, not the RAM budget).
 */
import { createHash } from 'node:crypto';
import type { Task } from './types';

/** Bumped when prepare's output for the same plan changes. */
export const PREPARE_FORMAT_VERSION = 1;

/** JSON with sorted object keys (stable across runs and Node versions). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** What the fingerprint is computed from. */
export interface FingerprintInput {
  sourceFiles: { path: string; size: number; mtimeMs: number }[];
  dtype: string;
  expertParallel?: { stages: number; experts: number };
  tasks: Task[];
}

/** sha256 (hex) of the canonical plan description. */
export function planFingerprint(p: FingerprintInput): string {
  const doc = {
    version: PREPARE_FORMAT_VERSION,
    dtype: p.dtype,
    expertParallel: p.expertParallel ?? null,
    sourceFiles: p.sourceFiles.map((f) => ({ path: f.path, size: f.size, mtimeMs: f.mtimeMs })),
    tasks: p.tasks.map((t) => ({
      transform: t.transform,
      params: t.params,
      inputs: t.inputs,
      outputs: t.outputs,
      file: t.file,
      // The recipes pin the exact slices (order, parity, ranges) and output dtypes/shapes.
      tensors: t.tensors.map((x) => ({ key: x.key, dtype: x.dtype, shape: x.shape, stages: x.stages, recipe: x.recipe })),
    })),
  };
  return createHash('sha256').update(canonicalJson(doc)).digest('hex');
}

/** The short form used in directory names. */
export function shortHash(fp: string): string {
  return fp.slice(0, 10);
}
