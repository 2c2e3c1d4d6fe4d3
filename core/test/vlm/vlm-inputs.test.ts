/**
 * VLM run inputs: MRoPE position ids (HF transformers 4.57 `Qwen3VLMoeModel.get_rope_index`,
 * models/qwen3_vl_moe/modeling_qwen3_vl_moe.py) against the fixture's reference, and the Qwen
 * image processor steps (HF models/qwen2_vl/image_processing_qwen2_vl.py: smart_resize,
 * rescale, normalize, temporal repeat, merge-block patch order) on PNG / JPEG files written
 * in the test from the fixture's uint8 image.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { expect, it } from 'vitest';
import { processorConfig, processImage, decodeImage, smartResize } from '../../src/run/vlm/image';
import { readImages, readPixelValues } from '../../src/run/vlm/inputs';
import { getRopeIndex } from '../../src/run/vlm/rope-index';
import type { VlmManifest } from '../../src/export/vlm/export-vlm';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { qwen3VlManifest } from '../../../test/support/vlm-manifest';

const req = createRequire(__filename);
const tmp = tempDirs('vlm-inputs-');

const cfg = { imageTokenId: 300, videoTokenId: 301, visionStartTokenId: 302, spatialMergeSize: 2 };

it('get_rope_index: text only is arange on all rows, delta 0', () => {
  const r = getRopeIndex([5, 6, 7], [], cfg);
  expect(r.positions).toEqual([
    [0, 1, 2],
    [0, 1, 2],
    [0, 1, 2],
  ]);
  expect(r.delta).toBe(0);
});

it('get_rope_index: two images of different grids, hand-computed', () => {
  // text(2) start img(1×4×2 → 2×1 merged) end text(1) start img(1×2×2 → 1×1) end
  const ids = [9, 302, 300, 300, 303, 9, 302, 300, 303];
  const r = getRopeIndex(
    ids,
    [
      [1, 4, 2],
      [1, 2, 2],
    ],
    cfg,
  );
  expect(r.positions).toEqual([
    [0, 1, 2, 2, 4, 5, 6, 7, 8],
    [0, 1, 2, 3, 4, 5, 6, 7, 8],
    [0, 1, 2, 2, 4, 5, 6, 7, 8],
  ]);
  expect(r.delta).toBe(9 - 9);
});

it('get_rope_index refuses too few image tokens and video prompts with one line', () => {
  expect(() => getRopeIndex([302, 300, 303], [[1, 4, 4]], cfg)).toThrow(/needs 4 image tokens/);
  expect(() => getRopeIndex([302, 301], [], cfg)).toThrow(/video/);
});

it('a FIFO given as --pixel-values or --image is refused with one line, not read', () => {
  const t = tmp();
  const fifo = path.join(t, 'pipe');
  execFileSync('mkfifo', [fifo]);
  expect(() => readPixelValues(fifo)).toThrow(/pipe/);
  expect(() => decodeImage(fifo)).toThrow(/pipe/);
});

it('smart_resize keeps multiples of the factor and rounds like Python', () => {
  expect(smartResize(16, 16, 8, 64, 1 << 20)).toEqual([16, 16]);
  // 500/28 = 17.86 → 18·28; 375/28 = 13.39 → 13·28
  expect(smartResize(500, 375, 28, 3136, 1003520)).toEqual([504, 364]);
  // 20/8 = 2.5 → round-half-even 2 → 16
  expect(smartResize(20, 16, 8, 64, 1 << 20)).toEqual([16, 16]);
  // below min_pixels: scaled up by √(min / (h·w)), ceil to the factor
  expect(smartResize(16, 16, 8, 1024, 1 << 20)).toEqual([32, 32]);
});

describeFixtures('qwen3_vl_moe processor and rope index vs reference.json', () => {
  const dir = path.join(fixturesDir(), 'qwen3_vl_moe');
  const ref = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8'));
  const H = ref.image.length as number;
  const W = ref.image[0].length as number;
  const rgba = Buffer.alloc(H * W * 4);
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) {
      for (let c = 0; c < 3; c++) rgba[(y * W + x) * 4 + c] = ref.image[y][x][c];
      rgba[(y * W + x) * 4 + 3] = 255;
    }
  const manifest = (modelDir: string): VlmManifest => qwen3VlManifest(modelDir, 4);

  it('reproduces position_ids and rope_deltas (prompt) and position_ids_logits (prompt + generated)', () => {
    const grid = ref.image_grid_thw[0];
    const r = getRopeIndex(ref.input_ids, [grid], cfg);
    expect(r.positions).toEqual(ref.position_ids);
    expect(r.delta).toBe(ref.rope_deltas);
    const all = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    expect(getRopeIndex(all, [grid], cfg).positions).toEqual(ref.position_ids_logits);
  });

  it('--pixel-values JSON: reference.json reads as its pixel rows and grid', () => {
    const img = readPixelValues(path.join(dir, 'reference.json'));
    expect(img.grids).toEqual(ref.image_grid_thw);
    expect(img.patchDim).toBe(96);
    expect(img.pixelValues.length).toBe(ref.pixel_values.length * 96);
  });

  it('a PNG of the image gives the reference pixel_values within 1e-6 (size kept)', () => {
    const t = tmp();
    const { PNG } = req('pngjs');
    const png = new PNG({ width: W, height: H });
    rgba.copy(png.data);
    writeFileSync(path.join(t, 'image.png'), PNG.sync.write(png));
    // min_pixels below 16·16 so smart_resize keeps the size (the reference ran without a resize)
    writeFileSync(
      path.join(t, 'preprocessor_config.json'),
      JSON.stringify({
        min_pixels: 64,
        max_pixels: 1 << 20,
        image_mean: [0.5, 0.5, 0.5],
        image_std: [0.5, 0.5, 0.5],
        patch_size: 4,
        temporal_patch_size: 2,
        merge_size: 2,
      }),
    );
    const img = readImages([path.join(t, 'image.png')], manifest(t));
    expect(img.grids).toEqual(ref.image_grid_thw);
    const want = (ref.pixel_values as number[][]).flat();
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(img.pixelValues[i]! - want[i]!));
    expect(worst).toBeLessThan(1e-6);
  });

  it('a JPEG decodes through jpeg-js and follows the same processor steps (checked by numpy on the decoded pixels)', () => {
    const t = tmp();
    const jpeg = req('jpeg-js');
    writeFileSync(path.join(t, 'image.jpg'), jpeg.encode({ data: rgba, width: W, height: H }, 100).data);
    writeFileSync(path.join(t, 'preprocessor_config.json'), JSON.stringify({ min_pixels: 64, max_pixels: 1 << 20 }));
    const img = readImages([path.join(t, 'image.jpg')], manifest(t));
    // JPEG is lossy (quality 100 still moves some values by a few levels): compare with an
    // independent numpy port of Qwen2VLImageProcessor._preprocess on the decoded bytes …
    const rgb = decodeImage(path.join(t, 'image.jpg'));
    writeFileSync(path.join(t, 'rgb.bin'), rgb.data);
    const py = `
import numpy as np, sys
img = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(${H}, ${W}, 3)
x = (img.astype(np.float64) * (1 / 255)).astype(np.float32)
x = ((x - np.array([0.5] * 3, dtype=np.float32)) / np.array([0.5] * 3, dtype=np.float32)).transpose(2, 0, 1)[None]
x = np.repeat(x, 2, axis=0)
p, m = 4, 2
gh, gw = ${H} // p, ${W} // p
x = x.reshape(1, 2, 3, gh // m, m, p, gw // m, m, p).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8).reshape(gh * gw, 3 * 2 * p * p)
x.astype(np.float32).tofile(sys.argv[2])
`;
    execFileSync('python3', ['-c', py, path.join(t, 'rgb.bin'), path.join(t, 'pv.bin')]);
    const b = readFileSync(path.join(t, 'pv.bin'));
    const want = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
    expect(img.pixelValues.length).toBe(want.length);
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(img.pixelValues[i]! - want[i]!));
    expect(worst).toBeLessThan(1e-6);
    // … and the JPEG stays near the reference (a few 8-bit levels → ≤ 0.05 after normalize)
    const ref0 = (ref.pixel_values as number[][]).flat();
    let near = 0;
    for (let i = 0; i < ref0.length; i++) near = Math.max(near, Math.abs(img.pixelValues[i]! - ref0[i]!));
    expect(near).toBeLessThan(0.05);
  });

  it('defaults follow Qwen3-VL (min_pixels 65536 → the 16×16 fixture image is upscaled)', () => {
    const c = processorConfig(undefined, { patch: 4, temporalPatch: 2, merge: 2 });
    expect(c.minPixels).toBe(65536);
    const rgb = { width: W, height: H, data: new Uint8Array(H * W * 3) };
    expect(processImage(rgb, c).grid).toEqual([1, 64, 64]);
  });
});
