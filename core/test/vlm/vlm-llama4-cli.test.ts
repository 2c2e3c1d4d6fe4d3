/**
 * Llama 4's vision (`Llama4ForConditionalGeneration`) end to end through the CLI (in this process)
 * on the fixture `llama4_vlm` (config.json with a llama4_vision_model vision_config and a
 * llama4_text text_config, a two-file checkpoint under the Hub's keys `language_model.*`,
 * `vision_model.*`, `multi_modal_projector.*`; preprocessor / processor configs as published):
 * `export --config` → `prepare --dtype float32` → `compile` (both graphs) →
 * `run --pixel-values reference.json` / `run --image` reproduce reference.json (HF transformers,
 * fp32 on the bf16 weights): generated_ids, every logit row within 1e-4, the image features
 * within 1e-4 from the fixture's pixel values and from the image file through the ported
 * processor. The fixture's legacy graphs go through `export --onnx` over the same checkpoint.
 *
 * Sources (Hugging Face transformers, file by file): models/llama4/modeling_llama4.py (commit
 * 63210d0e3b74c2119b7998ff65bc6a2729283626: Llama4UnfoldConvolution, Llama4VisionRotaryEmbedding,
 * vision_apply_rotary_emb, Llama4VisionModel, pixel_shuffle, Llama4VisionMLP2,
 * Llama4MultiModalProjector), models/llama4/image_processing_llama4_fast.py (commit
 * e1b551679e267be053b45581cbabd028a14defd2: find_supported_resolutions, get_best_fit,
 * get_max_res_without_distortion, pad_to_best_fit, split_to_tiles, the bf16
 * rescale_and_normalize), models/llama4/processing_llama4.py (commit
 * f5d3f1e134fe49e8dd4009846e54c1ccfe747328: _prompt_split_image). QEfficient
 * (quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81):
 * QEfficient/transformers/models/llama4/modeling_llama4.py. Where QEfficient differs (HF is the
 * reference here): its encoder wrapper returns 2-D `[vision_size, hidden]` (ours keeps
 * `[max_num_tiles, tile_tokens, hidden]`, the LLaVA wrapper's 3-D form) and its language graph
 * keeps the chunked-attention layers' cache at `chunk_ctx_len` (ours: the llama4 family's text
 * graph unchanged, every layer over ctx_len with the chunk mask).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/run/vlm/image';
import { llama4BestFit, llama4Canvases, llama4ImageText, llama4Processor, processLlama4Image } from '../../src/run/vlm/image-llama4';
import { BUILT_VLMS, describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { exportRealVlm, specKeys, vlmCliSuite, writePng } from '../../../test/support/vlm-cli';
import { i64, maxDiff } from '../../../test/support/vlm-graphs';

const tmp = tempDirs('ws-vlm-llama4-');

describe('Llama4ImageProcessorFast canvases (the docstring examples of image_processing_llama4_fast.py)', () => {
  it('find_supported_resolutions(4, 224) lists the canvases by aspect ratio in first-seen order', () => {
    expect(llama4Canvases(4, 224)).toEqual([
      [224, 896],
      [448, 448],
      [224, 224],
      [896, 224],
      [224, 672],
      [672, 224],
      [224, 448],
      [448, 224],
    ]);
  });
  it('get_best_fit((200, 300), …) picks the smallest upscale, then the smaller area: [224, 448]', () => {
    const canvases: [number, number][] = [
      [224, 672],
      [672, 224],
      [224, 448],
      [448, 224],
      [224, 224],
    ];
    expect(llama4BestFit(200, 300, canvases, false)).toEqual([224, 448]);
    // resize_to_max_canvas takes the largest upscale instead (1.12 for both; the smaller area wins again)
    expect(llama4BestFit(200, 300, canvases, true)).toEqual([224, 448]);
  });
  it('_prompt_split_image: tile rows with x / y separators, then <|image|> and the global tile', () => {
    const p = '<|patch|>'.repeat(2);
    expect(llama4ImageText([1, 1], 2)).toBe(`<|image_start|><|image|>${p}<|image_end|>`);
    expect(llama4ImageText([2, 2], 2)).toBe(
      `<|image_start|>${p}<|tile_x_separator|>${p}<|tile_y_separator|>${p}<|tile_x_separator|>${p}<|tile_y_separator|><|image|>${p}<|image_end|>`,
    );
  });
});

for (const family of BUILT_VLMS.filter((f) => f === 'llama4_vlm'))
  describeFixtures(`${family} through the CLI`, () => {
    const s = vlmCliSuite(family, tmp, (r) => r.image);
    const { fx, ref, h, work } = s;
    const { session } = h;
    const S = 24;
    const refPixels = () => Float32Array.from((ref.pixel_values as number[]).flat(4) as number[]);
    const tiles = () => (ref.pixel_values as unknown[]).length;

    it('writes vision/ and language/ over one prepared checkpoint with the Hub keys and the LLaVA-style language interface', () => {
      const { v, l } = s.specs();
      const vk = specKeys(v);
      expect(vk.every((k) => /^(vision_model\.|multi_modal_projector\.)/.test(k))).toBe(true);
      for (const k of [
        'vision_model.patch_embedding.linear.weight',
        'vision_model.class_embedding',
        'vision_model.positional_embedding_vlm',
        'vision_model.vision_adapter.mlp.fc2.weight',
        'multi_modal_projector.linear_1.weight',
      ])
        expect(vk).toContain(k);
      expect(specKeys(l).every((k) => k.startsWith('language_model.'))).toBe(true);
      expect(specKeys(l)).toContain('language_model.model.layers.1.feed_forward.moe_weights.gate');
      s.expectLlavaLanguageInputs();
      expect(s.report('vision').graph.inputs).toEqual(['pixel_values']);
      expect(s.manifest()).toMatchObject({
        model_type: 'llama4',
        image_token_id: ref.special_tokens['<|patch|>'],
        vision_start_token_id: ref.special_tokens['<|image_start|>'],
        image_end_token_id: ref.special_tokens['<|image_end|>'],
        image_size: S,
        mm_tokens_per_image: ref.num_patches_per_chunk,
      });
    });

    it('the compiled vision graph gives the image features within 1e-4 from the pixel values and from the image file', async () => {
      const vision = await session('out/vision');
      const out = await vision.run({ pixel_values: new ort.Tensor('float32', refPixels(), [tiles(), 3, S, S]) });
      expect(out.vision_embeds!.dims).toEqual([tiles(), ref.num_patches_per_chunk, 64]);
      expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const got = processLlama4Image(decodeImage(path.join(work(), 'image.png')), llama4Processor(path.join(work(), 'model'), S));
      expect(got.aspect).toEqual(ref.aspect_ratio);
      expect(got.tiles).toBe(tiles());
      // bf16 values, as the processor makes them: equal, not close
      expect(maxDiff(got.pixelValues, refPixels())).toBe(0);
      // the processor's image block: the tokens between <|image_start|> and <|image_end|> of input_ids
      const names: Record<number, string> = Object.fromEntries(
        Object.entries(ref.special_tokens as Record<string, number>).map(([k, v]) => [v, k]),
      );
      const ids = ref.input_ids as number[];
      const block = ids.slice(ids.indexOf(ref.special_tokens['<|image_start|>']), ids.indexOf(ref.special_tokens['<|image_end|>']) + 1);
      expect(llama4ImageText(got.aspect, ref.num_patches_per_chunk)).toBe(block.map((t) => names[t]).join(''));
    });

    s.itRunsReference();

    it('run --prompt / --chat with --image: each <|image|> becomes the processor’s image block; generated_ids follow', async () => {
      // the fixture ships no tokenizer: a WordLevel one over its 320 ids with the special tokens at reference.json's ids
      const special: Record<number, string> = {
        1: '<|begin_of_text|>',
        ...Object.fromEntries(Object.entries(ref.special_tokens as Record<string, number>).map(([k, v]) => [v, k])),
      };
      const template =
        "{{ '<|begin_of_text|>' }}{% for m in messages %}{% for c in m.content %}{% if c.type == 'text' %}{{ c.text }}{% endif %}{% endfor %}" +
        "{% for c in m.content %}{% if c.type == 'image' %}<|image|>{% endif %}{% endfor %}w276 w86 w213{% endfor %}";
      s.writeWordTokenizer(special, template);
      // input_ids [1, 64, 274, 210, 57, the image block, 276, 86, 213]
      expect(ref.input_ids.slice(0, 5)).toEqual([1, 64, 274, 210, 57]);
      const prompt = '<|begin_of_text|>w64 w274 w210 w57<|image|>w276 w86 w213';
      const common = ['--image', 'image.png', '--tokenizer', 'tok', '--max-new-tokens', '5', '--print-ids'];
      const r = await h.ok('run', 'out', '--prompt', prompt, ...common);
      expect(r.stdout.trim().split('\n')[0]).toBe(ref.generated_ids.map((t: number) => `w${t}`).join(' '));
      s.expectPrintedIds(r);
      const chat = await h.ok('run', 'out', '--chat', 'w64 w274 w210 w57', ...common);
      s.expectPrintedIds(chat);
      // --pixel-values carries no tile grid: the block cannot be placed, refused by name
      const px = await h.cliRun('run', 'out', '--prompt', prompt, '--pixel-values', path.join(fx, 'reference.json'), '--tokenizer', 'tok');
      expect(px.code).toBe(2);
      expect(px.stderr.split('\n')[0]).toMatch(/a Llama 4 prompt places its image block by the tile grid/);
    });

    it('a 48×72 image: HF’s rules give the 2×3 canvas at scale 1 (no resize), six crops + the global tile; run places 7 tiles of rows', async () => {
      const W = 72;
      const img = Array.from({ length: 48 }, (_, y) =>
        Array.from({ length: W }, (_, x) => [(x * 3 + y) % 256, (y * 5) % 256, (x + 2 * y) % 256]),
      );
      writePng(path.join(work(), 'wide.png'), img);
      const got = processLlama4Image(decodeImage(path.join(work(), 'wide.png')), llama4Processor(path.join(work(), 'model'), S));
      expect(got.aspect).toEqual([2, 3]);
      expect(got.tiles).toBe(7);
      // tile (row 1, col 2) is the crop at (24, 48): (v/255 − 0.5)/0.5 to bf16 precision, channels first
      const tile = got.pixelValues.subarray(5 * 3 * S * S, 6 * 3 * S * S);
      for (const [ch, y, x] of [
        [0, 0, 0],
        [1, 3, 7],
        [2, 23, 23],
      ] as const)
        expect(Math.abs(tile[ch * S * S + y * S + x]! - (img[24 + y]![48 + x]![ch]! / 255 - 0.5) / 0.5)).toBeLessThan(8e-3);
      // the prompt gets 7 × 9 <|patch|> rows with the tile separators (tok: the tokenizer the --prompt test writes);
      // the vision graph gives 7 tiles of rows for them
      const r = await h.ok(
        'run',
        'out',
        '--prompt',
        'w64<|image|>w276',
        '--image',
        'wide.png',
        '--tokenizer',
        'tok',
        '--max-new-tokens',
        '2',
        '--print-ids',
      );
      expect(r.stdout.trim().split('\n')[1]!.split(',')).toHaveLength(2);
    });

    it('the legacy vision + decoder graphs through export --onnx over the same prepared checkpoint reproduce the reference', async () => {
      await s.exportLegacyPair();
      const vs = await session('legacy-vision');
      const vin = vs.inputNames[0]!;
      const v = await vs.run({ [vin]: new ort.Tensor('float32', refPixels(), [tiles(), 3, S, S]) });
      const embeds = v[vs.outputNames[0]!]!;
      expect(maxDiff(embeds.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
      const all = s.scoredIds();
      const ds = await session('legacy-decoder');
      const feeds: Record<string, ort.Tensor> = {
        input_ids: i64(all, [1, all.length]),
        position_ids: i64(
          all.map((_, k) => k),
          [1, all.length],
        ),
      };
      const embedName = ds.inputNames.find((n) => !(n in feeds))!;
      feeds[embedName] = embeds;
      const d = await ds.run(feeds);
      const logits = d[ds.outputNames[0]!]!.data as Float32Array;
      s.expectReferenceLogits(logits);
      s.expectGreedyIds(logits);
    }, 60_000);

    s.itFloat16AndContinuousBatching(64);

    s.itRefusesConfigs((cfg) => {
      const vc = cfg.vision_config;
      return [
        ['layer', { ...cfg, vision_config: { ...vc, vision_feature_layer: -2 } }, /"vision_config\.vision_feature_layer" is -2/],
        ['shuffle', { ...cfg, vision_config: { ...vc, pixel_shuffle_ratio: 0.25 } }, /"vision_config\.pixel_shuffle_ratio" \(0\.25\)/],
        ['heads', { ...cfg, vision_config: { ...vc, num_attention_heads: 16 } }, /"vision_config\.num_attention_heads" gives head_dim 2/],
        [
          'type',
          { ...cfg, vision_config: { ...vc, model_type: 'clip_vision_model' } },
          /"vision_config\.model_type" is "clip_vision_model"/,
        ],
      ];
    });

    it('a llama4 config without a vision_config still exports the text graph alone', async () => {
      const cfg = s.config();
      const { vision_config: _v, ...text } = cfg;
      const dir = path.join(work(), 'textonly');
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'config.json'), JSON.stringify(text));
      await h.ok('export', '--config', 'textonly', '--out', 'textonly-out');
      expect(JSON.parse(readFileSync(path.join(work(), 'textonly-out', 'export-report.json'), 'utf8')).graph_role).toBeUndefined();
      expect(() => readFileSync(path.join(work(), 'textonly-out', 'vlm.json'))).toThrow();
    });

    s.itChecksGraphs();
  });

describeFixtures('the real Llama-4-Scout-17B-16E config (benchmark: npm run bench vlm-export)', () => {
  it('exports both graphs from config.json alone', async () => {
    const manifest = await exportRealVlm(
      tmp(),
      'llama-4-scout-17b-16e.json',
      'Llama-4-Scout-17B-16E-Instruct',
      /llama4: vision 34 layers, 24×24 patches shuffled to 144 tokens per tile; text 48 layers, 16 experts top-1/,
    );
    expect(manifest).toMatchObject({ kind: 'vlm', image_token_id: 200092, image_size: 336, mm_tokens_per_image: 144 });
    expect(manifest.text).toEqual({ hidden_size: 5120, num_hidden_layers: 48 });
  });
});
