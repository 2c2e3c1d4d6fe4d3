/**
 * The Qwen3-VL vision graph against the fixture's reference (HF transformers 4.57
 * `Qwen3VLMoeVisionModel` in fp32 on the bf16 weights): image_embeds and deepstack_features
 * within 1e-4, with the weights fed straight from the fixture checkpoint. Ported from HF
 * src/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py (4.57) and QEfficient
 * QEfficient/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py (release/v1.22.8.0,
 * QEffQwen3VLEncoderWrapper: pixel_values [grid_height, grid_width], image_grid_thw whose
 * shape [batch, t, h, w] carries the grid).
 *
 * Qwen2.5-VL: HF src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py
 * (Qwen2_5_VisionTransformerPretrainedModel: Conv3d without bias, RMSNorm blocks, gated SiLU
 * MLP, get_window_index + fullatt_block_indexes, merger.ln_q, argsort(window_index) after the
 * merger) and QEfficient QEfficient/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py
 * (commit 02cdf56d505bdc3cf033e515713360c6322021ea, QEffQwen2_5_VisionTransformerPretrainedModel:
 * the grid from image_grid_thw's shape). The fixture's 6×8 grid with window_size 16 (2×2 merged
 * tokens per window) has a partial window row, so a mask that ignored windows or padded them
 * differently fails here; its block 2 is full attention.
 */
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { vlmArchFromConfig } from '../../src/export/vlm/vlm-arch';
import { buildVision } from '../../src/export/vlm/vision';
import { describeFixtures } from '../../../test/support/fixtures';
import { maxDiff, vlmFixture, weightFedSession } from '../../../test/support/vlm-graphs';
import { loadCheckpoint } from '../support/graph-support';

/** The Qwen-VL vision inputs of reference.json: pixel_values [grid_height, grid_width] and image_grid_thw whose shape carries the grid. */
function qwenPixelFeeds(ref: { pixel_values: number[][]; image_grid_thw: number[][] }): Record<string, ort.Tensor> {
  const pv = ref.pixel_values;
  const [[T, H, W]] = ref.image_grid_thw;
  return {
    pixel_values: new ort.Tensor('float32', Float32Array.from(pv.flat()), [pv.length, pv[0]!.length]),
    image_grid_thw: new ort.Tensor('int64', new BigInt64Array(T! * H! * W!), [1, T!, H!, W!]),
  };
}

describeFixtures('qwen3_vl_moe vision graph', () => {
  it('reproduces image_embeds and deepstack_features within 1e-4 (weights fed as inputs)', async () => {
    const { dir, cfgFile, config, ref } = vlmFixture('qwen3_vl_moe');
    const arch = vlmArchFromConfig(config, cfgFile);
    const built = buildVision(arch.vision, { dtype: 'float32' });
    const { session, feeds } = await weightFedSession(built, await loadCheckpoint(dir), true);
    Object.assign(feeds, qwenPixelFeeds(ref));
    const out = await session.run(feeds);
    expect(out.vision_embeds!.dims).toEqual([1, ref.image_embeds.length, 64]);
    expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
    expect(out.deepstack_features!.dims).toEqual([2, 1, ref.image_embeds.length, 64]);
    expect(maxDiff(out.deepstack_features!.data as Float32Array, (ref.deepstack_features as number[][][]).flat(2))).toBeLessThan(1e-4);
  });
});

describeFixtures('qwen2_5_vl vision graph', () => {
  it('reproduces image_embeds within 1e-4 (window attention, weights fed as inputs)', async () => {
    const { dir, cfgFile, config, ref } = vlmFixture('qwen2_5_vl');
    const arch = vlmArchFromConfig(config, cfgFile);
    expect(arch.vision.window).toEqual({ units: 2, fullAtt: [2] });
    const built = buildVision(arch.vision, { dtype: 'float32' });
    const { session, feeds } = await weightFedSession(built, await loadCheckpoint(dir), true);
    Object.assign(feeds, qwenPixelFeeds(ref));
    const out = await session.run(feeds);
    expect(Object.keys(out)).toEqual(['vision_embeds']);
    expect(out.vision_embeds!.dims).toEqual([1, ref.image_embeds.length, 64]);
    expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][]).flat())).toBeLessThan(1e-4);
  });
});
