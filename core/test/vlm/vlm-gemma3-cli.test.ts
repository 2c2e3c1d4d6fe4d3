/**
 * The Gemma 3 VLM end to end through the CLI (in this process, test/support/cli.ts) on the
 * fixture (config.json with text_config / vision_config, a two-file checkpoint under the Hub's
 * keys `language_model.model.*`, `vision_tower.vision_model.*`, `multi_modal_projector.*`):
 * `export --config` → `prepare --dtype float32` → `compile` → `run --pixel-values
 * reference.json` / `run --image` reproduce reference.json (HF transformers 4.53
 * Gemma3ForConditionalGeneration, fp32 on the bf16 weights): generated_ids, logits within 1e-4,
 * image features within 1e-4 from the fixture's pixel values and from the image itself through
 * the processor port (HF models/gemma3/image_processing_gemma3.py: fixed bilinear resize to
 * image_size, rescale, mean = std = 0.5). The two legacy graphs go through `export --onnx` too.
 * Logit rows of tokens inside an image (before its last token) are not compared: HF computes
 * them with the whole image visible (bidirectional), which QEfficient's interface (logits of the
 * last position of a prefill) cannot give; every other row is.
 * Graph sources: see vlm-gemma3-vision.test.ts and vlm-gemma3-language.test.ts.
 */
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { decodeImage } from '../../src/run/vlm/image';
import { gemma3Processor, processGemma3Image } from '../../src/run/vlm/image-gemma3';
import { describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { exportRealVlm, specKeys, vlmCliSuite } from '../../../test/support/vlm-cli';
import { i64, maxDiff } from '../../../test/support/vlm-graphs';

const tmp = tempDirs('ws-vlm-gemma3-');

describeFixtures('gemma3_vlm through the CLI', () => {
  const s = vlmCliSuite('gemma3_vlm', tmp, (r) => r.images[0]);
  const { ref, h, work } = s;
  const { cliRun, ok, session } = h;
  const pixels = () => {
    const pv = ref.pixel_values as number[][][][];
    return new ort.Tensor('float32', Float32Array.from(pv.flat(3)), [pv.length, 3, 32, 32]);
  };

  it('writes vision/ and language/ over one prepared checkpoint with the Hub keys and the Gemma 3 interface', async () => {
    const { v, l } = s.specs();
    const vk = specKeys(v);
    expect(vk.every((k) => k.startsWith('vision_tower.vision_model.') || k.startsWith('multi_modal_projector.'))).toBe(true);
    const keys = specKeys(l);
    expect(keys).toContain('language_model.model.layers.3.self_attn.q_norm.weight');
    expect(keys).not.toContain('lm_head.weight'); // tied
    s.expectLlavaLanguageInputs();
    expect(s.report('language').graph.outputs.slice(0, 3)).toEqual(['logits', 'vision_embeds_RetainedState', 'image_idx_output']);
    expect(s.manifest()).toMatchObject({ model_type: 'gemma3', image_token_id: 300, image_size: 32, mm_tokens_per_image: 16 });
  });

  it('the compiled vision graph gives image_embeds within 1e-4 from the pixel values and from the image', async () => {
    const vision = await session('out/vision');
    const out = await vision.run({ pixel_values: pixels() });
    expect(maxDiff(out.vision_embeds!.data as Float32Array, ref.image_embeds.flat(2))).toBeLessThan(1e-4);
    const p = processGemma3Image(decodeImage(path.join(work(), 'image.png')), gemma3Processor(path.join(work(), 'model'), 32));
    expect(maxDiff(p, (ref.pixel_values as number[][][][]).flat(3))).toBeLessThan(1e-5);
    const fromImage = await vision.run({ pixel_values: new ort.Tensor('float32', p, [1, 3, 32, 32]) });
    expect(maxDiff(fromImage.vision_embeds!.data as Float32Array, ref.image_embeds.flat(2))).toBeLessThan(1e-4);
  });

  const ids: number[] = ref.input_ids;
  const first = ids.indexOf(300);
  const last = ids.lastIndexOf(300);
  const comparable = (t: number) => t < first || t >= last;
  s.itRunsReference('is within 1e-4 outside image interiors', (got) => {
    const rows = got.map((_, t) => t).filter(comparable);
    expect(rows.length).toBe(ref.logits.length - (last - first));
    expect(
      maxDiff(
        rows.flatMap((t) => got[t]!),
        rows.flatMap((t) => ref.logits[t] as number[]),
      ),
    ).toBeLessThan(1e-4);
  });

  it('run expands a bare <boi> to "\\n\\n <boi> <image>×16 <eoi> \\n\\n" (Gemma3Processor) with the "\\n\\n" id from tokenizer.json', async () => {
    // the fixture's prompt before the processor: 108 ("\n\n") + image + 108 collapse back to the bare boi 290
    const compact = [...ids.slice(0, first - 2), 290, ...ids.slice(last + 3)];
    const without = await cliRun('run', 'out', '--image', 'image.png', '--input-ids', compact.join(','), '--max-new-tokens', '5');
    expect(without.code).toBe(1);
    expect(without.stderr.trim().split('\n')).toHaveLength(1);
    expect(without.stderr).toMatch(/tokenizer\.json \(not found\)/);
    // removed again after: a new file in the checkpoint dir would change its fingerprint for the tests after this one
    const tok = path.join(work(), 'model', 'tokenizer.json');
    writeFileSync(tok, JSON.stringify({ model: { vocab: { '\n\n': 108 } } }));
    try {
      const gen = await ok('run', 'out', '--image', 'image.png', '--input-ids', compact.join(','), '--max-new-tokens', '5');
      expect(gen.stdout.trim()).toBe(ref.generated_ids.join(','));
    } finally {
      rmSync(tok);
    }
  });

  it('the legacy vision + decoder graphs through export --onnx over the same prepared checkpoint reproduce the reference', async () => {
    await s.exportLegacyPair();
    const v = await (await session('legacy-vision')).run({ pixel_values: pixels() });
    expect(maxDiff(v.vision_embeds!.data as Float32Array, ref.image_embeds.flat(2))).toBeLessThan(1e-4);
    const d = await (
      await session('legacy-decoder')
    ).run({
      input_ids: i64(s.scoredIds(), [1, s.scoredIds().length]),
      vision_embeds: new ort.Tensor('float32', v.vision_embeds!.data as Float32Array, [1, 16, 64]),
    });
    s.expectReferenceLogits(d.logits!.data as Float32Array);
  }, 60_000);

  s.itFloat16AndContinuousBatching(64);

  s.itRefusesConfigs((cfg) => [
    ['pool', { ...cfg, mm_tokens_per_image: 9 }, /"mm_tokens_per_image" \(9\): 3 tokens per side do not divide the 8×8 patch grid/],
    ['types', { ...cfg, text_config: { ...cfg.text_config, layer_types: ['full_attention'] } }, /"layer_types" has 1 entries for 4 layers/],
    [
      'size',
      { ...cfg, vision_config: { ...cfg.vision_config, image_size: 30 } },
      /"vision_config\.image_size" \(30\) is not a multiple of patch_size/,
    ],
  ]);

  s.itChecksGraphs();
});

describeFixtures('the real Gemma-3-27B config (benchmark: npm run bench vlm-export)', () => {
  it('exports both graphs from config.json alone, Gemma3TextConfig defaults filling what it leaves out', async () => {
    const manifest = await exportRealVlm(
      tmp(),
      'gemma-3-27b.json',
      'gemma-3-27b-it',
      /gemma3: vision 27 SigLIP layers, 64×64 patches pooled to 256 tokens; text 62 layers \(52 sliding\)/,
    );
    expect(manifest).toMatchObject({ kind: 'vlm', image_token_id: 262144, image_size: 896, mm_tokens_per_image: 256 });
  });
});
