/**
 * `export --config`: config.json → weight-free causal-LM ONNX + weight_spec.json against the
 * prepared checkpoint's layout (planned from the checkpoint when the model directory has one,
 * derived from the config otherwise), written by the shared export writer.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { FormatError, oneLine, PipelineError, UsageError } from '../errors';
import type { WeightSpec } from '../spec';
import { formatBytes } from '../display';
import { exportSummary, nextSteps, prepareHint, shellWord, writeExport, type ExportWritten } from './write-export';
import type { ArchSpec } from './blocks/arch';
import { OPSETS, type ModelObj } from './blocks/builder';
import { checkGraph } from './exporter/check-graph';
import { isStateInput, parseStateName, RETAINED } from '../artifacts/graph-interface';
import { buildCausalLM } from './exporter/decoder';
import { encodeBuiltModel } from './exporter/encode';
import { archFromConfig } from './families/arch-from-config';
import { gptOssPrefillOnly } from './families/gpt-oss';
import { REPLICATE_KV_METADATA, replicateKvArch } from './blocks/replicate-kv';
import { resolveSampler } from './blocks/sampler';
import { SERVING_METADATA } from '../artifacts/graph-metadata';
import { checkLayout, layoutFromConfig, modelClassName, preparedDirFor, type PreparedLayout } from './exporter/layout';
import { readJsonText } from '../paths';
import { isVlmConfig } from './vlm/config';
import { exportVlm } from './vlm/export-vlm';
import { isWhisperConfig } from './whisper/whisper-config';
import { exportWhisper } from './whisper/export-whisper';
import { hubRecord, modelArg } from '../hub/hf-cache';
import { withPackedLinears } from './exporter/keep-quantized';
import { checkLoraExport, loraGraphOf, loraMetadata, loraReport } from './exporter/export-lora';
import { isEmbeddingConfig } from './embedding/encoder-config';
import { exportEmbedding, refuseDecoderOptions } from './embedding/export-embedding';

export type { LayoutPlanner } from './exporter/layout';
export { normalizeCcl, SPD_MODEL_TYPES, type ConfigExportOptions } from './export-options';
import {
  disaggPrefill,
  refuseVlmOptions,
  speculativeTokens,
  whisperRefusal,
  normalizeCcl,
  type ConfigExportOptions,
} from './export-options';

/** Result: what was written and the stdout summary. */
export interface ConfigExportResult {
  written: ExportWritten;
  summary: string[];
  /** The text model's architecture (absent for Whisper, whose two graphs have their own: export/whisper/, and for an embedding encoder: export/embedding/). */
  arch?: ArchSpec;
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
  if (o.keepQuantized && !withCheckpoint)
    throw new UsageError(`--keep-quantized needs the GPTQ/AWQ checkpoint beside ${cfg.file} (the packed layout is planned from it)`);
  if (o.lora?.length) checkLoraExport({ vlm: isVlmConfig(cfg.raw), withCheckpoint, dir: cfg.dir });
  if (o.replicateKvHeads && (isEmbeddingConfig(cfg.raw) || isVlmConfig(cfg.raw)))
    throw new UsageError('--replicate-kv-heads goes with a causal LM (not yet a vision-language model or an embedding encoder)');
  if (isEmbeddingConfig(cfg.raw)) {
    // BERT / XLM-RoBERTa: one encoder graph with its sentence-transformers pooling (export/embedding/)
    refuseDecoderOptions({ ...o });
    if (o.keepQuantized) throw new UsageError('--keep-quantized is not supported for embedding encoders');
    const r = await exportEmbedding({
      ...cfg,
      cfgFile: cfg.file,
      cfgDir: cfg.dir,
      out: o.out,
      dtype,
      opset: o.opset,
      batchSize: o.batchSize,
      withCheckpoint,
      planner: o.planner,
    });
    return { written: r.written, summary: r.summary };
  }
  if (isVlmConfig(cfg.raw)) {
    // vision-language models export as two graphs over one prepared checkpoint (vlm/export-vlm.ts)
    refuseVlmOptions(o);
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
      ...(o.phase === 'prefill' ? { phase: o.phase } : {}),
      ...(o.slidingCache !== undefined ? { slidingCache: o.slidingCache } : {}),
      // CCL and the sampler go in the language graph (vlm/language*.ts; export-vlm.ts says which VLMs take the sampler)
      ...(ccl ? { compCtxLengths: ccl } : {}),
      ...(o.sampler ? { sampler: o.sampler } : {}),
      withCheckpoint,
      planner: o.planner,
    });
    return { written: r.written[1]!, summary: r.summary, arch: r.arch.text };
  }

  if (isWhisperConfig(cfg.raw)) {
    // Whisper exports as an encoder graph and a decoder graph over one prepared checkpoint (whisper/export-whisper.ts)
    const refused = whisperRefusal(o);
    if (refused) throw new UsageError(`${refused} is not supported for Whisper (an encoder graph and a decoder graph with its own caches)`);
    const r = await exportWhisper({
      cfgFile: cfg.file,
      cfgDir: cfg.dir,
      name: cfg.name,
      raw: cfg.raw,
      out: o.out,
      dtype,
      ...(o.opset !== undefined ? { opset: o.opset } : {}),
      ...(o.ctxLen !== undefined ? { ctxLen: o.ctxLen } : {}),
      ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
      withCheckpoint,
      ...(o.planner ? { planner: o.planner } : {}),
    });
    return { written: r.written[1]!, summary: r.summary };
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
  if (withCheckpoint)
    layout = await o.planner!(cfg.dir, dtype, {
      ...ep,
      ...(o.keepQuantized ? { keepQuantized: true } : {}),
      ...(o.lora?.length ? { lora: o.lora } : {}),
    });
  const lora = layout?.lora;
  let arch = archFromConfig(cfg.raw, cfg.file, { ...(layout ? { keys: new Set(layout.tensors.keys()) } : {}), ...ep });
  if (o.keepQuantized) {
    const kept = withPackedLinears(arch, new Map([...layout!.tensors].map(([k, t]) => [k, t.shape])));
    if (kept.packed === 0) throw new UsageError(`--keep-quantized: ${cfg.file} names no GPTQ/AWQ Linear the graph reads`);
    arch = kept.arch;
  }
  const tPlan = performance.now();
  const sampler = o.sampler ? resolveSampler(o.sampler, arch.vocab) : undefined;
  const spd = o.numSpeculativeTokens ? speculativeTokens(o.numSpeculativeTokens, arch.modelType, o) : undefined;
  const disagg = disaggPrefill(arch, o);
  if (disagg && arch.modelType === 'gpt_oss') arch = gptOssPrefillOnly(arch, cfg.file);
  const kvOrig = arch.nKv;
  if (o.replicateKvHeads) arch = replicateKvArch(arch, o.replicateKvHeads, cfg.file);
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
    ...(lora ? { lora: loraGraphOf(lora) } : {}),
    ...(spd ? { numSpeculativeTokens: spd } : {}),
    metadata: {
      ...(lora ? loraMetadata(lora) : {}),
      ...(disagg ? { [SERVING_METADATA.disaggPrefill]: JSON.stringify(disagg) } : {}),
      ...(arch.kvRepeat
        ? { [REPLICATE_KV_METADATA]: JSON.stringify({ orig_kv_heads: kvOrig, num_replicate_kv_heads: arch.kvRepeat }) }
        : {}),
    },
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
      source: {
        config: cfg.file,
        checkpoint: withCheckpoint ? cfg.dir : null,
        ...hubRecord(cfg.dir),
        ...(lora ? { lora: lora.adapters.map((a) => a.dir) } : {}),
      },
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
        ...(spd ? { num_speculative_tokens: spd } : {}),
        ...(disagg ? { disagg_prefill: disagg } : {}),
        ...(o.keepQuantized ? { keep_quantized: true } : {}),
        ...(lora ? { lora: loraReport(lora) } : {}),
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
      ...(spd
        ? [
            [
              'speculative',
              `target model (TLM): num_logits_to_keep input, logits for K + 1 positions per decode call, K = ${spd.join(',')}`,
            ] as [string, string],
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
      ...(lora
        ? [
            [
              'LoRA',
              `lora_ids [batch, 1] picks 0 (base) or ${lora.adapters.map((a) => `${a.id} = ${path.basename(a.dir)}`).join(', ')}; ${lora.modules.length} Linears, rank ${lora.rank}`,
            ] as [string, string],
          ]
        : []),
      [
        'weights',
        `${built.weights.length} inputs, ${weightElems >= 1e9 ? `${(weightElems / 1e9).toFixed(2)} B` : `${(weightElems / 1e6).toFixed(2)} M`} params (${formatBytes(weightElems * (dtype === 'float32' ? 4 : 2))} at ${dtype})`,
      ],
      [
        'prepared',
        `${layout.dir} (${files.length} files, layout ${layout.source === 'plan' ? 'planned from the checkpoint' : 'derived from config.json'})`,
      ],
    ],
    withCheckpoint
      ? await nextSteps(layout.dir, [
          prepareHint(modelArg(cfg.dir), dtype, { ...o, lora: lora?.adapters.map((a) => a.dir) }),
          `weight-spec compile ${shellWord(path.resolve(o.out))}`,
        ])
      : [
          // the layout was derived from config.json: --spec makes prepare write exactly it (files, keys), into the folder the report names
          `weight-spec prepare --checkpoint <checkpoint of ${cfg.name}> --dtype ${dtype}${o.expertParallel ? ` --moe-flavour expert_parallel --pipeline-stages ${o.expertParallel.stages}` : ''} --spec ${shellWord(written.specFile)}`,
          `weight-spec check ${shellWord(written.specFile)}`,
        ],
  );
  return { written, summary, arch };
}
