/**
 * The flags and help text of `run`'s text in, text out (core/src/run/text/), kept apart from
 * run.ts so the run command's own table stays what it was.
 */
import type { FlagDefs } from '../args';

export type { TextRun } from '../../run/text/text-run';

/** `run --prompt` / `--chat` and what goes with them. */
export const TEXT_FLAGS = {
  prompt: {
    type: 'string',
    placeholder: '<text>',
    description: "the prompt as text, tokenized with the model's tokenizer.json (BOS/EOS as its post-processor says)",
  },
  chat: {
    type: 'string',
    placeholder: '<message>',
    description: "a user message, rendered with the model's chat template (generation prompt added), then tokenized",
  },
  system: { type: 'string', placeholder: '<text>', description: '--chat: a system message before the user message' },
  tokenizer: {
    type: 'string',
    placeholder: '<dir>',
    description:
      "folder with tokenizer.json (+ tokenizer_config.json, chat_template.jinja); default: beside the model's config.json; Whisper: decodes the transcription",
  },
  'ignore-eos': { type: 'boolean', description: "--prompt / --chat: do not stop at generation_config.json's eos_token_id" },
  'print-ids': { type: 'boolean', description: '--prompt / --chat: print the generated ids on stdout after the text (default: stderr)' },
} as const satisfies FlagDefs;

export const TEXT_SYNOPSIS = [
  'run <export dir> --prompt "text" | --chat "message" [--system "text"] [--tokenizer <dir>] [--ignore-eos] [--print-ids]',
  'run <vlm export dir> --prompt "text" | --chat "message" --image file.png … [--max-new-tokens N]',
];

export const TEXT_DETAILS = [
  "--prompt / --chat read the model's tokenizer.json (and tokenizer_config.json, chat_template.jinja) beside the",
  "config.json the export names in its report (or --tokenizer <dir>), stream the answer's text to stdout as tokens",
  "arrive, and stop at generation_config.json's eos_token_id (one id or a list; config.json's when absent) unless",
  '--ignore-eos; 32 new tokens by default. --chat tokenizes the rendered template without adding special tokens',
  "(the template writes them), as transformers' apply_chat_template. With --image, each image's placeholder",
  '(<|vision_start|><|image_pad|><|vision_end|>, <start_of_image>, [IMG], <IMG_CONTEXT>), from the template or the prompt, is expanded to',
  "the processor's token count; a --prompt naming none gets one per image in front. Only tokenizer.json is read",
  '(a tokenizer.model alone is refused by name); --input-ids works without it.',
];
