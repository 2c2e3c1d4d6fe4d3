/**
 * Writes an export directory, whichever exporter made the graph (config.json builder or the
 * legacy-ONNX converter):
 *   <out>/model.onnx          the weight-free graph, spec embedded as metadata com.qti.aisw.extdata
 *   <out>/weight_spec.json    QEfficient v5 bytes
 *   <out>/<prepared name>     symlink to the prepared checkpoint (QEfficient links it there, and
 *                             the spec's `files[].path` go through it), made only when the folder
 *                             exists, as QEfficient's `link_prepared_checkpoint_dir` does: a
 *                             config-only export leaves no dangling link (prepare and compile add it
 *                             later: artifacts/prepared-link.ts; readers go through spec-files.ts)
 *   <out>/export-report.json  what was built, from what, and how long it took. Written first
 *                             with `state: "writing"` (claiming the artifacts, so an interrupted
 *                             run can be re-run) and last with `state: "complete"`.
 * Every write goes through the output guard (no write outside <out>, none through a link) and
 * is atomic. Artifacts of an earlier export (recognized by its report) may be replaced; any
 * other existing file is refused.
 */
import { formatBytes } from '../display';
import { existsSync } from 'node:fs';
import { lstat, readlink, rm } from 'node:fs/promises';
import path from 'node:path';
import { isPreparedUpToDate } from '../prepare/manifest';
import { PipelineError } from '../errors';
import { beginWork, createOutputGuard, failpoint, type OutputGuard, type WorkScope } from '../paths';
import { atomicSymlink } from '../artifacts/prepared-link';
import { EXPORT_REPORT_FILE, EXPORT_REPORT_TOOL, readExportReport } from '../artifacts/export-report';
import { embedSpec, writeSpecText, type MetadataEntry, type WeightSpec } from '../spec';

/** File names inside an export directory. */
export const EXPORT_FILES = { model: 'model.onnx', spec: 'weight_spec.json', report: EXPORT_REPORT_FILE } as const;
export { EXPORT_REPORT_TOOL };

/** What {@link writeExport} needs. `M` is whatever model object the caller's codec encodes. */
export interface ExportOutput<M> {
  outDir: string;
  model: M;
  /** The model's metadata_props (the spec entry is set here before encoding). */
  metadataOf: (m: M) => readonly MetadataEntry[] | undefined;
  /** Returns `m` with `props` as its metadata_props, encoded to ONNX bytes. */
  encode: (m: M, props: MetadataEntry[]) => Uint8Array;
  spec: WeightSpec;
  /** Exporter-specific report fields (kind, source, options, graph facts, timings …). */
  report: Record<string, unknown>;
  /** Symlinks to create in `outDir`: name → absolute target; made only when the target exists. */
  links?: Record<string, string>;
}

/** What {@link writeExport} wrote. */
export interface ExportWritten {
  modelFile: string;
  specFile: string;
  reportFile: string;
  modelBytes: number;
  specBytes: number;
  links: string[];
  report: Record<string, unknown>;
}

function previousArtifacts(outDir: string): string[] {
  const r = readExportReport(outDir);
  if (!r) return [];
  const links = r.links.filter((l) => !l.includes('/') && l !== '..');
  return [EXPORT_FILES.model, EXPORT_FILES.spec, EXPORT_FILES.report, ...links];
}

async function writeLink(outDir: string, name: string, target: string, owned: boolean): Promise<void> {
  const at = path.join(outDir, name);
  const st = await lstat(at).catch(() => undefined);
  if (st) {
    if (st.isSymbolicLink() && (await readlink(at)) === target) return;
    if (!owned || !st.isSymbolicLink())
      throw new PipelineError(`${at} exists and was not made by weight-spec export; remove it or choose another --out`);
  }
  await atomicSymlink(at, target);
}

/** Writes model, spec, links and (last) the report into `o.outDir`. */
export async function writeExport<M>(o: ExportOutput<M>): Promise<ExportWritten> {
  const outDir = path.resolve(o.outDir);
  const owned = previousArtifacts(outDir);
  const guard = createOutputGuard(outDir, { owned });
  const scope = beginWork(outDir, [outDir]);
  try {
    return await writeInScope(o, outDir, owned, guard, scope);
  } finally {
    scope.end();
  }
}

async function writeInScope<M>(
  o: ExportOutput<M>,
  outDir: string,
  owned: string[],
  guard: OutputGuard,
  scope: WorkScope,
): Promise<ExportWritten> {
  for (const f of [EXPORT_FILES.model, EXPORT_FILES.spec, EXPORT_FILES.report]) {
    const abs = path.join(outDir, f);
    if (existsSync(abs) && !guard.owns(abs)) {
      throw new PipelineError(`${abs} exists and was not made by weight-spec export; remove it or choose another --out`);
    }
  }
  for (const name of Object.keys(o.links ?? {})) guard.target(name);
  // Before anything changes, the report claims every artifact this run may write, marked
  // `state: "writing"`: a run killed (or out of space) at any later moment leaves a report
  // that lets the next export replace them, and that no reader takes for a complete export.
  const claimed = [...new Set([...owned.filter((n) => !Object.values(EXPORT_FILES).includes(n as never)), ...Object.keys(o.links ?? {})])];
  await guard.writeFile(
    EXPORT_FILES.report,
    JSON.stringify({ tool: EXPORT_REPORT_TOOL, state: 'writing', links: claimed }, null, 2) + '\n',
  );
  scope.partial = `${outDir} holds an unfinished export (its export-report.json says "writing"); run the export again`;
  await failpoint('export-writing');

  const specText = writeSpecText(o.spec);
  const bytes = o.encode(o.model, embedSpec(o.metadataOf(o.model), o.spec) as MetadataEntry[]);
  const modelFile = await guard.writeFile(EXPORT_FILES.model, bytes);
  const specFile = await guard.writeFile(EXPORT_FILES.spec, specText);
  const links: string[] = [];
  for (const [name, target] of Object.entries(o.links ?? {})) {
    // quic/efficient-transformers QEfficient/exporter/weight_free/export.py (commit 0bd37957)
    // `link_prepared_checkpoint_dir`: `if prepared_out.exists() and not symlink.exists()`.
    if (!existsSync(target)) continue;
    guard.target(name);
    await writeLink(outDir, name, target, claimed.includes(name));
    links.push(name);
  }
  // Links the previous export made and this one does not (another dtype names another
  // prepared directory, or its folder is gone): left behind, they would point at the old
  // layout or at nothing.
  const artifactNames: readonly string[] = Object.values(EXPORT_FILES);
  for (const old of owned) {
    if (artifactNames.includes(old) || links.includes(old)) continue;
    const at = path.join(outDir, old);
    if ((await lstat(at).catch(() => undefined))?.isSymbolicLink()) await rm(at);
  }
  const report = {
    tool: EXPORT_REPORT_TOOL,
    state: 'complete',
    ...o.report,
    files: {
      [EXPORT_FILES.model]: { bytes: bytes.length },
      [EXPORT_FILES.spec]: { bytes: Buffer.byteLength(specText), inputs: o.spec.inputs.length, files: o.spec.files.length },
    },
    links,
    model_id: o.spec.model_id,
  };
  const reportFile = await guard.writeFile(EXPORT_FILES.report, JSON.stringify(report, null, 2) + '\n');
  scope.committed = true;
  return { modelFile, specFile, reportFile, modelBytes: bytes.length, specBytes: Buffer.byteLength(specText), links, report };
}

/**
 * The one-screen stdout summary: a title, aligned `label  value` rows, and next steps.
 * Exporters pass their own rows; the file rows come from what was written.
 */
export function exportSummary(title: string, w: ExportWritten, rows: [string, string][], next: string[]): string[] {
  const all: [string, string][] = [
    [EXPORT_FILES.model, `${formatBytes(w.modelBytes)}  ${path.dirname(w.modelFile)}`],
    [EXPORT_FILES.spec, `${formatBytes(w.specBytes)}`],
    ...rows,
  ];
  const width = Math.max(...all.map(([k]) => k.length));
  return [title, ...all.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`), ...(next.length ? ['next:', ...next.map((n) => `  ${n}`)] : [])];
}

/** One shell word: as it is when it needs no quoting, else single-quoted (a `next:` hint runs as printed). */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `weight-spec prepare` hint of an export: the checkpoint, the dtype and every option that
 * changes the prepared layout (expert-parallel packing), so that it prepares the folder the
 * spec points at — not a sibling that compile then rejects.
 */
export function prepareHint(
  checkpoint: string,
  dtype: string,
  o: { expertParallel?: { stages: number }; keepQuantized?: boolean; lora?: readonly string[] } = {},
): string {
  const ep = o.expertParallel ? ` --moe-flavour expert_parallel --pipeline-stages ${o.expertParallel.stages}` : '';
  const lora = (o.lora ?? []).map((d) => ` --lora ${shellWord(d)}`).join('');
  return `weight-spec prepare --checkpoint ${shellWord(checkpoint)} --dtype ${dtype}${ep}${o.keepQuantized ? ' --keep-quantized' : ''}${lora}`;
}

/**
 * The `next:` steps, without the `weight-spec prepare` step when `preparedDir` already holds a
 * complete, up-to-date prepared checkpoint (suggesting it again would redo nothing).
 */
export async function nextSteps(preparedDir: string, steps: string[]): Promise<string[]> {
  if (!(await isPreparedUpToDate(preparedDir))) return steps;
  return steps.filter((s) => !s.startsWith('weight-spec prepare '));
}
