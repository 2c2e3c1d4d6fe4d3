/**
 * Text in, text out on the VLM fixtures (Qwen2.5-VL, Qwen3-VL-MoE, Gemma 3) through the CLI (in this
 * process): `run --chat MESSAGE --image image.png` renders the chat template with the image as
 * a content part, the template places the family's placeholder, the processor's expansion
 * (HF Qwen2VLProcessor: `<|image_pad|>` × t·h·w/merge²; Gemma3Processor: `<start_of_image>` →
 * "\n\n<boi><image>×mm<eoi>\n\n") runs on the text, and the tokenized prompt must be
 * reference.json's input_ids — so the run reproduces its generated_ids. The fixtures ship no
 * tokenizer: WordLevel ones over their 320 ids are made in code with the families' special
 * tokens at the ids their config.json names, and small chat templates in the manner of the
 * families' own (content parts, `{type: "image"}` before the text) that fit the fixture prompts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { wordLevelTokenizer, writeTokenizer } from '../../../test/support/tokenizers';
import { exportPrepareCompile, vlmFixtureCli, writePng } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-text-');

/** A turn's content: its string, or its parts with the family's image placeholder. */
const parts = (image: string) =>
  `{% if m.content is string %}{{ m.content }} {% else %}{% for c in m.content %}{% if c.type == 'image' %}${image}{% else %}{{ c.text }}{% endif %}{% endfor %}{% endif %}`;

describeFixtures('qwen2_5_vl: run --chat / --prompt with --image', () => {
  const { ref, h, begin } = vlmFixtureCli('qwen2_5_vl', tmp);
  // input_ids [245, 134, 261, 24, 300, 303×12, 301, 212, 222, 79]
  const special = { 245: '<|im_start|>', 300: '<|vision_start|>', 301: '<|vision_end|>', 303: '<|image_pad|>', 79: '<|im_end|>' };
  const words: Record<number, string> = { 134: 'system', 24: 'user' };
  const template =
    "{{ '<|im_start|>' }}{% for m in messages %}{{ m.role }} " +
    parts('<|vision_start|><|image_pad|><|vision_end|>') +
    '{% endfor %}{% if add_generation_prompt %} <|im_end|>{% endif %}';

  beforeAll(async () => {
    const work = begin();
    writeTokenizer(
      path.join(work, 'model'),
      wordLevelTokenizer(320, special, (i) => words[i] ?? `w${i}`),
      {
        chat_template: template,
      },
    );
    writePng(path.join(work, 'image.png'), ref.image);
    await exportPrepareCompile(h);
  }, 120_000);

  it('--chat --system --image: the template places the image, the processor expands it to 12 tokens, generated_ids follow', async () => {
    const r = await h.ok(
      'run',
      'out',
      '--chat',
      'w212 w222',
      '--system',
      'w261',
      '--image',
      'image.png',
      '--max-new-tokens',
      '5',
      '--print-ids',
    );
    const [text, ids] = r.stdout.split('\n');
    expect(ids).toBe(ref.generated_ids.join(','));
    expect(text).toBe(ref.generated_ids.map((i: number) => words[i] ?? `w${i}`).join(' '));
  });

  it('--prompt names the placeholder itself; the same ids', async () => {
    const prompt = '<|im_start|>system w261 user <|vision_start|><|image_pad|><|vision_end|>w212 w222 <|im_end|>';
    const r = await h.ok('run', 'out', '--prompt', prompt, '--image', 'image.png', '--max-new-tokens', '5', '--print-ids');
    expect(r.stdout.trim().split('\n')[1]).toBe(ref.generated_ids.join(','));
  });

  it('two placeholders for one image is one line, exit 2', async () => {
    const r = await h.cliRun('run', 'out', '--prompt', '<|image_pad|> w1 <|image_pad|>', '--image', 'image.png');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the prompt has 2 image placeholder\(s\) \(<\|image_pad\|>\) but 1 image\(s\) were given/);
  });
});

describeFixtures('qwen3_vl_moe: run --chat with --image', () => {
  const { ref, h, begin } = vlmFixtureCli('qwen3_vl_moe', tmp);
  // input_ids [260, 96, 279, 129, 302, 300×4, 303, 264, 26, 90, 258, 111]: vision_start 302, image 300, vision_end 303
  const special = { 260: '<|im_start|>', 302: '<|vision_start|>', 303: '<|vision_end|>', 300: '<|image_pad|>', 111: '<|im_end|>' };
  const words: Record<number, string> = { 96: 'system', 129: 'user' };
  const template =
    "{{ '<|im_start|>' }}{% for m in messages %}{{ m.role }} " +
    parts('<|vision_start|><|image_pad|><|vision_end|>') +
    '{% endfor %}{% if add_generation_prompt %} <|im_end|>{% endif %}';

  beforeAll(async () => {
    const work = begin(['config.json', 'model.safetensors']);
    // as vlm-cli.test.ts: min_pixels below 16·16 keeps the fixture image's size, as the reference did
    writeFileSync(
      path.join(work, 'model', 'preprocessor_config.json'),
      JSON.stringify({ min_pixels: 64, max_pixels: 1 << 20, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }),
    );
    writeTokenizer(
      path.join(work, 'model'),
      wordLevelTokenizer(320, special, (i) => words[i] ?? `w${i}`),
      { chat_template: template },
    );
    writePng(path.join(work, 'image.png'), ref.image);
    await exportPrepareCompile(h);
  }, 120_000);

  it('--chat --system --image: <|image_pad|> expanded to t·h·w/merge² = 4 tokens, generated_ids follow', async () => {
    const r = await h.ok('run', 'out', '--chat', 'w264 w26 w90 w258', '--system', 'w279', '--image', 'image.png', '--max-new-tokens', '5');
    expect(r.stdout).toBe(ref.generated_ids.map((i: number) => words[i] ?? `w${i}`).join(' ') + '\n');
    expect(r.stderr).toContain(`run: ids ${ref.generated_ids.join(',')}\n`);
  });
});

describeFixtures('gemma3_vlm: run --chat with --image', () => {
  const { ref, h, begin } = vlmFixtureCli('gemma3_vlm', tmp);
  // input_ids [2, 196, 200, 108, 290, 300×16, 291, 108, 246, 181, 141]
  const special = {
    2: '<bos>',
    1: '<eos>',
    196: '<start_of_turn>',
    141: '<end_of_turn>',
    108: '\n\n',
    290: '<start_of_image>',
    291: '<end_of_image>',
    300: '<image_soft_token>',
  };
  const template =
    "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + m.role }} " +
    parts('<start_of_image>') +
    '{% endfor %}{% if add_generation_prompt %} <end_of_turn>{% endif %}';

  beforeAll(async () => {
    const work = begin();
    writeTokenizer(
      path.join(work, 'model'),
      wordLevelTokenizer(320, special, (i) => (i === 200 ? 'user' : `w${i}`)),
      {
        bos_token: '<bos>',
        eos_token: '<eos>',
        chat_template: template,
      },
    );
    writePng(path.join(work, 'image.png'), (ref.images as number[][][][])[0]!);
    await exportPrepareCompile(h);
  }, 120_000);

  it('--chat --image: BOS from the template, <start_of_image> expanded by the processor on the text, generated_ids follow', async () => {
    const r = await h.ok('run', 'out', '--chat', 'w246 w181', '--image', 'image.png', '--max-new-tokens', '5', '--print-ids');
    const [text, ids] = r.stdout.split('\n');
    expect(ids).toBe(ref.generated_ids.join(','));
    expect(text).toBe(ref.generated_ids.map((i: number) => `w${i}`).join(' '));
  });

  it('a chat template that places no image for --image is one line, exit 2', async () => {
    const dir = path.join(h.work(), 'plain');
    mkdirSync(dir);
    writeTokenizer(dir, wordLevelTokenizer(320, special), { chat_template: '{% for m in messages %}{{ m.role }} {% endfor %}' });
    const r = await h.cliRun('run', 'out', '--tokenizer', 'plain', '--chat', 'w5', '--image', 'image.png');
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toMatch(
      /^weight-spec: run: the chat template placed no <start_of_image> for the 1 image\(s\); this template does not take images/,
    );
  });
});
