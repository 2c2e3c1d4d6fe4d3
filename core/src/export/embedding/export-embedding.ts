/**
 * `export --config` of an embedding encoder (BERT, XLM-RoBERTa; encoder-config.ts): one graph
 * (encoder-graph.ts) with the sentence-transformers pooling when the folder lists it
 * (pooling.ts), its weight spec against the prepared checkpoint's layout (planned from the
 * checkpoint, or derived from the config), written by the shared export writer.
 */
import path from 'node:path';
import { PipelineError, UsageError } from '../../errors';
import type { ExportDtype } from '../../formats/dtype';
import type { WeightSpec } from '../../spec';
import { formatBytes } from '../../display';
import { exportSummary, nextSteps, prepareHint, shellWord, writeExport, type ExportWritten } from '../write-export';
import type { ModelObj } from '../blocks/builder';
import { checkGraph } from '../exporter/check-graph';
import { encodeBuiltModel } from '../exporter/encode';
import { checkLayout, layoutFromConfig, modelClassName, preparedDirFor, type LayoutPlanner, type PreparedLayout } from '../exporter/layout';
import { hubRecord, modelArg } from '../../hub/hf-cache';
import { encoderArchFromConfig, maxSequence, type EncoderArch } from './encoder-config';
import { buildEncoder } from './encoder-graph';
import { readPooling } from './pooling';

/** What {@link exportEmbedding} needs (export-config.ts reads the config and hands it on). */
export interface EmbeddingExportOptions {
  cfgFile: string;
  cfgDir: string;
  name: string;
  raw: unknown;
  out: string;
  dtype: ExportDtype;
  opset?: number;
  batchSize?: number;
  withCheckpoint: boolean;
  planner?: LayoutPlanner;
}

/** The options of the decoder export that have no meaning for an encoder: refused, never ignored. */
export function refuseDecoderOptions(o: Record<string, unknown>): void {
  const named: [string, string][] = [
    ['ctxLen', '--ctx-len'],
    ['continuousBatching', '--continuous-batching'],
    ['expertParallel', '--moe-flavour expert_parallel'],
    ['mlaCache', '--mla-cache'],
    ['slidingCache', '--sliding-cache'],
    ['compCtxLengths', '--comp-ctx-lengths-prefill/--comp-ctx-lengths-decode'],
    ['sampler', '--sampler'],
  ];
  for (const [k, flag] of named)
    if (o[k] !== undefined && o[k] !== false)
      throw new UsageError(`${flag} goes with a causal LM (KV cache); an embedding encoder has none`);
  if (o.phase !== undefined && o.phase !== 'both')
    throw new UsageError(`--phase ${String(o.phase)} goes with a causal LM; an embedding encoder has one graph`);
}

/** The spec of `weights` over `layout`, each input at the key `keyOf` names. */
function specOf(weights: { name: string }[], keyOf: Map<string, string>, layout: PreparedLayout, modelName: string): WeightSpec {
  const link = path.basename(layout.dir);
  const fileIndex = new Map<string, number>();
  const files: WeightSpec['files'] = [];
  const inputs = weights.map((w) => {
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
  return { version: 5, files, inputs, model_id: layout.dir, model_name: modelName };
}

/** Builds, checks and writes the embedding export. */
export async function exportEmbedding(
  o: EmbeddingExportOptions,
): Promise<{ written: ExportWritten; summary: string[]; arch: EncoderArch }> {
  const t0 = performance.now();
  const arch = encoderArchFromConfig(o.raw, o.cfgFile);
  const pooling = await readPooling(o.cfgDir, arch.hidden);
  const built = buildEncoder(arch, pooling, {
    dtype: o.dtype,
    name: o.name,
    ...(o.opset !== undefined ? { opset: o.opset } : {}),
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
  });
  const problems = checkGraph(built.model);
  if (problems.length) throw new PipelineError(`internal error: the built embedding graph is malformed: ${problems[0]!.message}`);
  let layout: PreparedLayout;
  if (o.withCheckpoint) {
    if (!o.planner) throw new PipelineError(`${o.cfgDir}: holds a checkpoint but no prepare planner is available`);
    layout = await o.planner(o.cfgDir, o.dtype);
  } else {
    layout = layoutFromConfig({ layers: [] }, built.weights, preparedDirFor(o.cfgDir, o.dtype), o.dtype);
  }
  const keyOf = checkLayout(built.weights, layout, o.cfgFile, o.raw as Record<string, unknown>);
  const tBuild = performance.now();
  const spec = specOf(built.weights, keyOf, layout, modelClassName(o.raw, arch.hfClass));
  const weightElems = built.weights.reduce((s, w) => s + w.shape.reduce((a, b) => a * b, 1), 0);
  const poolingText = pooling ? `${pooling.modes.join(' + ')} pooling${pooling.normalize ? ', normalized' : ''}` : 'none';
  const written = await writeExport<ModelObj>({
    outDir: o.out,
    model: built.model,
    metadataOf: (m) => m.metadataProps,
    encode: (m, props) => encodeBuiltModel({ ...m, metadataProps: props.map((p) => ({ key: p.key ?? '', value: p.value ?? '' })) }),
    spec,
    links: { [path.basename(layout.dir)]: layout.dir },
    report: {
      kind: 'config',
      graph_role: 'embedding',
      source: { config: o.cfgFile, checkpoint: o.withCheckpoint ? o.cfgDir : null, ...hubRecord(o.cfgDir) },
      model_type: arch.modelType,
      options: { dtype: o.dtype, batch_size: o.batchSize ?? null },
      graph: {
        layers: arch.layers,
        nodes: built.model.graph.node.length,
        opset: built.model.opsetImport[0]!.version,
        inputs: built.io.inputs,
        outputs: built.io.outputs,
        pooling: pooling ? { modes: pooling.modes, normalize: pooling.normalize } : null,
        max_seq_len: maxSequence(arch),
      },
      weights: { count: built.weights.length, elements: weightElems },
      prepared: { dir: layout.dir, layout: layout.source, files: spec.files.length },
      timings_ms: { build: Math.round(tBuild - t0) },
    },
  });
  const summary = exportSummary(
    `exported ${o.name} (${arch.modelType} encoder, ${arch.layers} layers, hidden ${arch.hidden}, ${arch.heads} heads) in ${Math.round(performance.now() - t0)} ms`,
    written,
    [
      ['graph', `${built.model.graph.node.length} nodes, opset ${built.model.opsetImport[0]!.version}, ${o.dtype}`],
      ['io', `${built.io.inputs.join(', ')} → ${built.io.outputs.join(', ')}`],
      ['pooling', poolingText],
      [
        'weights',
        `${built.weights.length} inputs, ${(weightElems / 1e6).toFixed(2)} M params (${formatBytes(weightElems * (o.dtype === 'float16' ? 2 : 4))} at ${o.dtype})`,
      ],
      [
        'prepared',
        `${layout.dir} (${spec.files.length} files, layout ${layout.source === 'plan' ? 'planned from the checkpoint' : 'derived from config.json'})`,
      ],
    ],
    o.withCheckpoint
      ? await nextSteps(layout.dir, [prepareHint(modelArg(o.cfgDir), o.dtype), `weight-spec compile ${shellWord(path.resolve(o.out))}`])
      : [
          `weight-spec prepare --checkpoint <checkpoint of ${o.name}> --dtype ${o.dtype} --spec ${shellWord(written.specFile)}`,
          `weight-spec check ${shellWord(written.specFile)}`,
        ],
  );
  return { written, summary, arch };
}
