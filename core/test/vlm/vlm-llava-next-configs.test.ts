/**
 * LLaVA-NeXT's anyres packing on images the fixture does not cover, made in code: a tall image
 * (unpad_image's column branch), a wide one (the row branch, with padding), a small one, on a 3 × 3
 * and a 2 × 2 tile grid; with a CLIP tower ("default") and with a SigLIP tower, "full" and a list
 * of feature layers (how Granite Vision, published as LlavaNextForConditionalGeneration, configures it). A tiny random checkpoint goes export --config → prepare → compile; the
 * compiled vision graph, fed random tiles and the pack index run/vlm/anyres.ts computes from the
 * image size, must give HF's packed features within 1e-4. The reference is written here as HF
 * writes it, tensor op by tensor op, and shares nothing with anyres.ts:
 *   - image_processing_utils.py select_best_resolution; models/llava_next/modeling_llava_next.py
 *     (commit 3571987262f13e18288121900a97d950641ac2b3) image_size_to_num_patches,
 *     get_anyres_image_grid_shape, unpad_image and pack_image_features
 *     (`view(nph, npw, h, w, -1).permute(4, 0, 2, 1, 3).flatten(1, 2).flatten(2, 3)`, unpad,
 *     `cat(image_newline[:, None, None].expand(…, 1))`, `flatten(1, 2).transpose(0, 1)`, base first);
 *   - models/llava_next/processing_llava_next.py (commit 81bb907ccf3494b5409b0b745bb10c8a617050b7)
 *     _get_number_of_features: the prompt's image tokens, which must equal the packed rows;
 *   - the per-tile features: core/test/support/llava-reference.ts (CLIP + projector in float64).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { fromFloat32 } from '../../src/formats/float-convert';
import { serializeSafetensors } from '../../src/formats/safetensors/writer';
import { packIndex } from '../../src/artifacts/anyres';
import { rng } from '../support/graph-random';
import { llavaCheckpoint, llavaReference, TEXT, VISION, type Rows } from '../support/llava-reference';
import { haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { exportPrepareCompile, expectGraphsAndArtifactsValid, maxDiff, vlmCli } from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-llava-next-cfg-');
const S = VISION.image_size;
const SIDE = S / VISION.patch_size;
const PINS: [number, number][] = [
  [16, 16],
  [24, 24],
];

/** HF select_best_resolution. */
function bestResolution([oh, ow]: [number, number]): [number, number] {
  let best: [number, number] = PINS[0]!;
  let maxEff = 0;
  let minWaste = Infinity;
  for (const [h, w] of PINS) {
    const scale = Math.min(w / ow, h / oh);
    const eff = Math.min(Math.floor(ow * scale) * Math.floor(oh * scale), ow * oh);
    const waste = w * h - eff;
    if (eff > maxEff || (eff === maxEff && waste < minWaste)) [maxEff, minWaste, best] = [eff, waste, [h, w]];
  }
  return best;
}

/** `x.permute(perm)` of a row-major tensor of `shape`, returned contiguous. */
function permute(x: number[], shape: number[], perm: number[]): { data: number[]; shape: number[] } {
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  const outShape = perm.map((p) => shape[p]!);
  const out: number[] = [];
  const idx = new Array<number>(outShape.length).fill(0);
  for (let n = 0; n < x.length; n++) {
    out.push(x[perm.reduce((s, p, k) => s + idx[k]! * strides[p]!, 0)]!);
    for (let k = outShape.length - 1; k >= 0; k--) {
      idx[k]!++;
      if (idx[k]! < outShape[k]!) break;
      idx[k] = 0;
    }
  }
  return { data: out, shape: outShape };
}

/** HF pack_image_features for one image: `feats` [patches][T][H] (base first), its size, image_newline. */
function hfPack(feats: Rows[], size: [number, number], newline: Float32Array): Rows {
  const H = newline.length;
  const [bh, bw] = bestResolution(size);
  const [nph, npw] = [bh / S, bw / S];
  // view(nph, npw, h, w, H).permute(4, 0, 2, 1, 3) → [H, nph, h, npw, w] → [H, nph·h, npw·w]
  const p = permute(feats.slice(1).flat(2), [nph, npw, SIDE, SIDE, H], [4, 0, 2, 1, 3]);
  const [ch, cw] = [nph * SIDE, npw * SIDE];
  const at = (d: number, y: number, x: number) => p.data[(d * ch + y) * cw + x]!;
  // unpad_image
  const [oh, ow] = size;
  let [y0, y1, x0, x1] = [0, ch, 0, cw];
  if (ow / oh > cw / ch) {
    const pad = Math.floor((ch - Math.trunc(Number((oh * (cw / ow)).toFixed(7)))) / 2);
    [y0, y1] = [pad, ch - pad];
  } else {
    const pad = Math.floor((cw - Math.trunc(Number((ow * (ch / oh)).toFixed(7)))) / 2);
    [x0, x1] = [pad, cw - pad];
  }
  // cat the newline as one more column, flatten(1, 2).transpose(0, 1): rows in (y, x) order
  const rows: Rows = [];
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) rows.push(Array.from({ length: H }, (_, d) => at(d, y, x)));
    rows.push(Array.from(newline));
  }
  return [...feats[0]!, ...rows];
}

/** HF LlavaNextProcessor._get_number_of_features (num_additional_image_tokens: 1 with CLIP's class row, 0 with SigLIP). */
function processorTokens([oh, ow]: [number, number], strategy: string, extra: number): number {
  const [bh, bw] = bestResolution([oh, ow]);
  let [curH, curW] = [SIDE * (bh / S), SIDE * (bw / S)];
  if (ow / oh > curW / curH) curH -= Math.floor((curH - Math.trunc(Number((oh * (curW / ow)).toFixed(7)))) / 2) * 2;
  else curW -= Math.floor((curW - Math.trunc(Number((ow * (curH / oh)).toFixed(7)))) / 2) * 2;
  return curH * curW + curH + SIDE * SIDE + extra - (strategy === 'default' ? 1 : 0);
}

const TOWERS = [
  { name: 'CLIP, default', vision: VISION, strategy: 'default', layer: -2 as number | number[], siglip: false },
  // Granite Vision's form: a SigLIP tower, "full" (no class row to drop), a list of feature layers
  {
    name: 'SigLIP, full, a list of layers',
    vision: { ...VISION, model_type: 'siglip_vision_model' },
    strategy: 'full',
    layer: [-3, -1],
    siglip: true,
  },
];

for (const tower of TOWERS)
  describe(`llava_next, code-made (${tower.name}): anyres packing of images the fixture does not cover`, () => {
    let work = '';
    const h = vlmCli(() => work);
    const layers = Array.isArray(tower.layer) ? tower.layer : [tower.layer];
    const w = llavaCheckpoint(layers.length, TEXT, true, tower.siglip);
    const newline = w.get('image_newline')!.data;

    beforeAll(async () => {
      work = tmp();
      mkdirSync(path.join(work, 'model'));
      const config = {
        architectures: ['LlavaNextForConditionalGeneration'],
        model_type: 'llava_next',
        image_token_index: 63,
        image_grid_pinpoints: PINS,
        vision_feature_layer: tower.layer,
        vision_feature_select_strategy: tower.strategy,
        text_config: TEXT,
        vision_config: tower.vision,
      };
      writeFileSync(path.join(work, 'model', 'config.json'), JSON.stringify(config));
      const tensors = [...w].map(([key, t]) => ({ key, dtype: 'F32' as const, shape: t.shape, data: fromFloat32(t.data, 'F32') }));
      writeFileSync(path.join(work, 'model', 'model.safetensors'), serializeSafetensors(tensors));
      await exportPrepareCompile(h);
    }, 60_000);

    // [height, width]: tall (columns unpadded, 3 × 3 tiles), wide (rows unpadded), small (2 × 2 tiles)
    const SIZES: [number, number][] = [
      [40, 20],
      [20, 50],
      [5, 6],
    ];
    for (const size of SIZES) {
      it(`${size.join('×')}: the vision graph packs HF's rows (base, unpadded tiles, image_newline per row)`, async () => {
        const [bh, bw] = bestResolution(size);
        const patches = 1 + (bh / S) * (bw / S);
        const r = rng(size[0] * 100 + size[1]);
        const pix = Float32Array.from({ length: patches * 3 * S * S }, r);
        const feats = Array.from({ length: patches }, (_, k) =>
          llavaReference(w, pix.subarray(k * 3 * S * S, (k + 1) * 3 * S * S), layers, tower.strategy),
        );
        const want = hfPack(feats, size, newline);
        const index = packIndex(size, PINS, S, SIDE);
        expect(index.length).toBe(want.length);
        expect(index.length).toBe(processorTokens(size, tower.strategy, tower.siglip ? 0 : 1));
        const out = await (
          await h.session('out/vision')
        ).run({
          pixel_values: new ort.Tensor('float32', pix, [1, patches, 3, S, S]),
          pack_index: new ort.Tensor('int64', BigInt64Array.from(index.map(BigInt)), [index.length]),
        });
        expect(out.vision_embeds!.dims).toEqual([1, want.length, TEXT.hidden_size]);
        expect(maxDiff(out.vision_embeds!.data as Float32Array, want.flat())).toBeLessThan(1e-4);
      });
    }

    it.runIf(haveOnnxChecker())("both graphs and their compiled artifacts pass ONNX's checker", () => {
      expectGraphsAndArtifactsValid(work, ['out/vision', 'out/language']);
    });
  });
