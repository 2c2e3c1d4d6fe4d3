/**
 * `export --config` for a vision-language model: two export directories under `<out>` —
 * `vision/` and `language/`, each a normal export (model.onnx + weight_spec.json + link +
 * export-report.json) — whose specs point into ONE prepared checkpoint (keys `model.visual.*`,
 * `model.language_model.*`, `lm_head.weight`; Qwen2.5-VL's `visual.*`, `model.*`). `<out>/vlm.json`, written last, ties them
 * together for `compile` and `run`: model type, the token ids and processor sizes `run`
 * needs, and the two directory names.
 */
import path from 'node:path';
import { PipelineError } from '../../../errors';
import type { ExportDtype } from '../../../formats/dtype';
import { createOutputGuard } from '../../../paths';
import type { WeightSpec } from '../../../spec';
import { formatBytes } from '../../../display';
import { exportSummary, writeExport, type ExportWritten } from '../../write-export';
import type { ModelObj } from '../builder';
import { checkGraph } from '../check-graph';
import { encodeBuiltModel } from '../encode';
import { checkLayout, layoutFromConfig, preparedDirFor, type PreparedLayout } from '../layout';
import type { LayoutPlanner } from '../export-config';
import { vlmArchFromConfig, type VlmArch } from './config';
import { buildLanguage } from './language';
import { buildVision } from './vision';
import { hubRecord } from '../../../hub/hf-cache';

/** Marker file of a VLM export directory. */
export const VLM_MANIFEST = 'vlm.json';
/** Sub-export directory names. */
export const VLM_GRAPHS = ['vision', 'language'] as const;

/** What `run` reads from `<out>/vlm.json`. */
export interface VlmManifest {
  tool: 'weight-spec export';
  kind: 'vlm';
  model_type: string;
  config: string;
  graphs: { vision: string; language: string };
  image_token_id: number;
  video_token_id: number;
  vision_start_token_id: number;
  vision: { patch_size: number; temporal_patch_size: number; spatial_merge_size: number; in_channels: number; num_feature_layers: number };
  text: { hidden_size: number; num_hidden_layers: number };
  dtype: ExportDtype;
}

/** Options (a subset of the text export's). */
export interface VlmExportOptions {
  cfgFile: string;
  cfgDir: string;
  raw: unknown;
  out: string;
  dtype: ExportDtype;
  opset?: number;
  ctxLen?: number;
  batchSize?: number;
  continuousBatching?: boolean;
  withCheckpoint: boolean;
  planner?: LayoutPlanner;
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
export async function exportVlm(o: VlmExportOptions): Promise<{ summary: string[]; arch: VlmArch; written: ExportWritten[] }> {
  const t0 = performance.now();
  const arch = vlmArchFromConfig(o.raw, o.cfgFile);
  let layout: PreparedLayout | undefined;
  if (o.withCheckpoint) {
    if (!o.planner) throw new PipelineError(`${o.cfgDir}: holds a checkpoint but no prepare planner is available`);
    layout = await o.planner(o.cfgDir, o.dtype);
  }
  const name = path.basename(o.cfgDir);
  const vision = buildVision(arch.vision, { dtype: o.dtype, ...(o.opset !== undefined ? { opset: o.opset } : {}), name: `${name}-vision` });
  const language = buildLanguage(arch, {
    dtype: o.dtype,
    ...(o.opset !== undefined ? { opset: o.opset } : {}),
    ...(o.ctxLen !== undefined ? { ctxLen: o.ctxLen } : {}),
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
    continuousBatching: !!o.continuousBatching,
    name: `${name}-language`,
  });
  for (const m of [vision.model, language.model]) {
    const problems = checkGraph(m);
    if (problems.length) throw new PipelineError(`internal error: the built ${m.graph.name} graph is malformed: ${problems[0]!.message}`);
  }
  layout ??= layoutFromConfig(arch.text, [...vision.weights, ...language.weights], preparedDirFor(o.cfgDir, o.dtype), o.dtype);
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
      io: {
        inputs: ['pixel_values', 'image_grid_thw'],
        outputs: ['vision_embeds', ...(arch.vision.deepstack.length ? ['deepstack_features'] : [])],
      },
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
          model_type: arch.modelType,
          options: {
            dtype: o.dtype,
            ctx_len: o.ctxLen ?? 'ctx_len',
            batch_size: o.batchSize ?? null,
            continuous_batching: !!o.continuousBatching,
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
    model_type: arch.modelType,
    config: o.cfgFile,
    graphs: { vision: 'vision', language: 'language' },
    image_token_id: arch.imageTokenId,
    video_token_id: arch.videoTokenId,
    vision_start_token_id: arch.visionStartTokenId,
    vision: {
      patch_size: arch.vision.patch,
      temporal_patch_size: arch.vision.temporalPatch,
      spatial_merge_size: arch.vision.merge,
      in_channels: arch.vision.inChannels,
      num_feature_layers: arch.vision.deepstack.length,
    },
    text: { hidden_size: arch.text.hidden, num_hidden_layers: arch.text.layers.length },
    dtype: o.dtype,
  };
  await guard.writeFile(VLM_MANIFEST, JSON.stringify(manifest, null, 2) + '\n');
  const moe = arch.text.layers.find((l) => l.mlp.kind === 'moe')?.mlp;
  const w = arch.vision.window;
  const visionNote = w
    ? `window ${w.units}×${w.units}, full attention [${w.fullAtt.join(', ')}]`
    : `deepstack [${arch.vision.deepstack.join(', ')}]`;
  const summary = [
    `exported ${name} (${arch.modelType}: vision ${arch.vision.depth} blocks, ${visionNote}; text ${arch.text.layers.length} layers${moe?.kind === 'moe' ? `, ${moe.weights.experts} experts top-${moe.topK}` : ''}) in ${Math.round(performance.now() - t0)} ms (build ${Math.round(tBuild - t0)} ms)`,
    ...written.flatMap((w, i) =>
      exportSummary(
        `  ${parts[i]!.dir}/`,
        w,
        [['graph', `${parts[i]!.model.graph.node.length} nodes, ${o.dtype}, ${parts[i]!.weights.length} weight inputs`]],
        [],
      ).map((l) => `  ${l}`),
    ),
    `  prepared  ${layout.dir} (one checkpoint for both graphs; ${formatBytes(written.reduce((s, w) => s + w.modelBytes, 0))} of ONNX)`,
    'next:',
    ...(o.withCheckpoint
      ? [`  weight-spec prepare --checkpoint ${o.cfgDir} --dtype ${o.dtype}`]
      : [`  weight-spec prepare --checkpoint <checkpoint of ${name}> --dtype ${o.dtype} --out ${layout.dir}`]),
    `  weight-spec compile ${outDir}`,
  ];
  return { summary, arch, written };
}
