/**
 * Finds what a compile binds: the export directory's graph and spec, the prepared checkpoint
 * directory, and where each spec file lies inside it.
 *
 * The spec's `files[].path` are relative to the export directory (QEfficient symlinks the
 * prepared directory there; the link is followed). The prepared directory is `--prepared`
 * when given, else the directory holding the first spec file, else the spec's `model_id`
 * (QEfficient's absolute prepared directory). A spec file that does not resolve inside the
 * prepared directory is looked up there by its path below the prepared directory's name,
 * then by its base name — so a spec written for one prepared copy binds to another.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PipelineError, UsageError } from '../errors';
import { isInside, resolveReadPath } from '../paths';
import { specFromText, type WeightSpec } from '../spec';
import { pathStamp } from '../file-stamp';
import { specFileIn } from '../spec/file-names';
import { readRegularFileSync } from '../paths';

/** The export directory's two inputs, read once. */
export interface ExportInputs {
  exportDir: string;
  onnxPath: string;
  onnxBytes: Uint8Array;
  specPath: string;
  specText: string;
  spec: WeightSpec;
  /** Stamps (file-stamp.ts pathStamp) of the graph and the spec, taken before reading them. */
  stamps: { onnx: string; spec: string };
}

/** Where the weights are. `files[i]` is the real path of spec file i, `rel[i]` its path from `dir`. */
export interface PreparedLocation {
  dir: string;
  files: string[];
  rel: string[];
}

/**
 * Reads `<export dir>/model.onnx` (or the single `.onnx` there) and its `weight_spec.json`.
 * With `quick`, the spec is only `JSON.parse`d (files and model_id are all that locating the
 * weights needs) — the up-to-date check then costs no schema validation; it returns
 * undefined when the text is not a plain v5-shaped spec, and the caller does the full read.
 */
export function readExportInputs(exportDirArg: string, quick?: false): ExportInputs;
export function readExportInputs(exportDirArg: string, quick: true): ExportInputs | undefined;
export function readExportInputs(exportDirArg: string, quick = false): ExportInputs | undefined {
  const exportDir = path.resolve(exportDirArg);
  let st: fs.Stats;
  try {
    st = fs.statSync(exportDir);
  } catch {
    throw new UsageError(`${exportDirArg}: no such export directory`);
  }
  if (!st.isDirectory()) throw new UsageError(`${exportDirArg}: not a directory (give the export directory)`);
  let onnxPath = path.join(exportDir, 'model.onnx');
  if (!fs.existsSync(onnxPath)) {
    const onnx = fs.readdirSync(exportDir).filter((n) => n.endsWith('.onnx') && !n.includes('.qaic.'));
    if (onnx.length !== 1) {
      throw new PipelineError(
        `${exportDir}: no model.onnx (${onnx.length === 0 ? 'no .onnx file' : `several .onnx files: ${onnx.join(', ')}`})`,
      );
    }
    onnxPath = path.join(exportDir, onnx[0]!);
  }
  const specPath = specFileIn(exportDir);
  if (!specPath) throw new PipelineError(`${exportDir}: no weight_spec.json or single *.weight_spec.json (export the model first)`);
  const stamps = { onnx: pathStamp(onnxPath), spec: pathStamp(specPath) };
  const specText = readRegularFileSync(specPath, 'utf8');
  const spec = quick ? quickSpec(specText) : specFromText(specText, specPath);
  if (!spec) return undefined;
  return { exportDir, onnxPath, onnxBytes: readRegularFileSync(onnxPath), specPath, specText, spec, stamps };
}

/** The spec's `files` and `model_id` by plain JSON.parse, or undefined when it does not look like v4+. */
function quickSpec(text: string): WeightSpec | undefined {
  try {
    const raw = JSON.parse(text) as Partial<WeightSpec>;
    if (typeof raw.version !== 'number' || raw.version < 4 || !Array.isArray(raw.files) || !Array.isArray(raw.inputs)) return undefined;
    if (!raw.files.every((f) => f && typeof f.path === 'string' && typeof f.format === 'string')) return undefined;
    return { version: raw.version, files: raw.files, inputs: [], model_id: typeof raw.model_id === 'string' ? raw.model_id : undefined };
  } catch {
    return undefined;
  }
}

function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/**
 * The prepared directory a spec names, whether or not a prepare has made it yet — the one
 * lookup behind compile, the editor's state and Prepare's default output: the folder its first
 * file resolves into (a prepared link followed), else QEfficient's absolute `model_id` when it
 * exists, else the first file's folder as written.
 */
export function preparedDirOf(exportDir: string, spec: Pick<WeightSpec, 'files' | 'model_id'>): string | undefined {
  const first = spec.files[0]?.path;
  const abs = first ? path.resolve(exportDir, first) : undefined;
  const real = abs && realOrUndefined(abs);
  if (real) return path.dirname(real);
  // QEfficient's model_id is the absolute prepared directory; used only when the relative paths do not resolve.
  if (spec.model_id && path.isAbsolute(spec.model_id) && realOrUndefined(spec.model_id)) return realOrUndefined(spec.model_id);
  return abs ? path.dirname(abs) : spec.model_id;
}

/** Resolves the prepared directory and every spec file in it. */
export function locatePrepared(inp: ExportInputs, preparedArg?: string): PreparedLocation {
  const { spec, exportDir, specPath } = inp;
  if (spec.files.length === 0) throw new PipelineError(`${specPath}: the spec lists no files`);
  const resolved = spec.files.map((f) => {
    const rp = resolveReadPath(exportDir, f.path, preparedArg ? [path.resolve(preparedArg)] : []);
    return rp.exists ? rp.real : undefined;
  });
  let dir: string;
  if (preparedArg) {
    const real = realOrUndefined(path.resolve(preparedArg));
    if (!real || !fs.statSync(real).isDirectory()) throw new UsageError(`${preparedArg}: no such prepared directory`);
    dir = real;
  } else if (resolved[0]) {
    dir = path.dirname(resolved[0]);
  } else {
    const named = preparedDirOf(exportDir, spec);
    const real = named && realOrUndefined(named);
    if (!real)
      throw new PipelineError(
        `${specPath}: file "${spec.files[0]!.path}" does not exist (run weight-spec prepare first, or pass --prepared)`,
      );
    dir = real;
  }
  const files: string[] = [];
  const rel: string[] = [];
  spec.files.forEach((f, i) => {
    let real = resolved[i];
    if (!real || !isInside(dir, real)) {
      // Not inside the chosen prepared directory: find the same file name there.
      const segs = f.path.split(/[\\/]/).filter((s) => s && s !== '.');
      const candidates = [segs.slice(1).join('/'), segs[segs.length - 1] ?? ''].filter(Boolean);
      real = undefined;
      for (const c of candidates) {
        if (c.split('/').includes('..')) continue;
        const r = realOrUndefined(path.join(dir, c));
        if (r && isInside(dir, r)) {
          real = r;
          break;
        }
        // prepare links an unchanged shard to its source: across filesystems a relative symlink
        // (prepare/links.ts); it is kept as the link so the binder knows to hard-link the target
        if (r && fs.lstatSync(path.join(dir, c)).isSymbolicLink() && !path.isAbsolute(fs.readlinkSync(path.join(dir, c)))) {
          real = path.join(dir, c);
          break;
        }
      }
      if (!real) {
        throw new PipelineError(`${specPath}: file "${f.path}" is not in the prepared directory ${dir}`);
      }
    }
    if (f.format && f.format !== 'safetensors')
      throw new PipelineError(`${specPath}: file "${f.path}" has format "${f.format}" (only safetensors can be bound)`);
    files.push(real);
    rel.push(path.relative(dir, real).split(path.sep).join('/'));
  });
  return { dir, files, rel };
}
