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
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { encodeBuiltModel } from '../src/export/exporter';
import { buildGemma3Vision, gemma3VisionArch } from '../src/export/vlm/vision-gemma3';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { loadCheckpoint } from './graph-support';

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describeFixtures('gemma3_vlm vision graph', () => {
  it('reproduces image_embeds within 1e-4 (8×8 patches pooled 2×2 to 16 tokens; weights fed as inputs)', async () => {
    const dir = path.join(fixturesDir(), 'gemma3_vlm');
    const cfgFile = path.join(dir, 'config.json');
    const ref = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8'));
    const arch = gemma3VisionArch(JSON.parse(readFileSync(cfgFile, 'utf8')), cfgFile);
    expect([arch.side, arch.tokensPerSide, arch.textHidden]).toEqual([8, 4, 64]);
    const built = buildGemma3Vision(arch, { dtype: 'float32' });
    const w = await loadCheckpoint(dir);
    const session = await ort.InferenceSession.create(encodeBuiltModel(built.model));
    const feeds: Record<string, ort.Tensor> = {};
    for (const x of built.weights) {
      const t = w.get(x.name)!;
      expect(t.shape).toEqual(x.shape);
      feeds[x.name] = new ort.Tensor('float32', t.data, t.shape);
    }
    const pv = ref.pixel_values as number[][][][];
    feeds.pixel_values = new ort.Tensor('float32', Float32Array.from(pv.flat(3)), [pv.length, 3, 32, 32]);
    const out = await session.run(feeds);
    expect(out.vision_embeds!.dims).toEqual([pv.length, 16, 64]);
    expect(maxDiff(out.vision_embeds!.data as Float32Array, (ref.image_embeds as number[][][]).flat(2))).toBeLessThan(1e-4);
  });

  it('refuses a pool that does not tile the patch grid, naming the field', () => {
    const cfgFile = path.join(fixturesDir(), 'gemma3_vlm', 'config.json');
    const raw = JSON.parse(readFileSync(cfgFile, 'utf8'));
    expect(() => gemma3VisionArch({ ...raw, mm_tokens_per_image: 9 }, cfgFile)).toThrow(
      /mm_tokens_per_image.*3 tokens per side do not divide the 8×8/,
    );
    expect(() => gemma3VisionArch({ ...raw, mm_tokens_per_image: 10 }, cfgFile)).toThrow(/mm_tokens_per_image.*is not a square/);
  });
});
