/**
 * Tokenizers made in code, in the Hub's tokenizer.json format (what `tokenizers`'
 * `Tokenizer.save` writes), for the text in, text out tests: a WordLevel one over a fixture's
 * vocabulary, and a byte-level BPE one (GPT-2's byte alphabet, merges, added special tokens,
 * a TemplateProcessing post-processor adding BOS) with chosen tokens at chosen ids, so a
 * prompt's text tokenizes to a fixture's reference ids.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** An added token as tokenizer.json lists it. */
export interface AddedTokenJson {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

/** `content` at `id`, special (skipped when decoding with skip_special_tokens). */
export function added(id: number, content: string, special = true): AddedTokenJson {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special };
}

/**
 * GPT-2's byte → printable character table (`bytes_to_unicode` in openai/gpt-2 encoder.py,
 * also tokenizers' ByteLevel): printable Latin-1 bytes map to themselves, the others to 256+n.
 */
export function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 33; b <= 126; b++) keep.push(b);
  for (let b = 161; b <= 172; b++) keep.push(b);
  for (let b = 174; b <= 255; b++) keep.push(b);
  const out = new Array<string>(256);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCharCode(keep.includes(b) ? b : 256 + n++);
  return out;
}

/** A byte-level token's text for a UTF-8 string (e.g. " world" → "Ġworld"). */
export function byteLevel(text: string): string {
  const m = bytesToUnicode();
  return Array.from(Buffer.from(text, 'utf8'), (b) => m[b]).join('');
}

/**
 * A WordLevel tokenizer over `size` ids: `word(i)` at id i (default `w<i>`), the `special`
 * ids as added special tokens instead, split on whitespace, decoded by joining with spaces.
 */
export function wordLevelTokenizer(size: number, special: Record<number, string> = {}, word = (i: number) => `w${i}`) {
  const vocab: Record<string, number> = {};
  for (let i = 0; i < size; i++) vocab[special[i] ?? word(i)] = i;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: Object.entries(special).map(([id, content]) => added(Number(id), content)),
    normalizer: null,
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: null,
    decoder: null,
    model: { type: 'WordLevel', vocab, unk_token: special[0] ?? word(0) },
  };
}

/** What {@link byteLevelBpe} makes. */
export interface BpeOptions {
  /** Vocabulary size (ids 0…size-1 are all used). */
  size: number;
  /** Merges in rank order, as `"a b"` over byte-level text (their results get the ids `pins` gives, or free ones). */
  merges: string[];
  /** Byte-level token text → id (bytes and merge results); the other bytes and merge results fill the free ids in order. */
  pins: Record<number, string>;
  /** Added tokens (ids and contents). */
  added: AddedTokenJson[];
  /** The token the post-processor puts first (TemplateProcessing), if any. */
  bos?: { content: string; id: number };
}

/** A byte-level BPE tokenizer.json (GPT-2 / Llama 3 / Qwen style pre-tokenizer and decoder). */
export function byteLevelBpe(o: BpeOptions) {
  const byId = new Map<number, string>(Object.entries(o.pins).map(([id, t]) => [Number(id), t]));
  for (const a of o.added) byId.set(a.id, a.content);
  const taken = new Set(byId.values());
  const wanted = [...bytesToUnicode(), ...o.merges.map((m) => m.replace(' ', ''))].filter((t) => !taken.has(t) && (taken.add(t), true));
  let next = 0;
  for (const t of wanted) {
    while (byId.has(next)) next++;
    byId.set(next, t);
  }
  for (let i = 0; i < o.size; i++) if (!byId.has(i)) byId.set(i, `<|filler_${i}|>`);
  if (byId.size !== o.size) throw new Error(`the tokens need ${byId.size} ids, more than ${o.size}`);
  const addedIds = new Set(o.added.map((a) => a.id));
  const vocab: Record<string, number> = {};
  for (const [id, t] of [...byId].sort((a, b) => a[0] - b[0])) if (!addedIds.has(id)) vocab[t] = id;
  const byteLevelCfg = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: o.added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', ...byteLevelCfg },
    post_processor: o.bos
      ? {
          type: 'TemplateProcessing',
          single: [{ SpecialToken: { id: o.bos.content, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
          pair: [
            { SpecialToken: { id: o.bos.content, type_id: 0 } },
            { Sequence: { id: 'A', type_id: 0 } },
            { SpecialToken: { id: o.bos.content, type_id: 1 } },
            { Sequence: { id: 'B', type_id: 1 } },
          ],
          special_tokens: { [o.bos.content]: { id: o.bos.content, ids: [o.bos.id], tokens: [o.bos.content] } },
        }
      : { type: 'ByteLevel', ...byteLevelCfg },
    decoder: { type: 'ByteLevel', ...byteLevelCfg },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: o.merges,
    },
  };
}

/** Writes tokenizer.json, tokenizer_config.json and (when given) generation_config.json into `dir`. */
export function writeTokenizer(
  dir: string,
  tokenizer: unknown,
  config: Record<string, unknown>,
  generation?: Record<string, unknown>,
): void {
  writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  if (generation) writeFileSync(path.join(dir, 'generation_config.json'), JSON.stringify(generation));
}

/**
 * The BPE tokenizer for the llama fixture: reference input_ids [109, 277, 235, 177, 125, 58, 215]
 * are "<|begin_of_text|>" (BOS, added by the post-processor) "Hello" "," " world" "!" " "
 * "<|assistant|>"; generated_ids [271, 75, 50, 49, 291] are " I" " caf" and the two bytes of "é"
 * (0xC3 0xA9, one byte token each: no merge joins them) and "<|eot_id|>" (special: not printed).
 */
export function llamaBpe() {
  return byteLevelBpe({
    size: 320,
    merges: ['H e', 'He l', 'Hel l', 'Hell o', 'Ġ w', 'Ġw o', 'Ġwo r', 'Ġwor l', 'Ġworl d', 'Ġ I', 'Ġ c', 'Ġc a', 'Ġca f'],
    pins: {
      277: 'Hello',
      235: ',',
      177: byteLevel(' world'),
      125: '!',
      58: byteLevel(' '),
      271: byteLevel(' I'),
      75: byteLevel(' caf'),
      50: byteLevel('é')[0]!,
      49: byteLevel('é')[1]!,
    },
    added: [added(109, '<|begin_of_text|>'), added(215, '<|assistant|>'), added(291, '<|eot_id|>')],
    bos: { content: '<|begin_of_text|>', id: 109 },
  });
}
