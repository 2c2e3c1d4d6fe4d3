/**
 * The ort backend, in one module: binds the graph to the prepared safetensors, writes the
 * bound model, checks it in ONNX Runtime once, records the artifact in its folder's compile
 * list, writes compile.json and drops the artifact the previous compile made for this export.
 * It calls no other module of compile: compile() (index.ts) calls its `build` once and hands
 * it everything read and decided.
 *
 * Binding: every weight input of the graph becomes an initializer whose external data points
 * straight into a prepared safetensors file (`location` relative to the model, `offset` = 8 +
 * header length + data begin, `length`). No weight byte is copied: the bound model is the graph
 * plus a few hundred bytes per weight.
 *
 * ONNX Runtime ≥ 1.24 refuses external data given by absolute path, by `../`, or through a
 * symlink leading outside the model's directory (measured with 1.30: all three fail at
 * session creation; a file in the model's own directory, in a subdirectory of it, or a hard
 * link works). So the bound model is written *into* the prepared directory, at its top level,
 * beside the shards it points at. Where that directory cannot be written, the shards are
 * hard-linked into `<export dir>/compiled/` and the model written beside the links.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError } from '../errors';
import { dtypeOfOnnx, prepareDtypeOf } from '../formats/dtype';
import { readSafetensorsHeaderSync, type SafetensorsHeader } from '../formats/safetensors';
import { parseWireModel, rewriteModel, type ExternalInitializer, type WireModel } from '../formats/onnx/wire-model';
import { slimGraph } from '../formats/onnx/slim-graph';
import { emulateBf16OnCpu } from '../formats/onnx/bf16-cpu';
import { decodeModel, encodeModel } from '../formats/onnx/codec';
import { loadOrt } from '../ort/loader';
import { ortSessionOptions } from '../ort/session-options';
import { atomicWriteFile } from '../paths';
import { SPEC_METADATA_KEY } from '../spec';
import { artifactTrusted, forgetArtifact, noteArtifact } from '../artifacts/compile-artifact';
import { writeCompileRecord, type CompileRecord } from '../artifacts/compile-record';
import type { BackendJob, BackendOutcome, CompileDriver } from './backend';
import type { Fingerprint } from './decide';
import type { ExportInputs, PreparedLocation } from './inputs';

/** What {@link bindOrt} produced. */
interface OrtBinding {
  /** Absolute path of the bound model. */
  model: string;
  /** Directory the external-data locations are relative to (the model's directory). */
  modelDir: string;
  /** Hard links made for it (fallback layout only). */
  links: string[];
  weightBytes: number;
  artifactBytes: number;
  initializers: number;
}

/** Options of {@link bindOrt}. */
interface BindOptions {
  /** File name of the bound model (no directory). */
  fileName: string;
  /** Where to fall back to when the prepared directory is read-only. */
  fallbackDir: string;
  /** Use the hard-link layout even when the prepared directory is writable. */
  links?: boolean;
  /** Source checkpoint named in the dtype error ("run prepare --checkpoint <src> --dtype …"). */
  source?: string;
  /** Keep node names, doc strings, value names and every Constant node (no slimming). */
  keepNames?: boolean;
}

/** The initializers a spec and a set of headers give a graph, checked against its inputs. */
function planInitializers(
  m: WireModel,
  inp: ExportInputs,
  loc: PreparedLocation,
  headers: SafetensorsHeader[],
  source?: string,
): { inits: ExternalInitializer[]; weightBytes: number } {
  const byName = new Map(m.inputs.map((i) => [i.name, i]));
  const inits: ExternalInitializer[] = [];
  let weightBytes = 0;
  const seen = new Set<string>();
  for (const si of inp.spec.inputs) {
    if (seen.has(si.name)) throw new PipelineError(`${inp.specPath}: input "${si.name}" is listed twice`);
    seen.add(si.name);
    const gi = byName.get(si.name);
    if (!gi) throw new PipelineError(`${inp.specPath}: input "${si.name}" is not an input of ${path.basename(inp.onnxPath)}`);
    if (si.quantization) {
      throw new PipelineError(
        `${inp.specPath}: input "${si.name}" is quantized (${si.quantization.format}); the ort backend cannot bind packed weights (use --backend qaic)`,
      );
    }
    const fi = si.location.file;
    const h = headers[fi];
    if (!h) throw new PipelineError(`${inp.specPath}: input "${si.name}" names file ${fi}, but the spec lists ${headers.length} file(s)`);
    const t = h.tensors.get(si.location.key);
    if (!t) throw new PipelineError(`${loc.files[fi]}: no tensor "${si.location.key}" (for input "${si.name}")`);
    const want = dtypeOfOnnx(gi.elemType);
    if (want !== t.dtype) {
      const name = want ? prepareDtypeOf(want) : undefined;
      const fix = name
        ? `run \`weight-spec prepare --checkpoint ${source ?? '<checkpoint>'} --dtype ${name}\` and compile with that prepared directory`
        : 'the graph input type has no prepared equivalent';
      throw new PipelineError(
        `${loc.files[fi]}: tensor "${t.key}" is ${t.dtype} but graph input "${si.name}" is ${want ?? `ONNX type ${gi.elemType}`}; ${fix}`,
      );
    }
    if (gi.dims.length !== t.shape.length || gi.dims.some((d, k) => typeof d === 'number' && d !== t.shape[k])) {
      throw new PipelineError(
        `${loc.files[fi]}: tensor "${t.key}" has shape [${t.shape.join(', ')}] but graph input "${si.name}" is [${gi.dims.join(', ')}]`,
      );
    }
    inits.push({ name: si.name, dataType: gi.elemType, dims: t.shape, location: loc.rel[fi]!, offset: t.dataOffset, length: t.byteLength });
    weightBytes += t.byteLength;
  }
  return { inits, weightBytes };
}

/**
 * True when the tool may add a file to `dir`: its owner-write bit is set (so a directory made
 * read-only on purpose, like shared fixtures, stays untouched even for root) and access(2)
 * agrees (read-only file systems, other users' directories).
 */
function canWriteIn(dir: string): boolean {
  try {
    if ((fs.statSync(dir).mode & 0o200) === 0) return false;
    fs.accessSync(dir, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * True when a shard of the prepared directory is a symlink (prepare links unchanged shards to
 * the source; across filesystems as a symlink): ONNX Runtime refuses symlinked external data
 * that leads outside the model's directory, so the model goes beside hard links instead.
 */
function hasSymlinkedShard(loc: PreparedLocation): boolean {
  return loc.files.some((f) => fs.lstatSync(f, { throwIfNoEntry: false })?.isSymbolicLink());
}

/** Hard-links each shard into `dir` (replacing stale links); EXDEV etc. become one clear error. */
function linkShards(loc: PreparedLocation, dir: string, why: 'not-writable' | 'symlinks'): { rel: string[]; links: string[] } {
  fs.mkdirSync(dir, { recursive: true });
  const rel: string[] = [];
  const links: string[] = [];
  loc.files.forEach((given, i) => {
    // link() does not follow a symlink: link the file it leads to
    const f = fs.realpathSync(given);
    const name = loc.rel[i]!.split('/').join('__');
    const link = path.join(dir, name);
    try {
      const a = fs.statSync(f);
      const b = fs.lstatSync(link, { throwIfNoEntry: false });
      if (!b || b.ino !== a.ino || b.dev !== a.dev) {
        if (b) fs.rmSync(link);
        fs.linkSync(f, link);
      }
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (why === 'symlinks') {
        throw new PipelineError(
          `${given}: a symlink to ${f}, which ONNX Runtime will not read through and which cannot be hard-linked into ${dir} (${code ?? String(e)}); prepare with --out on the source's filesystem`,
        );
      }
      throw new PipelineError(
        `${loc.dir}: not writable, and ${f} cannot be hard-linked into ${dir} (${code ?? String(e)}); pass a writable --prepared copy`,
      );
    }
    rel.push(name);
    links.push(link);
  });
  return { rel, links };
}

/** TensorProto.DataType BFLOAT16. */
const BF16_ONNX = 16;

/** Binds the graph to the prepared weights and writes the bound model atomically. */
async function bindOrt(inp: ExportInputs, loc: PreparedLocation, opts: BindOptions): Promise<OrtBinding> {
  const headers = loc.files.map((f) => readSafetensorsHeaderSync(f));
  const m = parseWireModel(inp.onnxBytes, inp.onnxPath);
  let target = loc;
  let modelDir = loc.dir;
  let links: string[] = [];
  const symlinks = hasSymlinkedShard(loc);
  if (opts.links || symlinks || !canWriteIn(loc.dir)) {
    const made = linkShards(loc, opts.fallbackDir, symlinks && !opts.links && canWriteIn(loc.dir) ? 'symlinks' : 'not-writable');
    target = { ...loc, dir: opts.fallbackDir, rel: made.rel };
    modelDir = opts.fallbackDir;
    links = made.links;
  }
  const { inits, weightBytes } = planInitializers(m, inp, target, headers, opts.source);
  // The embedded spec tells a compiler where the weights are; the bound model already says it
  // in its initializers, so the copy is dropped (ONNX Runtime never reads it).
  // The bound model is for running: what only a reader of the graph uses goes (slim-graph.ts).
  const slim = opts.keepNames ? undefined : slimGraph(m, new Set(inits.map((i) => i.name)), inp.onnxPath);
  let bytes = rewriteModel(m, {
    dropInputs: new Set(inits.map((i) => i.name)),
    initializers: inits,
    replace: slim?.replace,
    dropMetadata: new Set([SPEC_METADATA_KEY]),
  });
  // a bfloat16 graph (export --dtype bfloat16): ORT's CPU provider has no bf16 arithmetic and its
  // Node binding no bf16 tensors, so the arithmetic is emulated in float32, rounded to bf16 per op (bf16-cpu.ts)
  if (m.inputs.some((i) => i.elemType === BF16_ONNX)) {
    const proto = decodeModel(bytes, inp.onnxPath);
    emulateBf16OnCpu(proto);
    bytes = encodeModel(proto);
  }
  const model = path.join(modelDir, opts.fileName);
  await atomicWriteFile(model, bytes);
  return { model, modelDir, links, weightBytes, artifactBytes: bytes.length, initializers: inits.length };
}

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
  build: buildOrt,
};
