/**
 * `export --config`: config.json → weight-free causal-LM ONNX + weight_spec.json against the
 * prepared checkpoint's layout (planned from the checkpoint when the model directory has one,
 * derived from the config otherwise), written by the shared export writer.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { FormatError, oneLine, PipelineError, UsageError } from '../errors';
import type { ExportDtype } from '../formats/dtype';
import type { WeightSpec } from '../spec';
import { formatBytes } from '../display';
import { exportSummary, nextSteps, prepareHint, shellWord, writeExport, type ExportWritten } from './write-export';
import type { ArchSpec } from './blocks/arch';
import { OPSETS, type ModelObj } from './blocks/builder';
import { checkGraph } from './exporter/check-graph';
import { isStateInput, parseStateName, RETAINED } from '../artifacts/graph-interface';
import { buildCausalLM, type Phase } from './exporter/decoder';
import { encodeBuiltModel } from './exporter/encode';
import { archFromConfig } from './families/arch-from-config';
import { DEFAULT_MAX_TOP_K } from './blocks/sampler';
import { checkLayout, layoutFromConfig, modelClassName, preparedDirFor, type LayoutPlanner, type PreparedLayout } from './exporter/layout';
import { readJsonText } from '../paths';
import { isVlmConfig } from './vlm/config';
import type { SlidingCache } from './blocks/attention-window';
import { exportVlm } from './vlm/export-vlm';
import { hubRecord, modelArg } from '../hub/hf-cache';

export type { LayoutPlanner } from './exporter/layout';

/** Options of {@link exportFromConfig}. */
export interface ConfigExportOptions {
  /** Model directory holding config.json (or the config.json file itself). */
  config: string;
  out: string;
  dtype?: ExportDtype;
  ctxLen?: number;
  batchSize?: number;
  continuousBatching?: boolean;
  phase?: Phase;
  /** Used when the model directory holds a checkpoint. */
  planner?: LayoutPlanner;
  /** Default-domain opset, 17 (default, QEfficient's) … 21. */
  opset?: number;
  /** `--moe-flavour expert_parallel --pipeline-stages P`: the MoE blocks consume prepare's packed `[N, P, …]` layout. */
  expertParallel?: { stages: number };
  /** `--mla-cache`: the KV cache form of Multi-head Latent Attention models (per head by default). */
  mlaCache?: 'per-head' | 'compressed';
  /** `--sliding-cache`: Gemma 3's sliding layers over a ctx_len cache (`full`, default) or a `sliding_window` ring (`window`). */
  slidingCache?: SlidingCache;
  /** CCL buckets (`--comp-ctx-lengths-prefill` / `--comp-ctx-lengths-decode`); needs ctxLen. */
  compCtxLengths?: { prefill: number[]; decode: number[] };
  /** The on-device sampler (`--sampler`); maxTopK defaults to min(512, vocab). */
  sampler?: { maxTopK?: number; returnPdfs?: boolean };
}

/**
 * QEfficient's treatment of explicit CCL lists (`QEfficient/utils/check_ccl_specializations.py`
 * `process_ccl_specializations`, steps 1–2): each value capped at ctx_len, duplicates removed,
 * sorted. (Making the prefill list disjoint from the decode list is a compiler limit, applied
 * where the qaic specializations are written.)
 */
export function normalizeCcl(values: number[], ctxLen: number, flag: string): number[] {
  if (values.length === 0) throw new UsageError(`${flag} needs at least one length`);
  for (const v of values) if (!(Number.isInteger(v) && v > 0)) throw new UsageError(`${flag}: ${v} is not a positive integer`);
  return [...new Set(values.map((v) => Math.min(v, ctxLen)))].sort((x, y) => x - y);
}

/** Result: what was written and the stdout summary. */
export interface ConfigExportResult {
  written: ExportWritten;
  summary: string[];
  arch: ArchSpec;
}

/** True when `dir` holds a safetensors checkpoint. */
export function hasCheckpoint(dir: string): boolean {
  try {
    return readdirSync(dir).some((n) => n.endsWith('.safetensors') || n === 'model.safetensors.index.json');
  } catch {
    return false;
  }
}

/**
 * The model's name for a config file: its folder's name when the file is a `config.json` (a model
 * folder), else the file's own stem (`--config configs/qwen3-30b.json` is "qwen3-30b", not "configs").
 */
export function modelNameOfConfig(file: string): string {
  const base = path.basename(file);
  return base === 'config.json' ? path.basename(path.dirname(file)) : base.replace(/\.json$/i, '').replace(/[._-]config$/i, '') || base;
}

async function readConfig(p: string): Promise<{ file: string; dir: string; raw: unknown; name: string }> {
  const abs = path.resolve(p);
  if (!existsSync(abs)) throw new UsageError(`${p}: no such file or directory`);
  const file = statSync(abs).isDirectory() ? path.join(abs, 'config.json') : abs;
  let text: string;
  try {
    text = await readJsonText(file);
  } catch (err) {
    throw err instanceof FormatError ? err : new FormatError(file, `cannot read config: ${oneLine(err)}`);
  }
  try {
    return { file, dir: path.dirname(file), raw: JSON.parse(text), name: modelNameOfConfig(file) };
  } catch (err) {
    throw new FormatError(file, `not valid JSON: ${oneLine(err)}`);
  }
}

/** Builds, checks and writes the export. */
export async function exportFromConfig(o: ConfigExportOptions): Promise<ConfigExportResult> {
  const t0 = performance.now();
  const dtype = o.dtype ?? 'float32';
  if (o.ctxLen !== undefined && !(Number.isInteger(o.ctxLen) && o.ctxLen > 0))
    throw new UsageError(`--ctx-len must be a positive integer (got ${o.ctxLen})`);
  if (o.batchSize !== undefined && !(Number.isInteger(o.batchSize) && o.batchSize > 0))
    throw new UsageError(`--batch-size must be a positive integer (got ${o.batchSize})`);
  if (o.opset !== undefined && !(OPSETS as readonly number[]).includes(o.opset))
    throw new UsageError(`--opset must be one of ${OPSETS.join(', ')} (got ${o.opset})`);
  let ccl: { prefill: number[]; decode: number[] } | undefined;
  if (o.compCtxLengths) {
    if (o.ctxLen === undefined)
      throw new UsageError(
        '--comp-ctx-lengths-prefill/--comp-ctx-lengths-decode need --ctx-len (QEfficient: "ctx_len is required when loading the model with CCL")',
      );
    ccl = {
      prefill: normalizeCcl(o.compCtxLengths.prefill, o.ctxLen, '--comp-ctx-lengths-prefill'),
      decode: normalizeCcl(o.compCtxLengths.decode, o.ctxLen, '--comp-ctx-lengths-decode'),
    };
  }
  const cfg = await readConfig(o.config);
  const withCheckpoint = hasCheckpoint(cfg.dir);
  if (isVlmConfig(cfg.raw)) {
    // vision-language models export as two graphs over one prepared checkpoint (vlm/export-vlm.ts)
    if (o.phase !== undefined && o.phase !== 'both')
      throw new UsageError(`--phase ${o.phase} is not supported for vision-language models (the language graph serves both phases)`);
    if (o.expertParallel)
      throw new UsageError('--moe-flavour expert_parallel is not supported for vision-language models yet (export the plain layout)');
    if (o.mlaCache)
      throw new UsageError('--mla-cache goes with a Multi-head Latent Attention model (deepseek_v3, kimi_k2), not a vision-language model');
    // the language graph does not take comp_ctx_lengths or carry the sampler yet: refuse rather than drop them
    if (o.compCtxLengths)
      throw new UsageError('--comp-ctx-lengths-prefill/--comp-ctx-lengths-decode are not supported for vision-language models yet');
    if (o.sampler) throw new UsageError('--sampler is not supported for vision-language models yet');
    const r = await exportVlm({
      cfgFile: cfg.file,
      cfgDir: cfg.dir,
      name: cfg.name,
      raw: cfg.raw,
      out: o.out,
      dtype,
      opset: o.opset,
      ctxLen: o.ctxLen,
      batchSize: o.batchSize,
      continuousBatching: o.continuousBatching,
      ...(o.slidingCache !== undefined ? { slidingCache: o.slidingCache } : {}),
      withCheckpoint,
      planner: o.planner,
    });
    return { written: r.written[1]!, summary: r.summary, arch: r.arch.text };
  }

  let layout: PreparedLayout | undefined;
  if (withCheckpoint) {
    if (!o.planner) throw new PipelineError(`${cfg.dir}: holds a checkpoint but no prepare planner is available`);
  }
  // the architecture first: a model without experts (or experts that do not split into P) is a usage error before any planning
  const ep = {
    ...(o.expertParallel ? { expertParallel: o.expertParallel } : {}),
    ...(o.mlaCache ? { mlaCache: o.mlaCache } : {}),
    ...(o.slidingCache !== undefined ? { slidingCache: o.slidingCache } : {}),
  };
  archFromConfig(cfg.raw, cfg.file, ep);
  if (withCheckpoint) layout = await o.planner!(cfg.dir, dtype, ep);
  const arch = archFromConfig(cfg.raw, cfg.file, { ...(layout ? { keys: new Set(layout.tensors.keys()) } : {}), ...ep });
  const tPlan = performance.now();
  let sampler: { maxTopK: number; returnPdfs: boolean } | undefined;
  if (o.sampler) {
    const k = o.sampler.maxTopK ?? Math.min(DEFAULT_MAX_TOP_K, arch.vocab);
    if (!(Number.isInteger(k) && k >= 1 && k <= arch.vocab))
      throw new UsageError(`--max-top-k must be between 1 and the vocabulary size ${arch.vocab} (got ${k})`);
    sampler = { maxTopK: k, returnPdfs: !!o.sampler.returnPdfs };
  }
  const built = buildCausalLM(arch, {
    dtype,
    ...(o.ctxLen !== undefined ? { ctxLen: o.ctxLen } : {}),
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    continuousBatching: !!o.continuousBatching,
    phase: o.phase ?? 'both',
    name: cfg.name,
    ...(o.opset !== undefined ? { opset: o.opset } : {}),
    ...(ccl ? { compCtxLengths: ccl } : {}),
    ...(sampler ? { sampler } : {}),
  });
  const problems = checkGraph(built.model);
  if (problems.length) throw new PipelineError(`internal error: the built graph is malformed: ${problems[0]!.message}`);
  layout ??= layoutFromConfig(arch, built.weights, preparedDirFor(cfg.dir, dtype), dtype);
  const keyOf = checkLayout(built.weights, layout, cfg.file, cfg.raw as Record<string, unknown>);
  const tBuild = performance.now();

  const link = path.basename(layout.dir);
  const fileIndex = new Map<string, number>();
  const files: WeightSpec['files'] = [];
  const inputs: WeightSpec['inputs'] = built.weights.map((w) => {
    const key = keyOf.get(w.name)!;
    const f = layout.tensors.get(key)!.file;
    let idx = fileIndex.get(f);
    if (idx === undefined) {
      idx = files.length;
      fileIndex.set(f, idx);
      files.push({ format: 'safetensors', path: `${link}/${f}` });
    }
    return { location: { file: idx, key }, name: w.name };
  });
  const spec: WeightSpec = { version: 5, files, inputs, model_id: layout.dir, model_name: modelClassName(cfg.raw, cfg.name) };
  const experts = arch.layers.find((l) => l.mlp.kind === 'moe')?.mlp;
  const stateKinds = [...new Set(built.io.inputs.map(parseStateName).flatMap((p) => (p ? [p.kind] : [])))];
  const weightElems = built.weights.reduce((s, w) => s + w.shape.reduce((a, b) => a * b, 1), 0);

  const written = await writeExport<ModelObj>({
    outDir: o.out,
    model: built.model,
    metadataOf: (m) => m.metadataProps,
    encode: (m, props) => encodeBuiltModel({ ...m, metadataProps: props.map((p) => ({ key: p.key ?? '', value: p.value ?? '' })) }),
    spec,
    links: { [link]: layout.dir },
    report: {
      kind: 'config',
      source: { config: cfg.file, checkpoint: withCheckpoint ? cfg.dir : null, ...hubRecord(cfg.dir) },
      model_type: arch.modelType,
      options: {
        dtype,
        ctx_len: o.ctxLen ?? 'ctx_len',
        batch_size: o.batchSize ?? null,
        continuous_batching: !!o.continuousBatching,
        phase: o.phase ?? 'both',
        ...(o.expertParallel ? { moe_flavour: 'expert_parallel', pipeline_stages: o.expertParallel.stages } : {}),
        ...(o.mlaCache ? { mla_cache: o.mlaCache } : {}),
        ...(o.slidingCache !== undefined ? { sliding_cache: o.slidingCache } : {}),
        comp_ctx_lengths_prefill: ccl?.prefill ?? null,
        comp_ctx_lengths_decode: ccl?.decode ?? null,
        sampler: sampler ? { max_top_k_ids: sampler.maxTopK, return_pdfs: sampler.returnPdfs } : null,
      },
      graph: {
        layers: built.layers,
        nodes: built.model.graph.node.length,
        opset: built.model.opsetImport[0]!.version,
        inputs: built.io.inputs
          .filter((n) => !isStateInput(n))
          .concat(`${stateKinds.map((k) => `${k}.{i}`).join(' / ')} for i < ${built.layers}`),
        outputs: built.io.outputs
          .filter((n) => !(n.endsWith(RETAINED) && isStateInput(n.slice(0, -RETAINED.length))))
          .concat(`${stateKinds.map((k) => `${k}.{i}${RETAINED}`).join(' / ')} for i < ${built.layers}`),
        logits: 'last valid position per row (argmax of position_ids); feed one token per call for every position',
      },
      weights: { count: built.weights.length, elements: weightElems },
      prepared: { dir: layout.dir, layout: layout.source, files: files.length },
      timings_ms: { plan: Math.round(tPlan - t0), build: Math.round(tBuild - tPlan) },
    },
  });
  const arch1 = `${arch.modelType}, ${arch.layers.length} layers, hidden ${arch.hidden}, ${arch.nHeads}/${arch.nKv} heads`;
  const summary = exportSummary(
    `exported ${cfg.name} (${arch1}${experts?.kind === 'moe' ? `, ${experts.weights.experts} experts top-${experts.topK}` : ''}) in ${Math.round(performance.now() - t0)} ms`,
    written,
    [
      [
        'graph',
        `${built.model.graph.node.length} nodes, opset ${built.model.opsetImport[0]!.version}, ${dtype}, phase ${o.phase ?? 'both'}${o.continuousBatching ? ', continuous batching' : ''}`,
      ],
      ...(ccl
        ? [
            ['CCL', `comp_ctx_lengths prefill ${ccl.prefill.join(',')}, decode ${ccl.decode.join(',')} (ctx_len ${o.ctxLen})`] as [
              string,
              string,
            ],
          ]
        : []),
      ...(sampler
        ? [
            ['sampler', `on-device sampler, max_top_k_ids ${sampler.maxTopK}${sampler.returnPdfs ? ', returns probs' : ''}`] as [
              string,
              string,
            ],
          ]
        : []),
      [
        'weights',
        `${built.weights.length} inputs, ${weightElems >= 1e9 ? `${(weightElems / 1e9).toFixed(2)} B` : `${(weightElems / 1e6).toFixed(2)} M`} params (${formatBytes(weightElems * (dtype === 'float16' ? 2 : 4))} at ${dtype})`,
      ],
      [
        'prepared',
        `${layout.dir} (${files.length} files, layout ${layout.source === 'plan' ? 'planned from the checkpoint' : 'derived from config.json'})`,
      ],
    ],
    withCheckpoint
      ? await nextSteps(layout.dir, [prepareHint(modelArg(cfg.dir), dtype, o), `weight-spec compile ${shellWord(path.resolve(o.out))}`])
      : [
          // the layout was derived from config.json: --spec makes prepare write exactly it (files, keys), into the folder the report names
          `weight-spec prepare --checkpoint <checkpoint of ${cfg.name}> --dtype ${dtype}${o.expertParallel ? ` --moe-flavour expert_parallel --pipeline-stages ${o.expertParallel.stages}` : ''} --spec ${shellWord(written.specFile)}`,
          `weight-spec check ${shellWord(written.specFile)}`,
        ],
  );
  return { written, summary, arch };
}
