/**
 * Text in, text out for `run`: `--prompt TEXT` (tokenized with BOS/EOS as the tokenizer says)
 * or `--chat MESSAGE [--system TEXT]` (the model's chat template, then tokenized as transformers'
 * apply_chat_template does: without adding special tokens, the template writes them), images
 * placed by the text for a VLM, and the generated tokens streamed to stdout as text while
 * they arrive, stopping at the model's end-of-sequence ids unless `--ignore-eos`.
 */
import path from 'node:path';
import { UsageError } from '../../errors';
import type { VlmManifest } from '../../artifacts/vlm-manifest';
import type { OnToken } from '../runner-generate';
import { chatMessages, renderChat } from './chat-template';
import { eosTokenIds, modelDirsOf, readTextModelFiles, type TextModelFiles } from './model-files';
import { loadTokenizer, TextStream, type TextTokenizer } from './text-tokenizer';
import { placeImages } from './vlm-prompt';

/** The `run` flags of text in, text out. */
export interface TextFlags {
  prompt?: string;
  chat?: string;
  system?: string;
  tokenizer?: string;
  'ignore-eos'?: boolean;
  'print-ids'?: boolean;
  'input-ids'?: string;
}

/** Where the streamed text and the ids go. */
export interface TextOut {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

/** A prompt given as text, ready to be tokenized and its answer streamed. */
export interface TextRun {
  readonly tokenizer: TextTokenizer;
  readonly files: TextModelFiles;
  /** The ids that end the generation (none under --ignore-eos). */
  readonly eos: readonly number[];
  /**
   * The prompt's ids; for a VLM the images' placeholders expanded for `grids` (in prompt order;
   * Llama 4: one grid per tile, and `tileGrids` one `[rows, cols]` per image).
   */
  promptIds(vlm?: { manifest: VlmManifest; grids: [number, number, number][]; tileGrids?: [number, number][] }): number[];
  /** A callback for the runner streaming each token's text to `out.stdout`, true at an end-of-sequence id. */
  stream(out: TextOut): OnToken;
  /** Ends the stream (the text's rest and a line break) and prints the ids (stderr, or stdout with --print-ids). */
  finish(out: TextOut, tokens: number[]): void;
}

/** True when the flags ask for text in (`--prompt` or `--chat`); refuses mixed or dangling flags. */
export function wantsText(f: TextFlags): boolean {
  const text = f.prompt !== undefined || f.chat !== undefined;
  if (f.prompt !== undefined && f.chat !== undefined) throw new UsageError('run: give --prompt or --chat, not both');
  if (text && f['input-ids'] !== undefined) throw new UsageError('run: give --input-ids or --prompt / --chat, not both');
  if (f.system !== undefined && f.chat === undefined) throw new UsageError('run: --system goes with --chat');
  if (!text) {
    const stray = (['tokenizer', 'ignore-eos', 'print-ids'] as const).filter((k) => f[k] !== undefined && f[k] !== false);
    if (stray.length) throw new UsageError(`run: --${stray[0]} goes with --prompt or --chat`);
    if (f['input-ids'] === undefined) throw new UsageError('run: give the prompt: --prompt "text", --chat "message" or --input-ids 3,17,5');
  }
  return text;
}

/**
 * Reads the model's tokenizer (beside config.json as the export names it, or `f.tokenizer`
 * relative to `cwd`) for the run of `target`; one line naming the file when it cannot.
 */
export function openTextRun(target: string, f: TextFlags, cwd: string): TextRun {
  const given = f.tokenizer !== undefined ? path.resolve(cwd, f.tokenizer) : undefined;
  const files = readTextModelFiles(target, given);
  const tokenizer = loadTokenizer(files);
  const eos = f['ignore-eos'] ? [] : eosTokenIds([...modelDirsOf(target), files.dir]).ids;
  const stopAt = new Set(eos);
  let stream: TextStream | undefined;
  return {
    tokenizer,
    files,
    eos,
    promptIds(vlm) {
      const chat = f.chat !== undefined;
      let text = chat
        ? renderChat(
            files,
            chatMessages(f.chat!, { system: f.system, images: (vlm?.tileGrids ?? vlm?.grids)?.length ?? 0 }),
            tokenizer.special,
          )
        : f.prompt!;
      if (vlm) text = placeImages(text, vlm.manifest, tokenizer, vlm.grids, chat, vlm.tileGrids);
      const ids = tokenizer.encode(text, !chat);
      if (ids.length === 0) throw new UsageError(`run: the ${chat ? 'chat' : 'prompt'} gives no tokens`);
      return ids;
    },
    stream(out) {
      stream = new TextStream(tokenizer);
      const s = stream;
      return (t) => {
        const piece = s.push(t);
        if (piece) out.stdout.write(piece);
        return stopAt.has(t);
      };
    },
    finish(out, tokens) {
      const rest = stream?.end() ?? tokenizer.decode(tokens);
      out.stdout.write(rest + '\n');
      const ids = tokens.join(',');
      if (f['print-ids']) out.stdout.write(ids + '\n');
      else out.stderr.write(`run: ids ${ids}\n`);
    },
  };
}
