/**
 * qaic-compile for the two graphs of a Whisper export (`whisper.json` + `encoder/` + `decoder/`),
 * by QEfficient's rules for its one Whisper graph (quic/efficient-transformers main ebf55e8):
 * `QEffWhisperForConditionalGeneration.get_specializations` and
 * `QEFFAutoModelForSpeechSeq2Seq.compile` (QEfficient/transformers/models/whisper/modeling_whisper.py,
 * QEfficient/transformers/models/modeling_auto.py):
 *
 * - specializations: `Encoder` {batch_size, seq_len 1, encoder_ctx_len, decoder_ctx_len,
 *   feature_len = 2·encoder_ctx_len} and `Decode` {…, feature_len 1}; encoder_ctx_len defaults to
 *   max_source_positions, ctx_len (decoder_ctx_len) to 150, batch_size to 1. QEfficient's graph
 *   picks "fill the cross cache" by feature_len; ours are split, so the encoder graph takes the
 *   `Encoder` entry and the decoder graph both entries, each keeping the symbols its own dims name,
 *   with `encoder_seq_len` (the decoder's encoder_hidden_states length) = encoder_ctx_len when
 *   feature_len > 1, else 1 — the same choice on the encoder output's length.
 * - custom IO: `input_features` and every retained state (its input, then the output) in
 *   `CUSTOM_IO_DTYPE_MAP[config.torch_dtype]` (float16 for float16 and float32, bfloat16 for
 *   bfloat16); `encoder_hidden_states`, which crosses between our two graphs, in the same dtype.
 * - `_compile` (QEfficient/base/modeling_qeff.py): with config.torch_dtype bfloat16 and bfloat16
 *   `past_` entries, custom_io.yaml is written but not passed to the compiler.
 * - options: retained_state (the decoder), convert_to_fp16 when that dtype is float16,
 *   mxfp6_matmul, aic_num_cores; mxint8_kv_cache, full_batch_size are ignored with QEfficient's
 *   warning ("not yet enabled"), and prefill_seq_len as QEfficient ignores it (the decoder's first
 *   input is seq_len 1).
 */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors';
import { RETAINED } from '../artifacts/graph-interface';
import type { WireModel } from '../formats/onnx/wire-model';
import { readWhisperManifest, type WhisperManifest } from '../artifacts/whisper-manifest';
import { WHISPER_MANIFEST_FILE } from '../spec/file-names';
import {
  customIoIgnored,
  DEFAULT_AIC_NUM_CORES,
  planFromParts,
  QAIC_COMPILER,
  type OptionValue,
  type QaicPlan,
} from '../artifacts/qaic-plan';
import type { GraphShapeFacts, QaicOptions } from './qaic-options';

/** QEfficient's `compile(ctx_len=150)` default for SpeechSeq2Seq. */
export const WHISPER_DEFAULT_CTX_LEN = 150;

/** QEfficient's CUSTOM_IO_DTYPE_MAP over config.json's torch_dtype (the compiler has no float32 IO). */
export function whisperIoDtype(torchDtype: string | undefined): 'float16' | 'bfloat16' {
  return (torchDtype ?? 'float32').replace(/^torch\./, '') === 'bfloat16' ? 'bfloat16' : 'float16';
}

/** QEfficient's two specializations, flat, in its order. */
export function whisperSpecializations(
  m: Pick<WhisperManifest, 'max_source_positions'>,
  s: { batchSize: number; ctxLen: number; encoderCtxLen?: number },
): { name: string; symbols: [string, number][] }[] {
  const enc = s.encoderCtxLen ?? m.max_source_positions;
  const common: [string, number][] = [
    ['batch_size', s.batchSize],
    ['seq_len', 1],
    ['encoder_ctx_len', enc],
    ['decoder_ctx_len', s.ctxLen],
  ];
  return [
    { name: 'Encoder', symbols: [...common, ['feature_len', enc * 2]] },
    { name: 'Decode', symbols: [...common, ['feature_len', 1]] },
  ];
}

/** The plan of one graph of a Whisper export (see the module comment). */
export function buildWhisperQaicPlan(
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  m: WireModel,
  g: GraphShapeFacts,
  manifest: WhisperManifest,
  compiler: string = QAIC_COMPILER[0],
): QaicPlan {
  const role = g.whisperRole!;
  if (opts.ctxLen !== undefined && g.ctxLen !== undefined && opts.ctxLen !== g.ctxLen)
    throw new UsageError(
      `compile: --ctx-len ${opts.ctxLen} does not match the graph, whose self-attention cache holds ${g.ctxLen} positions`,
    );
  const img =
    opts.imgHeight !== undefined
      ? '--img-height'
      : opts.imgWidth !== undefined
        ? '--img-width'
        : opts.imgSize !== undefined
          ? '--img-size'
          : undefined;
  if (img) throw new UsageError(`compile: ${img} sizes a vision-language export; this is a Whisper graph`);
  const warnings: string[] = [];
  // modeling_auto.py QEFFAutoModelForSpeechSeq2Seq.compile: warned about and dropped
  if (opts.fullBatchSize !== undefined)
    warnings.push('compile: Continuous batching is not yet enabled for AutoModelForSpeechSeq2Seq (--full-batch-size ignored)');
  if (opts.mxint8KvCache)
    warnings.push('compile: mxint8 cache is not yet enabled for AutoModelForSpeechSeq2Seq (--mxint8-kv-cache ignored)');
  const ctxLen = opts.ctxLen ?? g.ctxLen ?? WHISPER_DEFAULT_CTX_LEN;
  if (role === 'decoder' && ctxLen > manifest.max_target_positions)
    warnings.push(
      `compile: decoder_ctx_len ${ctxLen} exceeds max_target_positions (${manifest.max_target_positions}): positions past it have no embedding (QEfficient's default ctx_len is 150; give --ctx-len)`,
    );
  const all = whisperSpecializations(manifest, { batchSize: opts.batchSize ?? g.batch ?? 1, ctxLen });
  const dims = new Set([...m.inputs, ...m.outputs].flatMap((v) => v.dims.filter((d): d is string => typeof d === 'string')));
  const entries = (role === 'encoder' ? all.slice(0, 1) : all).map((e) => {
    const feature = e.symbols.find(([k]) => k === 'feature_len')![1];
    const symbols: [string, number][] = [...e.symbols, ['encoder_seq_len', feature > 1 ? manifest.max_source_positions : 1]];
    return { name: e.name, symbols: symbols.filter(([k]) => dims.has(k)) };
  });
  for (const d of dims)
    if (!entries[0]!.symbols.some(([k]) => k === d))
      throw new UsageError(`compile: ${onnxPath}: dim "${d}" has no value in QEfficient's Whisper specializations`);
  const io = whisperIoDtype(manifest.torch_dtype);
  const names = new Set([...m.inputs, ...m.outputs].map((v) => v.name));
  const customIo: [string, string][] = [
    ...(['input_features', 'encoder_hidden_states'] as const).filter((n) => names.has(n)).map((n): [string, string] => [n, io]),
    ...m.outputs
      .filter((o) => o.name.endsWith(RETAINED))
      .flatMap((o): [string, string][] => [
        [o.name.slice(0, -RETAINED.length), io],
        [o.name, io],
      ]),
  ];
  // _compile: a bfloat16 model with bfloat16 past_ entries writes custom_io.yaml but leaves it off the command
  const bf16 = customIoIgnored(io === 'bfloat16', customIo);
  if (bf16) warnings.push('compile: Model and Past KV types are both bfloat16. Custom IO list file will be ignored during compile.');
  const options: [string, OptionValue][] = [];
  if (role === 'decoder') options.push(['retained_state', true]);
  options.push(
    ['convert_to_fp16', io === 'float16'],
    ['mxfp6_matmul', opts.mxfp6Matmul ?? false],
    ['aic_num_cores', opts.numCores ?? DEFAULT_AIC_NUM_CORES],
  );
  return planFromParts({
    compiler,
    onnxPath,
    compileDir,
    opts,
    options,
    specs: entries.map((e) => e.symbols),
    module: undefined,
    names: entries.map((e) => e.name),
    customIo,
    warnings,
    customIoInCommand: !bf16,
  });
}

/** The plan of one graph of a Whisper export in one call: whisper.json beside the graph folder, then {@link buildWhisperQaicPlan}. */
export function planWhisperGraph(
  graphDir: string,
  onnxPath: string,
  compileDir: string,
  opts: QaicOptions,
  m: WireModel,
  g: GraphShapeFacts,
  compiler: string = QAIC_COMPILER[0],
): QaicPlan {
  const root = path.dirname(graphDir);
  if (!fs.existsSync(path.join(root, WHISPER_MANIFEST_FILE)))
    throw new UsageError(
      `compile: ${graphDir} is the ${g.whisperRole} graph of a Whisper model but ${path.join(root, WHISPER_MANIFEST_FILE)} is missing: qaic compiles a Whisper export made by export --config (whisper.json + encoder/ + decoder/)`,
    );
  return buildWhisperQaicPlan(onnxPath, compileDir, opts, m, g, readWhisperManifest(root), compiler);
}
