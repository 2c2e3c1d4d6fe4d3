/**
 * `export --config` for Whisper: two export directories under `<out>` — `encoder/` and
 * `decoder/`, each a normal export (model.onnx + weight_spec.json + link + export-report.json)
 * whose specs point into ONE prepared checkpoint (`model.encoder.*`, `model.decoder.*`, and
 * `proj_out.weight` for an untied head) — and `<out>/whisper.json`, written last, which ties them
 * together for `compile`, `run`, `check` and the editor (the VLM export's pattern, vlm/export-vlm.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { FormatError, PipelineError, UsageError } from '../../errors';
import type { ExportDtype } from '../../formats/dtype';
import { createOutputGuard, readRegularFileSync } from '../../paths';
import type { WeightSpec } from '../../spec';
import { formatBytes } from '../../display';
import { exportSummary, prepareHint, shellWord, writeExport, type ExportWritten } from '../write-export';
import type { ModelObj } from '../blocks/builder';
import { checkGraph } from '../exporter/check-graph';
import { encodeBuiltModel } from '../exporter/encode';
import { checkLayout, layoutFromConfig, preparedDirFor, type LayoutPlanner, type PreparedLayout } from '../exporter/layout';
import { hubRecord, modelArg } from '../../hub/hf-cache';
import { WHISPER_MANIFEST_FILE } from '../../spec/file-names';
import { whisperManifestText, type WhisperManifest } from '../../artifacts/whisper-manifest';
import { whisperArchFromConfig, type WhisperArch } from './whisper-config';
import { buildWhisperDecoder, buildWhisperEncoder, type BuiltWhisperGraph } from './whisper-graphs';

/** Options (what applies of the text export's). */
export interface WhisperExportOptions {
  cfgFile: string;
  cfgDir: string;
  name: string;
  raw: unknown;
  out: string;
  dtype: ExportDtype;
  opset?: number;
  ctxLen?: number;
  batchSize?: number;
  withCheckpoint: boolean;
  planner?: LayoutPlanner;
}

/**
 * The feature extractor's settings: the model folder's preprocessor_config.json when present,
 * else WhisperFeatureExtractor's defaults (feature_size = num_mel_bins, 16 kHz, n_fft 400, hop
 * 160, chunk_length 30 s).
 */
export function featureExtractorOf(cfgDir: string, a: WhisperArch): WhisperManifest['feature_extractor'] {
  const file = path.join(cfgDir, 'preprocessor_config.json');
  let raw: Record<string, unknown> = {};
  if (existsSync(file)) {
    try {
      raw = JSON.parse(readRegularFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      throw e instanceof FormatError ? e : new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FormatError(file, 'not a JSON object');
  }
  const num = (k: string, d: number): number => {
    const v = raw[k];
    if (v === undefined) return d;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) throw new FormatError(file, `"${k}" must be a positive integer`);
    return v;
  };
  const sr = num('sampling_rate', 16000);
  const hop = num('hop_length', 160);
  const fe = {
    feature_size: num('feature_size', a.numMel),
    sampling_rate: sr,
    n_fft: num('n_fft', 400),
    hop_length: hop,
    n_samples: num('n_samples', num('chunk_length', 30) * sr),
  };
  if (fe.feature_size !== a.numMel)
    throw new FormatError(file, `"feature_size" (${fe.feature_size}) differs from config.json's num_mel_bins (${a.numMel})`);
  // the encoder's stride-2 conv must land on max_source_positions frames
  if (fe.n_samples / hop !== 2 * a.maxSource)
    throw new FormatError(file, `n_samples / hop_length (${fe.n_samples / hop}) is not 2 × max_source_positions (${2 * a.maxSource})`);
  return fe;
}

/** config.json's `torch_dtype` (transformers ≥ 4.56 also writes `dtype`), when it names one. */
function torchDtypeOf(raw: unknown): { torch_dtype?: string } {
  const r = raw as { torch_dtype?: unknown; dtype?: unknown };
  const t = typeof r.torch_dtype === 'string' ? r.torch_dtype : typeof r.dtype === 'string' ? r.dtype : undefined;
  return t !== undefined ? { torch_dtype: t } : {};
}

function specFor(weights: { name: string }[], keyOf: Map<string, string>, layout: PreparedLayout, name: string): WeightSpec {
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
  return { version: 5, files, inputs, model_id: layout.dir, model_name: name };
}

/** Builds both graphs, checks them against one layout and writes `<out>/{encoder,decoder}` + whisper.json. */
export async function exportWhisper(o: WhisperExportOptions): Promise<{ summary: string[]; written: ExportWritten[]; arch: WhisperArch }> {
  const t0 = performance.now();
  // the config first: a bad field is refused before any planning
  const maxTarget = whisperArchFromConfig(o.raw, o.cfgFile).maxTarget;
  if (o.ctxLen !== undefined && o.ctxLen > maxTarget)
    throw new UsageError(`--ctx-len ${o.ctxLen} exceeds max_target_positions (${maxTarget}) of ${o.cfgFile}`);
  let layout: PreparedLayout | undefined;
  if (o.withCheckpoint) {
    if (!o.planner) throw new PipelineError(`${o.cfgDir}: holds a checkpoint but no prepare planner is available`);
    layout = await o.planner(o.cfgDir, o.dtype);
  }
  const arch = whisperArchFromConfig(o.raw, o.cfgFile, layout ? new Set(layout.tensors.keys()) : undefined);
  const fe = featureExtractorOf(o.cfgDir, arch);
  const opts = {
    dtype: o.dtype,
    ...(o.opset !== undefined ? { opset: o.opset } : {}),
    ...(o.ctxLen !== undefined ? { ctxLen: o.ctxLen } : {}),
    ...(o.batchSize !== undefined ? { batchSize: o.batchSize } : {}),
  };
  const parts: { dir: 'encoder' | 'decoder'; built: BuiltWhisperGraph }[] = [
    { dir: 'encoder', built: buildWhisperEncoder(arch, { ...opts, name: `${o.name}-encoder` }) },
    { dir: 'decoder', built: buildWhisperDecoder(arch, { ...opts, name: `${o.name}-decoder` }) },
  ];
  for (const p of parts) {
    const problems = checkGraph(p.built.model);
    if (problems.length) throw new PipelineError(`internal error: the built ${p.dir} graph is malformed: ${problems[0]!.message}`);
  }
  const all = parts.flatMap((p) => p.built.weights);
  layout ??= layoutFromConfig({ layers: [] }, all, preparedDirFor(o.cfgDir, o.dtype), o.dtype);
  const keyOf = checkLayout(all, layout, o.cfgFile, o.raw as Record<string, unknown>);
  const tBuild = performance.now();

  const outDir = path.resolve(o.out);
  const guard = createOutputGuard(outDir, { owned: [path.join(outDir, WHISPER_MANIFEST_FILE)] });
  const written: ExportWritten[] = [];
  for (const { dir, built } of parts) {
    const spec = specFor(built.weights, keyOf, layout, `WhisperForConditionalGeneration-${dir}`);
    written.push(
      await writeExport<ModelObj>({
        outDir: path.join(outDir, dir),
        model: built.model,
        metadataOf: (m) => m.metadataProps,
        encode: (m, props) => encodeBuiltModel({ ...m, metadataProps: props.map((x) => ({ key: x.key ?? '', value: x.value ?? '' })) }),
        spec,
        links: { [path.basename(layout.dir)]: layout.dir },
        report: {
          kind: 'config',
          graph_role: dir,
          source: { config: o.cfgFile, checkpoint: o.withCheckpoint ? o.cfgDir : null, ...hubRecord(o.cfgDir) },
          model_type: 'whisper',
          options: { dtype: o.dtype, ctx_len: o.ctxLen ?? 'decoder_ctx_len', batch_size: o.batchSize ?? null, tied_head: arch.tied },
          graph: {
            nodes: built.model.graph.node.length,
            opset: built.model.opsetImport[0]!.version,
            inputs: built.io.inputs,
            outputs: built.io.outputs,
          },
          weights: { count: built.weights.length },
          prepared: { dir: layout.dir, layout: layout.source, files: spec.files.length },
        },
      }),
    );
  }
  const manifest: WhisperManifest = {
    tool: 'weight-spec export',
    kind: 'whisper',
    model_type: 'whisper',
    config: o.cfgFile,
    graphs: { encoder: 'encoder', decoder: 'decoder' },
    feature_extractor: fe,
    num_mel_bins: arch.numMel,
    max_source_positions: arch.maxSource,
    max_target_positions: arch.maxTarget,
    d_model: arch.dModel,
    decoder_layers: arch.decoder.layers,
    decoder_attention_heads: arch.decoder.heads,
    vocab_size: arch.vocab,
    decoder_start_token_id: arch.decoderStart,
    eos_token_id: arch.eos,
    dtype: o.dtype,
    ...torchDtypeOf(o.raw),
  };
  await guard.writeFile(WHISPER_MANIFEST_FILE, whisperManifestText(manifest));
  const note = `encoder ${arch.encoder.layers} layers, decoder ${arch.decoder.layers} layers, d_model ${arch.dModel}, ${arch.numMel} mel bins, ${arch.tied ? 'tied' : 'untied'} head`;
  const summary = [
    `exported ${o.name} (whisper: ${note}) in ${Math.round(performance.now() - t0)} ms (build ${Math.round(tBuild - t0)} ms)`,
    ...written.flatMap((w, i) =>
      exportSummary(
        `  ${parts[i]!.dir}/`,
        w,
        [['graph', `${parts[i]!.built.model.graph.node.length} nodes, ${o.dtype}, ${parts[i]!.built.weights.length} weight inputs`]],
        [],
      ).map((l) => `  ${l}`),
    ),
    `  prepared  ${layout.dir} (one checkpoint for both graphs; ${formatBytes(written.reduce((s, w) => s + w.modelBytes, 0))} of ONNX)`,
    'next:',
    ...(o.withCheckpoint
      ? [`  ${prepareHint(modelArg(o.cfgDir), o.dtype)}`]
      : [`  weight-spec prepare --checkpoint <checkpoint of ${o.name}> --dtype ${o.dtype} --out ${layout.dir}`]),
    `  weight-spec compile ${shellWord(outDir)}`,
  ];
  return { summary, written, arch };
}
