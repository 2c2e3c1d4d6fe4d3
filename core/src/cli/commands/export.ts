/**
 * `weight-spec export`: a weight-free ONNX + weight_spec.json, either built from a model's
 * config.json (`--config`, {@link exportConfig}) or converted from a legacy ONNX with
 * embedded weights (`--onnx`, {@link exportOnnx}). Exactly one of the two is given.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, UsageError } from '../../errors';
import { EXPORT_DTYPES, PREPARE_DTYPES, type ExportDtype, type PrepareDtype } from '../../formats/dtype';
import { createProgress } from '../progress';
import type { ParsedArgs } from '../args';
import { defineCommand, println, type CliIO } from '../command';
import { CHECKPOINT_FILES, requireModelPath, requireOutDir, requirePath } from '../input-paths';

const flags = {
  config: {
    type: 'string',
    placeholder: '<model dir>',
    description: 'HF model directory (config.json) to build the graph from, or a Hub id org/name[@revision] in the local HF cache',
  },
  revision: {
    type: 'string',
    placeholder: '<rev>',
    description: 'branch, tag or commit of a Hub id given to --config or --checkpoint (default main)',
  },
  onnx: { type: 'string', placeholder: '<model.onnx>', description: 'legacy ONNX with embedded weights to convert' },
  checkpoint: { type: 'string', placeholder: '<dir>', description: 'safetensors checkpoint the weights come from (with --onnx)' },
  out: { type: 'string', placeholder: '<dir>', description: 'output directory', required: true },
  dtype: {
    type: 'string',
    placeholder: '<dtype>',
    choices: EXPORT_DTYPES,
    description: 'graph weight dtype (default float32; with --config)',
  },
  'ctx-len': { type: 'int', placeholder: '<N>', description: 'KV-cache context length (default symbolic ctx_len; with --config)' },
  'batch-size': {
    type: 'int',
    placeholder: '<B>',
    description: 'batch size (the full cache batch with --continuous-batching; default symbolic)',
  },
  'continuous-batching': { type: 'boolean', description: 'add batch_index and a full-batch KV cache (with --config)' },
  phase: {
    type: 'string',
    placeholder: '<phase>',
    choices: ['both', 'prefill', 'decode'],
    description: 'one graph for both phases (default), or the prefill / decode specialization',
  },
  'comp-ctx-lengths-prefill': {
    type: 'string',
    placeholder: '<A,B,…>',
    description: 'CCL buckets for prefill: adds the comp_ctx_lengths input (QEfficient; with --config, needs --ctx-len)',
  },
  'comp-ctx-lengths-decode': {
    type: 'string',
    placeholder: '<C,D,…>',
    description: 'CCL buckets for decode (given together with --comp-ctx-lengths-prefill)',
  },
  'num-speculative-tokens': {
    type: 'string',
    placeholder: '<K[,K2…]>',
    description:
      "speculative decoding's target model (QEfficient's TLM): the num_logits_to_keep input, logits for K + 1 positions per decode call (llama, qwen2, qwen3; with --config)",
  },
  'enable-chunking': {
    type: 'boolean',
    description:
      "with --phase prefill of a disaggregated-serving MoE (qwen3_moe, glm4_moe, kimi_k2): QEfficient's chunked prefill-only graph (enable_chunking)",
  },
  'replicate-kv-heads': {
    type: 'int',
    placeholder: '<N>',
    description:
      "QEfficient's ReplicateKVHeadTransform (qaic_config replicate_kv_heads): N × the KV heads, each repeated, for tensor slicing over more devices; same logits",
  },
  sampler: { type: 'boolean', description: "append QEfficient's on-device sampler: next_tokens instead of logits (with --config)" },
  'max-top-k': {
    type: 'int',
    placeholder: '<N>',
    description: 'sampler: largest top-k the graph supports (QEfficient max_top_k_ids; default min(512, vocab))',
  },
  'return-pdfs': { type: 'boolean', description: 'sampler: also output probs, the sampling distribution' },
  'prepared-dtype': {
    type: 'string',
    placeholder: '<dtype>',
    choices: PREPARE_DTYPES,
    description:
      'dtype the checkpoint will be prepared in (default float32; with --onnx: a Cast to the graph dtype is inserted where they differ)',
  },
  'allow-unresolved': { type: 'boolean', description: 'keep weights that match no checkpoint tensor embedded (with --onnx)' },
  'keep-names': {
    type: 'boolean',
    description: 'keep node names and intermediate value names of the legacy graph (with --onnx; default: compacted)',
  },
  'max-ram-mb': {
    type: 'int',
    placeholder: '<MB>',
    description: 'memory for streaming reads of the legacy weights (with --onnx; default 256)',
  },
  opset: {
    type: 'int',
    placeholder: '<17-21>',
    description: 'ONNX opset of the built graph (default 17, as QEfficient exports and qaic-compile takes; with --config)',
  },
  'moe-flavour': {
    type: 'string',
    placeholder: '<flavour>',
    choices: ['expert_parallel'],
    description: "MoE graph over prepare's expert-parallel packed layout (with --config and --pipeline-stages)",
  },
  'pipeline-stages': {
    type: 'int',
    placeholder: '<P>',
    description: 'pipeline stages of the packed MoE layout (N = E / P experts each; with --moe-flavour)',
  },
  'mla-cache': {
    type: 'string',
    placeholder: '<form>',
    choices: ['per-head', 'compressed'],
    description:
      "Multi-head Latent Attention cache (DeepSeek-V3, Kimi-K2): per-head past_key/past_value (default) or QEfficient's compressed_kv/k_pe (with --config)",
  },
  'sliding-cache': {
    type: 'string',
    placeholder: '<layout>',
    choices: ['full', 'window'],
    description:
      "Gemma 3's sliding layers: a ctx_len cache (default) or QEfficient's ring of the config's sliding_window slots, past_key.{i} [b,kv,sliding_window,d] (with --config)",
  },
  'keep-quantized': {
    type: 'boolean',
    description:
      'GPTQ/AWQ int4 checkpoints: the graph takes the packed weights and computes with com.microsoft MatMulNBits (with --config)',
  },
  lora: {
    type: 'string',
    multiple: true,
    placeholder: '<adapter dir>',
    description:
      'a PEFT LoRA adapter of the --config base (repeat for several; ids 1, 2, … in order, 0 = base): one graph with a lora_ids input',
  },
  root: {
    type: 'string',
    multiple: true,
    placeholder: '<dir>',
    description: 'extra directory external data may be read from (with --onnx)',
  },
} as const;

type ExportArgs = ParsedArgs<typeof flags>;

/** Parses a `16,32` bucket list. */
export function parseLengths(text: string, flag: string, command = 'export'): number[] {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0) throw new UsageError(`${command}: --${flag} needs comma-separated lengths (e.g. 512,1024)`);
  return parts.map((p) => {
    if (!/^\d+$/.test(p) || Number(p) <= 0 || !Number.isSafeInteger(Number(p)))
      throw new UsageError(`${command}: --${flag}: "${p}" is not a positive integer`);
    return Number(p);
  });
}

/** Parses `--num-speculative-tokens 3` or `0,3`: non-negative proposal lengths (QEfficient allows 0, a one-token fallback). */
export function parseSpeculative(text: string): number[] {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (parts.length === 0) throw new UsageError('export: --num-speculative-tokens needs K or a comma-separated list (e.g. 3 or 0,3)');
  return parts.map((p) => {
    if (!/^\d+$/.test(p) || !Number.isSafeInteger(Number(p)))
      throw new UsageError(`export: --num-speculative-tokens: "${p}" is not a non-negative integer`);
    return Number(p);
  });
}

/** `--replicate-kv-heads N`: a positive repeat count (1 leaves the heads as they are, as QEfficient does). */
function replicateKv(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`export: --replicate-kv-heads must be a positive integer (got ${n})`);
  return n;
}

/** `export --config`: builds the graph from config.json. */
export async function exportConfig(args: ExportArgs, io: CliIO): Promise<number> {
  // loaded on use: `weight-spec prepare` (and --help) need not initialize this command's modules
  const [{ exportFromConfig }, { planLayout }] = await Promise.all([
    import('../../export/export-config'),
    import('../../export/exporter/plan-layout'),
  ]);
  const f = args.flags;
  if (f.checkpoint !== undefined) {
    throw new UsageError('export: --checkpoint goes with --onnx; with --config the checkpoint (if any) is the model directory itself');
  }
  if ((f['moe-flavour'] === undefined) !== (f['pipeline-stages'] === undefined)) {
    throw new UsageError('export: --moe-flavour expert_parallel and --pipeline-stages P go together');
  }
  const config = requireModelPath(io.cwd, f.config!, {
    env: io.env,
    revision: f.revision,
    hint: 'the model directory holding config.json',
    exts: ['.json'],
  }).path;
  if (fs.statSync(config).isDirectory() && !fs.existsSync(path.join(config, 'config.json'))) {
    throw new FormatError(f.config!, 'has no config.json — to export from an existing ONNX use --onnx <model.onnx> --checkpoint <dir>');
  }
  const cclP = f['comp-ctx-lengths-prefill'];
  const cclD = f['comp-ctx-lengths-decode'];
  if ((cclP === undefined) !== (cclD === undefined))
    throw new UsageError('export: give --comp-ctx-lengths-prefill and --comp-ctx-lengths-decode together (QEfficient needs both lists)');
  if (!f.sampler && (f['max-top-k'] !== undefined || f['return-pdfs']))
    throw new UsageError('export: --max-top-k and --return-pdfs go with --sampler');
  const r = await exportFromConfig({
    config,
    out: requireOutDir(io.cwd, f.out),
    dtype: (f.dtype ?? 'float32') as ExportDtype,
    ...(f['ctx-len'] !== undefined ? { ctxLen: f['ctx-len'] } : {}),
    ...(f['batch-size'] !== undefined ? { batchSize: f['batch-size'] } : {}),
    continuousBatching: f['continuous-batching'],
    phase: (f.phase ?? 'both') as 'both' | 'prefill' | 'decode',
    planner: planLayout,
    ...(f.opset !== undefined ? { opset: f.opset } : {}),
    ...(f['moe-flavour'] ? { expertParallel: { stages: f['pipeline-stages']! } } : {}),
    ...(f['mla-cache'] !== undefined ? { mlaCache: f['mla-cache'] as 'per-head' | 'compressed' } : {}),
    ...(f['sliding-cache'] !== undefined ? { slidingCache: f['sliding-cache'] as 'full' | 'window' } : {}),
    ...(cclP !== undefined && cclD !== undefined
      ? {
          compCtxLengths: {
            prefill: parseLengths(cclP, 'comp-ctx-lengths-prefill'),
            decode: parseLengths(cclD, 'comp-ctx-lengths-decode'),
          },
        }
      : {}),
    ...(f['enable-chunking'] ? { enableChunking: true } : {}),
    ...(f['replicate-kv-heads'] !== undefined ? { replicateKvHeads: replicateKv(f['replicate-kv-heads']) } : {}),
    ...(f['num-speculative-tokens'] !== undefined ? { numSpeculativeTokens: parseSpeculative(f['num-speculative-tokens']) } : {}),
    ...(f.sampler
      ? { sampler: { ...(f['max-top-k'] !== undefined ? { maxTopK: f['max-top-k'] } : {}), returnPdfs: f['return-pdfs'] } }
      : {}),
    ...(f['keep-quantized'] ? { keepQuantized: true } : {}),
    ...(f.lora.length ? { lora: f.lora.map((d) => requirePath(io.cwd, d, 'dir')) } : {}),
  });
  for (const line of r.summary) println(io.stdout, line);
  return 0;
}

/** `export --onnx`: legacy ONNX with embedded weights → weight-free ONNX + spec. */
export async function exportOnnx(args: ExportArgs, io: CliIO): Promise<number> {
  const { exportFromOnnx, fromOnnxSummary } = await import('../../export/from-onnx');
  const f = args.flags;
  if (f.checkpoint === undefined)
    throw new UsageError('export: --onnx needs --checkpoint <dir> (the safetensors checkpoint the weights come from)');
  const onnx = requirePath(io.cwd, f.onnx!, 'file');
  const checkpoint = requireModelPath(io.cwd, f.checkpoint, { env: io.env, revision: f.revision, exts: CHECKPOINT_FILES }).path;
  const out = requireOutDir(io.cwd, f.out);
  const progress = createProgress('resolving initializers', { stream: io.stderr, unit: 'items' });
  try {
    const r = await exportFromOnnx({
      onnx,
      checkpoint,
      out,
      dtype: (f['prepared-dtype'] ?? 'float32') as PrepareDtype,
      allowUnresolved: f['allow-unresolved'],
      keepNames: f['keep-names'],
      ...(f['max-ram-mb'] !== undefined ? { maxRamMb: f['max-ram-mb'] } : {}),
      roots: f.root.map((r) => requirePath(io.cwd, r, 'dir')),
      onProgress: (done, total) => progress.update(done, total),
    });
    progress.done(`${r.resolutions.length - r.unresolved.length}/${r.resolutions.length} resolved`);
    for (const line of await fromOnnxSummary(r)) println(io.stdout, line);
    return 0;
  } catch (e) {
    progress.fail();
    throw e;
  }
}

export const exportCommand = defineCommand({
  name: 'export',
  summary: 'export a weight-free ONNX and its weight_spec.json',
  synopsis: [
    'export --config <model dir> --out <dir> [--dtype float32|float16|bfloat16] [--ctx-len N] [--batch-size B] [--continuous-batching] [--phase both|prefill|decode] [--opset 17-21] [--moe-flavour expert_parallel --pipeline-stages P]',
    '       [--mla-cache per-head|compressed] [--sliding-cache full|window]',
    '       [--comp-ctx-lengths-prefill A,B --comp-ctx-lengths-decode C,D] [--sampler [--max-top-k N] [--return-pdfs]] [--keep-quantized]',
    '       [--lora <adapter dir> [--lora <adapter dir> …]]',
    '       [--num-speculative-tokens K[,K2…]] [--phase prefill [--enable-chunking]] [--replicate-kv-heads N]',
    'export --onnx <model.onnx> --checkpoint <dir> --out <dir>',
  ],
  details: [
    "With --config the graph has QEfficient's interface: input_ids, position_ids, past_key.{i}/past_value.{i}",
    '(+ batch_index with --continuous-batching); outputs logits of the last valid position and the',
    '*_RetainedState caches. The spec points at the prepared checkpoint (planned from the model',
    "directory's checkpoint when it has one, derived from config.json otherwise).",
    "CCL (QEfficient's compute-context-length): the comp_ctx_lengths input, whose length is the active bucket;",
    'attention reads only that many cache slots, the KV write still goes to the full cache.',
    "--sampler appends QEfficient's on-device sampler (penalties, temperature, top-k/p, min-p): next_tokens replaces logits.",
    "--mla-cache compressed (DeepSeek-V3, Kimi-K2): QEfficient's compressed MLA cache compressed_kv.{i} [b,1,ctx,kv_lora_rank]",
    'and k_pe.{i} [b,1,ctx,rope] instead of the per-head past_key.{i}/past_value.{i}.',
    "--sliding-cache window (Gemma 3, text and VLM): QEfficient's layout, each sliding layer's past_key/past_value a ring of",
    'sliding_window slots (position p at slot p mod sliding_window); full-attention layers keep ctx_len. Same logits.',
    "--lora (QEfficient's finite adapters): each targeted Linear adds x·A[k]·B[k] for the adapter k = lora_ids[row] (0 = base),",
    'A/B the stacked <module>.lora_a_weights / lora_b_weights that prepare --lora writes (give prepare the same adapters).',
    'A BERT / RoBERTa / XLM-RoBERTa folder (embeddings) exports one graph: input_ids, attention_mask, token_type_ids',
    '→ last_hidden_state, plus sentence_embedding when the folder has sentence-transformers',
    "modules (modules.json: mean / CLS / max pooling, then Normalize), as QEfficient's PooledModel.",
    "--num-speculative-tokens K (QEfficient's speculative-decoding target model, TLM): the num_logits_to_keep input [N, 1];",
    'logits [batch, N, vocab] for the N positions ending at the last valid one. compile --backend qaic gives Decode seq_len K + 1.',
    '--dtype bfloat16: bf16 weights, compute and KV cache (QEfficient on ai200; prepare --dtype bfloat16). qaic keeps bf16 for',
    'ai200 and converts to fp16 for ai100; the ORT compile emulates bf16 arithmetic in float32 (rounded per op) on the CPU.',
    "--phase prefill of a disaggregated-serving MoE (QEfficient's SPECIALIZED_DISAGG_SERVING_MODEL_ARCH: qwen3_moe, glm4_moe,",
    'kimi_k2) is its prefill-only graph: compile gives the Prefill specializations only (prefill_only), [--enable-chunking].',
    "gpt_oss's (not chunked) attends the call's tokens only, sliding layers keep sliding_window keys; compile sets ctx_len to",
    "prefill_seq_len (export it without --ctx-len) and adds sliding_window 128, as QEfficient's get_specializations.",
    "--phase prefill of a vision-language model marks its language graph prefill-only (QEfficient's lang_prefill_qpc_path):",
    'the same graph and logits; compile --backend qaic keeps the language Prefill entries only. --phase decode is refused.',
  ],
  flags,
  positionals: { min: 0, max: 0, names: [] },
  async run(args, io) {
    const { config, onnx } = args.flags;
    if ((config === undefined) === (onnx === undefined))
      throw new UsageError('export: give exactly one of --config <model dir> or --onnx <model.onnx>');
    if (onnx !== undefined) {
      for (const k of [
        'dtype',
        'ctx-len',
        'batch-size',
        'phase',
        'opset',
        'moe-flavour',
        'pipeline-stages',
        'mla-cache',
        'sliding-cache',
        'comp-ctx-lengths-prefill',
        'comp-ctx-lengths-decode',
        'max-top-k',
        'num-speculative-tokens',
        'replicate-kv-heads',
      ] as const) {
        if (args.flags[k] !== undefined) throw new UsageError(`export: --${k} goes with --config`);
      }
      for (const k of ['continuous-batching', 'sampler', 'return-pdfs', 'keep-quantized', 'enable-chunking'] as const) {
        if (args.flags[k]) throw new UsageError(`export: --${k} goes with --config`);
      }
      if (args.flags.lora.length) throw new UsageError('export: --lora goes with --config');
      return exportOnnx(args, io);
    }
    return exportConfig(args, io);
  },
});
