/**
 * `run` on the exports that are not a text LM — an embedding encoder (`--dump-embeddings`), a
 * Whisper pair (features, encoder once, greedy decode) and a vision-language pair (images, then
 * the language graph) — and what every mode shares: the id lists it parses (`--input-ids`,
 * `--lora-ids`, …), the JSON dumps written through the output policy, the token count of its
 * summary. run.ts routes to them; run-text.ts is the text mode's.
 */
import path from 'node:path';
import { UsageError } from '../../errors';
import { writeOutputFile } from '../../paths';
import { println, type CliIO } from '../command';
import type { TextRun } from './run-text';

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
export function dumpLogits(io: CliIO, given: string, logits: number[][] | number[][][]): Promise<string> {
  return dumpJson(io, given, { logits });
}

/** `--dump-logits F` / `--dump-embeddings F`: the file through the output policy, or stdout for `-`. Returns what to name in the summary. */
export async function dumpJson(io: CliIO, given: string, value: object): Promise<string> {
  const text = JSON.stringify(value) + '\n';
  if (given === '-') {
    io.stdout.write(text);
    return 'stdout';
  }
  return writeOutputFile(io.cwd, given, text);
}

/** `1 token`, `5 tokens`. */
export const tokenCount = (n: number) => `${n} token${n === 1 ? '' : 's'}`;

/** `run --dump-embeddings`: one forward of an embedding graph (run/embedding.ts) over one unpadded input. */
export async function runEmbedding(model: string, ids: number[], f: EmbeddingFlags, io: CliIO): Promise<number> {
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

/** The flags of an embedding run. */
export type EmbeddingFlags = { 'dump-embeddings'?: string; 'attention-mask'?: string; 'token-type-ids'?: string; prepack: boolean };

/** The flags the non-text runs read. */
export type RunFlags = {
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
export async function runWhisper(dir: string, f: RunFlags & { 'max-new-tokens'?: number }, io: CliIO): Promise<number> {
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

export async function runVlm(dir: string, ids: number[], n: number, f: RunFlags, io: CliIO, text?: TextRun): Promise<number> {
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
    if (text)
      ids = text.promptIds({
        manifest: runner.manifest,
        grids: images?.grids ?? [],
        ...(images?.tileGrids ? { tileGrids: images.tileGrids } : {}),
      });
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
