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

/** Parses `3,17,5` into token ids (non-negative integers). */
export function parseIds(text: string): number[] {
  const parts = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (parts.length === 0) throw new UsageError('run: --input-ids needs at least one id (e.g. 3,17,5)');
  return parts.map((p) => {
    if (!/^\d+$/.test(p) || !Number.isSafeInteger(Number(p))) throw new UsageError(`run: --input-ids: "${p}" is not a token id`);
    return Number(p);
  });
}

/** `--dump-logits F`: the file through the output policy, or stdout for `-`. Returns what to name in the summary. */
async function dumpLogits(io: CliIO, given: string, logits: number[][]): Promise<string> {
  const text = JSON.stringify({ logits }) + '\n';
  if (given === '-') {
    io.stdout.write(text);
    return 'stdout';
  }
  return writeOutputFile(io.cwd, given, text);
}

type RunFlags = {
  'input-ids'?: string;
  'pixel-values'?: string;
  image: string[];
  'dump-logits'?: string;
  prepack: boolean;
  'ctx-len'?: number;
  'max-image-pixels'?: number;
};

async function runVlm(dir: string, ids: number[], n: number, f: RunFlags, io: CliIO, text?: TextRun): Promise<number> {
  const [{ openVlmRunner }, { readImages, readPixelValues }, { expandGemma3Prompt }] = await Promise.all([
    import('../../run/vlm/vlm-runner'),
    import('../../run/vlm/inputs'),
    import('../../run/vlm/gemma3-prompt'),
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
    if (f['dump-logits']) {
      const t0 = performance.now();
      const logits = await runner.logits(ids, images);
      const out = await dumpLogits(io, f['dump-logits'], logits);
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

/** `1 token`, `5 tokens`. */
const tokenCount = (n: number) => `${n} token${n === 1 ? '' : 's'}`;

export const runCommand = defineCommand({
  name: 'run',
  summary: 'run a compiled model (greedy tokens, logits dump)',
  synopsis: [
    'run <export dir|compiled.onnx> --input-ids 3,17,5 [--max-new-tokens N] [--dump-logits out.json]',
    '    [--temperature T] [--top-k K] [--top-p P] [--min-p M] [--repetition-penalty R] [--presence-penalty Q] [--seed S]',
    'run <vlm export dir> --input-ids … [--pixel-values file.json | --image file.png|.jpg …] [--max-new-tokens N] [--dump-logits out.json]',
    ...TEXT_SYNOPSIS,
  ],
  details: [
    "Sampling follows QEfficient's sampler: temperature 0 (default) is greedy; a graph exported with --sampler is",
    'fed these values and samples on the device, a plain graph samples on the host with the same semantics.',
    'A graph with comp_ctx_lengths (CCL) gets the smallest bucket covering the position, moving up while decoding.',
    '--dump-logits writes {"logits": number[][]} with one row per given id (row t predicts token t+1);',
    'KV-cache graphs are fed one id at a time for it. Without --dump-logits, 8 tokens are generated by default.',
    'onnxruntime-node is loaded from WEIGHT_SPEC_ORT_PATH when set.',
    'A VLM export (vlm.json + vision/ + language/) runs the vision graph once, computes the MRoPE position',
    'ids (HF get_rope_index, rope delta for generated tokens), prefills and decodes greedily. --pixel-values',
    'reads {"pixel_values": rows, "image_grid_thw": [[t,h,w]]}; --image runs the Qwen image processor',
    "(preprocessor_config.json beside the model's config.json when present).",
    ...TEXT_DETAILS,
  ],
  flags: {
    'input-ids': { type: 'string', placeholder: '<ids>', description: 'comma-separated token ids' },
    ...TEXT_FLAGS,
    'max-new-tokens': { type: 'int', placeholder: '<N>', description: 'tokens to generate greedily' },
    'dump-logits': {
      type: 'string',
      placeholder: '<out.json|->',
      description: 'write {"logits": number[][]}, one row per input position ("-": stdout)',
    },
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
    const { wantsText, openTextRun } = await import('../../run/text/text-run');
    const textIn = wantsText(f);
    let ids = textIn ? [] : parseIds(f['input-ids']!);
    // Refused before any work: the dump goes to a regular file (or stdout), never a device or a link.
    if (f['dump-logits'] !== undefined && f['dump-logits'] !== '-') checkOutputFile(io.cwd, f['dump-logits']);
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
    // the tokenizer is read (or refused with one line) before any graph is loaded
    const text = textIn ? openTextRun(target, f, io.cwd) : undefined;
    if (isVlmExport(target)) {
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
      checkTokenIds(ids, vocabOf(graph), graph);
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
    const runner = await openRunner(target, {
      prepack: f.prepack,
      ctxLen: f['ctx-len'],
      ...(f['prefill-seq-len'] !== undefined ? { prefillSeqLen: f['prefill-seq-len'] } : {}),
      ortPath: io.env.WEIGHT_SPEC_ORT_PATH,
    });
    try {
      if (f['dump-logits']) {
        const t0 = performance.now();
        const logits = await runner.logits(ids);
        const out = await dumpLogits(io, f['dump-logits'], logits);
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
      }
    } finally {
      await runner.close();
    }
    return 0;
  },
});
