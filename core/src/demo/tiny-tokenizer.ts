/**
 * The demo model's tokenizer, made in code in the Hub's format (tokenizer.json +
 * tokenizer_config.json, what `tokenizers` saves), so `weight-spec demo` ends with text in,
 * text out: a word-level vocabulary of the tiny Llama's 128 ids — `<unk>`, `<s>` (BOS, added
 * by the post-processor) and `</s>` (EOS, config.json's eos_token_id) at 0–2, then 125 common
 * English words — split on whitespace and decoded by joining with spaces.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { TINY_LLAMA_CONFIG } from './tiny-model';

/** The 125 words after the three special tokens. */
export const TINY_WORDS = (
  'the a an and or but of to in on at by for with from up down over under into ' +
  'cat dog bird fish fox horse cow sheep mouse owl frog ' +
  'sun moon star sky sea river hill tree leaf rock rain snow wind cloud fire stone road house door window garden ' +
  'red blue green gold white black small big old new quiet loud warm cold bright dark ' +
  'runs walks sings sleeps jumps looks waits falls grows shines flows sat sees hears finds keeps ' +
  'i you we they it he she this that there here now then ' +
  'one two three many some all no ' +
  'day night morning evening summer winter time world song story dream light mat ' +
  'is was are slowly softly far near home'
).split(' ');

const SPECIAL = ['<unk>', '<s>', '</s>'] as const;

/** tokenizer.json of the demo model (a WordLevel model, as `tokenizers` serializes it). */
export function tinyTokenizerJson(): Record<string, unknown> {
  const words = [...SPECIAL, ...TINY_WORDS];
  if (words.length !== TINY_LLAMA_CONFIG.vocab_size || new Set(words).size !== words.length)
    throw new Error(`internal: the demo vocabulary has ${words.length} distinct words for ${TINY_LLAMA_CONFIG.vocab_size} ids`);
  const vocab = Object.fromEntries(words.map((w, i) => [w, i]));
  const addedToken = (id: number) => ({
    id,
    content: SPECIAL[id],
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [0, 1, 2].map(addedToken),
    normalizer: { type: 'Lowercase' },
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<s>': { id: '<s>', ids: [1], tokens: ['<s>'] } },
    },
    decoder: null,
    model: { type: 'WordLevel', vocab, unk_token: '<unk>' },
  };
}

/** Writes tokenizer.json and tokenizer_config.json of the demo model into `dir` (beside its config.json). */
export function writeTinyTokenizer(dir: string): void {
  writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tinyTokenizerJson(), null, 2) + '\n');
  const config = { bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', clean_up_tokenization_spaces: false };
  writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config, null, 2) + '\n');
}
