/**
 * Every code a {@link Problem} can carry, with its one severity — a closed set, as
 * vscode-json-languageservice's `ErrorCode`. The checker, `weight-spec check --json`, the
 * language server's diagnostics and its quick fixes all key on these strings; a code never
 * changes severity with the place that reports it (two situations that deserve two
 * severities get two codes).
 */
/** Severity of a {@link Problem}; mirrors LSP's levels without depending on LSP. */
export type Severity = 'error' | 'warning' | 'information' | 'hint';

/** A half-open byte/character range `[start, end)` into a document's text. */
export interface OffsetRange {
  start: number;
  end: number;
}

/**
 * A finding about a spec (or any checked file), as data. `path` is the JSON path of the
 * offending value (e.g. `["inputs", 3, "location", "key"]`); `range` is its text offsets.
 */
export interface Problem {
  /** One of the closed set below; `severity` is always that code's. */
  code: ProblemCode;
  severity: Severity;
  message: string;
  path: (string | number)[];
  range?: OffsetRange;
  /** Machine-readable extras (suggested keys, the file that holds a key, …) for quick fixes. */
  data?: Record<string, unknown>;
  /**
   * The places one grouped problem is about (e.g. each shard of a missing prepared checkpoint),
   * as LSP's related information: a short message and the JSON path / range in the same document.
   */
  related?: { message: string; path: (string | number)[]; range?: OffsetRange }[];
}

/** Code → severity. The keys are the stable codes users and tools see. */
export const PROBLEM_SEVERITY = {
  // The document itself.
  'json-syntax': 'error',
  schema: 'error',
  /** The same property twice in one object (JSON.parse keeps the last one). */
  'duplicate-property': 'warning',
  /** A spec version newer than this tool knows, read as the newest it knows. */
  'spec-version': 'warning',
  internal: 'error',
  // files[]: paths (the path policy's codes, PathPolicyCode) and what they lead to.
  'path-outside-root': 'error',
  'path-invalid': 'error',
  'symlink-loop': 'error',
  'write-outside-output': 'error',
  'write-through-symlink': 'error',
  'overwrite-refused': 'error',
  'file-format': 'error',
  'file-missing': 'error',
  'file-unreadable': 'error',
  'file-not-safetensors': 'error',
  'file-index': 'error',
  /** A prepared checkpoint that does not exist yet: the normal state between export and prepare. */
  'not-prepared': 'warning',
  /** A prepared checkpoint whose prepare never finished or whose files were damaged since. */
  'prepared-incomplete': 'error',
  /**
   * A prepared checkpoint whose manifest records another fingerprint than its folder name, or
   * another source than the export's report: another prepare replaced it (issue #28).
   */
  'prepared-mismatch': 'error',
  /** A prepared checkpoint whose source changed since (its files are still self-consistent). */
  'prepared-stale': 'warning',
  // inputs[] against the checkpoint.
  'duplicate-name': 'error',
  /** An input without a location, skipped as QEfficient's load_weight_spec skips it. */
  'input-skipped': 'warning',
  'key-missing': 'error',
  'key-in-other-file': 'error',
  'shape-mismatch': 'error',
  /** A v1 spec's declared dtype disagrees with the checkpoint: the spec's own fact is wrong. */
  'declared-dtype-mismatch': 'error',
  'dtype-unknown': 'warning',
  // Quantized checkpoints (check/quantization.ts).
  /** A quantization method prepare cannot dequantize. */
  'quantization-unsupported': 'error',
  'quantization-scale': 'error',
  'quantized-weight': 'error',
  // inputs[] against the companion ONNX.
  'onnx-unreadable': 'error',
  'name-not-in-onnx': 'error',
  'onnx-input-unmapped': 'warning',
  /** The graph wants another dtype than the checkpoint holds: `prepare --dtype` fixes it. */
  'dtype-mismatch': 'warning',
} as const satisfies Record<string, Severity>;

/** A stable problem code. */
export type ProblemCode = keyof typeof PROBLEM_SEVERITY;

/** The severity of a code. */
export function severityOf(code: ProblemCode): Severity {
  return PROBLEM_SEVERITY[code];
}

/** Narrows a string (a diagnostic's code from the client) to a {@link ProblemCode}. */
export function isProblemCode(s: unknown): s is ProblemCode {
  return typeof s === 'string' && Object.hasOwn(PROBLEM_SEVERITY, s);
}

/** A problem with its code's severity (the only way problems are made). */
export function problem(code: ProblemCode, message: string, path: (string | number)[], range?: OffsetRange): Problem {
  return range
    ? { code, severity: PROBLEM_SEVERITY[code], message, path, range }
    : { code, severity: PROBLEM_SEVERITY[code], message, path };
}
