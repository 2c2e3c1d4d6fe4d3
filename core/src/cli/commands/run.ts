/**
 * `weight-spec run <compiled> --input-ids …`: greedy generation / logits dump with ONNX
 * Runtime on a compiled export (its latest ort compile) or a bound `.onnx`.
 * New token ids go to stdout (comma-separated); time to first token and tokens/s to stderr.
 */
import path from 'node:path';
import { PipelineError, UsageError } from '../../errors';
import { checkOutputFile, writeOutputFile } from '../../paths';
import type { SamplingParams } from '../../run';
import { defineCommand, println, type CliIO } from '../command';
import { requirePath } from '../input-paths';
import { TEXT_DETAILS, TEXT_FLAGS, TEXT_SYNOPSIS, type TextRun } from './run-text';

/** Parses `3,17,5` into token ids (non-negative integers); `flag` names another per-id list (`--token-type-ids`). */
export function parseIds(text: string, flag = '--input-ids'): number[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0) throw new UsageError(`run: ${flag} needs at least one id (e.g. 3,17,5)`);
  return parts.map((p) => {
    if (!/^\d+$/.test(p) || !Number.isSafeInteger(Number(p)))
      throw new UsageError(`run: ${flag}: "${p}" is not ${flag === '--input-ids' ? 'a token id' : 'a non-negative integer'}`);
    return Number(p);
  });
}

/**
 * `--input-ids` rows: `3,17,5` is one prompt, `3,17;8,9` a batch of rows separated by `;`.
 * `--lora-ids 1,2` parses the same way (one id per row).
 */
export function parseIdRows(text: string, flag = '--input-ids'): number[][] {
  const rows = text.split(';');
  return rows.map((r) => {
    try {
      return parseIds(r);
    } catch (e) {
      throw new UsageError((e as Error).message.replace('--input-ids', rows.length > 1 ? `${flag} (row ${rows.indexOf(r)})` : flag));
    }
  });
}

/** `--dump-logits F`: the logits as `{"logits": …}` through {@link dumpJson}. */
function dumpLogits(io: CliIO, given: string, logits: number[][] | number[][][]): Promise<string> {
  return dumpJson(io, given, { logits });
}

/** `--dump-logits F` / `--dump-embeddings F`: the file through the output policy, or stdout for `-`. Returns what to name in the summary. */
async function dumpJson(io: CliIO, given: string, value: object): Promise<string> {
  const text = JSON.stringify(value) + '\n';
  if (given === '-') {
    io.stdout.write(text);
    return 'stdout';
  }
  return writeOutputFile(io.cwd, given, text);
}

/** `run --dump-embeddings`: one forward of an embedding graph (run/embedding.ts) over one unpadded input. */
async function runEmbedding(model: string, ids: number[], f: EmbeddingFlags, io: CliIO): Promise<number> {
  const { embed } = await import('../../run/embedding');
  const t0 = performance.now();
  const e = await embed(
    model,
    {
      ids,
      ...(f['attention-mask'] !== undefined ? { attentionMask: parseIds(f['attention-mask'], '--attention-mask') } : {}),
      ...(f['token-type-ids'] !== undefined ? { tokenTypeIds: parseIds(f['token-type-ids'], '--token-type-ids') } : {}),
    },
    { prepack: f.prepack, ortPath: io.env.WEIGHT_SPEC_ORT_PATH },
  );
  const out = await dumpJson(io, f['dump-embeddings']!, e);
  const pooled = e.sentence_embedding
    ? `, sentence_embedding [${e.sentence_embedding.length}]`
    : ', no sentence_embedding (no pooling in the graph)';
  println(
    io.stderr,
    `run: last_hidden_state [${e.last_hidden_state.length}, ${e.last_hidden_state[0]?.length ?? 0}]${pooled} → ${out} (${(performance.now() - t0).toFixed(0)} ms)`,
  );
  return 0;
}

type EmbeddingFlags = { 'dump-embeddings'?: string; 'attention-mask'?: string; 'token-type-ids'?: string; prepack: boolean };

type RunFlags = {
  'input-ids'?: string;
  'pixel-values'?: string;
  image: string[];
  'dump-logits'?: string;
  prepack: boolean;
  'ctx-len'?: number;
  'max-image-pixels'?: number;
  audio?: string;
  'input-features'?: string;
  'decoder-input-ids'?: string;
  tokenizer?: string;
};

/** `run <whisper export>`: features from --audio or --input-features, the encoder once, then greedy decode. */
async function runWhisper(dir: string, f: RunFlags & { 'max-new-tokens'?: number }, io: CliIO): Promise<number> {
  const [{ openWhisperRunner }, { featuresFromJson, featuresFromWav }] = await Promise.all([
    import('../../run/whisper/whisper-runner'),
    import('../../run/whisper/whisper-inputs'),
  ]);
  if ((f.audio === undefined) === (f['input-features'] === undefined))
    throw new UsageError('run: a Whisper export needs --audio <file.wav> or --input-features <file.json> (one of them)');
  if (f['decoder-input-ids'] === undefined)
    throw new UsageError('run: a Whisper export needs --decoder-input-ids (the prompt: start, language, task, no-timestamps ids)');
  const prompt = parseIds(f['decoder-input-ids'], '--decoder-input-ids');
  const n = f['max-new-tokens'] ?? (f['dump-logits'] ? 0 : 8);
  if (n < 0) throw new UsageError('run: --max-new-tokens must be ≥ 0');
  if (n === 0 && !f['dump-logits']) throw new UsageError('run: --max-new-tokens 0 without --dump-logits leaves nothing to do');
  const runner = await openWhisperRunner(dir, { prepack: f.prepack, ctxLen: f['ctx-len'], ortPath: io.env.WEIGHT_SPEC_ORT_PATH });
  try {
    const features =
      f.audio !== undefined
        ? featuresFromWav(path.resolve(io.cwd, f.audio), runner.manifest).features
        : featuresFromJson(path.resolve(io.cwd, f['input-features']!));
    const r = await runner.transcribe(features, prompt, n);
    if (n > 0) println(io.stdout, r.tokens.join(','));
    // the transcription as text (special tokens left out) when the model ships tokenizer.json
    if (n > 0) {
      const { optionalTextModelFiles } = await import('../../run/text/model-files');
      const { loadTokenizer } = await import('../../run/text/text-tokenizer');
      const tokenizerDir = f.tokenizer === undefined ? undefined : path.resolve(io.cwd, f.tokenizer);
      const files = optionalTextModelFiles(dir, tokenizerDir);
      if (files) println(io.stdout, loadTokenizer(files).decode(r.tokens).trim());
      else println(io.stderr, 'run: no tokenizer.json beside the model (or --tokenizer <dir>): the transcription is printed as ids only');
    }
    const dumped = f['dump-logits'] ? ` → logits ${await dumpJson(io, f['dump-logits'], { logits: r.logits })}` : '';
    println(
      io.stderr,
      `run: ${tokenCount(r.tokens.length)}, ${r.logits.length} logit rows; encoder ${r.encoderMs.toFixed(0)} ms, ${r.totalMs.toFixed(0)} ms total (whisper)${dumped}`,
    );
  } finally {
    await runner.close();
  }
  return 0;
}

async function runVlm(dir: string, ids: number[], n: number, f: RunFlags, io: CliIO, text?: TextRun): Promise<number> {
  const [{ openVlmRunner }, { readImages, readPixelValues }, { expandGemma3Prompt }, { expandLlavaPrompt }] = await Promise.all([
    import('../../run/vlm/vlm-runner'),
    import('../../run/vlm/inputs'),
    import('../../run/vlm/gemma3-prompt'),
    import('../../run/vlm/llava-prompt'),
  ]);
  if (f['pixel-values'] !== undefined && f.image.length) throw new UsageError('run: give --pixel-values or --image, not both');
  const maxPixels = f['max-image-pixels'];
  if (maxPixels !== undefined && (!f.image.length || maxPixels <= 0))
    throw new UsageError('run: --max-image-pixels needs --image and a positive number of pixels');
  const runner = await openVlmRunner(dir, { prepack: f.prepack, ctxLen: f['ctx-len'], ortPath: io.env.WEIGHT_SPEC_ORT_PATH });
  try {
    // Gemma 3: a bare begin-of-image token expands to the processor's full image sequence
    ids = expandGemma3Prompt(ids, runner.manifest);
    const images =
      f['pixel-values'] !== undefined
        ? readPixelValues(path.resolve(io.cwd, f['pixel-values']))
        : f.image.length
          ? readImages(
              f.image.map((x) => path.resolve(io.cwd, x)),
              runner.manifest,
              { maxPixels: f['max-image-pixels'], ctxLen: runner.ctxLen },
            )
          : undefined;
    // --prompt / --chat: the images' placeholders expanded by the text, then tokenized
    if (text) ids = text.promptIds({ manifest: runner.manifest, grids: images?.grids ?? [] });
    // LLaVA: one <image> per image expands to the image's feature rows (LlavaProcessor's count)
    ids = expandLlavaPrompt(ids, runner.manifest, images);
    if (f['dump-logits']) {
      const t0 = performance.now();
      const logits = await runner.logits(ids, images);
      const out = await dumpJson(io, f['dump-logits'], { logits });
      println(
        io.stderr,
        `run: ${logits.length} logit rows (vlm: vision + language graphs) → ${out} (${(performance.now() - t0).toFixed(0)} ms)`,
      );
    }
    if (n > 0) {
      const s = await runner.generate(ids, images, n, text?.stream(io));
      if (text) text.finish(io, s.tokens);
      else println(io.stdout, s.tokens.join(','));
      println(
        io.stderr,
        `run: ${tokenCount(s.tokens.length)}; time to first token ${s.ttftMs.toFixed(1)} ms (vision + prefill), ${s.totalMs.toFixed(0)} ms total (vlm)`,
      );
    }
  } finally {
    await runner.close();
  }
  return 0;
}

/** A batch of rows, a LoRA adapter each: logits dump (`[row][position][vocab]`) and greedy tokens, one line per row. */
async function runBatch(
  runner: import('../../run').Runner,
  rows: number[][],
  loraIds: number[] | undefined,
  n: number,
  dump: string | undefined,
  io: CliIO,
): Promise<number> {
  if (dump) {
    const t0 = performance.now();
    const logits = await runner.logitsBatch(rows, loraIds);
    const out = await dumpLogits(io, dump, logits);
    println(
      io.stderr,
      `run: ${rows.length} rows × ${logits[0]!.length} logit rows (batch) → ${out} (${(performance.now() - t0).toFixed(0)} ms)`,
    );
  }
  if (n > 0) {
    const t0 = performance.now();
    const tokens = await runner.generateBatch(rows, n, loraIds);
    for (const t of tokens) println(io.stdout, t.join(','));
    println(io.stderr, `run: ${rows.length} rows × ${tokenCount(n)}, greedy in one batch (${(performance.now() - t0).toFixed(0)} ms)`);
  }
  return 0;
}

/** `1 token`, `5 tokens`. */
const tokenCount = (n: number) => `${n} token${n === 1 ? '' : 's'}`;

export const runCommand = defineCommand({
  name: 'run',
  summary: 'run a compiled model (greedy tokens, logits dump)',
  synopsis: [
    'run <export dir|compiled.onnx> --input-ids 3,17,5 [--max-new-tokens N] [--dump-logits out.json]',
    '    [--temperature T] [--top-k K] [--top-p P] [--min-p M] [--repetition-penalty R] [--presence-penalty Q] [--seed S]',
    'run <vlm export dir> --input-ids … [--pixel-values file.json | --image file.png|.jpg …] [--max-new-tokens N] [--dump-logits out.json]',
    'run <whisper export dir> (--audio file.wav | --input-features file.json) --decoder-input-ids … [--max-new-tokens N] [--dump-logits out.json]',
    ...TEXT_SYNOPSIS,
    "run <lora export dir> --input-ids … --lora-id K | --input-ids '3,17;8,9' --lora-ids 1,2   (LoRA: adapter per row, 0 = base)",
    'run <embedding export dir> --input-ids … [--attention-mask 1,1,…] [--token-type-ids 0,0,…] --dump-embeddings out.json',
  ],
  details: [
    "Sampling follows QEfficient's sampler: temperature 0 (default) is greedy; a graph exported with --sampler is",
    'fed these values and samples on the device, a plain graph samples on the host with the same semantics.',
    'A graph with comp_ctx_lengths (CCL) gets the smallest bucket covering the position, moving up while decoding.',
    '--dump-logits writes {"logits": number[][]} with one row per given id (row t predicts token t+1);',
    'KV-cache graphs are fed one id at a time for it. Without --dump-logits, 8 tokens are generated by default.',
    'A speculative-decoding target graph (export --num-speculative-tokens K) takes K + 1 ids per call: --dump-logits',
    "checks the ids K + 1 at a time; generation checks prompt-lookup proposals (QEfficient's example), greedy.",
    'onnxruntime-node is loaded from WEIGHT_SPEC_ORT_PATH when set.',
    'A VLM export (vlm.json + vision/ + language/) runs the vision graph once, computes the MRoPE position',
    'ids (HF get_rope_index, rope delta for generated tokens), prefills and decodes greedily. --pixel-values',
    'reads {"pixel_values": rows, "image_grid_thw": [[t,h,w]]}; --image runs the model\'s image processor',
    "(Qwen, Gemma 3, CLIP, Pixtral; LLaVA-NeXT anyres and InternVL tiles; preprocessor_config.json beside the model's config.json).",
    'LLaVA: one <image> per image expands to the processor_config.json count of image tokens.',
    ...TEXT_DETAILS,
    'A Whisper export (whisper.json + encoder/ + decoder/) computes the log-mel features of --audio (mono 16-bit PCM or',
    '32-bit float WAV at the extractor rate) or reads "input_features" from --input-features, runs the encoder once and',
    'decodes greedily after --decoder-input-ids (stopping after the end token); --dump-logits writes the rows of the',
    'prompt and of each generated token but the last.',
    'A LoRA export (export --lora) takes --lora-id K for the prompt (0 = base, K = the K-th adapter given to export), or a',
    'batch: --input-ids rows separated by ";" (equal lengths) with --lora-ids, one id per row; greedy, one line of tokens per',
    'row, and --dump-logits writes {"logits": number[][][]} (row, position, vocab).',
    'An embedding export (BERT, XLM-RoBERTa) runs once over the given ids: --dump-embeddings writes',
    '{"last_hidden_state": [[…] per id], "sentence_embedding": […]} (the latter when the graph pools).',
  ],
  flags: {
    'input-ids': { type: 'string', placeholder: '<ids>', description: 'comma-separated token ids' },
    ...TEXT_FLAGS,
    audio: { type: 'string', placeholder: '<file.wav>', description: 'Whisper: the audio (mono WAV, 16-bit PCM or 32-bit float)' },
    'input-features': {
      type: 'string',
      placeholder: '<file.json>',
      description: 'Whisper: log-mel features {"input_features": [[…]]} instead of --audio',
    },
    'decoder-input-ids': { type: 'string', placeholder: '<ids>', description: "Whisper: the decoder prompt's token ids" },
    'max-new-tokens': { type: 'int', placeholder: '<N>', description: 'tokens to generate greedily' },
    'dump-logits': {
      type: 'string',
      placeholder: '<out.json|->',
      description: 'write {"logits": number[][]}, one row per input position ("-": stdout)',
    },
    'dump-embeddings': {
      type: 'string',
      placeholder: '<out.json|->',
      description: 'embedding graph: write {"last_hidden_state": rows, "sentence_embedding": vector} ("-": stdout)',
    },
    'attention-mask': { type: 'string', placeholder: '<0/1,…>', description: 'embedding graph: the mask, one 0/1 per id (default all 1)' },
    'token-type-ids': { type: 'string', placeholder: '<ids>', description: 'embedding graph: token types, one per id (default all 0)' },
    'ctx-len': { type: 'int', placeholder: '<N>', description: 'KV cache length for graphs whose ctx_len is not fixed' },
    'prefill-seq-len': {
      type: 'int',
      placeholder: '<N>',
      description: 'feed the prompt in calls of N tokens, the last padded at position -1 (QEfficient prefill_seq_len)',
    },
    temperature: { type: 'number', placeholder: '<T>', description: 'sampling temperature (default 0: greedy)' },
    'top-k': { type: 'int', placeholder: '<K>', description: 'keep the K most likely tokens (default 0: off)' },
    'top-p': { type: 'number', placeholder: '<P>', description: 'keep the smallest set with probability ≥ P (default 1: off)' },
    'min-p': { type: 'number', placeholder: '<M>', description: 'drop tokens below M × the top probability (default 0: off)' },
    'repetition-penalty': {
      type: 'number',
      placeholder: '<R>',
      description: 'divide (multiply if negative) logits of prompt and output tokens by R (default 1)',
    },
    'presence-penalty': { type: 'number', placeholder: '<Q>', description: 'subtract Q from logits of output tokens (default 0)' },
    seed: { type: 'int', placeholder: '<S>', description: 'seed of the random numbers (same seed, same tokens)' },
    'lora-id': {
      type: 'int',
      placeholder: '<K>',
      description: 'LoRA export: the adapter to use (0 = base, K = the K-th --lora of export)',
    },
    'lora-ids': {
      type: 'string',
      placeholder: '<K,…>',
      description: 'LoRA export: one adapter id per --input-ids row (rows separated by ";"), run as one batch',
    },
    prepack: { type: 'boolean', description: 'let ONNX Runtime prepack weights (faster, copies MatMul weights into RAM)' },
    recompile: { type: 'boolean', description: 'recompile first when the compile is stale (otherwise a stale compile is refused)' },
    'pixel-values': { type: 'string', placeholder: '<file.json>', description: 'VLM: processed images {"pixel_values", "image_grid_thw"}' },
    image: {
      type: 'string',
      multiple: true,
      placeholder: '<file.png|.jpg>',
      description: 'VLM: an image for the prompt (repeat for several, in prompt order)',
    },
    'max-image-pixels': {
      type: 'int',
      placeholder: '<N>',
      description: "VLM: refuse an image declaring more pixels (default 89478485, Pillow's bomb limit), checked before decoding",
    },
  },
  positionals: { min: 1, max: 1, names: ['compiled'] },
  async run(args, io) {
    // loaded on use: `weight-spec prepare` (and --help) need not initialize this command's modules
    const [
      { compile },
      { readExportInputs },
      { checkSampling, checkTokenIds, GREEDY, needsSampler, openRunner, resolveRunnable, vocabOf },
      { isVlmExport },
    ] = await Promise.all([
      import('../../compile'),
      import('../../compile/inputs'),
      import('../../run'),
      import('../../run/vlm/vlm-runner'),
    ]);
    const f = args.flags;
    // a Whisper export: audio (or features) and a decoder prompt, no text prompt
    const { isWhisperExport } = await import('../../run/whisper/whisper-runner');
    if (f['decoder-input-ids'] !== undefined || f.audio !== undefined || f['input-features'] !== undefined) {
      if (f['dump-logits'] !== undefined && f['dump-logits'] !== '-') checkOutputFile(io.cwd, f['dump-logits']);
      const dir = requirePath(io.cwd, args.positionals[0]!, 'file-or-dir');
      if (!isWhisperExport(dir))
        throw new UsageError(
          `run: --audio / --input-features / --decoder-input-ids need a Whisper export directory (with whisper.json); ${args.positionals[0]} is not one`,
        );
      if (f['input-ids'] !== undefined || f.prompt !== undefined || f.chat !== undefined)
        throw new UsageError('run: a Whisper export takes --decoder-input-ids, not --input-ids / --prompt / --chat');
      return runWhisper(dir, f, io);
    }
    const { wantsText, openTextRun } = await import('../../run/text/text-run');
    const textIn = wantsText(f);
    const rows = textIn ? [[]] : parseIdRows(f['input-ids']!);
    let ids = rows[0]!;
    const batched = rows.length > 1 || f['lora-ids'] !== undefined;
    if (textIn && batched) throw new UsageError('run: --lora-ids and ";" rows go with --input-ids, not with a text prompt');
    if (f['lora-id'] !== undefined && f['lora-ids'] !== undefined) throw new UsageError('run: give --lora-id or --lora-ids, not both');
    const loraIds = f['lora-ids'] !== undefined ? parseIdRows(f['lora-ids'].replace(/;/g, ','), '--lora-ids')[0]! : undefined;
    if (loraIds && loraIds.length !== rows.length)
      throw new UsageError(`run: --lora-ids has ${loraIds.length} id(s) for ${rows.length} --input-ids row(s); give one per row`);
    if (f['lora-id'] !== undefined && f['lora-id'] < 0) throw new UsageError('run: --lora-id must be ≥ 0 (0 = base)');
    // Refused before any work: the dump goes to a regular file (or stdout), never a device or a link.
    if (f['dump-logits'] !== undefined && f['dump-logits'] !== '-') checkOutputFile(io.cwd, f['dump-logits']);
    const embedding = f['dump-embeddings'] !== undefined;
    if (embedding && f['dump-embeddings'] !== '-') checkOutputFile(io.cwd, f['dump-embeddings']!);
    if (!embedding && (f['attention-mask'] !== undefined || f['token-type-ids'] !== undefined))
      throw new UsageError('run: --attention-mask / --token-type-ids go with --dump-embeddings (an embedding graph)');
    if (embedding && (f['dump-logits'] !== undefined || f['max-new-tokens'] !== undefined || textIn))
      throw new UsageError(
        'run: --dump-embeddings runs an embedding graph on --input-ids; --dump-logits / --max-new-tokens / text input are for generation',
      );
    const n = f['max-new-tokens'] ?? (f['dump-logits'] ? 0 : textIn ? 32 : 8);
    if (n < 0) throw new UsageError('run: --max-new-tokens must be ≥ 0');
    if (f['prefill-seq-len'] !== undefined && f['prefill-seq-len'] < 1) throw new UsageError('run: --prefill-seq-len must be ≥ 1');
    if (n === 0 && !f['dump-logits']) throw new UsageError('run: --max-new-tokens 0 without --dump-logits leaves nothing to do');
    const sampling: SamplingParams = checkSampling({
      temperature: f.temperature ?? GREEDY.temperature,
      topK: f['top-k'] ?? GREEDY.topK,
      topP: f['top-p'] ?? GREEDY.topP,
      minP: f['min-p'] ?? GREEDY.minP,
      repetitionPenalty: f['repetition-penalty'] ?? GREEDY.repetitionPenalty,
      presencePenalty: f['presence-penalty'] ?? GREEDY.presencePenalty,
      ...(f.seed !== undefined ? { seed: f.seed } : {}),
    });
    const target = requirePath(io.cwd, args.positionals[0]!, 'file-or-dir');
    if (batched && needsSampler(sampling))
      throw new UsageError('run: a batch of rows (--lora-ids, ";" rows) decodes greedily; drop the sampling options');
    if (isWhisperExport(target))
      throw new UsageError('run: a Whisper export takes --audio <file.wav> (or --input-features) and --decoder-input-ids');
    // the tokenizer is read (or refused with one line) before any graph is loaded
    const text = textIn ? openTextRun(target, f, io.cwd) : undefined;
    if (isVlmExport(target)) {
      if (batched || f['lora-id'] !== undefined)
        throw new UsageError('run: --lora-id / --lora-ids / ";" rows are for text exports, not a VLM export');
      if (embedding) throw new UsageError('run: --dump-embeddings runs an embedding export; a VLM export generates tokens');
      if (needsSampler(sampling))
        throw new UsageError(
          'run: --temperature / --repetition-penalty / --presence-penalty are for text exports; a VLM export decodes greedily',
        );
      return runVlm(target, ids, n, f, io, text);
    }
    if (f['pixel-values'] !== undefined || f.image.length || f['max-image-pixels'] !== undefined)
      throw new UsageError(
        `run: --pixel-values / --image / --max-image-pixels need a VLM export directory (with vlm.json); ${args.positionals[0]} is not one`,
      );
    if (text) ids = text.promptIds();
    const { status } = resolveRunnable(target);
    // The same status compile uses: a stale artifact is never run silently.
    if (status?.state === 'stale') {
      const what = status.changed?.length ? `${status.changed.join(', ')} changed` : 'its inputs changed';
      // Ids are checked against the export's graph before a recompile that they would fail after.
      const graph = readExportInputs(target).onnxPath;
      for (const r of batched ? rows : [ids]) checkTokenIds(r, vocabOf(graph), graph);
      if (!f.recompile) {
        throw new PipelineError(
          `${args.positionals[0]}: the compiled model is stale (${what} since the compile); run \`weight-spec compile ${args.positionals[0]}\` first, or pass --recompile`,
        );
      }
      println(io.stderr, `run: the compiled model is stale (${what}); recompiling first`);
      await compile(target, {
        backend: 'ort',
        prepared: status.record?.prepared,
        env: io.env,
        stderr: io.stderr,
        log: (l) => println(io.stderr, l),
      });
    }
    if (embedding) return runEmbedding(resolveRunnable(target).model, ids, f, io);
    const runner = await openRunner(target, {
      prepack: f.prepack,
      ctxLen: f['ctx-len'],
      ...(f['prefill-seq-len'] !== undefined ? { prefillSeqLen: f['prefill-seq-len'] } : {}),
      ortPath: io.env.WEIGHT_SPEC_ORT_PATH,
      ...(f['lora-id'] !== undefined ? { loraId: f['lora-id'] } : {}),
    });
    try {
      if (batched) return await runBatch(runner, rows, loraIds, n, f['dump-logits'], io);
      if (f['dump-logits']) {
        const t0 = performance.now();
        const logits = await runner.logits(ids);
        const out = await dumpJson(io, f['dump-logits'], { logits });
        println(io.stderr, `run: ${logits.length} logit rows (${runner.kind} graph) → ${out} (${(performance.now() - t0).toFixed(0)} ms)`);
      }
      if (n > 0) {
        const s = await runner.generateWithStats(ids, n, sampling, text?.stream(io));
        if (text) text.finish(io, s.tokens);
        else println(io.stdout, s.tokens.join(','));
        const how = runner.features.sampler ? 'on-device sampler' : needsSampler(sampling) ? 'host sampling' : 'greedy';
        println(
          io.stderr,
          `run: ${tokenCount(s.tokens.length)}; time to first token ${s.ttftMs.toFixed(1)} ms, ${s.tokensPerSecond.toFixed(1)} tokens/s (${runner.kind} graph)`,
        );
        if (how !== 'greedy')
          println(
            io.stderr,
            `run: tokens chosen by ${how === 'host sampling' ? "QEfficient's sampler on the host" : "the graph's on-device sampler"}`,
          );
        if (s.buckets) println(io.stderr, `run: comp_ctx_lengths buckets ${s.buckets.join(' → ')}`);
        if (s.speculative) {
          const { k, calls, accepted } = s.speculative;
          println(
            io.stderr,
            `run: speculative decoding (prompt lookup, K = ${k}): ${calls} target calls of ${k + 1} tokens, ${calls ? (accepted / calls).toFixed(2) : '0'} tokens accepted per call`,
          );
        }
      }
    } finally {
      await runner.close();
    }
    return 0;
  },
});
