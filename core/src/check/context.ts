/**
 * State shared by the passes of one spec check: the parsed document, where each value came
 * from, what each checkpoint file turned out to be, and the problems found so far.
 */
import type { Problem } from '../errors';
import { problem, type ProblemCode } from '../problem-codes';
import type { SafetensorsHeader } from '../formats/safetensors';
import type { PrepareDtype } from '../formats/dtype';
import type { ParsedSpec } from '../spec/parse';
import type { JsonPath, SpecSources, WeightSpec } from '../spec/types';
import type { HeaderCache } from './header-cache';

/** Options of {@link checkSpec}. */
export interface CheckOptions {
  /** Extra allowed read roots besides the spec's directory (`--root`, workspace folders). */
  roots?: string[];
  /** Header cache to reuse (the language server keeps one). */
  cache?: HeaderCache;
  /** Abandons the check (a newer edit arrived); the promise then rejects with an AbortError. */
  signal?: AbortSignal;
  /**
   * The companion ONNX: a path (relative to the spec's directory), `false` to skip the ONNX
   * checks, or undefined to look for it beside the spec.
   */
  onnx?: string | false;
}

/** What a `files[]` entry turned out to be. */
export interface FileState {
  /** Absolute path (absent when the path was refused). */
  abs?: string;
  /** Where the path leads when a symlink is on the way (QEfficient links the prepared dir). */
  real?: string;
  /**
   * `abs` is in the prepared folder the export's report names, the export's link to it not
   * being there (export links it only once it exists, issue 30.8): a client watching its
   * workspace through the spec's paths cannot see that folder (the server watches it).
   */
  viaReport?: boolean;
  /** The parsed header when the file is a readable safetensors file (or planned, see below). */
  header?: SafetensorsHeader;
  /** The file is a prepared shard that does not exist yet (prepare has not run). */
  missingPrepared?: boolean;
  /** `header` was made from prepare's plan of this source, not read from the file. */
  planned?: PlannedSource;
}

/** Where a planned header came from, for messages. */
export interface PlannedSource {
  checkpoint: string;
  /** A dtype prepare accepts: checked where it was read (export-report.json or the folder name). */
  dtype: PrepareDtype;
  /** The LoRA adapter folders the export names (`prepare --lora`), absolute. */
  lora?: string[];
}

/** One check in progress. */
export interface CheckContext {
  specFile: string;
  specDir: string;
  parsed: ParsedSpec;
  spec: WeightSpec;
  sources: SpecSources;
  roots: string[];
  cache: HeaderCache;
  signal?: AbortSignal;
  files: FileState[];
  problems: Problem[];
}

/** Adds a problem anchored at `at` (a source-document path), with its code's one severity. */
export function report(ctx: CheckContext, code: ProblemCode, at: JsonPath, message: string, data?: Record<string, unknown>): void {
  const p: Problem = problem(code, message, at, ctx.parsed.offsets.anchor(at));
  if (data) p.data = data;
  ctx.problems.push(p);
}

/** What to do about a prepared checkpoint that does not exist yet: the same words in Problems, hover and the CLI. */
export const PREPARE_HINT = 'run Prepare (weight-spec prepare) to create it';

/** `files[i]` shown as its path relative to the spec (what the user wrote). */
export function fileLabel(ctx: CheckContext, index: number): string {
  const f = ctx.spec.files[index];
  return f ? f.path : `files[${index}]`;
}

/** Throws the signal's reason when the check was abandoned. */
export function throwIfAborted(ctx: CheckContext): void {
  ctx.signal?.throwIfAborted();
}
