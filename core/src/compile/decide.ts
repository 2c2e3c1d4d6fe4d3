/**
 * The compile decision, pure (issue #29, step 4): from the inputs read once (inputs.ts), the
 * previous record and the request, the fingerprint of this compile and whether the previous
 * artifact still stands. `compile()` and `compileStatus()` both ask here, so they cannot
 * disagree; this module touches no disk and calls no other module of ours but sha256.
 *
 * The fingerprint is sha256 over its parts, each computed where its bytes were read
 * (inputs.ts): the graph (bytes and mtime), the spec's content, the prepared folder (manifest
 * hash and the stats of every bound file: weight bytes are never read) and the options
 * (format version, backend, backend options).
 */
import { sha256 } from '../foundation/sha256';
import type { CompileBackend, CompileRecord } from '../artifacts/compile-record';

/** The parts and the whole. */
export interface Fingerprint {
  parts: CompileRecord['inputs'];
  value: string;
}

/** State of the last compile of an export directory. */
export type CompileState = 'never-compiled' | 'up-to-date' | 'stale';

/** What made a compile stale: a fingerprint part, another backend, or a deleted artifact. */
export type CompileChange = 'graph' | 'spec' | 'prepared' | 'options' | 'backend' | 'artifact';

/** What the decision needs of the inputs read (inputs.ts `CompileInputs` extends it). */
export interface DecideInputs {
  /** The fingerprint parts: the files' and the request's options (inputs.ts). */
  parts: CompileRecord['inputs'];
  /** Whether the record's artifact is on disk (false without a record). */
  artifactPresent: boolean;
}

/** The compile asked about: its backend (its options are a part already), and whether the options count. */
export interface DecideRequest {
  backend: CompileBackend;
  /** False for a status without a request: only the graph, the spec and the prepared folder are compared. */
  compareOptions: boolean;
}

/** What {@link decide} concluded. */
export interface Decision {
  state: CompileState;
  fingerprint: Fingerprint;
  /** When stale: what changed, as status reports it. */
  changed: CompileChange[];
  /** The fingerprint parts that differ from the record's (compile prints them; empty without a record). */
  changedParts: string[];
}

/** The fingerprint of the parts. */
export function fingerprintOf(inputs: Pick<DecideInputs, 'parts'>): Fingerprint {
  const parts = { graph: inputs.parts.graph, spec: inputs.parts.spec, prepared: inputs.parts.prepared, options: inputs.parts.options };
  return { parts, value: sha256(`${parts.graph}\n${parts.spec}\n${parts.prepared}\n${parts.options}`) };
}

/** The change a record shows before any input is read: another backend, or its artifact gone. */
export function recordChange(record: CompileRecord, backend: CompileBackend, artifactPresent: boolean): CompileChange | undefined {
  if (backend !== record.backend) return 'backend';
  if (!artifactPresent) return 'artifact';
  return undefined;
}

/**
 * Decides a compile: never compiled (no record); stale because the backend differs, the
 * artifact is gone or a part changed; else up to date. Pure.
 */
export function decide(inputs: DecideInputs, record: CompileRecord | undefined, req: DecideRequest): Decision {
  const fingerprint = fingerprintOf(inputs);
  if (!record) return { state: 'never-compiled', fingerprint, changed: [], changedParts: [] };
  const changedParts = (['graph', 'spec', 'prepared', 'options'] as const).filter((k) => record.inputs?.[k] !== fingerprint.parts[k]);
  const stale = (changed: CompileChange[]): Decision => ({ state: 'stale', fingerprint, changed, changedParts });
  const early = recordChange(record, req.backend, inputs.artifactPresent);
  if (early) return stale([early]);
  const compared = req.compareOptions ? changedParts : changedParts.filter((k) => k !== 'options');
  // With options compared, the whole must match too (a record whose parts were edited is not trusted).
  if (req.compareOptions && compared.length === 0 && record.fingerprint !== fingerprint.value) return stale(['options']);
  return compared.length === 0 ? { state: 'up-to-date', fingerprint, changed: [], changedParts } : stale(compared);
}
