/**
 * `<export dir>/compile.json`: what the last compile built and from which inputs. `run`
 * reads it to find the artifact; `compile` reads it to skip work when the input fingerprint
 * is unchanged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { atomicWriteFile } from '../paths';
import { readRegularFileSync } from '../paths';
import { SENTINEL_FILE } from '../prepare/manifest';

/** File name of the record in the export directory. */
export const COMPILE_RECORD = 'compile.json';

/** The compile backends. */
export type CompileBackend = 'ort' | 'qaic';

/** Cheap stand-ins for the fingerprint (status.ts): file → `size:mtime:inode`, spec path → its real path. */
export interface CompileStamps {
  files: Record<string, string>;
  links: Record<string, string>;
}

const recordSchema = z.looseObject({
  version: z.literal(1),
  backend: z.enum(['ort', 'qaic']),
  fingerprint: z.string().min(1),
  inputs: z.looseObject({ graph: z.string(), spec: z.string(), prepared: z.string(), options: z.string() }),
  artifacts: z.looseObject({
    model: z.string().optional(),
    qpc: z.string().optional(),
    compileDir: z.string().optional(),
    onnx: z.string().optional(),
  }),
  prepared: z.string().optional(),
  command: z.array(z.string()).optional(),
  stats: z.looseObject({ weightBytes: z.number(), artifactBytes: z.number(), initializers: z.number() }).optional(),
  verified: z.boolean().optional(),
  stamps: z.object({ files: z.record(z.string(), z.string()), links: z.record(z.string(), z.string()) }).optional(),
  createdAt: z.string(),
});

/**
 * The record `compile` writes (version 1): `fingerprint` is sha256 over every input that
 * decides the artifact (fingerprint.ts) and `inputs` its parts, so a reader can tell what
 * changed; `artifacts` are absolute paths (`model` is the runnable ONNX of the ort backend);
 * `prepared` the checkpoint directory bound; `command` the qaic command line; `stats` the
 * weight bytes bound and the artifact's own size; `verified` says ONNX Runtime opened the
 * artifact at compile time; `stamps` let status.ts skip reading the inputs.
 */
export type CompileRecord = z.infer<typeof recordSchema>;

/** The name compile gives an ort artifact: `compiled-<stem>-<first 12 hex of the fingerprint>.onnx`. */
export const ARTIFACT_NAME_RE = /^compiled-[A-Za-z0-9._-]*-([0-9a-f]{12})\.onnx$/;

function realOf(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

/**
 * The list compile keeps in a prepared folder of the artifacts it wrote there, each with the
 * export it was compiled for (real path) and its size: the proof, kept beside the artifact,
 * that compile made it for that export. A compile.json is a file anyone can write; this list
 * sits in the user's prepared folder, which a repository cannot write into.
 */
export const COMPILED_LIST = '.weight-spec-compiled.json';

type ListEntry = { path: string; size: number; export: string };

function readList(dir: string): ListEntry[] {
  try {
    const v = JSON.parse(readRegularFileSync(path.join(dir, COMPILED_LIST), 'utf8')) as { artifacts?: unknown };
    return (Array.isArray(v.artifacts) ? v.artifacts : []).filter(
      (e): e is ListEntry =>
        !!e && typeof e === 'object' && typeof e.path === 'string' && typeof e.size === 'number' && typeof e.export === 'string',
    );
  } catch {
    return [];
  }
}

/** Records in `model`'s folder that compile wrote it for `exportDir` (after writing it). */
export async function noteArtifact(model: string, exportDir: string): Promise<void> {
  const dir = path.dirname(model);
  const entry = { path: path.basename(model), size: fs.statSync(model).size, export: realOf(exportDir) };
  const rest = readList(dir).filter((e) => e.path !== entry.path && fs.existsSync(path.join(dir, e.path)));
  await atomicWriteFile(path.join(dir, COMPILED_LIST), JSON.stringify({ artifacts: [...rest, entry] }, null, 2) + '\n');
}

/** Drops `model` from its folder's list (after deleting it). */
export async function forgetArtifact(model: string): Promise<void> {
  const dir = path.dirname(model);
  const list = readList(dir);
  const rest = list.filter((e) => e.path !== path.basename(model));
  if (rest.length !== list.length)
    await atomicWriteFile(path.join(dir, COMPILED_LIST), JSON.stringify({ artifacts: rest }, null, 2) + '\n');
}

/**
 * True when the record's ort artifact is one compile made for this export: an absolute path
 * named as compile names it (with the record's own fingerprint), lying either in the export's
 * own `compiled/` folder, or in a prepared folder (prepare's sentinel) whose compile list
 * names it, for this export, with its size. compile.json is a file anyone can edit (or copy
 * from another export); a path failing this is never loaded, reported up to date or deleted.
 */
export function artifactTrusted(exportDir: string, rec: CompileRecord): boolean {
  const model = rec.artifacts.model;
  if (rec.backend !== 'ort' || model === undefined) return true;
  const m = ARTIFACT_NAME_RE.exec(path.basename(model));
  if (!path.isAbsolute(model) || !m || m[1] !== rec.fingerprint.slice(0, 12)) return false;
  const dir = realOf(path.dirname(model));
  if (dir === realOf(path.join(exportDir, 'compiled'))) return true;
  if (!fs.existsSync(path.join(dir, SENTINEL_FILE))) return false;
  const own = realOf(exportDir);
  const size = fs.statSync(model, { throwIfNoEntry: false })?.size;
  // A listed artifact since deleted is still this export's (status then says "artifact" changed).
  return readList(dir).some((e) => e.path === path.basename(model) && e.export === own && (size === undefined || e.size === size));
}

/** True when the record's artifact is still on disk. */
export function artifactExists(rec: CompileRecord): boolean {
  if (rec.backend === 'ort') return !!rec.artifacts.model && fs.existsSync(rec.artifacts.model);
  return !!rec.artifacts.qpc && fs.existsSync(path.join(rec.artifacts.qpc, 'programqpc.bin'));
}

/**
 * Reads the record, or `undefined` when absent, unreadable or naming an artifact compile did
 * not make (see {@link artifactTrusted}; a broken record just means "recompile").
 */
export function readCompileRecord(exportDir: string): CompileRecord | undefined {
  try {
    const r = recordSchema.safeParse(JSON.parse(readRegularFileSync(path.join(exportDir, COMPILE_RECORD), 'utf8')));
    if (r.success && artifactTrusted(exportDir, r.data)) return r.data;
  } catch {
    /* absent or corrupt */
  }
  return undefined;
}

/** Writes the record atomically (temp + rename). */
export async function writeCompileRecord(exportDir: string, rec: CompileRecord): Promise<void> {
  await atomicWriteFile(path.join(exportDir, COMPILE_RECORD), JSON.stringify(rec, null, 2) + '\n');
}
