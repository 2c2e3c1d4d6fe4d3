/**
 * The Gemma 3 VLM vision graph (SigLIP tower + Gemma3MultiModalProjector) against the fixture's
 * reference (HF transformers 4.53 `Gemma3ForConditionalGeneration`, fp32 on the bf16 weights):
 * image_embeds within 1e-4, weights fed straight from the fixture checkpoint. Ported from HF
 * src/transformers/models/siglip/modeling_siglip.py (SiglipVisionEmbeddings, SiglipEncoderLayer,
 * post_layernorm) and src/transformers/models/gemma3/modeling_gemma3.py
 * (Gemma3MultiModalProjector: AvgPool2d kernel = stride, Gemma3RMSNorm (1 + w),
 * `matmul(x, mm_input_projection_weight)`); QEfficient QEfficient/transformers/models/gemma3/
 * modeling_gemma3.py (QEffGemma3EncoderWrapper: pixel_values in, vision_embeds out).
 */
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { buildGemma3Vision, gemma3VisionArch } from '../../src/export/vlm/vision-gemma3';
import { describeFixtures } from '../../../test/support/fixtures';
import { maxDiff, vlmFixture, weightFedSession } from '../../../test/support/vlm-graphs';
import { loadCheckpoint } from '../support/graph-support';

describeFixtures('gemma3_vlm vision graph', () => {
  it('reproduces image_embeds within 1e-4 (8×8 patches pooled 2×2 to 16 tokens; weights fed as inputs)', async () => {
    const { dir, cfgFile, config, ref } = vlmFixture('gemma3_vlm');
    const arch = gemma3VisionArch(config, cfgFile);
    expect([arch.side, arch.tokensPerSide, arch.textHidden]).toEqual([8, 4, 64]);
    const built = buildGemma3Vision(arch, { dtype: 'float32' });
    const { session, feeds } = await weightFedSession(built, await loadCheckpoint(dir), true);
    const pv = ref.pixel_values as number[][][][];
    feeds.pixel_values = new ort.Tensor('float32', Float32Array.from(pv.flat(3)), [pv.length, 3, 32, 32]);
    const out = await session.run(feeds);
    expect(out.vision_embeds!.dims).toEqual([pv.length, 16, 64]);
    expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][][]).flat(2))).toBeLessThan(1e-4);
  });

  it('refuses a pool that does not tile the patch grid, naming the field', () => {
    const { cfgFile, config: raw } = vlmFixture('gemma3_vlm');
    expect(() => gemma3VisionArch({ ...raw, mm_tokens_per_image: 9 }, cfgFile)).toThrow(
      /mm_tokens_per_image.*3 tokens per side do not divide the 8×8/,
    );
    expect(() => gemma3VisionArch({ ...raw, mm_tokens_per_image: 10 }, cfgFile)).toThrow(/mm_tokens_per_image.*is not a square/);
  });
});
