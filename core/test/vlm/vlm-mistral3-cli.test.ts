/**
 * Mistral 3 (Pixtral tower) end to end through the CLI (in this process) on the fixture
 * `mistral3` (config.json with a pixtral vision_config and a mistral text_config, a two-file
 * checkpoint under the Hub's keys `language_model.*`, `vision_tower.*`, `multi_modal_projector.*`;
 * preprocessor / processor configs as published): `export --config` → `prepare --dtype float32`
 * → `compile` (both graphs) → `run --pixel-values reference.json` / `run --image` reproduce
 * reference.json (HF transformers, fp32 on the bf16 weights): generated_ids, every logit row
 * within 1e-4 (the text model is causal throughout), the image features within 1e-4 from the
 * fixture's pixel values and from the image file through the ported processor. The fixture's
 * legacy graphs (vision.legacy.onnx, decoder.legacy.onnx) go through `export --onnx` over the
 * same prepared checkpoint.
 *
 * Sources (Hugging Face transformers, file by file): models/pixtral/modeling_pixtral.py (commit
 * 0233e509531ace915c8241b4c16c8032a583279c: PixtralRotaryEmbedding, position_ids_in_meshgrid,
 * generate_block_attention_mask, PixtralVisionModel), models/mistral3/modeling_mistral3.py
 * (commit 00dcc6dda6f6d8e69541a6b51f97986a80242367: Mistral3PatchMerger,
 * Mistral3MultiModalProjector, get_image_features), models/pixtral/image_processing_pixtral.py
 * (commit 015b6b8cb0343ff88c19f6f1670c0b3658a83a1e: get_resize_output_image_size,
 * _pad_for_batching). QEfficient (quic/efficient-transformers main
 * ebf55e8159c8b87bff6d8028541b824244b16c81): QEfficient/transformers/models/mistral3/
 * modeling_mistral3.py. Where QEfficient differs (HF is the reference here): its encoder
 * wrapper takes square `[batch, 3, image_size, image_size]` images whose image_sizes it reads
 * from the tensor's shape (no padded batch of differently sized images) and returns 2-D
 * `[vision_size, hidden]`; its decoder takes that 2-D `vision_embeds` (ours is
 * `[vision_batch_size, vision_size, hidden]`, as the LLaVA wrapper's).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { decodeImage } from '../../src/run/vlm/image';
import { pixtralImageText, pixtralProcessor, processPixtralImage } from '../../src/run/vlm/image-pixtral';
import { BUILT_VLMS, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { expectGeneratedIds, exportRealVlm, specKeys, vlmCliSuite } from '../../../test/support/vlm-cli';
import { i64, maxDiff } from '../../../test/support/vlm-graphs';

const tmp = tempDirs('ws-vlm-mistral3-');

for (const family of BUILT_VLMS.filter((f) => f === 'mistral3'))
  describeFixtures(`${family} through the CLI`, () => {
    const s = vlmCliSuite(family, tmp, (r) => r.images[0]);
    const { ref, h, work } = s;
    const { session } = h;
    const [H0, W0] = ref.image_sizes[0] as [number, number];
    const refPixels = () => Float32Array.from((ref.pixel_values as number[]).flat(4) as number[]);

    it('writes vision/ and language/ over one prepared checkpoint with the Hub keys and the LLaVA-style language interface', () => {
      const { v, l } = s.specs();
      const vk = specKeys(v);
      expect(vk.every((k) => /^(vision_tower\.|multi_modal_projector\.)/.test(k))).toBe(true);
      expect(vk).toContain('multi_modal_projector.patch_merger.merging_layer.weight');
      expect(vk).toContain('vision_tower.transformer.layers.1.feed_forward.down_proj.weight');
      expect(specKeys(l)).toContain('language_model.lm_head.weight');
      s.expectLlavaLanguageInputs();
      expect(s.report('vision').graph.inputs).toEqual(['pixel_values']);
      expect(s.manifest()).toMatchObject({
        model_type: 'mistral3',
        image_token_id: 10,
        image_size: 32,
        vision: { patch_size: 4, spatial_merge_size: 2 },
      });
    });

    it('the compiled vision graph gives the image features within 1e-4 from the pixel values and from the image file', async () => {
      const vision = await session('out/vision');
      const out = await vision.run({ pixel_values: new ort.Tensor('float32', refPixels(), [1, 3, H0, W0]) });
      expect(out.vision_embeds!.dims).toEqual([1, ref.image_embeds.length, 64]);
      expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const p = pixtralProcessor(path.join(work(), 'model'), 4, 2);
      const got = processPixtralImage(decodeImage(path.join(work(), 'image.png')), p);
      expect(got.size).toEqual([H0, W0]);
      expect(maxDiff(got.pixelValues, refPixels())).toBeLessThan(1e-5);
      // the processor's token rows: [IMG]… [IMG_BREAK] per merged row, [IMG_END] last
      const names: Record<number, string> = Object.fromEntries(
        Object.entries(ref.special_token_ids as Record<string, number>).map(([k, v]) => [v, k]),
      );
      expect(pixtralImageText(got.size, 8)).toBe((ref.image_token_blocks[0] as number[]).map((t) => names[t]).join(''));
    });

    s.itRunsReference();

    it('run --prompt / --chat with --image: each [IMG] becomes the processor’s rows ([IMG]… [IMG_BREAK], [IMG_END] last); generated_ids follow', async () => {
      // the fixture ships no tokenizer: a WordLevel one over its 320 ids with the special tokens at reference.json's ids
      const special = Object.fromEntries(Object.entries(ref.special_token_ids as Record<string, number>).map(([k, v]) => [v, k]));
      const template =
        "{{ '<s>' }}{% for m in messages %}[INST]{% for c in m.content %}{% if c.type == 'text' %}{{ c.text }}{% endif %}{% endfor %}" +
        "{% for c in m.content %}{% if c.type == 'image' %}[IMG]{% endif %}{% endfor %}w271 w162 w130[/INST]{% endfor %}";
      s.writeWordTokenizer(special, template);
      // input_ids [1, 3, 179, 305, [IMG] rows, 271, 162, 130, 4]
      const prompt = '<s>[INST]w179 w305[IMG]w271 w162 w130[/INST]';
      const common = ['--image', 'image.png', '--tokenizer', 'tok', '--max-new-tokens', '5', '--print-ids'];
      const r = await h.ok('run', 'out', '--prompt', prompt, ...common);
      s.expectPrintedIds(r);
      const chat = await h.ok('run', 'out', '--chat', 'w179 w305', ...common);
      s.expectPrintedIds(chat);
    });

    it('the legacy vision + decoder graphs through export --onnx over the same prepared checkpoint reproduce the reference', async () => {
      await s.exportLegacyPair();
      const v = await (await session('legacy-vision')).run({ pixel_values: new ort.Tensor('float32', refPixels(), [1, 3, H0, W0]) });
      expect(maxDiff(v.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const all = s.scoredIds();
      const d = await (
        await session('legacy-decoder')
      ).run({
        input_ids: i64(all, [1, all.length]),
        position_ids: i64(
          all.map((_, k) => k),
          [1, all.length],
        ),
        vision_embeds: v.vision_embeds!,
      });
      s.expectReferenceLogits(d.logits!.data as Float32Array);
      // greedy on the legacy logits gives generated_ids too
      expect(d.logits!.dims[1]).toBe(ref.logits.length);
      s.expectGreedyIds(d.logits!.data as Float32Array);
    }, 60_000);

    it('run --pixel-values without image_sizes takes each image whole; patch rows (Qwen’s form) are refused by name, exit 2', async () => {
      writeFileSync(path.join(work(), 'whole.json'), JSON.stringify({ pixel_values: ref.pixel_values }));
      await expectGeneratedIds(h, 'out', ['--pixel-values', 'whole.json'], ref);
      writeFileSync(path.join(work(), 'rows.json'), JSON.stringify({ pixel_values: [[0, 1, 2, 3]], image_grid_thw: [[1, 1, 1]] }));
      const r = await h.cliRun('run', 'out', '--pixel-values', 'rows.json', '--input-ids', '1,10', '--max-new-tokens', '1');
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(/Mistral 3 takes whole images/);
    });

    s.itFloat16AndContinuousBatching(64);

    s.itRefusesConfigs((cfg) => [
      ['layer', { ...cfg, vision_feature_layer: -5 }, /"vision_feature_layer" names hidden state -5, but the tower has 3/],
      ['list', { ...cfg, vision_feature_layer: [-1, -2] }, /"vision_feature_layer" is a list/],
      ['headdim', { ...cfg, vision_config: { ...cfg.vision_config, head_dim: 8 } }, /"vision_config\.head_dim" \(8\) differs/],
      [
        'text',
        { ...cfg, text_config: { ...cfg.text_config, model_type: 'bert' } },
        /"text_config\.model_type" "bert" is not a text family/,
      ],
    ]);

    s.itChecksGraphs();
  });

describeFixtures('the real Mistral-Small-3.1-24B config (benchmark: npm run bench vlm-export)', () => {
  it('exports both graphs from config.json alone', async () => {
    const manifest = await exportRealVlm(
      tmp(),
      'mistral-small-3.1-24b.json',
      'Mistral-Small-3.1-24B-Instruct-2503',
      /mistral3: vision 24 Pixtral layers \(hidden state 24\), 2×2 patch merger; text mistral 40 layers/,
    );
    expect(manifest).toMatchObject({ kind: 'vlm', image_token_id: 10, image_size: 1540 });
    expect(manifest.text).toEqual({ hidden_size: 5120, num_hidden_layers: 40 });
  });
});
