/**
 * Text in, text out on the llama fixture through the CLI (in this process): the fixture has no
 * tokenizer, so the tests make two in code (test/support/tokenizers.ts) whose texts tokenize to
 * reference.json's input_ids — a byte-level BPE one (merges, added special tokens, a
 * TemplateProcessing post-processor adding BOS) written beside config.json before the export,
 * found through export-report.json; and a WordLevel one over the fixture's 320 ids, given by
 * --tokenizer. `run --prompt` / `--chat` must print the reference's greedy continuation
 * (generated_ids) as the text those tokenizers decode it to, and stop at generation_config.json's
 * eos_token_id.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { openRunner } from '../../src/run';
import { describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { llamaBpe, wordLevelTokenizer, writeTokenizer } from '../../../test/support/tokenizers';
import { vlmFixtureCli } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-text-llama-');

/** A small chat template in the manner of Llama 3's (BOS from the template, the generation prompt a special token). */
const CHAT =
  "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}{{ m.content + ', ' }}{% else %}{{ m.content + ' ' }}{% endif %}{% endfor %}" +
  '{% if add_generation_prompt %}<|assistant|>{% endif %}';

describeFixtures('run --prompt / --chat on the llama fixture', () => {
  const { ref, h, begin } = vlmFixtureCli('llama', tmp);
  let work = '';
  const answer = ' I café';

  beforeAll(async () => {
    work = begin();
    // before the export: a new file in the checkpoint folder changes prepare's fingerprint
    writeTokenizer(
      path.join(work, 'model'),
      llamaBpe(),
      { bos_token: '<|begin_of_text|>', eos_token: '<|eot_id|>', chat_template: CHAT, clean_up_tokenization_spaces: false },
      { eos_token_id: [291, 2] },
    );
    mkdirSync(path.join(work, 'wl'));
    writeTokenizer(path.join(work, 'wl'), wordLevelTokenizer(320), {});
    await h.ok('export', '--config', 'model', '--out', 'out', '--ctx-len', '32');
    await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
    await h.ok('compile', 'out');
  }, 120_000);

  it('the reference ids are what the tokenizers make of the texts (checked on the --input-ids run first)', async () => {
    const r = await h.ok('run', 'out', '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5');
    expect(r.stdout.trim()).toBe(ref.generated_ids.join(','));
  });

  it('--prompt: BOS from the post-processor, the continuation streamed as text, stopping at eos 291; ids on stderr', async () => {
    const r = await h.ok('run', 'out', '--prompt', 'Hello, world! <|assistant|>', '--max-new-tokens', '8');
    expect(r.stdout).toBe(`${answer}\n`);
    // 291 ends it: 5 tokens although 8 were allowed
    expect(r.stderr).toContain(`run: ids ${ref.generated_ids.join(',')}\n`);
    expect(r.stderr).toMatch(/^run: 5 tokens; time to first token/m);
  });

  it('--chat --system: the template writes BOS and the generation prompt; same ids, same text; --print-ids on stdout', async () => {
    const r = await h.ok('run', 'out', '--chat', 'world!', '--system', 'Hello', '--max-new-tokens', '5', '--print-ids');
    expect(r.stdout).toBe(`${answer}\n${ref.generated_ids.join(',')}\n`);
  });

  it('the runner hands each token to onToken as it is chosen (what streams the text); true stops there', async () => {
    const runner = await openRunner(path.join(work, 'out'));
    try {
      const seen: number[] = [];
      const s = await runner.generateWithStats(ref.input_ids, 5, undefined, (t) => {
        seen.push(t);
        return seen.length === 3;
      });
      expect(seen).toEqual(ref.generated_ids.slice(0, 3));
      expect(s.tokens).toEqual(ref.generated_ids.slice(0, 3));
    } finally {
      await runner.close();
    }
  });

  it('--ignore-eos goes on past 291; the first five tokens are still the reference', async () => {
    const r = await h.ok('run', 'out', '--prompt', 'Hello, world! <|assistant|>', '--max-new-tokens', '7', '--ignore-eos', '--print-ids');
    const ids = r.stdout.trim().split('\n').pop()!.split(',').map(Number);
    expect(ids).toHaveLength(7);
    expect(ids.slice(0, 5)).toEqual(ref.generated_ids);
  });

  it('--tokenizer <dir>: a WordLevel tokenizer over the 320 ids gives the same continuation as its words', async () => {
    const prompt = ref.input_ids.map((i: number) => `w${i}`).join(' ');
    const r = await h.ok('run', 'out', '--tokenizer', 'wl', '--prompt', prompt, '--max-new-tokens', '5');
    // eos from the model's generation_config.json (291, the fifth): all five; w291 is no special token here, so it is printed
    expect(r.stdout).toBe('w271 w75 w50 w49 w291\n');
  });

  it('a missing or unreadable tokenizer is one line naming the file; --input-ids keeps working', async () => {
    mkdirSync(path.join(work, 'sp'));
    writeFileSync(path.join(work, 'sp', 'tokenizer.model'), 'not read');
    const sp = await h.cliRun('run', 'out', '--tokenizer', 'sp', '--prompt', 'hi');
    expect(sp.code).toBe(1);
    expect(sp.stderr.trim().split('\n')).toHaveLength(1);
    expect(sp.stderr).toContain(`${path.join(work, 'sp', 'tokenizer.json')}: not found`);
    expect(sp.stderr).toContain('tokenizer.model is a SentencePiece model');
    writeFileSync(path.join(work, 'sp', 'tokenizer.json'), JSON.stringify({ model: { type: 'Rune', vocab: 7 } }));
    const odd = await h.cliRun('run', 'out', '--tokenizer', 'sp', '--prompt', 'hi');
    expect(odd.code).toBe(1);
    expect(odd.stderr.trim().split('\n')).toHaveLength(1);
    expect(odd.stderr).toMatch(
      /sp\/tokenizer\.json: this tokenizer cannot be read here \(model type Rune; readable: BPE, WordPiece, Unigram, WordLevel\)/,
    );
    writeFileSync(path.join(work, 'sp', 'tokenizer.json'), '{ nope');
    const bad = await h.cliRun('run', 'out', '--tokenizer', 'sp', '--prompt', 'hi');
    expect(bad.stderr).toMatch(/sp\/tokenizer\.json: not valid JSON/);
    rmSync(path.join(work, 'sp'), { recursive: true });
    const ids = await h.ok('run', 'out', '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '1');
    expect(ids.stdout.trim()).toBe(String(ref.generated_ids[0]));
  });

  it('a chat template that fails is one line naming the file and the template error; usage mistakes exit 2', async () => {
    mkdirSync(path.join(work, 'badtpl'));
    writeTokenizer(path.join(work, 'badtpl'), wordLevelTokenizer(320), {});
    writeFileSync(
      path.join(work, 'badtpl', 'chat_template.jinja'),
      "{{ raise_exception('Only user and assistant roles are supported!') }}",
    );
    const r = await h.cliRun('run', 'out', '--tokenizer', 'badtpl', '--chat', 'w1');
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      `weight-spec: ${path.join(work, 'badtpl', 'chat_template.jinja')}: the chat template fails: Only user and assistant roles are supported!`,
    );
    writeFileSync(path.join(work, 'badtpl', 'chat_template.jinja'), '{% for m in messages %}{{ m.content }');
    const syntax = await h.cliRun('run', 'out', '--tokenizer', 'badtpl', '--chat', 'w1');
    expect(syntax.stderr.trim().split('\n')).toHaveLength(1);
    expect(syntax.stderr).toContain('chat_template.jinja: the chat template fails:');
    rmSync(path.join(work, 'badtpl'), { recursive: true });
    const noTemplate = await h.cliRun('run', 'out', '--tokenizer', 'wl', '--chat', 'w1');
    expect(noTemplate.stderr).toMatch(/wl\/tokenizer_config\.json: the model has no chat template/);
    for (const args of [
      ['--prompt', 'a', '--chat', 'b'],
      ['--prompt', 'a', '--input-ids', '1'],
      ['--system', 'a', '--prompt', 'b'],
      ['--input-ids', '1', '--print-ids'],
      [],
    ]) {
      const u = await h.cliRun('run', 'out', ...args);
      expect(u.code, args.join(' ')).toBe(2);
    }
    expect(JSON.parse(readFileSync(path.join(work, 'out', 'export-report.json'), 'utf8')).source.config).toBe(
      path.join(work, 'model', 'config.json'),
    );
  });
});
