/**
 * InternVL 3 / 3.5 (Hugging Face's native `internvl` model_type) end to end through the CLI (in
 * this process) on the fixture `internvl` (config.json with an internvl_vision vision_config and
 * a qwen2 text_config, a two-file checkpoint under the Hub's keys `language_model.*`,
 * `vision_tower.*`, `multi_modal_projector.*`; preprocessor / processor configs as published):
 * `export --config` → `prepare --dtype float32` → `compile` (both graphs) →
 * `run --pixel-values reference.json` / `run --image` reproduce reference.json (HF transformers,
 * fp32 on the bf16 weights): generated_ids, every logit row within 1e-4, the image features within
 * 1e-4 from the fixture's tiles and from the image file through the ported processor (its canvas,
 * tiles row-major and thumbnail last). The fixture's legacy graphs (vision.legacy.onnx,
 * decoder.legacy.onnx) go through `export --onnx` over the same prepared checkpoint.
 *
 * Sources (Hugging Face transformers, file by file): models/internvl/modeling_internvl.py (commit
 * 00779a6b506f084e402f1b3c8f220a87242b32c6: InternVLVisionEmbeddings, InternVLVisionAttention
 * (q_norm / k_norm over the whole width), InternVLVisionLayer (lambda_1 / lambda_2),
 * InternVLVisionModel (layernorm only without mean pooling), InternVLMultiModalProjector,
 * InternVLModel.get_image_features and pixel_shuffle), models/got_ocr2/image_processing_got_ocr2.py
 * (commit 0b97ca8d385723d268f5566778e458d0c51213d5: get_all_supported_aspect_ratios,
 * get_optimal_tiled_canvas and its tie rule, crop_image_to_patches), models/internvl/
 * processing_internvl.py (`<img>` + `<IMG_CONTEXT>`×(image_seq_length·tiles) + `</img>`).
 * QEfficient (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81):
 * QEfficient/transformers/models/internvl/modeling_internvl.py. Where QEfficient differs (HF is
 * the reference here): it loads the remote-code layout (InternVLChatModel: `vision_model.*`,
 * `mlp1.*`, `extract_feature`) rather than the native keys; its graphs' interface is ours
 * (vision `[batched_num_patches, C, S, S]` → `[1, vision_size, hidden]`) and its decoder gathers the image rows at `<IMG_CONTEXT>` with image_idx as the LLaVA
 * wrapper does.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { decodeImage } from '../../src/run/vlm/image';
import { internvlImageText, internvlProcessor, optimalCanvas, processInternVLImage } from '../../src/run/vlm/image-internvl';
import { BUILT_VLMS, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { specKeys, vlmCliSuite, vlmSpecs } from '../../../test/support/vlm-cli';
import { i64, maxDiff } from '../../../test/support/vlm-graphs';

const tmp = tempDirs('ws-vlm-internvl-');

for (const family of BUILT_VLMS.filter((f) => f === 'internvl'))
  describeFixtures(`${family} through the CLI`, () => {
    const s = vlmCliSuite(family, tmp, (r) => r.image);
    const { ref, h, work } = s;
    const { session } = h;
    const tiles = ref.num_patches as number;
    const S = (ref.pixel_values as number[][][][])[0]![0]!.length;
    const refPixels = () => Float32Array.from((ref.pixel_values as number[][][][]).flat(3));
    const sp = ref.special_tokens as Record<string, number>;
    // the fixture ships no tokenizer: a WordLevel one over its 320 ids with the special tokens at reference.json's ids
    const special = { [sp.img_start!]: '<img>', [sp.img_end!]: '</img>', [sp.img_context!]: '<IMG_CONTEXT>', [sp.pad!]: '<pad>' };

    it('writes vision/ and language/ over one prepared checkpoint with the Hub keys and the LLaVA-style language interface', () => {
      const { v, l } = s.specs();
      const vk = specKeys(v);
      expect(vk.every((k) => /^(vision_tower\.|multi_modal_projector\.)/.test(k))).toBe(true);
      expect(vk).toEqual(expect.arrayContaining(['vision_tower.encoder.layer.1.lambda_2', 'multi_modal_projector.layer_norm.bias']));
      expect(specKeys(l)).toContain('language_model.lm_head.weight');
      s.expectLlavaLanguageInputs();
      expect(s.report('vision').graph.inputs).toEqual(['pixel_values']);
      expect(s.manifest()).toMatchObject({
        model_type: 'internvl',
        image_token_id: sp.img_context,
        image_size: S,
        mm_tokens_per_image: ref.image_seq_length,
      });
    });

    it('the compiled vision graph gives the image features within 1e-4 from the tiles and from the image file', async () => {
      const vision = await session('out/vision');
      const out = await vision.run({ pixel_values: new ort.Tensor('float32', refPixels(), [tiles, 3, S, S]) });
      expect(out.vision_embeds!.dims).toEqual([1, tiles * ref.image_seq_length, 64]);
      expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const got = processInternVLImage(decodeImage(path.join(work(), 'image.png')), internvlProcessor(path.join(work(), 'model'), S));
      expect(got.canvas).toEqual(ref.canvas);
      expect(got.tiles).toBe(tiles);
      expect(maxDiff(got.pixelValues, refPixels())).toBeLessThan(1e-5);
      // InternVLProcessor's text: <img> <IMG_CONTEXT>×(image_seq_length·tiles) </img>, as in input_ids
      const names: Record<number, string> = special;
      const ids = ref.input_ids as number[];
      const block = ids.slice(ids.indexOf(sp.img_start!), ids.indexOf(sp.img_end!) + 1);
      expect(internvlImageText(got.tiles, ref.image_seq_length)).toBe(block.map((t) => names[t]).join(''));
    });

    it('get_optimal_tiled_canvas: closest aspect ratio; a tie goes to the larger grid while the image covers more than half of it', () => {
      // 16×32 (h×w) → 2 columns × 1 row (the fixture); 3:1 → (3, 1); tall 1:2 → (1, 2)
      expect(optimalCanvas(16, 32, 16, 1, 12)).toEqual([2, 1]);
      expect(optimalCanvas(10, 30, 16, 1, 12)).toEqual([3, 1]);
      expect(optimalCanvas(40, 20, 16, 1, 12)).toEqual([1, 2]);
      // square images tie across (1,1), (2,2), (3,3): area 256 is not > 0.5·256·4 → (1,1);
      // 64×64 = 4096 > 0.5·256·9 → (3,3); 1000×1000 with max 12 still stops at (3,3) (4×4 > 12)
      expect(optimalCanvas(16, 16, 16, 1, 12)).toEqual([1, 1]);
      expect(optimalCanvas(64, 64, 16, 1, 12)).toEqual([3, 3]);
      expect(optimalCanvas(32, 32, 16, 1, 12)).toEqual([2, 2]);
      // min_patches drops (1,1): the first grid left with the best ratio wins
      expect(optimalCanvas(16, 16, 16, 2, 12)).toEqual([2, 2]);
    });

    s.itRunsReference();

    it('run --prompt / --chat with --image: each <IMG_CONTEXT> becomes <img> <IMG_CONTEXT>×(4·tiles) </img>; generated_ids follow', async () => {
      const ids = ref.input_ids as number[];
      const before = ids.slice(0, ids.indexOf(sp.img_start!));
      const after = ids.slice(ids.indexOf(sp.img_end!) + 1);
      const words = (xs: number[]) => xs.map((x) => `w${x}`).join(' ');
      const template =
        `{% for m in messages %}${words(before)}{% for c in m.content %}{% if c.type == 'image' %}<IMG_CONTEXT>{% endif %}{% endfor %}` +
        "{% for c in m.content %}{% if c.type == 'text' %}{{ c.text }}{% endif %}{% endfor %}{% endfor %}";
      s.writeWordTokenizer(special, template);
      const common = ['--image', 'image.png', '--tokenizer', 'tok', '--max-new-tokens', '5', '--print-ids'];
      const r = await h.ok('run', 'out', '--prompt', `${words(before)}<IMG_CONTEXT>${words(after)}`, ...common);
      s.expectPrintedIds(r);
      const chat = await h.ok('run', 'out', '--chat', words(after), ...common);
      s.expectPrintedIds(chat);
    });

    it('two images in one prompt: each block takes its own tiles in order; the rows before the second are the reference’s', async () => {
      const ids = ref.input_ids as number[];
      const block = ids.slice(ids.indexOf(sp.img_start!), ids.indexOf(sp.img_end!) + 1);
      const two = [...ids, ...block, ...ref.generated_ids.slice(0, 2)];
      await h.ok('run', 'out', '--image', 'image.png', '--image', 'image.png', '--input-ids', two.join(','), '--dump-logits', 'two.json');
      const got = JSON.parse(readFileSync(path.join(work(), 'two.json'), 'utf8')).logits as number[][];
      expect(got).toHaveLength(two.length);
      // causal: row t sees ids[0..t] only, so the first image's rows match the one-image reference
      expect(maxDiff(got.slice(0, ids.length).flat(), (ref.logits as number[][]).slice(0, ids.length).flat())).toBeLessThan(1e-4);
      // too few tiles for the tokens is refused by name
      const r = await h.cliRun('run', 'out', '--image', 'image.png', '--input-ids', two.join(','), '--max-new-tokens', '1');
      expect(r.stderr.split('\n')[0]).toMatch(/24 image tokens but the image\(s\) give 12 vision rows/);
    });

    it('the legacy vision + decoder graphs through export --onnx over the same prepared checkpoint reproduce the reference', async () => {
      await s.exportLegacyPair();
      const legacyVision = await session('legacy-vision');
      const v = await legacyVision.run({ pixel_values: new ort.Tensor('float32', refPixels(), [tiles, 3, S, S]) });
      expect(maxDiff(v.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      // …and from the image file through the ported processor
      const fromFile = processInternVLImage(decodeImage(path.join(work(), 'image.png')), internvlProcessor(path.join(work(), 'model'), S));
      const vf = await legacyVision.run({ pixel_values: new ort.Tensor('float32', fromFile.pixelValues, [tiles, 3, S, S]) });
      expect(maxDiff(vf.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const d = await (
        await session('legacy-decoder')
      ).run({
        input_ids: i64(s.scoredIds(), [1, s.scoredIds().length]),
        vision_embeds: new ort.Tensor('float32', v.vision_embeds!.data as Float32Array, [1, ref.image_embeds.length, 64]),
      });
      const logits = d.logits!.data as Float32Array;
      s.expectReferenceLogits(logits);
      // greedy on the legacy logits gives generated_ids too
      expect(d.logits!.dims[1]).toBe(ref.logits.length);
      s.expectGreedyIds(logits);
    }, 60_000);

    s.itFloat16AndContinuousBatching(64);

    it('config variants build the modules HF builds for them: q/k RMSNorm, rms_norm blocks, the final LayerNorm only for last_hidden_state', async () => {
      const cfg = s.config();
      const vc = cfg.vision_config;
      const keysOf = async (name: string, c: Record<string, unknown>) => {
        mkdirSync(path.join(work(), name));
        writeFileSync(path.join(work(), name, 'config.json'), JSON.stringify(c));
        await h.ok('export', '--config', name, '--out', `${name}-out`);
        return specKeys(vlmSpecs(path.join(work(), `${name}-out`)).v);
      };
      const L0 = 'vision_tower.encoder.layer.0';
      const qk = await keysOf('qk', { ...cfg, vision_config: { ...vc, use_qk_norm: true, norm_type: 'rms_norm', attention_bias: false } });
      expect(qk).toEqual(
        expect.arrayContaining([`${L0}.attention.q_norm.weight`, `${L0}.attention.k_norm.weight`, `${L0}.layernorm_before.weight`]),
      );
      expect(qk).toContain(`${L0}.attention.projection_layer.bias`);
      expect(qk.filter((k) => k.endsWith('layernorm_before.bias') || k.endsWith('q_proj.bias'))).toEqual([]);
      const last = await keysOf('last', { ...cfg, vision_config: { ...vc, use_mean_pooling: false } });
      expect(last).toEqual(expect.arrayContaining(['vision_tower.layernorm.weight', 'vision_tower.layernorm.bias']));
      // hidden_states[-2]: the first block's output, no final LayerNorm, no second block
      const mid = await keysOf('mid', { ...cfg, vision_feature_layer: -2, vision_config: { ...vc, use_mean_pooling: false } });
      expect(mid.filter((k) => k.startsWith('vision_tower.layernorm') || k.startsWith('vision_tower.encoder.layer.1.'))).toEqual([]);
      expect(mid).toContain(`${L0}.lambda_2`);
      // InternVLConfig / InternVLVisionConfig defaults (448² tiles of 14² patches, 24 layers, shuffle 2 → 256 tokens)
      await keysOf('defaults', { model_type: 'internvl', text_config: cfg.text_config });
      const m = JSON.parse(readFileSync(path.join(work(), 'defaults-out', 'vlm.json'), 'utf8'));
      expect(m).toMatchObject({ image_token_id: 151667, image_size: 448, mm_tokens_per_image: 256, vision: { patch_size: 14 } });
      expect(specKeys(vlmSpecs(path.join(work(), 'defaults-out')).v)).toContain('vision_tower.encoder.layer.23.mlp.fc2.weight');
    });

    s.itRefusesConfigs((cfg) => {
      const vc = cfg.vision_config;
      return [
        ['layer', { ...cfg, vision_feature_layer: -5 }, /"vision_feature_layer" names hidden state -5, but the tower has 3/],
        ['list', { ...cfg, vision_feature_layer: [-1, -2] }, /"vision_feature_layer" is a list/],
        ['full', { ...cfg, vision_feature_select_strategy: 'full' }, /"vision_feature_select_strategy" is "full"/],
        ['ratio', { ...cfg, downsample_ratio: 0.3 }, /"downsample_ratio" \(0\.3\) must be 1\/n/],
        ['seq', { ...cfg, image_seq_length: 16 }, /"image_seq_length" \(16\) differs/],
        ['square', { ...cfg, vision_config: { ...vc, image_size: [16, 32] } }, /"vision_config\.image_size" is 16×32/],
        ['norm', { ...cfg, vision_config: { ...vc, norm_type: 'batch_norm' } }, /"vision_config\.norm_type" is "batch_norm"/],
        [
          'text',
          { ...cfg, text_config: { ...cfg.text_config, model_type: 'bert' } },
          /"text_config\.model_type" "bert" is not a text family/,
        ],
      ];
    });

    it('run --pixel-values with tiles of another size is refused by name, exit 2', async () => {
      writeFileSync(
        path.join(work(), 'small.json'),
        JSON.stringify({
          pixel_values: [
            [
              [
                [0, 1],
                [2, 3],
              ],
              [
                [0, 1],
                [2, 3],
              ],
              [
                [0, 1],
                [2, 3],
              ],
            ],
          ],
        }),
      );
      const r = await h.cliRun('run', 'out', '--pixel-values', 'small.json', '--input-ids', `1,${sp.img_context}`, '--max-new-tokens', '1');
      expect(r.stderr.split('\n')[0]).toMatch(/pixel_values rows have 12 values; this model's patches have 768/);
      expect(r.code).toBe(2);
    });

    s.itChecksGraphs();
  });
