/**
 * The pieces of text in, text out (core/src/run/text/) on tokenizers and templates made in
 * code: @huggingface/tokenizers encoding and decoding a byte-level BPE (byte tokens, spaces,
 * added special tokens, a post-processor adding BOS) and a WordLevel tokenizer; the streamed
 * text; published chat templates rendered by @huggingface/jinja to the exact strings their
 * models document; the eos ids; the VLM placeholders expanded as the processors do.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatMessages, renderChat } from '../../src/run/text/chat-template';
import { eosTokenIds, readTextModelFiles, type TextModelFiles } from '../../src/run/text/model-files';
import { loadTokenizer, TextStream } from '../../src/run/text/text-tokenizer';
import { placeImages } from '../../src/run/text/vlm-prompt';
import type { VlmManifest } from '../../src/artifacts/vlm-manifest';
import { tempDirs } from '../../../test/support/temp';
import { llamaBpe, wordLevelTokenizer } from '../../../test/support/tokenizers';

const tmp = tempDirs('ws-text-tok-');

const filesOf = (tokenizer: unknown, config: Record<string, unknown> = {}, chat?: string): TextModelFiles => ({
  dir: '/m',
  tokenizerFile: '/m/tokenizer.json',
  tokenizer: tokenizer as Record<string, unknown>,
  config,
  configFile: '/m/tokenizer_config.json',
  ...(chat !== undefined ? { chatTemplate: { text: chat, file: '/m/tokenizer_config.json' } } : {}),
});

describe('a byte-level BPE tokenizer made in code (through @huggingface/tokenizers)', () => {
  const tok = loadTokenizer(filesOf(llamaBpe(), { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>' }));

  it('encodes: merges, a byte token for the trailing space, added special tokens, BOS from the post-processor', () => {
    expect(tok.encode('Hello, world! <|assistant|>', true)).toEqual([109, 277, 235, 177, 125, 58, 215]);
    expect(tok.encode('Hello, world! <|assistant|>', false)).toEqual([277, 235, 177, 125, 58, 215]);
    // no merge joins é's two bytes: two byte tokens (0xC3 → id 50, 0xA9 → id 49)
    expect(tok.encode(' café', false)).toEqual([75, 50, 49]);
  });

  it('decodes bytes back to characters, keeps spaces, and leaves special tokens out unless asked', () => {
    expect(tok.decode([271, 75, 50, 49, 291])).toBe(' I café');
    expect(tok.decode([271, 75, 50, 49, 291], true)).toBe(' I café<|eot_id|>');
    expect(tok.decode([109, 277, 235, 177, 125])).toBe('Hello, world!');
    expect(tok.decode([50])).toBe('\uFFFD'); // half a character
    expect(tok.idOf('<|assistant|>')).toBe(215);
    expect(tok.special('eos_token')).toBe('<|eot_id|>');
  });

  it("streams as transformers' TextStreamer: up to the last space, never half a character, the rest at the end", () => {
    const s = new TextStream(tok);
    const pieces = [271, 75, 50, 49, 291].map((t) => s.push(t));
    expect(pieces).toEqual([' ', 'I ', '', '', '']);
    expect(s.end()).toBe('café');
    const nl = new TextStream(tok);
    const newline = tok.encode('a\nb', false);
    expect(newline.map((t) => nl.push(t)).join('') + nl.end()).toBe('a\nb');
    expect(nl.push(tok.encode('\n', false)[0]!)).toBe('\n');
  });

  it("tokenizer_config.json's add_bos_token / add_eos_token decide over the post-processor (transformers' Llama fast tokenizer)", () => {
    const cfg = { bos_token: { content: '<|begin_of_text|>' }, eos_token: '<|eot_id|>' };
    const both = loadTokenizer(filesOf(llamaBpe(), { ...cfg, add_bos_token: true, add_eos_token: true }));
    expect(both.encode('!', true)).toEqual([109, 125, 291]);
    const none = loadTokenizer(filesOf(llamaBpe(), { ...cfg, add_bos_token: false }));
    expect(none.encode('!', true)).toEqual([125]);
  });
});

describe('a WordLevel tokenizer made in code', () => {
  const tok = loadTokenizer(filesOf(wordLevelTokenizer(320, { 0: '<unk>', 2: '</s>' })));
  it('splits on whitespace, maps unknown words to unk_token, decodes by joining with spaces', () => {
    expect(tok.encode('w5  w17\nw300 nope', true)).toEqual([5, 17, 300, 0]);
    expect(tok.decode([5, 17, 2])).toBe('w5 w17');
    expect(tok.decode([5, 17, 2], true)).toBe('w5 w17 </s>');
  });
  it('a tokenizer without unk_token refuses an unknown word with one line naming the file', () => {
    const j = wordLevelTokenizer(8);
    const bare = loadTokenizer(filesOf({ ...j, model: { type: 'WordLevel', vocab: j.model.vocab } }));
    expect(() => bare.encode('w1 zz', true)).toThrow(/^\/m\/tokenizer\.json: the prompt's token "zz" is not in the vocabulary/);
  });
});

describe('published chat templates render to the strings their models document', () => {
  /**
   * Meta-Llama-3-8B-Instruct's tokenizer_config.json "chat_template" (huggingface.co/meta-llama/
   * Meta-Llama-3-8B-Instruct; the same text is quoted as "llama3 chat-template" in model cards of
   * its fine-tunes), and the example Meta's Llama 3 model card gives (llama.com, "Model Cards &
   * Prompt formats — Meta Llama 3": "Decomposing an example instruct prompt with a system message").
   */
  const LLAMA3 =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

  it("Llama 3's template, with a system message", () => {
    const f = filesOf({}, { bos_token: '<|begin_of_text|>' }, LLAMA3);
    const text = renderChat(
      f,
      chatMessages('What can you help me with?', { system: 'You are a helpful AI assistant for travel tips and recommendations' }),
      (k) => (f.config[k] as string | undefined) ?? undefined,
    );
    expect(text).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are a helpful AI assistant for travel tips and recommendations<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat can you help me with?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
  });

  /**
   * Qwen2.5-Instruct's tokenizer_config.json "chat_template" (huggingface.co/Qwen/Qwen2.5-0.5B-Instruct,
   * transcribed as swift-jinja's test "Qwen Qwen2.5-0.5B-Instruct" keeps it); the expected text is
   * the ChatML prompt Qwen documents, its default system message added when none is given.
   */
  const QWEN25 =
    "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if messages[0]['role'] == 'system' %}\n        {{- messages[0]['content'] }}\n    {%- else %}\n        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}\n    {%- endif %}\n    {{- \"\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>\" }}\n    {%- for tool in tools %}\n        {{- \"\\n\" }}\n        {{- tool | tojson }}\n    {%- endfor %}\n    {{- \"\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\\"name\\\": <function-name>, \\\"arguments\\\": <args-json-object>}\\n</tool_call><|im_end|>\\n\" }}\n{%- else %}\n    {%- if messages[0]['role'] == 'system' %}\n        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n    {%- else %}\n        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n    {%- endif %}\n{%- endif %}\n{%- for message in messages %}\n    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or (message.role == \"assistant\" and not message.tool_calls) %}\n        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n    {%- elif message.role == \"assistant\" %}\n        {{- '<|im_start|>' + message.role }}\n        {%- if message.content %}\n            {{- '\\n' + message.content }}\n        {%- endif %}\n        {%- for tool_call in message.tool_calls %}\n            {%- if tool_call.function is defined %}\n                {%- set tool_call = tool_call.function %}\n            {%- endif %}\n            {{- '\\n<tool_call>\\n{\"name\": \"' }}\n            {{- tool_call.name }}\n            {{- '\", \"arguments\": ' }}\n            {{- tool_call.arguments | tojson }}\n            {{- '}\\n</tool_call>' }}\n        {%- endfor %}\n        {{- '<|im_end|>\\n' }}\n    {%- elif message.role == \"tool\" %}\n        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != \"tool\") %}\n            {{- '<|im_start|>user' }}\n        {%- endif %}\n        {{- '\\n<tool_response>\\n' }}\n        {{- message.content }}\n        {{- '\\n</tool_response>' }}\n        {%- if loop.last or (messages[loop.index0 + 1].role != \"tool\") %}\n            {{- '<|im_end|>\\n' }}\n        {%- endif %}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n";

  it("Qwen2.5's template, without and with a system message", () => {
    const f = filesOf({}, {}, QWEN25);
    expect(renderChat(f, chatMessages('Give me a short introduction to large language model.'), () => undefined)).toBe(
      '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n<|im_start|>user\nGive me a short introduction to large language model.<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(renderChat(f, chatMessages('hi', { system: 'Be brief.' }), () => undefined)).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('the template comes from tokenizer_config.json, its named "default" entry, chat_template.jinja or chat_template.json beside it', () => {
    const dir = tmp();
    writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(wordLevelTokenizer(4)));
    writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({ chat_template: [{ name: 'default', template: 'D' }] }));
    expect(readTextModelFiles(dir, dir).chatTemplate).toEqual({ text: 'D', file: path.join(dir, 'tokenizer_config.json') });
    writeFileSync(path.join(dir, 'tokenizer_config.json'), '{}');
    writeFileSync(path.join(dir, 'chat_template.jinja'), 'J{{ messages[0].content }}');
    const f = readTextModelFiles(dir, dir);
    expect(f.chatTemplate?.file).toBe(path.join(dir, 'chat_template.jinja'));
    expect(renderChat(f, chatMessages('x'), () => undefined)).toBe('Jx');
    rmSync(path.join(dir, 'chat_template.jinja'));
    writeFileSync(path.join(dir, 'chat_template.json'), JSON.stringify({ chat_template: 'P{{ messages[0].content }}' }));
    const p = readTextModelFiles(dir, dir);
    expect(renderChat(p, chatMessages('x'), () => undefined)).toBe('Px');
    writeFileSync(path.join(dir, 'chat_template.json'), JSON.stringify({ chat_template: 3 }));
    expect(() => readTextModelFiles(dir, dir)).toThrow(/chat_template\.json: "chat_template" is not a string$/);
  });
});

describe('eos ids', () => {
  it("generation_config.json's eos_token_id (one id or a list), else config.json's or its text_config's", () => {
    const a = tmp();
    const b = tmp();
    mkdirSync(path.join(a, 'x'));
    writeFileSync(path.join(a, 'config.json'), JSON.stringify({ eos_token_id: 2 }));
    expect(eosTokenIds([a])).toEqual({ ids: [2], file: path.join(a, 'config.json') });
    writeFileSync(path.join(a, 'generation_config.json'), JSON.stringify({ eos_token_id: [1, 106] }));
    expect(eosTokenIds([a]).ids).toEqual([1, 106]);
    writeFileSync(path.join(b, 'config.json'), JSON.stringify({ text_config: { eos_token_id: 7 } }));
    expect(eosTokenIds([b]).ids).toEqual([7]);
    expect(eosTokenIds([path.join(a, 'x')]).ids).toEqual([]);
  });
});

describe('VLM placeholders expanded as the processors do', () => {
  const special = { 300: '<|vision_start|>', 301: '<|vision_end|>', 303: '<|image_pad|>', 290: '<start_of_image>' };
  const tok = loadTokenizer(filesOf(wordLevelTokenizer(320, { ...special, 291: '<end_of_image>', 299: '<image_soft_token>' })));
  const qwen = {
    model_type: 'qwen2_5_vl',
    vision_start_token_id: 300,
    image_token_id: 303,
    vision: { spatial_merge_size: 2 },
  } as unknown as VlmManifest;
  const gemma = {
    model_type: 'gemma3',
    vision_start_token_id: 290,
    image_token_id: 299,
    image_end_token_id: 291,
    mm_tokens_per_image: 3,
    vision: { spatial_merge_size: 1 },
  } as unknown as VlmManifest;

  it('Qwen: each <|image_pad|> becomes t·h·w / merge² of them; a --prompt without one gets the placeholder in front', () => {
    const t = placeImages('w1 <|vision_start|><|image_pad|><|vision_end|> w2', qwen, tok, [[1, 6, 8]], true);
    expect(tok.encode(t, false)).toEqual([1, 300, ...Array(12).fill(303), 301, 2]);
    const p = placeImages(
      'w4',
      qwen,
      tok,
      [
        [1, 2, 2],
        [1, 4, 2],
      ],
      false,
    );
    expect(p).toBe('<|vision_start|><|image_pad|><|vision_end|><|vision_start|>' + '<|image_pad|>'.repeat(2) + '<|vision_end|>w4');
  });

  it('Gemma 3: <start_of_image> becomes "\\n\\n<boi><image>×mm<eoi>\\n\\n"', () => {
    expect(placeImages('a<start_of_image>b', gemma, tok, [[1, 32, 32]], true)).toBe(
      'a\n\n<start_of_image>' + '<image_soft_token>'.repeat(3) + '<end_of_image>\n\nb',
    );
  });

  it('refuses a count that differs, a template that places none, and a tokenizer whose ids differ from vlm.json', () => {
    expect(() => placeImages('<start_of_image>', gemma, tok, [], false)).toThrow(
      /1 image placeholder\(s\) \(<start_of_image>\) but 0 image/,
    );
    expect(() => placeImages('text only', gemma, tok, [[1, 1, 1]], true)).toThrow(/the chat template placed no <start_of_image>/);
    const other = loadTokenizer(filesOf(wordLevelTokenizer(320, { 5: '<|image_pad|>', 300: '<|vision_start|>' })));
    expect(() => placeImages('x', qwen, other, [[1, 2, 2]], false)).toThrow(
      /^\/m\/tokenizer\.json: "<\|image_pad\|>" is token 5, but the export's vlm\.json says 303/,
    );
  });
});
