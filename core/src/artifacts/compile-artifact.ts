/**
 * The artifact a compile record names, and the list compile keeps beside the artifacts it
 * wrote into a prepared folder (`.weight-spec-compiled.json`): its one reader and writer,
 * through zod, and the two questions every use of `compile.json`'s artifact path asks — is it
 * one compile made for this export ({@link artifactTrusted}), and is it still on disk.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { atomicWriteFile, readJsonTextSync } from '../paths';
import { SENTINEL_FILE } from './prepared-manifest';
import type { CompileRecord } from './compile-record';

/** The name compile gives an ort artifact: `compiled-<stem>-<first 12 hex of the fingerprint>.onnx`. */
export const ARTIFACT_NAME_RE = /^compiled-[A-Za-z0-9._-]*-([0-9a-f]{12})\.onnx$/;

/**
 * The list compile keeps in a prepared folder of the artifacts it wrote there, each with the
 * export it was compiled for (real path) and its size: the proof, kept beside the artifact,
 * that compile made it for that export. A compile.json is a file anyone can write; this list
 * sits in the user's prepared folder, which a repository cannot write into.
 */
export const COMPILED_LIST = '.weight-spec-compiled.json';

function realOf(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

const listEntry = z.looseObject({ path: z.string(), size: z.number(), export: z.string() });
type ListEntry = z.infer<typeof listEntry>;
const listSchema = z.looseObject({ artifacts: z.array(z.unknown()).catch([]) });

/** The list's entries, through zod: a malformed entry is left out, a malformed list is empty. */
function readList(dir: string): ListEntry[] {
  try {
    const v = listSchema.safeParse(JSON.parse(readJsonTextSync(path.join(dir, COMPILED_LIST))));
    if (!v.success) return [];
    return v.data.artifacts.flatMap((e) => {
      const r = listEntry.safeParse(e);
      return r.success ? [r.data] : [];
    });
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
