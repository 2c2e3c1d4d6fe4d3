/**
 * LLaVA and LLaVA-NeXT end to end through the CLI (in this process) on the fixtures `llava` and
 * `llava_next` (config.json with a CLIP vision_config and a llama text_config, a two-file
 * checkpoint under the Hub's keys `language_model.*`, `vision_tower.vision_model.*`,
 * `multi_modal_projector.*`, `image_newline`; preprocessor / processor configs as published):
 * `export --config` → `prepare --dtype float32` → `compile` (both graphs) → `run --pixel-values
 * reference.json` / `run --image` reproduce reference.json (HF transformers, fp32 on the bf16
 * weights): generated_ids, every logit row within 1e-4 (LLaVA's text model is causal throughout),
 * image features within 1e-4 from the fixture's pixel values and from the image file through the
 * processor ports. The fixture's legacy graphs (vision.legacy.onnx, decoder.legacy.onnx) go
 * through `export --onnx` over the same prepared checkpoint; LLaVA-NeXT's legacy pair is packed on
 * the host between them (reference.json's pack_index, image_newline from the checkpoint).
 *
 * Sources (Hugging Face transformers, src/transformers/models/, file by file, with the commit read):
 * llava/modeling_llava.py (e33ea883d6dd6b2bb891d0428bfb963c791a3fa7: get_image_features),
 * llava/processing_llava.py (79f1fc71ad1e0220e2b05723f5fd2e14bc270de5: the <image> expansion),
 * llava_next/modeling_llava_next.py (3571987262f13e18288121900a97d950641ac2b3:
 * get_anyres_image_grid_shape, unpad_image, pack_image_features), clip/modeling_clip.py
 * (679021a6b0ded09d623a96e2bd2f822c5a548872), clip/image_processing_clip.py
 * (8f3e5ebe573f12bad1e1a7fce9e6589311f041ed), llava_next/image_processing_llava_next.py
 * (2ccc6cae21faaf11631efa5fb9054687ae5dc931: get_patch_output_size, _pad_for_patching,
 * get_image_patches), llava_next/processing_llava_next.py (81bb907ccf3494b5409b0b745bb10c8a617050b7:
 * _get_number_of_features, _get_unpadded_features).
 * QEfficient (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81):
 * QEfficient/transformers/models/llava/modeling_llava.py and llava_next/modeling_llava_next.py.
 * Where QEfficient differs (HF is the reference here): its LLaVA encoder takes only an int
 * vision_feature_layer (a list fails there); its LLaVA-NeXT encoder traces image_sizes into the
 * graph (one image size per export: 1109×1610) and unpads rows only; its dual-graph decoder
 * resets image_idx to 0 in a call without image tokens (ours keeps the larger, as its
 * single-graph forward does).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { decodeImage, resizeBicubic } from '../../src/run/vlm/image';
import { clipProcessor, processAnyresImage, processClipImage } from '../../src/run/vlm/image-clip';
import { anyresLayout, packIndex, patchOutputSize } from '../../src/artifacts/anyres';
import { expandLlavaPrompt } from '../../src/run/vlm/llava-prompt';
import { readSafetensorsHeaderSync, readTensorBytesSync } from '../../src/formats/safetensors/read';
import { toFloat32 } from '../../src/formats/float-convert';
import { BUILT_VLMS, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { expectGeneratedIds, exportRealVlm, imageSources, specKeys, vlmCliSuite, writePng } from '../../../test/support/vlm-cli';
import { i64, maxDiff } from '../../../test/support/vlm-graphs';

const tmp = tempDirs('ws-vlm-llava-');
const LLAVAS = BUILT_VLMS.filter((f): f is 'llava' | 'llava_next' => f === 'llava' || f === 'llava_next');

for (const family of LLAVAS) {
  const next = family === 'llava_next';
  describeFixtures(`${family} through the CLI`, () => {
    const s = vlmCliSuite(family, tmp, (r) => r.image);
    const { fx, ref, h, work } = s;
    const { session } = h;
    const S = 16;
    const tiles = (pv: number[]) => pv.length / (3 * S * S);
    const visionFeeds = (pv: Float32Array): Record<string, ort.Tensor> =>
      next
        ? {
            pixel_values: new ort.Tensor('float32', pv, [1, tiles(Array.from(pv)), 3, S, S]),
            pack_index: new ort.Tensor('int64', BigInt64Array.from((ref.pack_index as number[]).map(BigInt)), [ref.pack_index.length]),
          }
        : { pixel_values: new ort.Tensor('float32', pv, [1, 3, S, S]) };
    const m = () => s.manifest();
    const refPixels = () => Float32Array.from((ref.pixel_values as number[]).flat(4) as number[]);

    it('writes vision/ and language/ over one prepared checkpoint with the Hub keys and QEfficient’s LLaVA interface', () => {
      const { v, l } = s.specs();
      const vk = specKeys(v);
      expect(vk.every((k) => /^(vision_tower\.vision_model\.|multi_modal_projector\.|image_newline$)/.test(k))).toBe(true);
      expect(vk.includes('image_newline')).toBe(next);
      // vision_feature_layer -2 of 3 layers: hidden state 2, the output of layer 1; layer 2 is never read
      expect(vk).toContain('vision_tower.vision_model.encoder.layers.1.mlp.fc2.weight');
      expect(vk.some((k) => k.includes('encoder.layers.2.'))).toBe(false);
      expect(specKeys(l)).toContain('language_model.lm_head.weight');
      s.expectLlavaLanguageInputs();
      expect(s.report('language').graph.outputs.slice(0, 3)).toEqual(['logits', 'vision_embeds_RetainedState', 'image_idx_output']);
      expect(s.report('vision').graph.inputs).toEqual(next ? ['pixel_values', 'pack_index'] : ['pixel_values']);
      expect(m()).toMatchObject({ model_type: family, image_token_id: 300, image_size: 16, mm_tokens_per_image: 16 });
      expect(m().image_grid_pinpoints).toEqual(s.config().image_grid_pinpoints);
    });

    it('the compiled vision graph gives the image features within 1e-4 from the pixel values and from the image file', async () => {
      const vision = await session('out/vision');
      const out = await vision.run(visionFeeds(refPixels()));
      expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const img = decodeImage(path.join(work(), 'image.png'));
      const p = clipProcessor(path.join(work(), 'model'), S);
      const pv = next ? processAnyresImage(img, p, m().image_grid_pinpoints).pixelValues : processClipImage(img, p);
      expect(maxDiff(pv, refPixels())).toBeLessThan(1e-5);
      const fromImage = await vision.run(visionFeeds(pv));
      expect(maxDiff(fromImage.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
    });
    if (next) {
      it('anyres: best resolution, resize, padding, tiles and the packed rows are the processor’s (reference.json)', () => {
        const size = ref.image_sizes[0] as [number, number];
        const pins = m().image_grid_pinpoints;
        const layout = anyresLayout(size, pins, S);
        expect(layout.best).toEqual(ref.best_resolution);
        expect(layout.grid).toEqual(ref.grid);
        expect(layout.patches).toBe(ref.pixel_values[0].length);
        const [rh, rw] = patchOutputSize(size, layout.best);
        expect([rh, rw]).toEqual(ref.resized_hw);
        const top = Math.floor((layout.best[0] - rh) / 2);
        const left = Math.floor((layout.best[1] - rw) / 2);
        expect([top, layout.best[0] - rh - top, left, layout.best[1] - rw - left]).toEqual(ref.padding);
        const index = packIndex(size, pins, S, S / 4);
        expect(index).toEqual(ref.pack_index);
        // the processor's count (LlavaNextProcessor) is the packed rows and the prompt's image tokens
        expect(index.length).toBe(ref.processor_n_image_tokens);
        expect((ref.input_ids as number[]).filter((t) => t === 300).length).toBe(index.length);
      });
    }

    s.itRunsReference();

    it('run expands one <image> per image to the processor’s count (processor_config.json) and gives generated_ids', async () => {
      const ids = ref.input_ids as number[];
      const compact = [...ids.slice(0, ids.indexOf(300)), 300, ...ids.slice(ids.lastIndexOf(300) + 1)];
      for (const [, source] of imageSources(fx))
        await expectGeneratedIds(h, 'out', source(), { input_ids: compact, generated_ids: ref.generated_ids });
    });

    it('two images (--image, two bare <image>): each expands to its own count; the rows up to the second image are the reference’s', async () => {
      // a second image of another size (LLaVA-NeXT: other tiles), after the reference prompt
      writePng(
        path.join(work(), 'second.png'),
        Array.from({ length: 30 }, (_, y) => Array.from({ length: 20 }, (_, x) => [(7 * x) % 256, (11 * y) % 256, (x * y) % 256])),
      );
      const ids = ref.input_ids as number[];
      const compact = [...ids.slice(0, ids.indexOf(300)), 300, ...ids.slice(ids.lastIndexOf(300) + 1), 300, 5];
      await h.ok(
        'run',
        'out',
        '--image',
        'image.png',
        '--image',
        'second.png',
        '--input-ids',
        compact.join(','),
        '--dump-logits',
        'two.json',
      );
      const got = JSON.parse(readFileSync(path.join(work(), 'two.json'), 'utf8')).logits as number[][];
      const second = next ? packIndex([30, 20], m().image_grid_pinpoints, S, S / 4).length : 16;
      expect(got).toHaveLength(ids.length + second + 1);
      expect(maxDiff(got.slice(0, ids.length).flat(), (ref.logits as number[][]).slice(0, ids.length).flat())).toBeLessThan(1e-4);
    });

    it('the legacy vision + decoder graphs through export --onnx over the same prepared checkpoint reproduce the reference', async () => {
      await s.exportLegacyPair();
      const v = await (
        await session('legacy-vision')
      ).run({ pixel_values: new ort.Tensor('float32', refPixels(), next ? [tiles(Array.from(refPixels())), 3, S, S] : [1, 3, S, S]) });
      const feats = v.vision_embeds!.data as Float32Array;
      const H = 64;
      let packed: Float32Array;
      if (next) {
        expect(maxDiff(feats, (ref.image_features_per_patch as number[][][]).flat(2))).toBeLessThan(1e-4);
        // pack_image_features on the host: the fixture's index, image_newline from the checkpoint (bf16)
        const idx = JSON.parse(readFileSync(path.join(fx, 'model.safetensors.index.json'), 'utf8')).weight_map.image_newline as string;
        const header = readSafetensorsHeaderSync(path.join(fx, idx));
        const newline = toFloat32(readTensorBytesSync(header.file, header.tensors.get('image_newline')!), 'BF16');
        packed = Float32Array.from(
          (ref.pack_index as number[]).flatMap((k) => (k < 0 ? Array.from(newline) : Array.from(feats.subarray(k * H, (k + 1) * H)))),
        );
      } else {
        expect(maxDiff(feats, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
        packed = feats;
      }
      const d = await (
        await session('legacy-decoder')
      ).run({
        input_ids: i64(s.scoredIds(), [1, s.scoredIds().length]),
        vision_embeds: new ort.Tensor('float32', packed, [1, packed.length / H, H]),
      });
      s.expectReferenceLogits(d.logits!.data as Float32Array);
    }, 60_000);

    s.itFloat16AndContinuousBatching(64);

    s.itRefusesConfigs((cfg) => [
      ['layer', { ...cfg, vision_feature_layer: -5 }, /"vision_feature_layer" names hidden state -5, but the tower has 4/],
      ['strategy', { ...cfg, vision_feature_select_strategy: 'cls' }, /"vision_feature_select_strategy" is "cls"/],
      [
        'tower',
        { ...cfg, vision_config: { ...cfg.vision_config, model_type: 'dinov2' } },
        /"vision_config\.model_type" is "dinov2" \(the CLIP and SigLIP vision towers/,
      ],
      [
        'text',
        { ...cfg, text_config: { ...cfg.text_config, model_type: 'bert' } },
        /"text_config\.model_type" "bert" is not a text family/,
      ],
      ...(next
        ? ([
            [
              'full',
              { ...cfg, vision_feature_select_strategy: 'full' },
              /"vision_feature_select_strategy" is "full" with the clip tower: 17 rows per tile, but LLaVA-NeXT packs each tile as a 4 × 4 grid/,
            ],
            ['pins', { ...cfg, image_grid_pinpoints: [[16, 24]] }, /"image_grid_pinpoints" holds \[16, 24\], not a multiple/],
          ] as [string, Record<string, unknown>, RegExp][])
        : []),
    ]);

    s.itChecksGraphs();
  });
}

describeFixtures('the real LLaVA-1.5-7B config (benchmark: npm run bench vlm-export)', () => {
  it('exports both graphs from config.json alone, LlamaConfig defaults filling what text_config leaves out', async () => {
    const manifest = await exportRealVlm(
      tmp(),
      'llava-1.5-7b.json',
      'llava-1.5-7b-hf',
      /llava: vision 24 CLIP layers, hidden states \[-2\] \(default\), 576 tokens per image; text llama 32 layers/,
    );
    expect(manifest).toMatchObject({ kind: 'vlm', image_token_id: 32000, image_size: 336, mm_tokens_per_image: 576 });
    expect(manifest.text).toEqual({ hidden_size: 4096, num_hidden_layers: 32 });
  });
});

describe('LLaVA prompt expansion against processor_config.json', () => {
  it('refuses with one line naming the file when the processor counts other rows than the graph gives', () => {
    const dir = tmp();
    writeFileSync(path.join(dir, 'processor_config.json'), JSON.stringify({ patch_size: 4, num_additional_image_tokens: 0 }));
    const m = {
      tool: 'weight-spec export' as const,
      kind: 'vlm' as const,
      model_type: 'llava',
      config: path.join(dir, 'config.json'),
      graphs: { vision: 'vision', language: 'language' },
      image_token_id: 9,
      video_token_id: -1,
      vision_start_token_id: -1,
      vision: { patch_size: 4, temporal_patch_size: 1, spatial_merge_size: 1, in_channels: 3, num_feature_layers: 0 },
      image_size: 16,
      mm_tokens_per_image: 16,
      text: { hidden_size: 8, num_hidden_layers: 1 },
      dtype: 'float32' as const,
    };
    const images = { pixelValues: new Float32Array(768), patchDim: 768, grids: [[1, 16, 16]] as [number, number, number][] };
    // (16/4)² + 0 − 1 = 15 ≠ 16
    expect(() => expandLlavaPrompt([1, 9, 2], m, images)).toThrow(
      /processor_config\.json: gives 15 image tokens per image but the exported vision graph gives 16/,
    );
    // an already expanded prompt passes untouched, and full expansion is 16 rows
    const full = [1, ...new Array<number>(16).fill(9), 2];
    expect(expandLlavaPrompt(full, m, images)).toBe(full);
    writeFileSync(path.join(dir, 'processor_config.json'), JSON.stringify({ patch_size: 4, num_additional_image_tokens: 1 }));
    expect(expandLlavaPrompt([1, 9, 2], m, images)).toEqual(full);
  });
});

describe('the CLIP processor on an image it resizes and crops (HF image_processing_clip.py)', () => {
  it('resizes the shortest edge to size.shortest_edge (long edge int(s·long/short)), then takes the centered crop', () => {
    const W = 51;
    const H = 17;
    const img = { width: W, height: H, data: Uint8Array.from({ length: W * H * 3 }, (_, i) => (i * 37) % 256) };
    const p = {
      shortestEdge: 16,
      crop: [16, 16] as [number, number],
      resample: 'bicubic' as const,
      mean: [0.5, 0.5, 0.5] as [number, number, number],
      std: [0.5, 0.5, 0.5] as [number, number, number],
      rescale: 1 / 255,
    };
    const got = processClipImage(img, p);
    // get_resize_output_image_size(17×51, 16, default_to_square=False) = 16 × int(16·51/17) = 16 × 48;
    // center_crop: top int((16-16)/2) = 0, left int((48-16)/2) = 16
    const r = resizeBicubic(img, 16, 48);
    const want = new Float32Array(3 * 256);
    for (let c = 0; c < 3; c++)
      for (let y = 0; y < 16; y++)
        for (let x = 0; x < 16; x++) want[c * 256 + y * 16 + x] = Math.fround((r.data[(y * 48 + x + 16) * 3 + c]! / 255 - 0.5) / 0.5);
    expect(maxDiff(got, want)).toBeLessThan(1e-6);
  });
});
