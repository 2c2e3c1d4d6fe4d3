/**
 * `export --config` for a vision-language model: two export directories under `<out>` —
 * `vision/` and `language/`, each a normal export (model.onnx + weight_spec.json + link +
 * export-report.json) — whose specs point into ONE prepared checkpoint (keys `model.visual.*`,
 * `model.language_model.*`, `lm_head.weight`; Qwen2.5-VL's `visual.*`, `model.*`). `<out>/vlm.json`, written last, ties them
 * together for `compile` and `run`: model type, the token ids and processor sizes `run`
 * needs, and the two directory names.
 */
import path from 'node:path';
import { PipelineError, UsageError } from '../../errors';
import type { ServingRequest } from '../blocks/serving-head';
import { SERVING_METADATA } from '../../artifacts/graph-metadata';
import type { ExportDtype } from '../../formats/dtype';
import { createOutputGuard } from '../../paths';
import type { WeightSpec } from '../../spec';
import { formatBytes } from '../../display';
import { exportSummary, prepareHint, shellWord, writeExport, type ExportWritten } from '../write-export';
import type { ModelObj } from '../blocks/builder';
import { checkGraph } from '../exporter/check-graph';
import { encodeBuiltModel } from '../exporter/encode';
import { checkLayout, layoutFromConfig, preparedDirFor, type LayoutPlanner, type PreparedLayout } from '../exporter/layout';
import type { ArchSpec } from '../blocks/arch';
import type { Phase } from '../exporter/decoder';
import { slidingCacheRefused, type SlidingCache } from '../blocks/attention-window';
import { vlmParts } from './vlm-parts';
import { vlmModelTypeOf } from './config';
import { hubRecord, modelArg } from '../../hub/hf-cache';
import { VLM_MANIFEST_FILE } from '../../spec/file-names';
import { vlmManifestText, type VlmManifest } from '../../artifacts/vlm-manifest';

/** Marker file of a VLM export directory. */
export const VLM_MANIFEST = VLM_MANIFEST_FILE;
/** Sub-export directory names. */
export const VLM_GRAPHS = ['vision', 'language'] as const;

export type { VlmManifest } from '../../artifacts/vlm-manifest';

/**
 * The VLMs whose language decoder QEfficient's `SamplerTransform` takes (QEfficient/transformers/models/
 * pytorch_transforms.py, main ebf55e8: QEffGemma3DecoderWrapper, QEffInternDecoderWrapper,
 * QEffLlama4DecoderWrapper, QEFFLlavaDecoderWrapper, QEffLlavaNextDecoderWrapper,
 * QEffQwen_2_5_vl_DecoderWrapper; Qwen3-VL and Mistral 3 raise
 * "does not support on device sampling"). CCL is on every VLM's language graph.
 */
const SAMPLER_VLMS: ReadonlySet<string> = new Set(['gemma3', 'llava', 'llava_next', 'qwen2_5_vl', 'internvl', 'llama4']);

/** Options (a subset of the text export's, with the serving features). */
export interface VlmExportOptions extends ServingRequest {
  cfgFile: string;
  cfgDir: string;
  /** The model's name (export-config.ts modelNameOfConfig: not the folder of a config file named otherwise). */
  name?: string;
  raw: unknown;
  out: string;
  dtype: ExportDtype;
  opset?: number;
  ctxLen?: number;
  batchSize?: number;
  continuousBatching?: boolean;
  /**
   * `--phase prefill`: the language graph is QEfficient's `lang_prefill_qpc_path` graph (`export(prefill_only=True)`),
   * recorded as `weight_spec.phase` where the text decoder records it, so compile keeps its prefill specializations only.
   */
  phase?: Phase;
  /** `--sliding-cache` (Gemma 3): sliding layers over ctx_len (`full`, default) or a `sliding_window` ring. */
  slidingCache?: SlidingCache;
  withCheckpoint: boolean;
  planner?: LayoutPlanner;
}

/** A metadata value of a built graph. */
function metadataOf(m: ModelObj, key: string): string | undefined {
  return m.metadataProps.find((x) => x.key === key)?.value;
}

function specFor(weights: { name: string }[], layout: PreparedLayout, name: string): WeightSpec {
  const link = path.basename(layout.dir);
  const fileIndex = new Map<string, number>();
  const files: WeightSpec['files'] = [];
  const inputs = weights.map((w) => {
    const f = layout.tensors.get(w.name)!.file;
    let idx = fileIndex.get(f);
    if (idx === undefined) {
      idx = files.length;
      fileIndex.set(f, idx);
      files.push({ format: 'safetensors', path: `${link}/${f}` });
    }
    return { location: { file: idx, key: w.name }, name: w.name };
  });
  return { version: 5, files, inputs, model_id: layout.dir, model_name: name };
}

/** Builds both graphs, checks them against one layout and writes `<out>/{vision,language}` + vlm.json. */
export async function exportVlm(o: VlmExportOptions): Promise<{ summary: string[]; arch: { text: ArchSpec }; written: ExportWritten[] }> {
  const t0 = performance.now();
  const name = o.name ?? path.basename(o.cfgDir);
  const modelType = vlmModelTypeOf(o.raw, o.cfgFile);
  const langOpts = {
    dtype: o.dtype,
    ...(o.opset !== undefined ? { opset: o.opset } : {}),
    ...(o.ctxLen !== undefined ? { ctxLen: o.ctxLen } : {}),
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    continuousBatching: !!o.continuousBatching,
    ...(o.compCtxLengths ? { compCtxLengths: o.compCtxLengths } : {}),
    ...(o.sampler ? { sampler: o.sampler } : {}),
    // the same graph as for both phases (our VLM text models have no prefill-only module swap), marked as the prefill graph
    ...(o.phase === 'prefill' ? { metadata: { 'weight_spec.phase': 'prefill' } } : {}),
    name: `${name}-language`,
  };
  if (o.sampler && !SAMPLER_VLMS.has(modelType))
    throw new UsageError(
      `--sampler: QEfficient's on-device sampler does not take ${modelType}'s language decoder (it takes ${[...SAMPLER_VLMS].join(', ')})`,
    );
  const visionOpts = { dtype: o.dtype, ...(o.opset !== undefined ? { opset: o.opset } : {}), name: `${name}-vision` };
  if (o.slidingCache !== undefined && modelType !== 'gemma3') throw slidingCacheRefused(o.cfgFile, modelType);
  const parts0 = vlmParts(modelType, o, visionOpts, langOpts);
  const { vision, language, text } = parts0;
  let layout: PreparedLayout | undefined;
  if (o.withCheckpoint) {
    if (!o.planner) throw new PipelineError(`${o.cfgDir}: holds a checkpoint but no prepare planner is available`);
    layout = await o.planner(o.cfgDir, o.dtype);
  }
  for (const m of [vision.model, language.model]) {
    const problems = checkGraph(m);
    if (problems.length) throw new PipelineError(`internal error: the built ${m.graph.name} graph is malformed: ${problems[0]!.message}`);
  }
  layout ??= layoutFromConfig(text, [...vision.weights, ...language.weights], preparedDirFor(o.cfgDir, o.dtype), o.dtype);
  checkLayout([...vision.weights, ...language.weights], layout, o.cfgFile);
  const tBuild = performance.now();

  const outDir = path.resolve(o.out);
  const guard = createOutputGuard(outDir, { owned: [path.join(outDir, VLM_MANIFEST)] });
  const written: ExportWritten[] = [];
  const parts = [
    {
      dir: 'vision',
      model: vision.model,
      weights: vision.weights,
      io: parts0.visionIo,
    },
    { dir: 'language', model: language.model, weights: language.weights, io: language.io },
  ];
  for (const p of parts) {
    const spec = specFor(p.weights, layout, `${name}-${p.dir}`);
    written.push(
      await writeExport<ModelObj>({
        outDir: path.join(outDir, p.dir),
        model: p.model,
        metadataOf: (m) => m.metadataProps,
        encode: (m, props) => encodeBuiltModel({ ...m, metadataProps: props.map((x) => ({ key: x.key ?? '', value: x.value ?? '' })) }),
        spec,
        links: { [path.basename(layout.dir)]: layout.dir },
        report: {
          kind: 'config',
          graph_role: p.dir,
          source: { config: o.cfgFile, checkpoint: o.withCheckpoint ? o.cfgDir : null, ...hubRecord(o.cfgDir) },
          model_type: modelType,
          options: {
            dtype: o.dtype,
            ctx_len: o.ctxLen ?? 'ctx_len',
            batch_size: o.batchSize ?? null,
            continuous_batching: !!o.continuousBatching,
            ...(p.dir === 'language' && o.phase === 'prefill' ? { phase: o.phase } : {}),
            ...(o.slidingCache !== undefined ? { sliding_cache: o.slidingCache } : {}),
            ...(p.dir === 'language' && o.compCtxLengths
              ? { comp_ctx_lengths_prefill: o.compCtxLengths.prefill, comp_ctx_lengths_decode: o.compCtxLengths.decode }
              : {}),
            // as the text export reports it: the resolved K the language graph records (serving-head.ts)
            ...(p.dir === 'language' && o.sampler
              ? { sampler: JSON.parse(metadataOf(p.model, SERVING_METADATA.sampler)!) as unknown }
              : {}),
          },
          graph: { nodes: p.model.graph.node.length, opset: p.model.opsetImport[0]!.version, inputs: p.io.inputs, outputs: p.io.outputs },
          weights: { count: p.weights.length },
          prepared: { dir: layout.dir, layout: layout.source, files: spec.files.length },
        },
      }),
    );
  }
  const manifest: VlmManifest = {
    tool: 'weight-spec export',
    kind: 'vlm',
    model_type: modelType,
    config: o.cfgFile,
    graphs: { vision: 'vision', language: 'language' },
    ...parts0.manifest,
    dtype: o.dtype,
  };
  await guard.writeFile(VLM_MANIFEST, vlmManifestText(manifest));
  const summary = [
    `exported ${name} (${modelType}: ${parts0.note}) in ${Math.round(performance.now() - t0)} ms (build ${Math.round(tBuild - t0)} ms)`,
    ...written.flatMap((w, i) =>
      exportSummary(
        `  ${parts[i]!.dir}/`,
        w,
        [
          [
            'graph',
            `${parts[i]!.model.graph.node.length} nodes, ${o.dtype}, ${parts[i]!.weights.length} weight inputs${parts[i]!.dir === 'language' && o.phase === 'prefill' ? ', phase prefill' : ''}`,
          ],
        ],
        [],
      ).map((l) => `  ${l}`),
    ),
    `  prepared  ${layout.dir} (one checkpoint for both graphs; ${formatBytes(written.reduce((s, w) => s + w.modelBytes, 0))} of ONNX)`,
    'next:',
    ...(o.withCheckpoint
      ? [`  ${prepareHint(modelArg(o.cfgDir), o.dtype)}`]
      : [`  weight-spec prepare --checkpoint <checkpoint of ${name}> --dtype ${o.dtype} --out ${layout.dir}`]),
    `  weight-spec compile ${shellWord(outDir)}`,
  ];
  return { summary, arch: { text }, written };
}
