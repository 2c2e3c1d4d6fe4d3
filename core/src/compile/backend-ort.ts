/**
 * The ort backend: binds the graph to the prepared safetensors (bind-ort.ts), checks the bound
 * model in ONNX Runtime once, records the artifact in its folder's compile list and drops the
 * artifact the previous compile made for this export.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError } from '../errors';
import { loadOrt } from '../ort/loader';
import { ortSessionOptions } from '../ort/session-options';
import type { BackendJob, BackendOutcome, CompileDriver } from './backend';
import { bindOrt } from './bind-ort';
import type { Fingerprint } from './decide';
import type { ExportInputs, PreparedLocation } from './locate';
import { artifactTrusted, forgetArtifact, noteArtifact, writeCompileRecord, type CompileRecord } from './record';

/**
 * Deletes the previous ORT artifact when compile made it for this export (artifactTrusted:
 * in `<export>/compiled/`, or listed for this export in its prepared folder) and it is not the
 * new one.
 */
async function dropOldArtifact(exportDir: string, prev: CompileRecord | undefined, now: CompileRecord): Promise<void> {
  const old = prev?.backend === 'ort' ? prev.artifacts.model : undefined;
  if (!old || !prev || old === now.artifacts.model || !artifactTrusted(exportDir, prev)) return;
  fs.rmSync(old, { force: true });
  await forgetArtifact(old);
}

async function compileOrt(
  inp: ExportInputs,
  loc: PreparedLocation,
  fp: Fingerprint,
  o: { links: boolean; keepNames: boolean; source?: string },
): Promise<CompileRecord> {
  const stem = (inp.spec.model_name || path.basename(inp.exportDir)).replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 80);
  const b = await bindOrt(inp, loc, {
    fileName: `compiled-${stem}-${fp.value.slice(0, 12)}.onnx`,
    fallbackDir: path.join(inp.exportDir, 'compiled'),
    links: o.links,
    keepNames: o.keepNames,
    source: o.source,
  });
  return {
    version: 1,
    backend: 'ort',
    fingerprint: fp.value,
    inputs: fp.parts,
    artifacts: { model: b.model },
    prepared: loc.dir,
    stats: { weightBytes: b.weightBytes, artifactBytes: b.artifactBytes, initializers: b.initializers },
    createdAt: new Date().toISOString(),
  };
}

/**
 * Creates (and releases) one ORT session on the bound model: ORT checks every external-data
 * location and shape there. Without onnxruntime-node the artifact is kept unverified.
 */
async function verifyOrt(
  model: string,
  graph: { onnxPath: string; slimmed: boolean },
  env: NodeJS.ProcessEnv | undefined,
  log: (l: string) => void,
): Promise<boolean> {
  let ort;
  try {
    ort = loadOrt(undefined, env);
  } catch (e) {
    log(`compile: not verified (${(e as Error).message})`);
    return false;
  }
  try {
    const s = await ort.InferenceSession.create(model, ortSessionOptions());
    await s.release?.();
    return true;
  } catch (e) {
    fs.rmSync(model, { force: true });
    // The fault is in the exported graph (the binder only adds initializers); say so, and how
    // to see the graph's own value names where the bound model has shortened them.
    const names = graph.slimmed ? ' (value names are shortened in the bound model; compile --keep-names keeps the exported ones)' : '';
    throw new PipelineError(
      `${graph.onnxPath}: ONNX Runtime refuses the graph bound to its weights: ${(e as Error).message.split('\n')[0]}${names}`,
    );
  }
}

/** Binds, verifies and records one ort compile. */
async function buildOrt(job: BackendJob): Promise<BackendOutcome> {
  const { inputs, loc, fingerprint: fp, prev, opts, log } = job;
  const inp = inputs.export;
  if (!loc) throw new PipelineError(`${inp.exportDir}: no prepared weights found`);
  const record = await compileOrt(inp, loc, fp, { links: !!opts.links, keepNames: !!opts.keepNames, source: job.source });
  record.stamps = inputs.stamps;
  if (opts.verify !== false)
    record.verified = await verifyOrt(record.artifacts.model!, { onnxPath: inp.onnxPath, slimmed: !opts.keepNames }, opts.env, log);
  if (path.dirname(record.artifacts.model!) !== path.join(inp.exportDir, 'compiled'))
    await noteArtifact(record.artifacts.model!, inp.exportDir);
  await writeCompileRecord(inp.exportDir, record);
  await dropOldArtifact(inp.exportDir, prev, record);
  return { record, upToDate: false };
}

/** The ort backend. */
export const ortDriver: CompileDriver = {
  name: 'ort',
  fingerprintOptions: (opts) => ({ links: !!opts.links, keepNames: !!opts.keepNames }),
  needsWeights: () => true,
  requiresPrepared: () => true,
  build: buildOrt,
};
