/**
 * Gemma3Processor's prompt expansion (HF models/gemma3/processing_gemma3.py) at the token level:
 * each begin-of-image token in the prompt becomes `\n\n <boi> <image>×mm_tokens_per_image <eoi>
 * \n\n` (full_image_sequence). A boi already followed by an image token is left as it is (the
 * prompt was expanded before). The "\n\n" token id comes from the model's tokenizer.json; without
 * one the expansion is refused rather than guessed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, PipelineError } from '../../errors';
import { readJsonTextSync } from '../../paths';
import type { VlmManifest } from '../../export/vlm/export-vlm';

/** The id of "\n\n" in `<dir>/tokenizer.json` (added tokens first, then the model vocab). */
function doubleNewlineId(dir: string): number {
  const file = path.join(dir, 'tokenizer.json');
  if (!fs.existsSync(file))
    throw new PipelineError(
      `run: the prompt has a begin-of-image token to expand, which needs the "\\n\\n" token id from ${file} (not found)`,
    );
  let tok: { added_tokens?: { id: number; content: string }[]; model?: { vocab?: Record<string, number> } };
  try {
    tok = JSON.parse(readJsonTextSync(file)) as typeof tok;
  } catch (e) {
    throw new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  const id = tok.added_tokens?.find((t) => t.content === '\n\n')?.id ?? tok.model?.vocab?.['\n\n'];
  if (typeof id !== 'number') throw new FormatError(file, 'has no "\\n\\n" token (needed to expand the image placeholder)');
  return id;
}

/** Expands every bare begin-of-image token of `ids` for a Gemma 3 export; other models' ids pass through. */
export function expandGemma3Prompt(ids: number[], m: VlmManifest): number[] {
  if (m.model_type !== 'gemma3') return ids;
  const boi = m.vision_start_token_id;
  const bare = (k: number) => ids[k] === boi && ids[k + 1] !== m.image_token_id;
  if (!ids.some((_, k) => bare(k))) return ids;
  if (m.image_end_token_id === undefined || m.mm_tokens_per_image === undefined)
    throw new PipelineError('run: this export predates Gemma 3 prompt expansion (vlm.json has no image_end_token_id); export it again');
  const nl = doubleNewlineId(path.dirname(m.config));
  const image = new Array<number>(m.mm_tokens_per_image).fill(m.image_token_id);
  return ids.flatMap((t, k) => (bare(k) ? [nl, boi, ...image, m.image_end_token_id!, nl] : [t]));
}
