/**
 * Finalization, owned by the pipeline alone: in the temp directory the tasks wrote into,
 * write `model.safetensors.index.json`, copy the sidecars, write the strict manifest and,
 * last, the sentinel; then rename the whole directory into place. A run killed at any
 * moment leaves at most a `*.tmp-<pid>-*` sibling (removed by the next run), never a
 * directory that looks prepared.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { hubRecord } from '../hub/hf-cache';
import { INDEX_FILE } from '../formats/safetensors';
import { atomicReplaceDir, atomicWriteFile, fsyncDir, processAlive, TEMP_NAME_RE } from '../paths';
import { MANIFEST_VERSION, SENTINEL_FILE, writePreparedManifest, type PreparedManifest } from '../artifacts/prepared-manifest';
import { checkReplaceable } from './ownership';
import type { PreparePlan } from './types';

/** Sidecars: files copied beside the prepared shards so the directory is a complete HF model folder. */
const EXACT = new Set([
  'config.json',
  'generation_config.json',
  'special_tokens_map.json',
  'chat_template.jinja',
  'chat_template.json',
  'vocab.json',
  'merges.txt',
  'added_tokens.json',
]);

/** True for a sidecar file name (`tokenizer*` included). */
export function isSidecar(name: string): boolean {
  return EXACT.has(name) || name.startsWith('tokenizer');
}

/** Sidecar files present (regular files only) in `dir`, sorted. */
export async function sidecarNames(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    if (e.isFile() && isSidecar(e.name)) out.push(e.name);
  }
  return out.sort();
}

/** The manifest of `plan` once its files exist in `dir`. */
async function buildManifest(
  plan: PreparePlan,
  dir: string,
  sidecars: string[],
  nonFinite: Record<string, number>,
): Promise<PreparedManifest> {
  const files = [...new Set(plan.tasks.map((t) => t.file))];
  const sized = (f: string) => fs.stat(path.join(dir, f)).then((st) => ({ path: f, size: st.size }));
  const output_files = await Promise.all(files.map(sized));
  const written_files = await Promise.all([INDEX_FILE, ...sidecars].map(sized));
  const transforms = new Map<string, { id: string; tasks: number; params: Record<string, unknown> }>();
  for (const t of plan.tasks) {
    const e = transforms.get(t.transform) ?? {
      id: t.transform,
      tasks: 0,
      params: {
        dtype: plan.dtype,
        ...(plan.expertParallel ? { pipelineStages: plan.expertParallel.stages, parallelExperts: plan.expertParallel.experts } : {}),
      },
    };
    e.tasks++;
    transforms.set(t.transform, e);
  }
  return {
    version: MANIFEST_VERSION,
    tool: 'weight-spec',
    source: plan.source,
    ...hubRecord(plan.source),
    target_dtype: plan.dtype,
    fingerprint: plan.fingerprint,
    moe_prefill_flavour: plan.expertParallel ? 'expert_parallel' : null,
    expert_parallel: plan.expertParallel
      ? { pipeline_stages: plan.expertParallel.stages, parallel_experts: plan.expertParallel.experts }
      : null,
    source_files: plan.sourceFiles.map((f) => ({ path: f.path, size: f.size, mtime_ms: f.mtimeMs })),
    transforms: [...transforms.values()],
    tasks: plan.tasks.map((t) => ({
      id: t.id,
      transform: t.transform,
      params: t.params,
      file: t.file,
      inputs: t.inputs.map((r) => r.key),
      outputs: t.outputs.map((r) => r.key),
    })),
    output_files,
    sidecars,
    written_files,
    ...(Object.keys(nonFinite).length > 0 ? { non_finite: sortedRecord(nonFinite) } : {}),
    created_at: createdAt(),
  };
}

/**
 * The manifest's date: now, or `SOURCE_DATE_EPOCH` (seconds) when set — the reproducible-builds
 * convention, so a sharded prepare and a single-host one of the same plan are byte-identical.
 */
export function createdAt(env: NodeJS.ProcessEnv = process.env): string {
  const s = env.SOURCE_DATE_EPOCH;
  if (s !== undefined && /^\d+$/.test(s.trim())) return new Date(Number(s.trim()) * 1000).toISOString();
  return new Date().toISOString();
}

/** Copies `src` to `dst` and fsyncs the copy. */
async function copySynced(src: string, dst: string): Promise<void> {
  await fs.copyFile(src, dst);
  const fh = await fs.open(dst, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** `r` with its keys in order (a stable manifest). */
function sortedRecord(r: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(r).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}

/**
 * Writes index, sidecars, manifest and sentinel into `tmpDir`, then renames it to `plan.outDir`.
 * `nonFinite`: tensors kept with ±Inf/NaN values (`--allow-overflow`) and their counts.
 */
export async function finalizePrepared(plan: PreparePlan, tmpDir: string, nonFinite: Record<string, number> = {}): Promise<void> {
  const weightMap: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const k of [...plan.outputs.keys()].sort()) weightMap[k] = plan.outputs.get(k)!.file;
  const index = { metadata: { total_size: plan.totalBytes }, weight_map: weightMap };
  await atomicWriteFile(path.join(tmpDir, INDEX_FILE), JSON.stringify(index, null, 2) + '\n');
  const sidecars = plan.sourceFiles.map((f) => f.path).filter((p) => !p.includes('/') && isSidecar(p));
  for (const s of sidecars) await copySynced(path.join(plan.source, s), path.join(tmpDir, s));
  const manifest = await buildManifest(plan, tmpDir, sidecars, nonFinite);
  await writePreparedManifest(tmpDir, manifest);
  await atomicWriteFile(path.join(tmpDir, SENTINEL_FILE), plan.fingerprint + '\n');
  await fsyncDir(tmpDir);
  // Checked again right before the old folder goes: a file added there during the run is kept.
  await checkReplaceable(plan.outDir, plan.source);
  await atomicReplaceDir(tmpDir, plan.outDir);
}

/** Removes `<outDir>.tmp-<pid>-*` / `.old-…` leftovers of killed runs (dead pids only). */
export async function removeLeftovers(outDir: string): Promise<string[]> {
  const parent = path.dirname(outDir);
  const base = path.basename(outDir);
  const removed: string[] = [];
  for (const n of await fs.readdir(parent).catch(() => [] as string[])) {
    const m = TEMP_NAME_RE.exec(n);
    if (!m || n.slice(0, m.index) !== base) continue;
    if (processAlive(Number(m[2]))) continue;
    await fs.rm(path.join(parent, n), { recursive: true, force: true });
    removed.push(path.join(parent, n));
  }
  return removed;
}
