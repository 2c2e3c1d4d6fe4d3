/**
 * `compile`: binds an export directory's weight-free graph to its prepared weights.
 *
 * - `ort` (default): a bound ONNX whose initializers are external data pointing straight into
 *   the prepared safetensors files (backend-ort.ts), runnable by `run`.
 * - `qaic`: QEfficient's qaic-compile command (qaic.ts, qaic-command.ts, qaic-vlm.ts).
 *
 * The flow reads once and decides once, in flat steps: each is one call into one module that
 * calls no other module of compile, prepare or run, and gets what the earlier steps read
 * (docs/ARCHITECTURE.md "Compile flow"; core/test/compile/compile-visits.test.ts measures it):
 * the backend's profile (plain data, from PROFILES here), the read step (inputs.ts: compile.json, its stamps,
 * and unless they hold the graph, the spec, the manifest and the sentinel), `decide`
 * (decide.ts, pure), prepare's check of the folder (prepare/manifest.ts) and the backend's build.
 */
import path from 'node:path';
import { preparedForCompile } from '../prepare/manifest';
import { beginWork, failpoint, type WorkScope } from '../paths';
import type { CompileDriver, CompileOptions, CompileResult, DriverProfile } from './backend';
import { ortDriver } from './backend-ort';
import { qaicDriver } from './qaic';
import { decide } from './decide';
import { readForCompile, type CompileRequest } from './inputs';
import { checkRecordWritable } from '../artifacts/compile-record';
import { linkPreparedFolder } from '../artifacts/prepared-link';

export { COMPILE_RECORD, type CompileRecord } from '../artifacts/compile-record';
export { readCompileRecord } from './inputs';
export { compileStatus, type CompileChange, type CompileState, type CompileStatus } from './status';
export { shellLine, QAIC_COMPILER, type QaicPlan } from '../artifacts/qaic-plan';
export { buildQaicPlan } from './qaic-command';
export type { QaicOptions } from './qaic-options';
export { parseWireModel, type WireModel, type WireValueInfo } from '../formats/onnx/wire-model';
export type { CompileOptions, CompileResult } from './backend';

/** The backends by name. */
const DRIVERS: Record<CompileOptions['backend'], CompileDriver> = { ort: ortDriver, qaic: qaicDriver };

/**
 * What each backend makes of the options before anything is read, as plain data: the options
 * the fingerprint covers, weights needed, prepared required. A table here, not a call into the
 * backend: a few lines of mapping are not worth a step of the flow.
 */
const PROFILES: Record<CompileOptions['backend'], (opts: CompileOptions) => DriverProfile> = {
  ort: (opts) => ({
    options: { links: !!opts.links, keepNames: !!opts.keepNames },
    preparedInOptions: false,
    needsWeights: true,
    requiresPrepared: true,
  }),
  // The real --prepared folder joins the options as `prepared` (after `qaic`, as before).
  qaic: (opts) => ({
    options: { qaic: opts.qaic ?? {} },
    preparedInOptions: !!opts.prepared,
    needsWeights: !opts.dryRun,
    requiresPrepared: !!opts.prepared,
  }),
};

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
  // 1. What the backend makes of the options, as data.
  const profile = PROFILES[opts.backend](opts);
  const request: CompileRequest = {
    backend: opts.backend,
    prepared: opts.prepared,
    options: profile.options,
    preparedInOptions: profile.preparedInOptions,
  };
  const skip = !opts.force && !opts.dryRun;
  // 2. Read: stamps unchanged → no byte of the graph or the spec read.
  const read = readForCompile(exportDir, request, skip);
  if (read.upToDate) return { record: read.prev, upToDate: true, changed: [], command: read.prev.command, ms: performance.now() - t0 };
  const { prev, inputs } = read;
  const prepared = inputs.prepared;
  if (!prepared && profile.needsWeights) throw inputs.locateError;
  // 3. Decide, pure.
  const d = decide(inputs, prev, { backend: opts.backend, compareOptions: true });
  const changed = [...d.changedParts];
  if (opts.force && prev && changed.length === 0) changed.push('forced');
  const result = (o: Omit<CompileResult, 'changed' | 'ms'>): CompileResult => ({
    ...o,
    changed: o.upToDate ? [] : changed,
    ms: performance.now() - t0,
  });
  if (prev && skip && d.state === 'up-to-date') return result({ record: prev, upToDate: true, command: prev.command });
  // A symlinked compile.json is refused before anything is built (its rename would replace the link).
  if (!opts.dryRun) checkRecordWritable(exportDir);
  // 4. prepare's check of the folder, over the manifest and sentinel already read.
  const source =
    prepared && !opts.dryRun
      ? await preparedForCompile(inputs.exportDir, prepared.loc.dir, prepared, { required: profile.requiresPrepared, log })
      : undefined;
  if (prepared) scope?.addDir(prepared.loc.dir);
  // The folder found: QEfficient's link to it beside the spec, so the spec's own paths resolve
  // for every reader (made only when safe; artifacts/prepared-link.ts says when).
  let linked: string | undefined;
  if (prepared && !opts.dryRun) {
    const specPaths = inputs.export.spec.files.map((f) => f.path);
    const l = await linkPreparedFolder(inputs.exportDir, prepared.loc.dir, specPaths).catch((e: unknown) => ({ skipped: String(e) }));
    if ('linked' in l && l.made) linked = l.linked;
  }
  await failpoint('compile-writing');
  // 5. Build: the artifact and the record.
  const out = await driver.build({ inputs, loc: prepared?.loc, fingerprint: d.fingerprint, prev, opts, source, log });
  return result({ ...out, ...(linked ? { linked } : {}) });
}
