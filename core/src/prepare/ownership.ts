/**
 * Ownership of prepare's output folder. prepare replaces a whole directory, so before it
 * deletes anything it must prove that every entry there is one it wrote: the manifest lists
 * it (name and size) and nothing else is in the folder. A folder holding the source (or
 * held by it) is never replaced. Two prepares into one folder are serialized by a lock file
 * beside it (lock.ts), so at most one of them reports success.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../errors';
import { INDEX_FILE } from '../formats/safetensors';
import { isInside, printable, readJsonText, realPathOf } from '../paths';
import { MANIFEST_FILE, SENTINEL_FILE, parsePreparedManifest, type PreparedManifest } from './manifest';

/** The manifest of `outDir` when it parses, else why not (ownership then cannot be proven). */
async function manifestOf(outDir: string): Promise<PreparedManifest | string> {
  const file = path.join(outDir, MANIFEST_FILE);
  const st = await fs.lstat(file).catch(() => undefined);
  if (!st) return `no ${MANIFEST_FILE}`;
  if (!st.isFile()) return `${MANIFEST_FILE} is not a regular file`;
  try {
    return parsePreparedManifest(JSON.parse(await readJsonText(file)), file);
  } catch {
    return `${MANIFEST_FILE} is not a weight-spec manifest`;
  }
}

/** Refuses an output folder that holds the source checkpoint or lies inside it (real paths). */
export function checkApartFromSource(outDir: string, source: string): void {
  const out = path.resolve(outDir);
  const realOut = realPathOf(out).real;
  const realSrc = realPathOf(path.resolve(source)).real;
  const shown = printable(out);
  if (isInside(realOut, realSrc)) {
    throw new PipelineError(`${shown}: output directory contains the source checkpoint ${printable(source)}; choose another --out`);
  }
  if (isInside(realSrc, realOut)) {
    throw new PipelineError(`${shown}: output directory lies inside the source checkpoint ${printable(source)}; choose another --out`);
  }
}

/**
 * Refuses (one line, naming the folder and the first foreign entry) unless `outDir` is
 * missing, empty, or holds exactly files a previous prepare recorded in its manifest, with
 * the recorded sizes. Also refuses when `outDir` contains the source checkpoint or lies
 * inside it (replacing it would delete the source).
 */
export async function checkReplaceable(outDir: string, source: string): Promise<void> {
  checkApartFromSource(outDir, source);
  const out = path.resolve(outDir);
  const shown = printable(out);
  const st = await fs.lstat(out).catch(() => undefined);
  if (!st) return;
  if (st.isSymbolicLink()) throw new PipelineError(`${shown}: output directory is a symlink; pass its target instead`);
  if (!st.isDirectory()) throw new PipelineError(`${shown}: exists and is not a directory`);
  const entries = await fs.readdir(out, { withFileTypes: true });
  if (entries.length === 0) return;
  const manifest = await manifestOf(out);
  if (typeof manifest === 'string') {
    throw new PipelineError(`${shown}: exists and is not a prepared checkpoint (${manifest}); refusing to replace it`);
  }
  // Name → recorded size (undefined: a sidecar of an older manifest that kept no sizes).
  const known = new Map<string, number | undefined>();
  for (const f of manifest.output_files) known.set(f.path, f.size);
  for (const s of manifest.sidecars) known.set(s, undefined);
  known.set(INDEX_FILE, undefined);
  for (const f of manifest.written_files ?? []) known.set(f.path, f.size);
  for (const e of entries) {
    const name = e.name;
    if (name === MANIFEST_FILE || name === SENTINEL_FILE) {
      if (!e.isFile()) throw foreign(shown, name, 'is not a regular file');
      continue;
    }
    if (!known.has(name)) throw foreign(shown, name, `is not listed in its ${MANIFEST_FILE}`);
    if (e.isDirectory()) throw foreign(shown, name, 'is a directory prepare did not make');
    const size = known.get(name);
    if (size === undefined) continue;
    const fst = await fs.stat(path.join(out, name)).catch(() => undefined);
    if (fst && fst.size !== size) throw foreign(shown, name, `is ${fst.size} bytes, the manifest says ${size} (changed after prepare)`);
  }
}

function foreign(dir: string, name: string, why: string): PipelineError {
  return new PipelineError(`${dir}: refusing to replace it: ${printable(name)} ${why}; move it away or choose another --out`);
}

export { lockFileOf, lockOutput, type OutputLock } from './lock';
