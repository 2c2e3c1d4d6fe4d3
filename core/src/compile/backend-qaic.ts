/**
 * The qaic backend: plans QEfficient's qaic-compile command (qaic.ts, qaic-command.ts), prints
 * it in a dry run, else runs it and records the qpc directory. The planning and running stay
 * in qaic.ts; this file only adapts them to the backend interface.
 */
import type { BackendJob, BackendOutcome, CompileDriver } from './backend';
import { planQaic, runQaic } from './qaic';
import { artifactExists } from '../artifacts/compile-artifact';
import { writeCompileRecord, type CompileRecord } from '../artifacts/compile-record';

/** Plans (and unless a dry run, runs) one qaic compile. */
async function compileQaic(j: BackendJob): Promise<BackendOutcome> {
  const { inputs, loc, fingerprint: fp, prev, opts, log } = j;
  const inp = inputs.export;
  const stamps = inputs.stamps;
  const job = planQaic(inp, opts.prepared ? loc : undefined, opts.qaic ?? {}, fp.value, opts.env);
  const record: CompileRecord = {
    version: 1,
    backend: 'qaic',
    fingerprint: fp.value,
    inputs: fp.parts,
    artifacts: { qpc: job.plan.qpcDir, compileDir: job.plan.compileDir, onnx: job.onnx },
    prepared: loc?.dir,
    command: job.plan.command,
    stamps,
    createdAt: new Date().toISOString(),
  };
  for (const w of job.plan.warnings) log(w);
  const files = [
    ...(job.plan.specializationsFile ? [{ path: job.plan.specializationsFile, text: job.plan.specializationsText! }] : []),
    ...(job.plan.customIoFile ? [{ path: job.plan.customIoFile, text: job.plan.customIoText! }] : []),
  ];
  if (opts.dryRun) return { record, upToDate: false, command: job.plan.command, files, dryRun: true };
  if (!opts.force && prev?.backend === 'qaic' && prev.fingerprint === fp.value && artifactExists(prev)) {
    return { record: prev, upToDate: true, command: prev.command };
  }
  await runQaic(job, opts.stderr ?? process.stderr, log);
  await writeCompileRecord(inp.exportDir, record);
  return { record, upToDate: false, command: job.plan.command };
}

/** The qaic backend. */
export const qaicDriver: CompileDriver = {
  name: 'qaic',
  // The real --prepared folder joins the options as `prepared` (after `qaic`, as before).
  profile: (opts) => ({
    options: { qaic: opts.qaic ?? {} },
    preparedInOptions: !!opts.prepared,
    needsWeights: !opts.dryRun,
    requiresPrepared: !!opts.prepared,
  }),
  build: compileQaic,
};
