/**
 * Before prepare has run, a spec's prepared shards do not exist yet, but prepare's planner
 * already knows — from the source checkpoint's headers alone — every key, dtype and shape it
 * will write there. This pass finds that source checkpoint (the export's
 * `export-report.json`, else the spec's `model_id` named like prepare's default output beside
 * its source), plans it, and gives each missing prepared file a header made from the plan,
 * so a misspelled key is reported before prepare exactly as after it.
 *
 * The plan is used only when its output directory has the same name as the spec's prepared
 * directory: prepare names it by the plan's fingerprint, so equal names mean the same
 * options (dtype, MoE flavour) and the same layout.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { DTYPE_SIZE, isPrepareDtype } from '../formats/dtype';
import type { SafetensorsHeader, TensorInfo } from '../formats/safetensors';
import { planPrepare, type PreparePlan } from '../prepare';
import { readExportReport } from '../artifacts/export-report';
import type { CheckContext, PlannedSource } from './context';
import { describeOrigin, type TensorFacts } from './prepared-origin';
import { parsePreparedFolderName } from '../artifacts/prepared-folder';

/** The source checkpoint and dtype prepare would be run with for this spec, if they can be found. */
async function findSource(ctx: CheckContext, preparedDirName: string): Promise<PlannedSource | undefined> {
  const report = readExportReport(ctx.specDir);
  const checkpoint = report?.source?.checkpoint;
  const dtype = report?.options?.dtype;
  if (typeof checkpoint === 'string' && typeof dtype === 'string' && isPrepareDtype(dtype)) {
    // an export with --lora: prepare stacks the same adapters, so their keys are planned too
    const lora = report?.source?.lora;
    const dirs = Array.isArray(lora) && lora.every((d) => typeof d === 'string') ? lora.map((d) => path.resolve(ctx.specDir, d)) : [];
    return { checkpoint: path.resolve(ctx.specDir, checkpoint), dtype, ...(dirs.length ? { lora: dirs } : {}) };
  }
  // prepare's default output is `<parent>/<name>-prepared-<dtype>-<hash>` beside `<parent>/<name>`.
  const m = parsePreparedFolderName(preparedDirName);
  const modelId = ctx.spec.model_id;
  if (m && typeof modelId === 'string' && path.isAbsolute(modelId) && path.basename(modelId) === preparedDirName) {
    const checkpoint = path.join(path.dirname(modelId), m.name);
    const st = await fs.stat(checkpoint).catch(() => undefined);
    if (st?.isDirectory()) return { checkpoint, dtype: m.dtype };
  }
  return undefined;
}

interface CacheEntry {
  signature: string;
  plan: PreparePlan | undefined;
}
const planCache = new Map<string, CacheEntry>();

/** Size and mtime of every file in the checkpoint folder (and the adapter folders): a re-plan is needed only when they change. */
async function signatureOf(checkpoint: string, lora: readonly string[] = []): Promise<string> {
  const parts: string[] = [];
  for (const dir of [checkpoint, ...lora]) {
    const names = await fs.readdir(dir).catch(() => [] as string[]);
    for (const n of names.sort()) {
      if (!/\.(safetensors|json)$/.test(n)) continue;
      const st = await fs.stat(path.join(dir, n)).catch(() => undefined);
      if (st) parts.push(`${dir === checkpoint ? '' : `${dir}/`}${n}:${st.size}:${st.mtimeMs}`);
    }
  }
  return parts.join('|');
}

/** The plan cache's key of a source. */
const planKey = (s: PlannedSource) => [s.checkpoint, s.dtype, ...(s.lora ?? [])].join('\u0000');

/** The plan of `source`, cached while the checkpoint's files are unchanged; undefined when it cannot be planned. */
async function cachedPlan(source: PlannedSource): Promise<PreparePlan | undefined> {
  const key = planKey(source);
  const signature = await signatureOf(source.checkpoint, source.lora);
  const hit = planCache.get(key);
  if (hit && hit.signature === signature) return hit.plan;
  let plan: PreparePlan | undefined;
  try {
    plan = await planPrepare({ checkpoint: source.checkpoint, dtype: source.dtype, ...(source.lora ? { lora: source.lora } : {}) });
  } catch {
    plan = undefined; // an unplannable source: the files stay "not prepared yet", nothing more
  }
  if (planCache.size > 32) planCache.clear();
  planCache.set(key, { signature, plan });
  return plan;
}

/**
 * Gives each `files[]` entry marked `missingPrepared` a header planned from its source
 * checkpoint (see the module comment). Entries that cannot be planned are left as they are.
 */
export async function planMissingPrepared(ctx: CheckContext): Promise<void> {
  const missing = ctx.files.map((s, i) => ({ s, i })).filter(({ s }) => s.missingPrepared && s.abs);
  if (missing.length === 0) return;
  const dirName = path.basename(path.dirname(missing[0]!.s.abs!));
  const source = await findSource(ctx, dirName);
  if (!source) return;
  const plan = await cachedPlan(source);
  if (!plan || path.basename(path.resolve(plan.outDir)) !== dirName) return;
  const byFile = new Map<string, Map<string, TensorInfo>>();
  const outDir = path.resolve(plan.outDir);
  for (const [key, t] of plan.outputs) {
    const rel = (path.isAbsolute(t.file) ? path.relative(outDir, t.file) : t.file).split(path.sep).join('/');
    let m = byFile.get(rel);
    if (!m) byFile.set(rel, (m = new Map()));
    const bytes = t.shape.reduce((a, b) => a * b, 1) * DTYPE_SIZE[t.dtype];
    m.set(key, { key, dtype: t.dtype, shape: t.shape, dataOffset: 0, byteLength: bytes, begin: 0, end: bytes });
  }
  for (const { s } of missing) {
    if (path.basename(path.dirname(s.abs!)) !== dirName) continue;
    const tensors = byFile.get(path.basename(s.abs!)) ?? new Map<string, TensorInfo>();
    const header: SafetensorsHeader = { file: s.abs!, fileSize: 0, headerLength: 0, dataStart: 0, tensors };
    s.header = header;
    s.planned = source;
  }
}

/**
 * Hover lines on where planned `key` comes from (an MXFP4 dequantization, see
 * prepared-origin.ts), from the plan the last check made of `source`.
 */
export function describePlannedOrigin(source: PlannedSource, key: string, info: TensorFacts): string[] {
  const plan = planCache.get(planKey(source))?.plan;
  if (!plan) return [];
  const tasks = plan.tasks.map((t) => ({
    transform: t.transform,
    inputs: t.inputs.map((r) => r.key),
    outputs: t.outputs.map((r) => r.key),
  }));
  return describeOrigin(tasks, key, info, (k) => plan.tasks.find((t) => t.sources[k])?.sources[k], plan.source);
}

/** ` (checked against prepare's plan of <checkpoint>; not prepared yet)` for planned files, else empty. */
export function plannedNote(ctx: CheckContext, fileIndex: number): string {
  const p = ctx.files[fileIndex]?.planned;
  const lora = (p?.lora ?? []).map((d) => ` --lora ${d}`).join('');
  return p
    ? `; not prepared yet, checked against the plan of \`weight-spec prepare --checkpoint ${p.checkpoint} --dtype ${p.dtype}${lora}\``
    : '';
}
