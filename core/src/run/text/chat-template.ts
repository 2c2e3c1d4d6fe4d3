/**
 * `run --chat`: the model's chat template (tokenizer_config.json's `chat_template`, or
 * chat_template.jinja beside it) rendered by Hugging Face's Jinja (`@huggingface/jinja`, made
 * for chat templates) with what transformers' `apply_chat_template` passes: `messages`,
 * `add_generation_prompt` and the tokenizer's special tokens (`bos_token`, `eos_token`, …).
 * Images are content parts `{type: "image"}` before the text, as transformers' processors
 * take them; the template decides where their placeholder goes.
 */
import { Template } from '@huggingface/jinja';
import { PipelineError } from '../../errors';
import type { TextModelFiles } from './model-files';

/** One message of the conversation: text, or parts (images, then text) for a VLM. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string | ({ type: 'image' } | { type: 'text'; text: string })[];
}

/** The conversation `run --chat MESSAGE [--system TEXT] [--image F …]` sends. */
export function chatMessages(message: string, opts: { system?: string; images?: number } = {}): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (opts.system !== undefined) out.push({ role: 'system', content: opts.system });
  const n = opts.images ?? 0;
  out.push({
    role: 'user',
    content: n > 0 ? [...Array.from({ length: n }, () => ({ type: 'image' as const })), { type: 'text' as const, text: message }] : message,
  });
  return out;
}

/** The special tokens transformers hands every chat template (tokenizer_config.json's names). */
const SPECIAL_TOKENS = ['bos_token', 'eos_token', 'unk_token', 'pad_token', 'sep_token', 'cls_token', 'mask_token'] as const;

/**
 * Renders the model's chat template with `messages` and `add_generation_prompt: true`. No
 * template, or one that fails to parse or render, is one line naming the file and the error.
 */
export function renderChat(files: TextModelFiles, messages: ChatMessage[], special: (name: string) => string | undefined): string {
  const t = files.chatTemplate;
  if (!t)
    throw new PipelineError(
      `${files.configFile ?? files.tokenizerFile}: the model has no chat template (no "chat_template" here, no chat_template.jinja beside it); use --prompt`,
    );
  const vars: Record<string, unknown> = { messages, add_generation_prompt: true };
  for (const k of SPECIAL_TOKENS) {
    const v = special(k);
    if (v !== undefined) vars[k] = v;
  }
  try {
    return new Template(t.text).render(vars);
  } catch (e) {
    const msg = (e instanceof Error ? e.message : String(e)).split('\n')[0];
    throw new PipelineError(`${t.file}: the chat template fails: ${msg}`);
  }
}
