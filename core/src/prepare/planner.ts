/**
 * The prepare planner. Reads only safetensors headers (and config.json), lets each
 * transform claim the keys it consumes, and turns the result into tasks: one grouped task
 * per MoE layer (its stacked, packed, converted experts in `experts-layer-NNNNN.safetensors`)
 * and one task per dense shard (`base-NNNN.safetensors`). Export calls this before prepare
 * ever runs to learn where each key will be.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { insideHubCache, modelHome } from '../hub/hf-cache';
import { PipelineError, UsageError } from '../errors';
import { DTYPE_SIZE, dtypeOfName, isPrepareDtype, isFloat, type DType } from '../formats/dtype';
import { Checkpoint, elementCount } from '../formats/safetensors';
import { formatBytes } from '../display';
import { peakOfTensor } from './estimate';
import { planFingerprint, shortHash } from './fingerprint';
import { sidecarNames } from './finalize';
import { describeScheme, isInt4, quantSchemeOf, withQuantizeConfig } from './quant-config';
import { planInt4 } from './transforms/int4';
import { attachScales, planDequant, type DequantPlan } from './transforms/fp8';
import { isFusedDown, planFusedSplit, type MoeSizes } from './transforms/fused-split';
import { layerNumberOf } from '../foundation/layer-number';
import { packExpertParallel, type MoeGroup } from './transforms/moe-common';
import { planMoeStack } from './transforms/moe-stack';
import { planMxfp4 } from './transforms/mxfp4';
import { specLayout } from './spec-layout';
import { planLora } from './lora-plan';
import type { OutputTensor, PlannedTensor, PrepareOptions, PreparePlan, SourceTensor, Task } from './types';
import { preparedFolderName } from '../artifacts/prepared-folder';

/** Dense output shard size limit (the graph builder's derived layout uses the same). */
export const BASE_SHARD_BYTES = 4 * 1024 ** 3;

/** Validates the options (UsageError for a bad combination); N is checked against E once the experts are known. */
function checkOptions(o: PrepareOptions): { stages: number; experts?: number } | undefined {
  if (!isPrepareDtype(o.dtype))
    throw new UsageError(`prepare: --dtype must be float32, float16 or bfloat16 (got ${JSON.stringify(o.dtype)})`);
  const hasPE = o.pipelineStages !== undefined || o.parallelExperts !== undefined;
  if (!o.moeFlavour) {
    if (hasPE) throw new UsageError('prepare: --pipeline-stages/--parallel-experts need --moe-flavour expert_parallel');
    return undefined;
  }
  if (o.moeFlavour !== 'expert_parallel')
    throw new UsageError(`prepare: unknown --moe-flavour ${JSON.stringify(o.moeFlavour)} (expert_parallel)`);
  const P = o.pipelineStages;
  const N = o.parallelExperts;
  if (!Number.isInteger(P) || P! < 1)
    throw new UsageError('prepare: --moe-flavour expert_parallel needs --pipeline-stages P (a positive integer)');
  if (N !== undefined && (!Number.isInteger(N) || N < 1))
    throw new UsageError(`prepare: --parallel-experts must be a positive integer (got ${N})`);
  return { stages: P!, ...(N !== undefined ? { experts: N } : {}) };
}

/**
 * QEfficient's expert-parallel numbers (`modeling_auto.py`, release/v1.22.8.0):
 * num_parallelized_experts N = E / P, with E % P == 0. A given N must satisfy P · N = E.
 */
export function expertParallelSplit(E: number, P: number, N: number | undefined, where: string): number {
  if (E % P !== 0) throw new UsageError(`prepare: ${where}: ${E} experts (E) do not split into ${P} pipeline stages (P): E % P must be 0`);
  if (N !== undefined && P * N !== E) {
    throw new UsageError(
      `prepare: ${where}: --parallel-experts ${N} (N) × --pipeline-stages ${P} (P) = ${P * N}, but the model has ${E} experts (E); N must be E / P = ${E / P} (or left out)`,
    );
  }
  return E / P;
}

/** The text model's config (a VLM nests it under `text_config`). */
function textConfig(config: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const t = config?.text_config;
  return typeof t === 'object' && t !== null && !Array.isArray(t) ? (t as Record<string, unknown>) : config;
}

const posInt = (n: unknown): number | undefined => (typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : undefined);

/** The expert count config.json declares, if any. */
function configuredExperts(config: Record<string, unknown> | undefined): number | undefined {
  const c = textConfig(config);
  return posInt(c?.num_local_experts ?? c?.num_experts);
}

/** Hidden and MoE-intermediate sizes config.json declares (they decide a fused layout). */
export function moeSizes(config: Record<string, unknown> | undefined): MoeSizes {
  const c = textConfig(config);
  const hidden = posInt(c?.hidden_size);
  // Llama 4's experts are intermediate_size wide (its dense layers use intermediate_size_mlp)
  const intermediate = posInt(c?.moe_intermediate_size) ?? (c?.model_type === 'llama4_text' ? posInt(c?.intermediate_size) : undefined);
  return hidden !== undefined && intermediate !== undefined ? { hidden, intermediate } : {};
}

/**
 * Keys of the multi-token-prediction layers (`num_nextn_predict_layers` > 0: DeepSeek-V3,
 * Kimi-K2, GLM-4.5), stored as `model.layers.{i}` with i ≥ num_hidden_layers. They are not part
 * of the causal LM — HF does not load them (DeepseekV3Model `_keys_to_ignore_on_load_unexpected`)
 * and no graph reads them — so prepare writes none of their data (DeepSeek-V3's is a whole MoE layer).
 */
export function mtpKeys(keys: Iterable<string>, config: Record<string, unknown> | undefined): string[] {
  const c = textConfig(config);
  const layers = posInt(c?.num_hidden_layers);
  if (layers === undefined || !posInt(c?.num_nextn_predict_layers)) return [];
  return [...keys].filter((k) => {
    const m = /^model\.layers\.(\d+)\./.exec(k);
    return m !== null && Number(m[1]) >= layers;
  });
}

function finalDtype(src: DType, target: DType): DType {
  return isFloat(src) ? target : src;
}

/** Plans the prepared checkpoint (headers only). See {@link PreparePlan}. */
export async function planPrepare(opts: PrepareOptions): Promise<PreparePlan> {
  const epOpt = checkOptions(opts);
  const target = dtypeOfName(opts.dtype);
  const ckpt = await Checkpoint.open(opts.checkpoint);
  const config = await withQuantizeConfig(ckpt.dir, await ckpt.config());
  const sources = new Map<string, SourceTensor>();
  for (const t of ckpt.tensors()) {
    sources.set(t.key, { key: t.key, file: t.file, dtype: t.dtype, shape: t.shape, offset: t.dataOffset, byteLength: t.byteLength });
  }
  for (const k of mtpKeys(sources.keys(), config)) sources.delete(k);
  // Quantized weights: refused unless prepare can undo them; FP8 scales attach in makeTask.
  const configFile = path.join(ckpt.dir, 'config.json');
  const scheme = quantSchemeOf(config, configFile);
  if (opts.keepQuantized && !isInt4(scheme))
    throw new UsageError(
      `prepare: --keep-quantized keeps GPTQ/AWQ int4 weights packed, but ${configFile} declares ${scheme ? describeScheme(scheme) : 'no quantization_config'}`,
    );
  const dequant = planDequant(sources, isInt4(scheme) ? undefined : scheme, configFile);
  // GPTQ/AWQ Linears: dequantized in place of their qweight, or kept packed (transforms/int4.ts)
  const int4 = planInt4(sources, isInt4(scheme) ? scheme : undefined, target, configFile, !!opts.keepQuantized);

  // MoE transforms claim their keys; the rest stays dense.
  const configured = configuredExperts(config);
  let groups: MoeGroup[] = [
    ...planMxfp4(sources, configured),
    ...planFusedSplit(sources, configured, moeSizes(config)),
    ...planMoeStack(sources, configured),
  ];
  const claimed = new Map<string, string>();
  for (const g of groups) {
    for (const k of g.inputs) {
      const prev = claimed.get(k);
      if (prev) throw new PipelineError(`${k}: claimed by two MoE groups (${prev}, ${g.module})`);
      claimed.set(k, g.module);
    }
  }
  if (int4.outputs.size > 0 && groups.length > 0)
    throw new PipelineError(`${configFile}: GPTQ/AWQ checkpoints with MoE experts are not read by prepare yet (dense models only)`);
  let ep: { stages: number; experts: number } | undefined;
  if (epOpt) {
    if (groups.length === 0) throw new UsageError(`prepare: --moe-flavour expert_parallel, but ${ckpt.dir} has no MoE experts to pack`);
    const perStage = new Set(groups.map((g) => expertParallelSplit(g.experts, epOpt.stages, epOpt.experts, g.module)));
    ep = { stages: epOpt.stages, experts: [...perStage][0]! };
    groups = groups.map((g) => packExpertParallel(g, epOpt.stages));
  }

  let tasks: Task[] = [];
  const byLayer = new Map<number, MoeGroup[]>();
  groups.forEach((g, i) => {
    const layer = layerNumberOf(g.module) ?? 100000 + i;
    byLayer.set(layer, [...(byLayer.get(layer) ?? []), g]);
  });
  for (const layer of [...byLayer.keys()].sort((a, b) => a - b)) {
    const gs = byLayer.get(layer)!;
    const tensors: OutputTensor[] = gs.flatMap((g) =>
      g.tensors.map((t) => ({ ...t, dtype: finalDtype(t.dtype, target), stages: [...t.stages, 'final'] })),
    );
    const inputs = gs.flatMap((g) => g.inputs);
    tasks.push(
      makeTask({
        id: `experts:layer-${layer}`,
        transform: [...new Set(gs.map((g) => g.transform))].join('+'),
        params: {
          dtype: opts.dtype,
          ...(ep ? { pipelineStages: ep.stages, parallelExperts: ep.experts } : {}),
          modules: gs.map((g) => g.module),
        },
        file: `experts-layer-${String(layer).padStart(5, '0')}.safetensors`,
        inputs,
        tensors,
        sources,
        dequant,
      }),
    );
  }

  // Dense keys, in checkpoint order, into base shards: one per source shard (so the tasks
  // can run in parallel), split where a shard would pass BASE_SHARD_BYTES.
  let shard: { keys: string[]; bytes: number; from?: string } = { keys: [], bytes: 0 };
  const shards = [shard];
  const outputsOf = (key: string): OutputTensor[] => {
    const s = sources.get(key)!;
    return (
      int4.outputs.get(key) ?? [
        { key, dtype: finalDtype(s.dtype, target), shape: s.shape, stages: ['source', 'final'], recipe: { kind: 'convert', src: key } },
      ]
    );
  };
  for (const [key, s] of sources) {
    if (claimed.has(key) || isFusedDown(key, sources) || dequant.consumed.has(key) || int4.consumed.has(key)) continue;
    const bytes = outputsOf(key).reduce((a, t) => a + elementCount(t.shape) * DTYPE_SIZE[t.dtype], 0);
    if (shard.keys.length > 0 && (shard.from !== s.file || shard.bytes + bytes > BASE_SHARD_BYTES))
      shards.push((shard = { keys: [], bytes: 0 }));
    shard.from = s.file;
    shard.keys.push(key);
    shard.bytes += bytes;
  }
  shards
    .filter((sh) => sh.keys.length > 0)
    .forEach((sh, i) => {
      const tensors: OutputTensor[] = sh.keys.flatMap(outputsOf);
      const file = `base-${String(i).padStart(4, '0')}.safetensors`;
      const packed = tensors.some((t) => t.recipe.kind === 'int4');
      const task = makeTask({
        id: `dense:${file}`,
        transform: packed ? `${opts.keepQuantized ? 'int4-repack' : 'int4-dequant'}+dense` : 'dense',
        params: { dtype: opts.dtype },
        file,
        inputs: sh.keys.flatMap((k) => int4.inputs.get(k) ?? [k]),
        tensors,
        sources,
        dequant,
      });
      const same = unchangedShard(sh.keys, task.tensors, sources, ckpt.headers.get(sh.from!), dequant.consumed);
      tasks.push(same ? { ...task, link: sh.from!, peakBytes: 0 } : task);
    });

  // --lora: the adapters' stacked tensors, one more task (lora-plan.ts)
  const lora = opts.lora?.length ? await planLora(opts.lora, { dir: ckpt.dir, sources }, target) : undefined;
  if (lora) tasks.push(lora.task);
  if (lora && opts.spec) throw new UsageError('prepare: --spec with --lora is not supported yet; prepare the adapters without --spec');

  let specOut: string | undefined;
  if (opts.spec) ({ tasks, outDir: specOut } = await specLayout(opts.spec, tasks, ckpt.dir, opts.out));

  if (opts.budgetBytes !== undefined) {
    // Name the largest task: raising the budget to its size lets every task run.
    const t = tasks.reduce<Task | undefined>((a, b) => (!a || b.peakBytes > a.peakBytes ? b : a), undefined);
    if (t && t.peakBytes > opts.budgetBytes) {
      throw new PipelineError(
        `task ${t.id} (${t.file}) needs an estimated ${formatBytes(t.peakBytes)} at once, over the RAM budget of ${formatBytes(opts.budgetBytes)}; raise --max-ram-gb`,
      );
    }
  }

  const outputs = new Map<string, PlannedTensor>();
  for (const t of tasks) for (const x of t.tensors) outputs.set(x.key, { file: t.file, dtype: x.dtype, shape: x.shape });

  const extra = [
    ...(ckpt.indexFile ? [ckpt.indexFile] : []),
    ...(await sidecarNames(ckpt.dir)).map((n) => path.join(ckpt.dir, n)),
    ...(lora?.files ?? []),
  ];
  const sourceFiles = await Promise.all(
    [...new Set([...ckpt.files, ...extra])].map(async (f) => {
      const st = await fs.stat(f);
      return { path: path.relative(ckpt.dir, f), size: st.size, mtimeMs: st.mtimeMs };
    }),
  );
  const fingerprint = planFingerprint({ sourceFiles, dtype: opts.dtype, expertParallel: ep, tasks });
  // beside the source, or for a snapshot of the Hugging Face cache in weight-spec's own home
  const home = modelHome(ckpt.dir);
  const outDir = specOut
    ? specOut
    : opts.out
      ? path.resolve(opts.out)
      : path.join(home.parent, preparedFolderName(home.name, opts.dtype, shortHash(fingerprint)));
  if (path.resolve(outDir) === path.resolve(ckpt.dir)) throw new UsageError(`prepare: --out ${outDir} is the source checkpoint itself`);
  if (insideHubCache(outDir))
    throw new UsageError(
      `prepare: --out ${outDir} is inside the Hugging Face cache or a folder laid out like one (models--…/snapshots), which weight-spec never writes to; name a folder outside it`,
    );
  return {
    fingerprint,
    outDir,
    source: ckpt.dir,
    dtype: opts.dtype,
    tasks,
    outputs,
    sourceFiles,
    ...(ep ? { expertParallel: ep } : {}),
    ...(lora ? { lora: lora.stack } : {}),
    totalBytes: tasks.reduce((a, t) => a + t.outBytes, 0),
  };
}

function makeTask(p: {
  id: string;
  transform: string;
  params: Record<string, unknown>;
  file: string;
  inputs: string[];
  tensors: OutputTensor[];
  sources: Map<string, SourceTensor>;
  dequant: DequantPlan;
}): Task {
  // FP8 weights dequantize first: their scales become inputs of the task that reads them.
  const { tensors, scaleKeys } = attachScales(p.tensors, p.dequant);
  const inputs = [...p.inputs, ...scaleKeys];
  const transform = scaleKeys.length ? `fp8-dequant+${p.transform}` : p.transform;
  const srcs: Record<string, SourceTensor> = Object.create(null) as Record<string, SourceTensor>;
  for (const k of inputs) srcs[k] = p.sources.get(k)!;
  const byKey = new Map(tensors.map((t) => [t.key, t]));
  return {
    id: p.id,
    transform,
    params: p.params,
    inputs: inputs.map((key) => ({ key, stage: 'source' })),
    outputs: tensors.map((t) => ({ key: t.key, stage: 'final' })),
    sourceFiles: [...new Set(inputs.map((k) => srcs[k]!.file))],
    file: p.file,
    peakBytes: Math.max(0, ...tensors.map((t) => peakOfTensor(t, srcs, byKey))),
    outBytes: tensors.reduce((a, t) => a + elementCount(t.shape) * DTYPE_SIZE[t.dtype], 0),
    sources: srcs,
    tensors,
  };
}

/**
 * True when a dense shard is its source file unchanged: it holds every tensor of that file,
 * none is dequantized, converted or claimed by a transform — so the file can be linked.
 */
function unchangedShard(
  keys: string[],
  tensors: OutputTensor[],
  sources: Map<string, SourceTensor>,
  header: { tensors: Map<string, unknown> } | undefined,
  consumed: ReadonlySet<string>,
): boolean {
  if (!header || header.tensors.size !== keys.length) return false;
  return tensors.every((t) => {
    const s = sources.get(t.key)!;
    return header.tensors.has(t.key) && t.recipe.kind === 'convert' && !t.recipe.scale && t.dtype === s.dtype && !consumed.has(t.key);
  });
}
