/**
 * The InternVL image processor's steps (HF `GotOcr2ImageProcessor`, models/got_ocr2/
 * image_processing_got_ocr2.py, the PIL path, with `crop_to_patches` true as `InternVLProcessor`
 * passes it whatever preprocessor_config.json says): `get_optimal_tiled_canvas` picks the
 * `[columns, rows]` grid of at most `max_patches` tiles whose aspect ratio is closest to the
 * image's (a tie goes to the later, larger grid while the image's area exceeds half of the grid's
 * pixels); the image is resized (PIL bicubic) to that canvas and cut into tiles row-major; when
 * there is more than one tile, the whole image resized to one tile (the thumbnail) comes last.
 * Each tile is rescaled by 1/255 and normalized by mean/std (ImageNet's, from the config).
 * `InternVLProcessor` then writes `<img>` + `<IMG_CONTEXT>`×(image_seq_length · tiles) + `</img>`
 * for each image (models/internvl/processing_internvl.py `_insert_media_placeholders`).
 */
import { FormatError } from '../../errors';
import { readMeanStd, readProcessorFile, resizeBicubic, type RgbImage } from './image';

/** What the InternVL processor needs. */
export interface InternVLProcessor {
  /** The tile side (vision image_size = preprocessor `size`). */
  size: number;
  minPatches: number;
  maxPatches: number;
  mean: [number, number, number];
  std: [number, number, number];
  rescale: number;
}

/** Reads `<dir>/preprocessor_config.json` over GotOcr2ImageProcessor's defaults (1 … 12 tiles, bicubic; ImageNet mean/std as InternVL publishes). */
export function internvlProcessor(dir: string | undefined, size: number): InternVLProcessor {
  const p: InternVLProcessor = {
    size,
    minPatches: 1,
    maxPatches: 12,
    mean: [0.485, 0.456, 0.406],
    std: [0.229, 0.224, 0.225],
    rescale: 1 / 255,
  };
  const read = readProcessorFile(dir);
  if (!read) return p;
  const { file, raw } = read;
  readMeanStd(raw, file, p);
  const count = (k: 'min_patches' | 'max_patches') => {
    const v = raw[k];
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || (v as number) < 1) throw new FormatError(file, `"${k}" must be a positive integer`);
    return v as number;
  };
  p.minPatches = count('min_patches') ?? p.minPatches;
  p.maxPatches = count('max_patches') ?? p.maxPatches;
  if (p.minPatches > p.maxPatches) throw new FormatError(file, `"min_patches" (${p.minPatches}) exceeds "max_patches" (${p.maxPatches})`);
  if (raw.rescale_factor !== undefined) {
    if (typeof raw.rescale_factor !== 'number' || !(raw.rescale_factor > 0))
      throw new FormatError(file, '"rescale_factor" must be a positive number');
    p.rescale = raw.rescale_factor;
  }
  const sz = raw.size as { height?: unknown; width?: unknown } | undefined;
  if (sz && (sz.height !== size || sz.width !== size))
    throw new FormatError(file, `"size" is ${JSON.stringify(sz)} but the model's vision_config.image_size is ${size}`);
  if (raw.resample !== undefined && raw.resample !== 3)
    throw new FormatError(file, `"resample" is ${JSON.stringify(raw.resample)}; run --image ports the bicubic one (3)`);
  if (raw.do_resize === false || raw.do_rescale === false || raw.do_normalize === false)
    throw new FormatError(file, 'do_resize / do_rescale / do_normalize = false is not supported by run --image');
  return p;
}

/** HF `get_optimal_tiled_canvas`: `[columns, rows]` for an image of `height`×`width` (tie rule in the module comment). */
export function optimalCanvas(height: number, width: number, tile: number, minPatches: number, maxPatches: number): [number, number] {
  // get_all_supported_aspect_ratios: (w, h) for w, h in 1…max, sorted (stably) by w·h
  const grids: [number, number][] = [];
  for (let w = 1; w <= maxPatches; w++)
    for (let h = 1; h <= maxPatches; h++) if (w * h <= maxPatches && w * h >= minPatches) grids.push([w, h]);
  grids.sort((a, b) => a[0] * a[1] - b[0] * b[1]);
  const aspect = width / height;
  const area = width * height;
  let bestDiff = Infinity;
  let best: [number, number] = [1, 1];
  for (const g of grids) {
    const diff = Math.abs(aspect - g[0] / g[1]);
    if (diff < bestDiff) {
      bestDiff = diff;
      best = g;
    } else if (diff === bestDiff && area > 0.5 * tile * tile * g[0] * g[1]) best = g;
  }
  return best;
}

/** One image → its tiles `[tiles, C, S, S]` (float32, channels first) and the canvas. */
export function processInternVLImage(
  img: RgbImage,
  p: InternVLProcessor,
): { pixelValues: Float32Array; tiles: number; canvas: [number, number] } {
  const S = p.size;
  const [cols, rows] = optimalCanvas(img.height, img.width, S, p.minPatches, p.maxPatches);
  const canvas = resizeBicubic(img, rows * S, cols * S);
  const crops: RgbImage[] = [];
  for (let i = 0; i < cols * rows; i++) {
    const x0 = (i % cols) * S;
    const y0 = Math.floor(i / cols) * S;
    const data = new Uint8Array(S * S * 3);
    for (let y = 0; y < S; y++)
      data.set(canvas.data.subarray(((y0 + y) * canvas.width + x0) * 3, ((y0 + y) * canvas.width + x0 + S) * 3), y * S * 3);
    crops.push({ width: S, height: S, data });
  }
  if (crops.length !== 1) crops.push(resizeBicubic(img, S, S));
  const f = Math.fround;
  const out = new Float32Array(crops.length * 3 * S * S);
  crops.forEach((t, k) => {
    for (let ch = 0; ch < 3; ch++) {
      const mean = f(p.mean[ch]!);
      const std = f(p.std[ch]!);
      const base = (k * 3 + ch) * S * S;
      for (let i = 0; i < S * S; i++) out[base + i] = f(f(f(t.data[i * 3 + ch]! * p.rescale) - mean) / std);
    }
  });
  return { pixelValues: out, tiles: crops.length, canvas: [cols, rows] };
}

/** InternVLProcessor's text for one image of `tiles` tiles. */
export function internvlImageText(tiles: number, tileTokens: number): string {
  return `<img>${'<IMG_CONTEXT>'.repeat(tiles * tileTokens)}</img>`;
}
