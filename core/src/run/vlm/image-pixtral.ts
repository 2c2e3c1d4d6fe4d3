/**
 * The Pixtral image processor's steps (HF `PixtralImageProcessor`, models/pixtral/
 * image_processing_pixtral.py, the PIL path): convert to RGB; `get_resize_output_image_size`:
 * when the image exceeds `size.longest_edge`, scale both sides by the larger ratio with floor,
 * then round each side UP to a multiple of the patch size — which `PixtralProcessor` passes as
 * `patch_size · spatial_merge_size` — and resize with PIL bicubic (resample 3) when that differs;
 * rescale by 1/255, normalize by mean/std (OpenAI CLIP's unless preprocessor_config.json says
 * otherwise), channels first. HF pads a batch to its largest image (`_pad_for_batching`) and
 * returns `image_sizes`; here each image keeps its own size (the vision graph takes one size).
 */
import { FormatError } from '../../errors';
import { readMeanStd, readProcessorFile, resizeBicubic, type Resample, type RgbImage } from './image';

/** What the Pixtral processor needs. */
export interface PixtralProcessor {
  longestEdge: number;
  /** The resize's multiple: patch_size · spatial_merge_size (PixtralProcessor's). */
  unit: number;
  resample: Resample;
  mean: [number, number, number];
  std: [number, number, number];
  rescale: number;
}

/** Reads `<dir>/preprocessor_config.json` over PixtralImageProcessor's defaults (longest_edge 1024, bicubic, CLIP mean/std). */
export function pixtralProcessor(dir: string | undefined, patch: number, merge: number): PixtralProcessor {
  const p: PixtralProcessor = {
    longestEdge: 1024,
    unit: patch * merge,
    resample: 'bicubic',
    mean: [0.48145466, 0.4578275, 0.40821073],
    std: [0.26862954, 0.26130258, 0.27577711],
    rescale: 1 / 255,
  };
  const read = readProcessorFile(dir);
  if (!read) return p;
  const { file, raw } = read;
  readMeanStd(raw, file, p);
  const size = raw.size as { longest_edge?: unknown } | undefined;
  if (size?.longest_edge !== undefined) {
    if (typeof size.longest_edge !== 'number' || !Number.isInteger(size.longest_edge) || size.longest_edge <= 0)
      throw new FormatError(file, '"size.longest_edge" must be a positive integer');
    p.longestEdge = size.longest_edge;
  } else if (size !== undefined) throw new FormatError(file, '"size" must give longest_edge (as PixtralImageProcessor does)');
  const ps = raw.patch_size as { height?: unknown; width?: unknown } | number | undefined;
  const given = typeof ps === 'number' ? [ps, ps] : ps ? [ps.height, ps.width] : undefined;
  if (given && (given[0] !== patch || given[1] !== patch))
    throw new FormatError(file, `"patch_size" is ${JSON.stringify(ps)} but the model's vision_config.patch_size is ${patch}`);
  if (raw.rescale_factor !== undefined) {
    if (typeof raw.rescale_factor !== 'number' || !(raw.rescale_factor > 0))
      throw new FormatError(file, '"rescale_factor" must be a positive number');
    p.rescale = raw.rescale_factor;
  }
  if (raw.resample !== undefined && raw.resample !== 3 && raw.resample !== 2)
    throw new FormatError(file, `"resample" is ${String(raw.resample)} (PIL bicubic 3 and bilinear 2 are implemented)`);
  if (raw.resample === 2) p.resample = 'bilinear';
  if (raw.do_resize === false || raw.do_rescale === false || raw.do_normalize === false || raw.do_convert_rgb === false)
    throw new FormatError(file, 'do_resize / do_rescale / do_normalize / do_convert_rgb = false is not supported by run --image');
  return p;
}

/** HF get_resize_output_image_size: `[height, width]` after the processor's resize. */
export function pixtralResizeSize(height: number, width: number, p: Pick<PixtralProcessor, 'longestEdge' | 'unit'>): [number, number] {
  const ratio = Math.max(height / p.longestEdge, width / p.longestEdge);
  if (ratio > 1) {
    height = Math.floor(height / ratio);
    width = Math.floor(width / ratio);
  }
  const up = (x: number) => (Math.floor((x - 1) / p.unit) + 1) * p.unit;
  return [up(height), up(width)];
}

/** One image → pixel values `[C, h, w]` (float32, channels first) and its processed `[h, w]`. */
export function processPixtralImage(img: RgbImage, p: PixtralProcessor): { pixelValues: Float32Array; size: [number, number] } {
  const [H, W] = pixtralResizeSize(img.height, img.width, p);
  const r = resizeBicubic(img, H, W, p.resample);
  const f = Math.fround;
  const out = new Float32Array(3 * H * W);
  for (let ch = 0; ch < 3; ch++) {
    const mean = f(p.mean[ch]!);
    const std = f(p.std[ch]!);
    for (let i = 0; i < H * W; i++) out[ch * H * W + i] = f(f(f(r.data[i * 3 + ch]! * p.rescale) - mean) / std);
  }
  return { pixelValues: out, size: [H, W] };
}

/**
 * PixtralProcessor's text for one image of `[h, w]` pixels: per merged row, `[IMG]` per merged
 * column then `[IMG_BREAK]`, the last row's break replaced by `[IMG_END]`.
 */
export function pixtralImageText(
  size: [number, number],
  unit: number,
  tokens = { image: '[IMG]', brk: '[IMG_BREAK]', end: '[IMG_END]' },
): string {
  const rows = size[0] / unit;
  const cols = size[1] / unit;
  const row = tokens.image.repeat(cols);
  return Array.from({ length: rows }, (_, r) => row + (r === rows - 1 ? tokens.end : tokens.brk)).join('');
}
