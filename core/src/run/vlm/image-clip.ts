/**
 * The CLIP image processor LLaVA uses (HF `CLIPImageProcessor`, models/clip/image_processing_clip.py)
 * and LLaVA-NeXT's anyres on top of it (HF `LlavaNextImageProcessor`,
 * models/llava_next/image_processing_llava_next.py):
 *   CLIP   resize the shortest edge to size.shortest_edge (the long edge `int(s · long / short)`,
 *          PIL bicubic on the 8-bit image), center crop to crop_size (zero padding when smaller),
 *          rescale by 1/255, normalize by mean/std (OPENAI_CLIP_MEAN / _STD by default), channels first.
 *   NeXT   select_best_resolution over image_grid_pinpoints, resize into it keeping the aspect,
 *          pad with zeros centered, cut crop_size tiles row-major; the base image is the whole
 *          image resized to (shortest_edge, shortest_edge); base and tiles then take the CLIP steps.
 */
import { FormatError } from '../../errors';
import { anyresLayout, patchOutputSize } from '../../artifacts/anyres';
import { readMeanStd, readProcessorFile, resizeBicubic, type Resample, type RgbImage } from './image';

/** preprocessor_config.json of a LLaVA model (CLIPImageProcessor / LlavaNextImageProcessor fields). */
export interface ClipProcessor {
  /** size.shortest_edge (or size.height) */
  shortestEdge: number;
  crop: [number, number];
  resample: Resample;
  mean: [number, number, number];
  std: [number, number, number];
  rescale: number;
}

/** Reads `<dir>/preprocessor_config.json` over CLIPImageProcessor's defaults (224, bicubic, CLIP mean/std). */
export function clipProcessor(dir: string | undefined, imageSize: number): ClipProcessor {
  const p: ClipProcessor = {
    shortestEdge: imageSize,
    crop: [imageSize, imageSize],
    resample: 'bicubic',
    mean: [0.48145466, 0.4578275, 0.40821073],
    std: [0.26862954, 0.26130258, 0.27577711],
    rescale: 1 / 255,
  };
  const read = readProcessorFile(dir);
  if (!read) return p;
  const { file, raw } = read;
  readMeanStd(raw, file, p);
  const pos = (v: unknown, field: string): number => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) throw new FormatError(file, `"${field}" must be a positive integer`);
    return v;
  };
  const size = raw.size as { shortest_edge?: unknown; height?: unknown; width?: unknown } | undefined;
  if (size?.shortest_edge !== undefined) p.shortestEdge = pos(size.shortest_edge, 'size.shortest_edge');
  else if (size?.height !== undefined) {
    if (size.width !== size.height) throw new FormatError(file, '"size" must be square ({height, width} equal) or {shortest_edge}');
    p.shortestEdge = pos(size.height, 'size.height');
  }
  const crop = raw.crop_size as { height?: unknown; width?: unknown } | number | undefined;
  if (typeof crop === 'number') p.crop = [pos(crop, 'crop_size'), crop];
  else if (crop) p.crop = [pos(crop.height, 'crop_size.height'), pos(crop.width, 'crop_size.width')];
  if (raw.do_center_crop === false)
    throw new FormatError(
      file,
      '"do_center_crop" is false (a shortest-edge resize without the crop is not square; not supported by run --image)',
    );
  if (raw.resample !== undefined && raw.resample !== 3 && raw.resample !== 2)
    throw new FormatError(file, `"resample" is ${String(raw.resample)} (PIL bicubic 3 and bilinear 2 are implemented)`);
  if (raw.resample === 2) p.resample = 'bilinear';
  if (raw.rescale_factor !== undefined) {
    if (typeof raw.rescale_factor !== 'number' || !(raw.rescale_factor > 0))
      throw new FormatError(file, '"rescale_factor" must be a positive number');
    p.rescale = raw.rescale_factor;
  }
  if (raw.do_resize === false || raw.do_rescale === false || raw.do_normalize === false || raw.do_convert_rgb === false)
    throw new FormatError(file, 'do_resize / do_rescale / do_normalize / do_convert_rgb = false is not supported by run --image');
  // HF pads a crop larger than the image and then returns fewer rows than asked: never meant to be used
  if (p.crop[0] > p.shortestEdge || p.crop[1] > p.shortestEdge)
    throw new FormatError(file, `"crop_size" (${p.crop.join('×')}) is larger than size.shortest_edge (${p.shortestEdge})`);
  if (p.crop[0] !== imageSize || p.crop[1] !== imageSize)
    throw new FormatError(file, `"crop_size" gives ${p.crop.join('×')} images but the model's vision_config.image_size is ${imageSize}`);
  return p;
}

/** HF get_resize_output_image_size(default_to_square=False): the shortest edge to `s`, the other `int(s · long / short)`. */
function shortestEdgeSize(h: number, w: number, s: number): [number, number] {
  return w <= h ? [Math.trunc((s * h) / w), s] : [s, Math.trunc((s * w) / h)];
}

/** HF center_crop on 8-bit RGB, the window inside the image (clipProcessor refuses a crop larger than the resize). */
function centerCrop(img: RgbImage, ch: number, cw: number): RgbImage {
  if (img.height === ch && img.width === cw) return img;
  return window(img, Math.trunc((img.height - ch) / 2), Math.trunc((img.width - cw) / 2), ch, cw);
}

/** The `h × w` window of `img` at (`top`, `left`) (may lie partly outside: zeros there). */
function window(img: RgbImage, top: number, left: number, h: number, w: number): RgbImage {
  const out = new Uint8Array(h * w * 3);
  for (let y = 0; y < h; y++) {
    const sy = y + top;
    if (sy < 0 || sy >= img.height) continue;
    for (let x = 0; x < w; x++) {
      const sx = x + left;
      if (sx < 0 || sx >= img.width) continue;
      out.set(img.data.subarray((sy * img.width + sx) * 3, (sy * img.width + sx) * 3 + 3), (y * w + x) * 3);
    }
  }
  return { width: w, height: h, data: out };
}

/** Rescale then normalize 8-bit RGB into `out` at `offset`, channels first (float32 steps as HF's numpy). */
function normalizeInto(img: RgbImage, p: ClipProcessor, out: Float32Array, offset: number): void {
  const f = Math.fround;
  const n = img.width * img.height;
  for (let ch = 0; ch < 3; ch++) {
    const mean = f(p.mean[ch]!);
    const std = f(p.std[ch]!);
    for (let i = 0; i < n; i++) out[offset + ch * n + i] = f(f(f(img.data[i * 3 + ch]! * p.rescale) - mean) / std);
  }
}

/** The CLIP steps on one image: resize shortest edge, center crop, rescale, normalize → `[C, S, S]`. */
function clipSteps(img: RgbImage, p: ClipProcessor, out: Float32Array, offset: number): void {
  const [h, w] = shortestEdgeSize(img.height, img.width, p.shortestEdge);
  const r = resizeBicubic(img, h, w, p.resample);
  normalizeInto(centerCrop(r, p.crop[0], p.crop[1]), p, out, offset);
}

/** LLaVA: one image → pixel values `[C, S, S]`. */
export function processClipImage(img: RgbImage, p: ClipProcessor): Float32Array {
  const out = new Float32Array(3 * p.crop[0] * p.crop[1]);
  clipSteps(img, p, out, 0);
  return out;
}

/** LLaVA-NeXT: one image → `[patches, C, S, S]` (base image first, then the tiles row-major). */
export function processAnyresImage(
  img: RgbImage,
  p: ClipProcessor,
  pinpoints: readonly [number, number][],
): { pixelValues: Float32Array; patches: number } {
  const S = p.crop[0];
  const size: [number, number] = [img.height, img.width];
  const { best, grid, patches } = anyresLayout(size, pinpoints, S);
  const [rh, rw] = patchOutputSize(size, best);
  const resized = resizeBicubic(img, rh, rw, p.resample);
  // _pad_for_patching: zeros, the image at (⌊Δh/2⌋, ⌊Δw/2⌋)
  const padded = window(resized, -Math.floor((best[0] - rh) / 2), -Math.floor((best[1] - rw) / 2), best[0], best[1]);
  const out = new Float32Array(patches * 3 * S * S);
  clipSteps(resizeBicubic(img, p.shortestEdge, p.shortestEdge, p.resample), p, out, 0);
  for (let i = 0; i < grid[0]; i++)
    for (let j = 0; j < grid[1]; j++) clipSteps(window(padded, i * S, j * S, S, S), p, out, (1 + i * grid[1] + j) * 3 * S * S);
  return { pixelValues: out, patches };
}
