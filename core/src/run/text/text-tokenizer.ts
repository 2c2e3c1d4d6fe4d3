/**
 * The model's tokenizer for `run --prompt` / `--chat`: Hugging Face's own tokenizers.js
 * (`@huggingface/tokenizers`, pure JS, reading the Hub's tokenizer.json + tokenizer_config.json
 * as transformers does) behind a small interface, and {@link TextStream}, which turns tokens
 * into text as they arrive the way transformers' TextStreamer does.
 */
import { Tokenizer } from '@huggingface/tokenizers';
import { PipelineError } from '../../errors';
import type { TextModelFiles } from './model-files';

/** What run needs of a tokenizer. */
export interface TextTokenizer {
  /** tokenizer.json's path (named in errors). */
  readonly file: string;
  /** `add_special_tokens`: BOS/EOS as the post-processor (or tokenizer_config.json's add_bos/eos_token) say. */
  encode(text: string, addSpecialTokens: boolean): number[];
  /** Text of `ids`; special tokens (BOS, EOS, chat markers) left out unless `keepSpecial`. */
  decode(ids: number[], keepSpecial?: boolean): string;
  /** The id of a token's text (added tokens included), when the vocabulary has it. */
  idOf(token: string): number | undefined;
  /** A special token named by tokenizer_config.json (`bos_token`, `eos_token`, …) as text. */
  special(name: string): string | undefined;
}

/** tokenizer_config.json's token fields are a string or an AddedToken object `{content}`. */
function tokenText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return undefined;
}

/** tokenizers' model types the library reads (WordLevel through its word model). */
const MODEL_TYPES = ['BPE', 'WordPiece', 'Unigram', 'WordLevel'];

/** The library validates that these keys exist (tokenizers serializes them, null when unused); files written by hand may omit them. */
const TOKENIZER_KEYS = ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder', 'added_tokens'] as const;

/** Loads the tokenizer of `files`; a file the library cannot read is one line naming it and why. */
export function loadTokenizer(files: TextModelFiles): TextTokenizer {
  const file = files.tokenizerFile;
  const json: Record<string, unknown> = { ...files.tokenizer };
  for (const k of TOKENIZER_KEYS) if (!(k in json)) json[k] = k === 'added_tokens' ? [] : null;
  const model = json.model as Record<string, unknown> | undefined;
  if (!model || typeof model !== 'object') throw new PipelineError(`${file}: has no "model" (not a tokenizers file)`);
  // the library reads an unknown model type with a vocabulary as its legacy word model; refused by name instead
  if (model.type !== undefined && !MODEL_TYPES.includes(model.type as string))
    throw new PipelineError(
      `${file}: this tokenizer cannot be read here (model type ${String(model.type)}; readable: ${MODEL_TYPES.join(', ')})`,
    );
  // the config's token fields may be AddedToken objects; the library wants their text
  const config: Record<string, unknown> = { ...files.config };
  for (const k of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) {
    const t = tokenText(config[k]);
    if (t === undefined) delete config[k];
    else config[k] = t;
  }
  // WordLevel: the library's word-level model takes its unknown token from the config; the model names its own
  if (model.type === 'WordLevel' && config.unk_token === undefined && typeof model.unk_token === 'string')
    config.unk_token = model.unk_token;
  let tok: Tokenizer;
  try {
    tok = new Tokenizer(json, config);
  } catch (e) {
    throw new PipelineError(`${file}: this tokenizer cannot be read here (model type ${String(model.type ?? 'unknown')}): ${firstLine(e)}`);
  }
  const bool = (k: string) => (typeof config[k] === 'boolean' ? (config[k] as boolean) : undefined);
  const addBos = bool('add_bos_token');
  const addEos = bool('add_eos_token');
  const idOf = (t: string | undefined) => (t === undefined ? undefined : tok.token_to_id(t));
  return {
    file,
    encode(text, addSpecialTokens) {
      let r: { ids: (number | undefined)[]; tokens: string[] };
      // transformers' Llama/Gemma fast tokenizers rebuild the post-processor from these flags when the config sets them
      const byConfig = addSpecialTokens && (addBos !== undefined || addEos !== undefined);
      try {
        r = tok.encode(text, { add_special_tokens: addSpecialTokens && !byConfig });
      } catch (e) {
        throw new PipelineError(`${file}: cannot encode the prompt: ${firstLine(e)}`);
      }
      const bad = r.ids.findIndex((x) => x === undefined);
      if (bad >= 0)
        throw new PipelineError(
          `${file}: the prompt's token "${r.tokens[bad]}" is not in the vocabulary and the tokenizer has no unk_token`,
        );
      const ids = r.ids as number[];
      if (!byConfig) return ids;
      const bos = idOf(tokenText(config.bos_token));
      const eos = idOf(tokenText(config.eos_token));
      return [...(addBos && bos !== undefined ? [bos] : []), ...ids, ...(addEos && eos !== undefined ? [eos] : [])];
    },
    decode(ids, keepSpecial = false) {
      if (ids.length === 0) return '';
      return tok.decode(ids, { skip_special_tokens: !keepSpecial });
    },
    idOf: (t) => idOf(t),
    special: (name) => tokenText(files.config[name]),
  };
}

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0];

/** CJK ideographs end a word by themselves (transformers' TextStreamer._is_chinese_char ranges). */
function isCjk(cp: number): boolean {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) ||
    (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) ||
    (cp >= 0x2b820 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/**
 * Streams generated tokens as text, as transformers' TextStreamer does: the tokens since the
 * last line break are decoded together (a character may span byte tokens; a decoder may join
 * or space tokens by their neighbours), and only text that can no longer change is given out —
 * up to the last space, a whole line, or a CJK character; {@link TextStream.end} gives the rest.
 */
export class TextStream {
  private tokens: number[] = [];
  private printed = 0;

  constructor(private readonly tok: TextTokenizer) {}

  /** The new text that `id` makes final (often empty). */
  push(id: number): string {
    this.tokens.push(id);
    const text = this.tok.decode(this.tokens);
    if (text.endsWith('\n')) {
      const out = text.slice(this.printed);
      this.tokens = [];
      this.printed = 0;
      return out;
    }
    if (text.endsWith('\uFFFD')) return ''; // a character not complete yet
    const last = text.codePointAt(text.length - 1);
    const upTo = last !== undefined && isCjk(last) ? text.length : text.lastIndexOf(' ') + 1;
    if (upTo <= this.printed) return '';
    const out = text.slice(this.printed, upTo);
    this.printed = upTo;
    return out;
  }

  /** What is left once the generation ends. */
  end(): string {
    const out = this.tok.decode(this.tokens).slice(this.printed);
    this.tokens = [];
    this.printed = 0;
    return out;
  }
}
