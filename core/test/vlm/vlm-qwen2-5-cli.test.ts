/**
 * Qwen2.5-VL end to end through the CLI (in this process, test/support/cli.ts) on the fixture
 * (config.json in the published flat layout, a two-file checkpoint under the Hub's keys
 * `visual.*`, `model.*`, `lm_head.*`, preprocessor_config.json with CLIP mean/std):
 * `export --config` → `prepare --dtype float32` → `compile` (both graphs) → `run
 * --pixel-values reference.json` / `run --image` reproduce reference.json (HF transformers,
 * fp32 on the bf16 weights): generated_ids, logits within 1e-4, image features within 1e-4 —
 * from the fixture's pixel values and from the image itself through the processor port
 * (HF models/qwen2_vl/image_processing_qwen2_vl.py: smart_resize, OPENAI_CLIP_MEAN/STD). The
 * fixture's two legacy graphs also go through `export --onnx` over the same prepared checkpoint.
 * Graph sources: HF src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py and QEfficient
 * QEfficient/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py (commit
 * 02cdf56d505bdc3cf033e515713360c6322021ea) — see vlm-vision.test.ts / vlm-language.test.ts.
 */
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { vlmArchFromConfig } from '../../src/export/vlm/vlm-arch';
import { decodeImage, processImage, processorConfig } from '../../src/run/vlm/image';
import { describeFixtures } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { exportRealVlm, specKeys, vlmCliSuite } from '../../../test/support/vlm-cli';
import { i64, maxDiff } from '../../../test/support/vlm-graphs';

const tmp = tempDirs('ws-vlm-qwen25-');

describeFixtures('qwen2_5_vl through the CLI', () => {
  const s = vlmCliSuite('qwen2_5_vl', tmp, (r) => r.image);
  const { ref, h, work } = s;
  const { session } = h;
  const grid = () => {
    const [[t, h, w]] = ref.image_grid_thw as number[][];
    return new ort.Tensor('int64', new BigInt64Array(t! * h! * w!), [1, t!, h!, w!]);
  };

  it('writes vision/ and language/ over one prepared checkpoint with the Hub keys and no deepstack', async () => {
    const { v, l } = s.specs();
    expect(specKeys(v).every((k) => k.startsWith('visual.'))).toBe(true);
    const keys = specKeys(l);
    expect(keys).toContain('lm_head.weight');
    expect(keys).toContain('model.layers.1.self_attn.q_proj.bias');
    expect(s.manifest()).toMatchObject({ model_type: 'qwen2_5_vl', image_token_id: 303, vision: { num_feature_layers: 0 } });
  });

  it('the compiled vision graph gives the image features within 1e-4 from the pixel values and from the image', async () => {
    const vision = await session('out/vision');
    const pv = ref.pixel_values as number[][];
    const out = await vision.run({
      pixel_values: new ort.Tensor('float32', Float32Array.from(pv.flat()), [pv.length, pv[0]!.length]),
      image_grid_thw: grid(),
    });
    expect(maxDiff(out.vision_embeds!.data as Float32Array, ref.image_embeds.flat())).toBeLessThan(1e-4);
    // the processor port on the PNG: CLIP mean/std from preprocessor_config.json, smart_resize keeps 24×32
    const cfg = processorConfig(path.join(work(), 'model'), { patch: 4, temporalPatch: 2, merge: 2 }, 'qwen2_5_vl');
    const p = processImage(decodeImage(path.join(work(), 'image.png')), cfg);
    expect(p.grid).toEqual(ref.image_grid_thw[0]);
    expect(maxDiff(p.pixelValues, pv.flat())).toBeLessThan(1e-5);
    const fromImage = await vision.run({
      pixel_values: new ort.Tensor('float32', p.pixelValues, [pv.length, pv[0]!.length]),
      image_grid_thw: grid(),
    });
    expect(maxDiff(fromImage.vision_embeds!.data as Float32Array, ref.image_embeds.flat())).toBeLessThan(1e-4);
  });

  it('without preprocessor_config.json the processor falls back to CLIP mean/std (Qwen2VLImageProcessor defaults)', () => {
    const cfg = processorConfig(undefined, { patch: 14, temporalPatch: 2, merge: 2 }, 'qwen2_5_vl');
    expect([cfg.mean, cfg.std, cfg.minPixels, cfg.maxPixels]).toEqual([
      [0.48145466, 0.4578275, 0.40821073],
      [0.26862954, 0.26130258, 0.27577711],
      3136,
      1003520,
    ]);
  });

  s.itRunsReference();

  it('the legacy vision + decoder graphs through export --onnx over the same prepared checkpoint reproduce the reference', async () => {
    await s.exportLegacyPair();
    const pv = ref.pixel_values as number[][];
    const v = await (
      await session('legacy-vision')
    ).run({ pixel_values: new ort.Tensor('float32', Float32Array.from(pv.flat()), [pv.length, pv[0]!.length]) });
    expect(maxDiff(v.vision_embeds!.data as Float32Array, ref.image_embeds.flat())).toBeLessThan(1e-4);
    const ids = s.scoredIds();
    const pos: number[][] = ref.position_ids_logits;
    const d = await (
      await session('legacy-decoder')
    ).run({
      input_ids: i64(ids, [1, ids.length]),
      position_ids: i64(pos.flat(), [3, 1, ids.length]),
      vision_embeds: new ort.Tensor('float32', v.vision_embeds!.data as Float32Array, [1, ref.image_embeds.length, 64]),
    });
    s.expectReferenceLogits(d.logits!.data as Float32Array);
  }, 60_000);

  s.itFloat16AndContinuousBatching(64);

  s.itRefusesConfigs((cfg) => [
    ['nosec', { ...cfg, rope_scaling: { type: 'mrope' } }, /"rope_scaling\.mrope_section" is missing/],
    ['sum', { ...cfg, rope_scaling: { type: 'mrope', mrope_section: [2, 3, 4] } }, /mrope_section" sums to 9 but head_dim \/ 2 is 8/],
    ['win', { ...cfg, vision_config: { ...cfg.vision_config, window_size: 4 } }, /vision_config\.window_size" \(4\) is smaller/],
    ['full', { ...cfg, vision_config: { ...cfg.vision_config, fullatt_block_indexes: [3] } }, /names block 3 but depth is 3/],
    ['slide', { ...cfg, use_sliding_window: true }, /"use_sliding_window" is true/],
  ]);

  s.itChecksGraphs();
});

it('a config that relies on defaults gets Qwen2_5_VLConfig / Qwen2_5_VLVisionConfig values', () => {
  const rope_scaling = { type: 'mrope', mrope_section: [16, 24, 24] };
  // HF's own defaults disagree (vision out_hidden_size 3584, text hidden_size 8192): refused by name
  expect(() => vlmArchFromConfig({ model_type: 'qwen2_5_vl', rope_scaling }, 'config.json')).toThrow(
    /"vision_config\.out_hidden_size" \(3584\) differs from the text hidden_size \(8192\)/,
  );
  const a = vlmArchFromConfig(
    { model_type: 'qwen2_5_vl', hidden_size: 3584, num_attention_heads: 28, num_key_value_heads: 4, rope_scaling },
    'config.json',
  );
  expect([a.vision.depth, a.vision.hidden, a.vision.patch, a.vision.window, a.vision.outHidden]).toEqual([
    32,
    3584,
    14,
    { units: 4, fullAtt: [7, 15, 23, 31] },
    3584,
  ]);
  expect([a.text.layers.length, a.text.hidden, a.text.nKv, a.text.lmHead, a.imageTokenId, a.mropeInterleaved]).toEqual([
    80,
    3584,
    4,
    'lm_head.weight',
    151655,
    false,
  ]);
  expect(a.text.norm.eps).toBe(1e-5);
});

describeFixtures('the real Qwen2.5-VL-7B config (benchmark: npm run bench vlm-export)', () => {
  it('exports both graphs from config.json alone: 32 window blocks with full attention on [7, 15, 23, 31], 28 text layers', async () => {
    const manifest = await exportRealVlm(
      tmp(),
      'qwen2.5-vl-7b.json',
      'Qwen2.5-VL-7B',
      /qwen2_5_vl: vision 32 blocks, window 4×4, full attention \[7, 15, 23, 31\]; text 28 layers/,
    );
    expect(manifest).toMatchObject({ kind: 'vlm', image_token_id: 151655, vision: { patch_size: 14, num_feature_layers: 0 } });
  });
});
