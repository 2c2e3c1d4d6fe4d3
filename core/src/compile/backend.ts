/**
 * The one interface both compile backends implement (issue #29, step 4): `ort`
 * (backend-ort.ts: a bound ONNX whose initializers point into the prepared safetensors) and
 * `qaic` (qaic.ts: QEfficient's qaic-compile command). compile() (index.ts) takes the
 * backend's profile from its table (plain data), reads the inputs once, decides once and hands
 * the backend everything it needs in one `build` call; a backend reads no input file again.
 */
import type { CompileBackend, CompileRecord } from '../artifacts/compile-record';
import type { Fingerprint } from './decide';
import type { CompileInputs, PreparedLocation } from './inputs';
import type { QaicOptions } from './qaic-options';

/** Options of `compile` (the library call; the CLI's and the editor's flags map onto them). */
export interface CompileOptions {
  backend: CompileBackend;
  /** Prepared checkpoint directory (overrides the spec's files / model_id). */
  prepared?: string;
  /** qaic: print the command, write and run nothing. */
  dryRun?: boolean;
  /** ort: hard-link the shards into `<export dir>/compiled/` instead of writing into the prepared directory. */
  links?: boolean;
  /** ort: keep node names, value names and every Constant node in the bound model (default: slimmed). */
  keepNames?: boolean;
  /** ort: load the bound model once in ONNX Runtime so a refusal shows at compile time (default true). */
  verify?: boolean;
  /** Recompile even when the fingerprint is unchanged. */
  force?: boolean;
  qaic?: QaicOptions;
  /** Where progress and compiler output go (default: nowhere). */
  log?: (line: string) => void;
  stderr?: NodeJS.WritableStream;
  env?: NodeJS.ProcessEnv;
}

/** What `compile` did. */
export interface CompileResult {
  record: CompileRecord;
  /** True when nothing changed and the previous artifact was kept. */
  upToDate: boolean;
  /** What changed since the previous compile (empty when up to date or when there was none). */
  changed: string[];
  /** qaic: the command line (always set for the qaic backend, also in dry runs). */
  command?: string[];
  /** qaic: the files written beside the qpc directory (specializations.json, custom_io.yaml), with their text. */
  files?: { path: string; text: string }[];
  dryRun?: boolean;
  /** The link to the prepared folder this compile made beside the spec (QEfficient's layout), when it made one. */
  linked?: string;
  ms: number;
}

/** One compile as decided: the inputs (read once), where the weights are, the fingerprint, the previous record. */
export interface BackendJob {
  inputs: CompileInputs;
  /** The located prepared folder (undefined only in a qaic dry run that found none). */
  loc?: PreparedLocation;
  fingerprint: Fingerprint;
  prev?: CompileRecord;
  opts: CompileOptions;
  /** The source checkpoint of the prepared folder (named in dtype errors). */
  source?: string;
  log: (line: string) => void;
}

/** What a backend produced: the record and the result's backend-specific fields. */
export type BackendOutcome = Pick<CompileResult, 'record' | 'upToDate' | 'command' | 'files' | 'dryRun'>;

/** What a backend says about one compile before anything is read: plain data. */
export interface DriverProfile {
  /** The backend options the fingerprint covers (plain JSON, stable key order). */
  options: Record<string, unknown>;
  /** True when the real prepared folder goes into the options too, as `prepared` (qaic given --prepared). */
  preparedInOptions: boolean;
  /** False when the compile can go on without prepared weights (a qaic dry run only prints). */
  needsWeights: boolean;
  /** True when the located folder must be one prepare made (ort writes its artifact there; qaic reads a --prepared folder). */
  requiresPrepared: boolean;
}

/** A compile backend. */
export interface CompileDriver {
  name: CompileBackend;
  /** Builds the artifact and writes the record (nothing in a dry run). */
  build(job: BackendJob): Promise<BackendOutcome>;
}
