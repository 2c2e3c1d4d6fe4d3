/**
 * The qaic backend (its `CompileDriver`, {@link qaicDriver}): embeds the spec in the ONNX
 * metadata (`com.qti.aisw.extdata`, how the QAIC compiler finds the weights), writes
 * specializations.json and custom_io.yaml beside the binary directory and runs qaic-compile with
 * QEfficient's command line, or prints it in a dry run.
 *
 * The build is flat: one call reads the graph interface as data (graph-interface.ts
 * `graphStates`), one call to a pure planner returns the whole plan as data, argv and file
 * texts (qaic-command.ts `planTextGraph`, or qaic-vlm.ts `planVlmGraph` for a VLM's graph);
 * then this module writes the files and runs the compiler. Nothing here calls back into an
 * earlier module (core/test/compile/compile-visits.test.ts counts the visits).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError, UsageError } from '../errors';
import { atomicWriteFile } from '../paths';
import { SPEC_METADATA_KEY, specMetadataValue, type WeightSpec } from '../spec';
import type { ExportInputs, PreparedLocation } from './inputs';
import { cclFromMetadata, disaggPrefillFromMetadata, speculativeFromMetadata } from '../artifacts/graph-metadata';
import { embeddingMaxSeqLen, graphStates, isEmbeddingGraph, NUM_LOGITS_TO_KEEP } from '../artifacts/graph-interface';
import { parseWireModel, rewriteModel, type WireModel } from '../formats/onnx/wire-model';
import { decodeModel } from '../formats/onnx/codec';
import { hwVersionFromQaicUtil, QAIC_COMPILER, type QaicPlan } from '../artifacts/qaic-plan';
import { planTextGraph } from './qaic-command';
import type { GraphShapeFacts, QaicOptions } from './qaic-options';
import { planVlmGraph } from './qaic-vlm';
import { planEmbeddingGraph } from './qaic-embedding';
import { planWhisperGraph } from './qaic-whisper';
import type { BackendJob, BackendOutcome, CompileDriver } from './backend';
import { artifactExists } from '../artifacts/compile-artifact';
import { writeCompileRecord, type CompileRecord } from '../artifacts/compile-record';

/** The compiler binary: `WEIGHT_SPEC_QAIC_COMPILE` overrides QEfficient's path (other SDK locations, tests). */
export function qaicCompilerPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.WEIGHT_SPEC_QAIC_COMPILE || QAIC_COMPILER[0];
}

/** QEfficient's qaic-util path (`get_default_aic_hw_version` in `QEfficient/utils/constants.py`); `WEIGHT_SPEC_QAIC_UTIL` overrides it. */
export const QAIC_UTIL = '/opt/qti-aic/tools/qaic-util';

/**
 * The hardware version of the first device, as QEfficient detects it: `qaic-util -q` when the
 * binary is there, else undefined (DEFAULT_AIC_HW_VERSION applies; `--aic-hw-version` overrides both).
 */
export function detectAicHwVersion(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const util = env.WEIGHT_SPEC_QAIC_UTIL || QAIC_UTIL;
  if (!isExecutable(util)) return undefined;
  const r = spawnSync(util, ['-q'], { encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? hwVersionFromQaicUtil(r.stdout ?? '') : undefined;
}

/** Facts about the graph that shape the specializations and the custom IO. */
export function graphFacts(m: WireModel): GraphShapeFacts {
  const { states, ctx: pk } = graphStates(m.inputs, m.metadata);
  const ids = m.inputs.find((i) => i.name === 'input_ids');
  const num = (d: number | string | undefined) => (typeof d === 'number' && d > 0 ? d : undefined);
  const kvDtype = m.metadata.find((e) => e.key === 'weight_spec.kv_dtype')?.value;
  const phase = m.metadata.find((e) => e.key === 'weight_spec.phase')?.value;
  const modelType = m.metadata.find((e) => e.key === 'weight_spec.model_type')?.value;
  const disagg = disaggPrefillFromMetadata(m.metadata);
  return {
    states: states.map((s) => s.name),
    continuousBatching: m.inputs.some((i) => i.name === 'batch_index'),
    ctxLen: num(pk?.dims[pk.ctxAxis!]),
    batch: num(ids?.dims[0]),
    seqLen: num(ids?.dims[1]),
    ...(m.inputs.some((i) => i.name === 'input_features')
      ? { whisperRole: 'encoder' as const }
      : m.inputs.some((i) => i.name === 'encoder_hidden_states')
        ? { whisperRole: 'decoder' as const }
        : {}),
    ...(m.inputs.some((i) => i.name === 'pixel_values')
      ? { vlmRole: 'vision' as const }
      : m.inputs.some((i) => i.name === 'vision_embeds')
        ? { vlmRole: 'language' as const }
        : {}),
    cacheBatch: num((pk ?? states[0])?.dims[0]),
    ...(m.inputs.some((i) => i.name === 'comp_ctx_lengths') ? { ccl: cclFromMetadata(m.metadata) } : {}),
    ...(m.inputs.some((i) => i.name === NUM_LOGITS_TO_KEEP) ? { speculative: speculativeFromMetadata(m.metadata) } : {}),
    ...(kvDtype ? { dtype: kvDtype } : {}),
    ...(phase ? { phase } : {}),
    ...(modelType ? { modelType } : {}),
    ...(disagg ? { disaggPrefill: disagg } : {}),
  };
}

/** The nodes and initializer names of an ONNX (for `--pipeline-partitions`). */
function graphNodes(bytes: Uint8Array, file: string): NonNullable<GraphShapeFacts['graph']> {
  const proto = decodeModel(bytes, file);
  return {
    nodes: (proto.graph?.node ?? []).map((n) => ({
      name: n.name ?? '',
      opType: n.opType ?? '',
      input: n.input ?? [],
      output: n.output ?? [],
    })),
    initializers: (proto.graph?.initializer ?? []).map((t) => t.name ?? ''),
  };
}

/** The spec as the QAIC compiler must see it: files relative to the ONNX's directory, model_id the prepared dir. */
export function specForQaic(inp: ExportInputs, loc: PreparedLocation | undefined): WeightSpec {
  if (!loc) return inp.spec;
  const files = inp.spec.files.map((f, i) => ({ ...f, path: path.relative(inp.exportDir, loc.files[i]!).split(path.sep).join('/') }));
  return { ...inp.spec, files, model_id: loc.dir };
}

/** What {@link planQaic} decided. */
export interface QaicJob {
  plan: QaicPlan;
  /** The ONNX handed to the compiler. */
  onnx: string;
  /** Bytes to write at `onnx` first (undefined when model.onnx already embeds this spec). */
  onnxBytes?: Uint8Array;
}

/** Plans the compile: which ONNX, which files, which command. Writes nothing. */
export function planQaic(inp: ExportInputs, loc: PreparedLocation | undefined, opts: QaicOptions, fp: string, env = process.env): QaicJob {
  const m = parseWireModel(inp.onnxBytes, inp.onnxPath);
  const value = specMetadataValue(specForQaic(inp, loc));
  const have = m.metadata.find((e) => e.key === SPEC_METADATA_KEY)?.value;
  let onnx = inp.onnxPath;
  let onnxBytes: Uint8Array | undefined;
  if (have !== value) {
    onnx = inp.onnxPath.replace(/\.onnx$/, '') + '.qaic.onnx';
    onnxBytes = rewriteModel(m, { setMetadata: { [SPEC_METADATA_KEY]: value } });
  }
  const compileDir = path.join(inp.exportDir, `qpc-${fp.slice(0, 16)}`);
  const hw = opts.aicHwVersion ?? detectAicHwVersion(env);
  const withHw = hw !== undefined ? { ...opts, aicHwVersion: hw } : opts;
  const g = graphFacts(m);
  // a pipeline partition config lists the graph's nodes: read them only then
  if ((opts.pipelinePartitions ?? 1) > 1) g.graph = graphNodes(inp.onnxBytes, inp.onnxPath);
  // a vision-language graph: QEfficient's dual-QPC rules (qaic-vlm.ts), sized by the image flags;
  // an embedding graph: QEFFAutoModel's Embedding specializations per --seq-len (qaic-embedding.ts)
  if (opts.seqLens !== undefined && !isEmbeddingGraph(m.outputs))
    throw new UsageError(`compile: --seq-len lists the lengths of an embedding graph; ${inp.exportDir} is not one (use --prefill-seq-len)`);
  const plan = g.vlmRole
    ? planVlmGraph(inp.exportDir, onnx, compileDir, withHw, m, g, qaicCompilerPath(env))
    : g.whisperRole
      ? planWhisperGraph(inp.exportDir, onnx, compileDir, withHw, m, g, qaicCompilerPath(env))
      : isEmbeddingGraph(m.outputs)
        ? planEmbeddingGraph(inp.exportDir, onnx, compileDir, withHw, g, qaicCompilerPath(env), embeddingMaxSeqLen(m.metadata))
        : planTextGraph(inp.exportDir, onnx, compileDir, withHw, g, qaicCompilerPath(env));
  return { plan, onnx, onnxBytes };
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Runs a planned job. Without the SDK: one line naming the binary and the command. */
export async function runQaic(job: QaicJob, stderr: NodeJS.WritableStream, log: (line: string) => void = () => undefined): Promise<void> {
  const bin = job.plan.command[0]!;
  if (!isExecutable(bin)) {
    throw new PipelineError(`qaic-compile not found at ${bin} (QAIC SDK not installed); would run: ${job.plan.commandLine}`);
  }
  log(`compile: running ${job.plan.commandLine}`);
  if (job.onnxBytes) await atomicWriteFile(job.onnx, job.onnxBytes);
  fs.mkdirSync(job.plan.compileDir, { recursive: true });
  // QEfficient removes a binary directory without programqpc.bin (a failed earlier run) and starts over.
  fs.rmSync(job.plan.qpcDir, { recursive: true, force: true });
  if (job.plan.specializationsFile) await atomicWriteFile(job.plan.specializationsFile, job.plan.specializationsText!);
  if (job.plan.customIoFile) await atomicWriteFile(job.plan.customIoFile, job.plan.customIoText!);
  if (job.plan.mdpFile) await atomicWriteFile(job.plan.mdpFile, job.plan.mdpText!);
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(bin, job.plan.command.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => stderr.write(d));
    child.stderr.on('data', (d) => stderr.write(d));
    child.on('error', reject);
    child.on('close', (c) => resolve(c ?? 1));
  });
  if (code !== 0) throw new PipelineError(`qaic-compile exited with code ${code}; command: ${job.plan.commandLine}`);
  if (!fs.existsSync(path.join(job.plan.qpcDir, 'programqpc.bin'))) {
    throw new PipelineError(`qaic-compile finished but wrote no ${path.join(job.plan.qpcDir, 'programqpc.bin')}`);
  }
  // _compile dumps the hashed parameters after the compiler succeeded
  await atomicWriteFile(job.plan.hashedParamsFile, job.plan.hashedParamsText);
}

/** Plans (and unless a dry run, runs) one qaic compile: the driver's build. */
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
    ...(job.plan.mdpFile ? [{ path: job.plan.mdpFile, text: job.plan.mdpText! }] : []),
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
  build: compileQaic,
};
