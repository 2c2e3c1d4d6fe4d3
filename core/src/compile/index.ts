/**
 * `compile`: binds an export directory's weight-free graph to its prepared weights.
 *
 * - `ort` (default): a bound ONNX whose initializers are external data pointing straight into
 *   the prepared safetensors files (backend-ort.ts, bind-ort.ts), runnable by `run`.
 * - `qaic`: QEfficient's qaic-compile command (backend-qaic.ts, qaic.ts, qaic-command.ts).
 *
 * The flow reads once and decides once: the record's stamps (status.ts) answer an unchanged
 * compile without reading a byte; otherwise readCompileInputs (inputs.ts) reads the graph, the
 * spec, the manifest and the sentinel once each, `decide` (decide.ts) compares the fingerprint
 * with `<export dir>/compile.json`, and the backend builds from what was read.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError } from '../errors';
import { MANIFEST_FILE, SENTINEL_FILE } from '../artifacts/prepared-manifest';
import { isQeffPrepared, preparedStatusOf } from '../prepare/manifest';
import { preparedMismatch } from '../prepare/provenance';
import { beginWork, failpoint, printable, type WorkScope } from '../paths';
import type { CompileDriver, CompileOptions, CompileResult } from './backend';
import { ortDriver } from './backend-ort';
import { qaicDriver } from './backend-qaic';
import { decide } from './decide';
import { manifestOf, readCompileInputs, type PreparedFacts } from './inputs';
import { readCompileRecord } from './record';
import { recordHolds } from './status';

export { COMPILE_RECORD, readCompileRecord, type CompileRecord } from './record';
export { compileStatus, type CompileChange, type CompileState, type CompileStatus } from './status';
export { buildQaicPlan, shellLine, QAIC_COMPILER, type QaicOptions, type QaicPlan } from './qaic-command';
export { parseWireModel, type WireModel, type WireValueInfo } from '../formats/onnx/wire-model';
export type { CompileOptions, CompileResult } from './backend';

/** The backends by name. */
const DRIVERS: Record<CompileOptions['backend'], CompileDriver> = { ort: ortDriver, qaic: qaicDriver };

/**
 * Checks the prepared directory with prepare's own status: an unfinished or damaged prepare
 * is an error; a prepare whose source checkpoint changed since is a warning (the prepared
 * files are still self-consistent). A folder prepare never made (no sentinel: a plain
 * checkpoint, `/`, an absolute model_id) is refused when `required` (the ort backend writes
 * its artifact there; qaic reads a --prepared folder).
 * Returns the source checkpoint (named in dtype errors).
 */
async function assertPreparedForCompile(
  exportDir: string,
  prepared: PreparedFacts,
  log: (line: string) => void,
  required: boolean,
): Promise<string | undefined> {
  const loc = prepared.loc;
  const plain = !fs.existsSync(path.join(loc.dir, MANIFEST_FILE)) && !fs.existsSync(path.join(loc.dir, SENTINEL_FILE));
  if (plain && !required) return undefined;
  if (plain) {
    throw new PipelineError(
      `${printable(loc.dir)}: not a prepared checkpoint (no ${SENTINEL_FILE}); compile writes only into folders prepare made: ` +
        `run weight-spec prepare --checkpoint ${printable(loc.dir)} --dtype <dtype> and compile with --prepared <its output>`,
    );
  }
  if (isQeffPrepared(loc.dir)) {
    log(`compile: ${loc.dir} was prepared by QEfficient (sentinel, no manifest): bound as it is`);
    return undefined;
  }
  const st = await preparedStatusOf(loc.dir, prepared.sentinel, () => manifestOf(prepared));
  if (st.state === 'not-prepared') throw new PipelineError(`${st.reason}; run weight-spec prepare again`);
  const mismatch = st.manifest && preparedMismatch(exportDir, loc.dir, st.manifest);
  if (mismatch) throw new PipelineError(mismatch);
  if (st.state === 'stale')
    log(`compile: warning: ${loc.dir} is stale (${st.reason}); run weight-spec prepare again to pick up the change`);
  return st.manifest?.source;
}

/** Compiles `exportDir` (see the module comment). */
export async function compile(exportDir: string, opts: CompileOptions): Promise<CompileResult> {
  // The record's temporaries go to the export, the artifact's to <export>/compiled or the
  // prepared directory (added once located): an interrupt removes exactly these.
  const scope = opts.dryRun ? undefined : beginWork(exportDir, [exportDir, path.join(exportDir, 'compiled')]);
  try {
    return await compileScoped(exportDir, opts, scope);
  } finally {
    scope?.end();
  }
}

async function compileScoped(exportDir: string, opts: CompileOptions, scope: WorkScope | undefined): Promise<CompileResult> {
  const t0 = performance.now();
  const log = opts.log ?? (() => undefined);
  const driver = DRIVERS[opts.backend];
  const dir = path.resolve(exportDir);
  const prev = readCompileRecord(dir);
  const skip = !opts.force && !opts.dryRun;
  // Fast path: stamps unchanged → no byte of the graph or the spec read.
  const request = {
    backend: opts.backend,
    prepared: opts.prepared,
    options: (d: string | undefined) => driver.fingerprintOptions(opts, d),
  };
  if (prev && skip && recordHolds(dir, prev, request)) {
    return { record: prev, upToDate: true, changed: [], command: prev.command, ms: performance.now() - t0 };
  }
  const inputs = readCompileInputs(exportDir, prev, { prepared: opts.prepared })!;
  const prepared = inputs.prepared;
  if (!prepared && driver.needsWeights(opts)) throw inputs.locateError;
  const d = decide(inputs, prev, {
    backend: opts.backend,
    options: driver.fingerprintOptions(opts, prepared?.loc.dir),
    compareOptions: true,
  });
  const changed = [...d.changedParts];
  if (opts.force && prev && changed.length === 0) changed.push('forced');
  const result = (o: Omit<CompileResult, 'changed' | 'ms'>): CompileResult => ({
    ...o,
    changed: o.upToDate ? [] : changed,
    ms: performance.now() - t0,
  });
  if (prev && skip && d.state === 'up-to-date') return result({ record: prev, upToDate: true, command: prev.command });
  const source =
    prepared && !opts.dryRun ? await assertPreparedForCompile(inputs.exportDir, prepared, log, driver.requiresPrepared(opts)) : undefined;
  if (prepared) scope?.addDir(prepared.loc.dir);
  await failpoint('compile-writing');
  const out = await driver.build({ inputs, loc: prepared?.loc, fingerprint: d.fingerprint, prev, opts, source, log });
  return result(out);
}
