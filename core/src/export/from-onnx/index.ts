/**
 * `weight-spec export --onnx`: a legacy ONNX with embedded weights plus its safetensors
 * checkpoint → a weight-free `model.onnx`, `weight_spec.json` (v5, against the layout prepare
 * will write) and `export-report.json`. Initializers are resolved by name and content
 * (core/src/resolve); resolved ones become graph inputs named by their prepared keys.
 */
import path from 'node:path';
import { DTYPE_SIZE, onnxTypeOf, type PrepareDtype } from '../../formats/dtype';
import { Checkpoint } from '../../formats/safetensors';
import { PipelineError } from '../../errors';
import { planDequant, planPrepare, quantSchemeOf } from '../../prepare';
import { moeSizes } from '../../prepare/planner';
import { isRowFused } from '../../prepare/transforms/fused-split';
import { isAllowedUnresolved, resolveInitializers, type InitializerInput, type KeyTensor, type Resolution } from '../../resolve';
import type { WeightSpec } from '../../spec';
import { formatBytes } from '../../display';
import { exportSummary, nextSteps, prepareHint, shellWord, writeExport, type ExportWritten } from '../write-export';
import { scanLegacyModel, type LegacyModel } from './legacy-model';
import { assembleModel, type NewInput, type Rebuild } from './rewrite';
import { modelClassName } from '../exporter/layout';
import { baseModelPrefix } from '../../resolve/name-strategies';
import { fusedRowLocation, graniteExpertsLocation, preparedLocation } from './prepared-location';
import { sliceLocation } from './slice-location';
import { mxfp4Sources, type Mxfp4Sources } from './mxfp4-sources';
import { printable } from '../../paths';
import { hubRecord, modelArg } from '../../hub/hf-cache';
import { FUSED_EXPERTS_KEY } from '../../artifacts/prepared-keys';

/** Options of {@link exportFromOnnx}. */
export interface FromOnnxOptions {
  onnx: string;
  checkpoint: string;
  out: string;
  /** The dtype the checkpoint will be prepared in (default float32). */
  dtype?: PrepareDtype;
  /** Keep large unresolved initializers embedded instead of failing. */
  allowUnresolved?: boolean;
  /** Memory for streaming reads (default 256 MiB). */
  maxRamMb?: number;
  /** Keep node names, doc strings and intermediate value names (default: compacted). */
  keepNames?: boolean;
  /** Extra read roots for external data. */
  roots?: string[];
  onProgress?: (done: number, total: number) => void;
}

/** What was exported. */
export interface FromOnnxResult {
  written: ExportWritten;
  resolutions: Resolution[];
  unresolved: Resolution[];
  preparedDir: string;
}

/**
 * The checkpoint's tensors as the resolver sees them: an FP8 weight as its dequantized f32
 * values (what a legacy export of the dequantized model embeds), its scales and activation
 * scales left out (prepare drops them, so nothing may resolve to them).
 */
function checkpointTensors(ckpt: Checkpoint, config: Record<string, unknown>): KeyTensor[] {
  const sources = new Map(
    ckpt
      .tensors()
      .map((t) => [t.key, { key: t.key, file: t.file, dtype: t.dtype, shape: t.shape, offset: t.dataOffset, byteLength: t.byteLength }]),
  );
  const configFile = path.join(ckpt.dir, 'config.json');
  const dq = planDequant(sources, quantSchemeOf(config, configFile), configFile);
  const out: KeyTensor[] = [];
  for (const [key, t] of sources) {
    if (dq.consumed.has(key)) continue;
    const ref = dq.scales.get(key);
    if (!ref) {
      out.push(t);
      continue;
    }
    const s = sources.get(ref.key)!;
    const n = t.shape.reduce((a, b) => a * b, 1);
    out.push({
      key,
      dtype: 'F32',
      shape: t.shape,
      file: t.file,
      offset: 0,
      byteLength: n * 4,
      dequant: {
        q: { file: t.file, offset: t.offset, dtype: t.dtype, shape: t.shape },
        scale: { file: s.file, offset: s.offset, byteLength: s.byteLength, dtype: s.dtype },
        ref,
      },
    });
  }
  return out;
}

/** An unresolved initializer is a weight (an error) rather than a constant when it looks like one. */
function looksLikeWeight(r: Resolution): boolean {
  if (isAllowedUnresolved(r.name)) return false;
  const bytes = r.shape.reduce((a, b) => a * b, 1) * DTYPE_SIZE[r.dtype];
  return /\.(weight|bias)$/.test(r.name) || /^onnx::(MatMul|Gemm|Conv)_/.test(r.name) || bytes >= 1 << 20;
}

/** Converts a legacy ONNX into a weight-free export. */
export async function exportFromOnnx(o: FromOnnxOptions): Promise<FromOnnxResult> {
  const started = Date.now();
  const dtype = o.dtype ?? 'float32';
  const ckpt = await Checkpoint.open(o.checkpoint);
  const config = (await ckpt.config()) ?? {};
  const plan = await planPrepare({ checkpoint: o.checkpoint, dtype });
  const model: LegacyModel = scanLegacyModel(o.onnx, o.roots);
  let dequantized: Mxfp4Sources | undefined;
  try {
    const chunkBytes = Math.max(1 << 16, Math.min(64 << 20, Math.floor(((o.maxRamMb ?? 256) << 20) / 8)));
    const inits: InitializerInput[] = model.initializers
      .filter((i) => i.dtype && i.file !== undefined)
      .map((i) => ({ name: i.name, dtype: i.dtype!, shape: i.dims, file: i.file!, offset: i.offset!, byteLength: i.byteLength }));
    const tensors = checkpointTensors(ckpt, config);
    // GPT-OSS: the legacy graph holds the MXFP4 experts dequantized; resolve them against the same dequantization
    dequantized = await mxfp4Sources(ckpt, new Set(inits.map((i) => i.shape.reduce((a, b) => a * b, 1))));
    const virtual = dequantized.locations(plan);
    const fused = (key: string) => {
      const shape = ckpt.get(key)?.shape;
      if (!shape) return undefined;
      // fused experts: prepare's own row/column decision for this module's gate_up_proj + down_proj
      const m = FUSED_EXPERTS_KEY.exec(key);
      const gateUp = m && ckpt.get(`${m[1]}.experts.gate_up_proj`);
      const down = m && ckpt.get(`${m[1]}.experts.down_proj`);
      const rowFused = gateUp && down ? isRowFused(gateUp, down, moeSizes(config)) : true;
      return fusedRowLocation(key, shape, plan, rowFused) ?? graniteExpertsLocation(key, shape, plan);
    };
    const locate = (key: string) => virtual.get(key) ?? fused(key) ?? preparedLocation(key, plan);
    const resolutions = await resolveInitializers(inits, [...tensors, ...dequantized.tensors], {
      config,
      chunkBytes,
      onProgress: o.onProgress,
    });
    const unresolved = resolutions.filter((r) => !r.key);
    const fatal = unresolved.filter(looksLikeWeight);
    if (fatal.length && !o.allowUnresolved) {
      const first = fatal[0]!;
      throw new PipelineError(
        `${o.onnx}: ${fatal.length} weight initializer(s) match no tensor of ${o.checkpoint}, e.g. "${first.name}" ${JSON.stringify(first.shape)} (${first.note}); pass --allow-unresolved to keep them embedded`,
      );
    }
    // A kept initializer whose bytes are external data stays a reference relative to the
    // legacy ONNX: beside the new model.onnx it would point at nothing (a model that does not
    // load, exported with exit 0). Refuse instead.
    const byName = new Map(model.initializers.map((i) => [i.name, i]));
    for (const r of unresolved) {
      const init = byName.get(r.name);
      if (init?.file === undefined || init.file === model.wire.file) continue;
      throw new PipelineError(
        `${o.onnx}: initializer "${printable(r.name)}" matches no tensor of ${o.checkpoint} and its data is external (${printable(init.file)}); ` +
          'the export cannot keep it: add the tensor to the checkpoint, or embed it in the legacy ONNX',
      );
    }

    // Map each resolved key to the prepared layout and plan the rebuild of each initializer.
    const rebuilds: Rebuild[] = [];
    const inputs = new Map<string, NewInput & { file: string; key: string }>();
    // Graph inputs are named by the module's parameter path, as QEfficient names them (GPT-2
    // checkpoints saved without `transformer.`: input `transformer.wte.weight`, key `wte.weight`).
    const nameOf = (key: string) => paramPathOf(key, config);
    const graphType = new Map(model.initializers.map((i) => [i.name, i]));
    // where each resolved initializer's values live in the prepared layout (a slice: that part of its key's)
    const where = new Map(
      resolutions
        .filter((r) => r.key)
        .map((r) => [r.name, r.slice ? sliceLocation(r.key!, locate(r.key!), r.slice) : { loc: locate(r.key!) }]),
    );
    for (const r of resolutions) {
      if (!r.key) continue;
      const { loc, slice } = where.get(r.name)!;
      const init = graphType.get(r.name)!;
      for (const l of [loc, loc.interleave, loc.concat]) {
        if (l && !inputs.has(l.key))
          inputs.set(l.key, { name: nameOf(l.key), key: l.key, elemType: onnxTypeOf(l.dtype), dims: l.shape, file: l.file });
      }
      const whole = loc.interleave || loc.concat ? [...loc.shape.slice(0, -1), 2 * loc.shape[loc.shape.length - 1]!] : loc.shape;
      const fromShape = loc.expert !== undefined ? whole.slice(1) : [...whole];
      if (slice) fromShape[slice.axis] = slice.end - slice.start;
      // r.transposed: the initializer is the checkpoint key transposed; loc.transposed: so is
      // the prepared slice (canonical MoE [in, out]). Equal orientations need no Transpose.
      const flip = !!r.transposed !== !!loc.transposed;
      // a whole stacked [E, a, b] tensor flips per expert (its last two axes)
      const perExpert = flip && fromShape.length === 3;
      const oriented = !flip ? fromShape : perExpert ? [fromShape[0]!, fromShape[2]!, fromShape[1]!] : [...fromShape].reverse();
      const sameDims = oriented.length === init.dims.length && oriented.every((d, i) => d === init.dims[i]);
      rebuilds.push({
        name: r.name,
        input: nameOf(loc.key),
        gather: loc.expert,
        ...(slice ? { slice } : {}),
        ...(loc.interleave ? { interleave: nameOf(loc.interleave.key), interleaveDims: loc.shape } : {}),
        ...(loc.concat ? { concat: nameOf(loc.concat.key), concatRank: loc.shape.length } : {}),
        transpose: flip || undefined,
        ...(perExpert ? { transposePerm: [0, 2, 1] } : {}),
        reshape: sameDims ? undefined : init.dims,
        castTo: onnxTypeOf(loc.dtype) === init.dataType ? undefined : init.dataType,
        affine: r.affine,
      });
    }
    const drop = new Set(rebuilds.map((r) => r.name));
    const newInputs = [...inputs.values()];

    const linkName = path.basename(plan.outDir);
    const files = [...new Set(newInputs.map((i) => i.file))].sort();
    const spec: WeightSpec = {
      files: files.map((f) => ({ format: 'safetensors', path: `${linkName}/${f}` })),
      inputs: newInputs.map((i) => ({ location: { file: files.indexOf(i.file), key: i.key }, name: i.name })),
      model_id: plan.outDir,
      model_name: modelClassName(
        config,
        typeof config.model_type === 'string' ? path.basename(path.resolve(o.checkpoint)) : path.basename(o.onnx, '.onnx'),
      ),
      version: 5,
    };
    const byStrategy: Record<string, number> = {};
    for (const r of resolutions) if (r.strategy) byStrategy[r.strategy] = (byStrategy[r.strategy] ?? 0) + 1;
    const weightBytes = resolutions.filter((r) => r.key).reduce((a, r) => a + r.shape.reduce((x, y) => x * y, 1) * DTYPE_SIZE[r.dtype], 0);
    const written = await writeExport({
      outDir: o.out,
      model,
      metadataOf: (m) => m.metadata,
      encode: (m, props) =>
        assembleModel(
          m,
          drop,
          rebuilds,
          newInputs,
          props.map((p) => ({ key: p.key ?? '', value: p.value ?? '' })),
          !o.keepNames,
        ),
      spec,
      links: { [linkName]: plan.outDir },
      report: {
        kind: 'onnx',
        source: { onnx: path.resolve(o.onnx), checkpoint: path.resolve(o.checkpoint), ...hubRecord(o.checkpoint) },
        options: { dtype, allow_unresolved: !!o.allowUnresolved, keep_names: !!o.keepNames },
        prepared: { dir: plan.outDir, fingerprint: plan.fingerprint },
        inputs: resolutions
          .filter((r) => r.key)
          .map((r) => ({
            initializer: r.name,
            key: r.key,
            input: nameOf(where.get(r.name)!.loc.key),
            ...(where.get(r.name)!.loc.interleave ? { interleaved_with: where.get(r.name)!.loc.interleave!.key } : {}),
            ...(where.get(r.name)!.loc.concat ? { concatenated_with: where.get(r.name)!.loc.concat!.key } : {}),
            ...(r.slice ? { slice_of_key: r.slice } : {}),
            ...(dequantized!.origin(r.key!) ? { dequantized_from: dequantized!.origin(r.key!) } : {}),
            strategy: r.strategy,
            transposed: r.transposed,
            ...(r.affine ? { affine: r.affine } : {}),
            dtype: r.dtype,
            shape: r.shape,
            bytes: r.shape.reduce((a, b) => a * b, 1) * DTYPE_SIZE[r.dtype],
            ...(r.note ? { note: r.note } : {}),
          })),
        unresolved: unresolved.map((r) => ({ name: r.name, dtype: r.dtype, shape: r.shape, note: r.note })),
        totals: {
          initializers: resolutions.length,
          resolved: resolutions.length - unresolved.length,
          inputs: newInputs.length,
          weight_bytes: weightBytes,
          by_strategy: byStrategy,
        },
        seconds: (Date.now() - started) / 1000,
      },
    });
    return { written, resolutions, unresolved, preparedDir: plan.outDir };
  } finally {
    model.wire.close();
    await dequantized?.close();
  }
}

/** The one-screen stdout summary of a legacy-ONNX export. */
export async function fromOnnxSummary(r: FromOnnxResult): Promise<string[]> {
  const totals = r.written.report.totals as {
    resolved: number;
    initializers: number;
    inputs: number;
    weight_bytes: number;
    by_strategy: Record<string, number>;
  };
  const strategies = Object.entries(totals.by_strategy)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  return exportSummary(
    `weight-free export of ${(r.written.report.source as { onnx: string }).onnx}`,
    r.written,
    [
      [
        'resolved',
        `${totals.resolved}/${totals.initializers} initializers → ${totals.inputs} weight inputs (${formatBytes(totals.weight_bytes)})`,
      ],
      ['strategies', strategies || 'none'],
      ['embedded', r.unresolved.length ? r.unresolved.map((u) => u.name).join(', ') : 'none'],
      ['prepared', r.preparedDir],
    ],
    await nextSteps(r.preparedDir, [
      prepareHint(
        modelArg((r.written.report.source as { checkpoint: string }).checkpoint),
        (r.written.report.options as { dtype: string }).dtype,
      ),
      `weight-spec compile ${shellWord(path.dirname(r.written.modelFile))}`,
    ]),
  );
}

/**
 * The module parameter path of a checkpoint key: keys of a `transformer.`-prefixed model
 * (GPT-2 family) saved from the bare trunk lack the prefix the causal-LM module has; the head
 * (`lm_head.*`) lives outside the trunk.
 */
function paramPathOf(key: string, config: Record<string, unknown>): string {
  const prefix = baseModelPrefix(config);
  if (prefix !== 'transformer' || key.startsWith('transformer.') || key.startsWith('lm_head.')) return key;
  return `transformer.${key}`;
}
