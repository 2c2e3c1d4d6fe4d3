/**
 * The Llama 4 image processor's steps (HF `Llama4ImageProcessorFast`, models/llama4/
 * image_processing_llama4_fast.py) and the processor's image block (`Llama4Processor`,
 * models/llama4/processing_llama4.py `_prompt_split_image`):
 * - the canvases: every (h, w) tile grid with h·w ≤ `max_patches`, times `size` (square), in
 *   `find_supported_resolutions`'s order; `get_best_fit` takes the smallest upscale ≥ 1 (the
 *   largest with `resize_to_max_canvas`), else the mildest downscale, ties to the smallest area;
 * - resize without distortion (`get_max_res_without_distortion`, upscaling capped at `size`
 *   unless `resize_to_max_canvas`), pad right/bottom with 0 to the canvas, rescale and
 *   normalize in bfloat16 (the class's `rescale_and_normalize` override: each step rounded to
 *   bf16), cut row-major tiles of `size`; with more than one tile, the whole image resized to
 *   `size` × `size` follows as the global tile;
 * - the text: per tile row, the tiles' `<|patch|>`×n separated by `<|tile_x_separator|>`, then
 *   `<|tile_y_separator|>` (only with more than one tile); then `<|image|>` and the global tile's
 *   `<|patch|>`×n, inside `<|image_start|>` … `<|image_end|>`.
 * The resize is PIL's triangle filter (image.ts resizeBicubic 'bilinear'): torchvision's
 * antialiased bilinear on uint8 images is the same filter, up to one unit of 8-bit rounding.
 */
import { FormatError } from '../../errors';
import { floatBitsToBf16Bits } from '../../formats/float-convert';
import { readMeanStd, readProcessorFile, resizeBicubic, type RgbImage } from './image';

/** What the Llama 4 processor needs. */
export interface Llama4Processor {
  /** The tile side (`size.height` = `size.width`, the vision tower's image_size). */
  size: number;
  maxPatches: number;
  resizeToMaxCanvas: boolean;
  mean: [number, number, number];
  std: [number, number, number];
  rescale: number;
}

/** Reads `<dir>/preprocessor_config.json` over Llama4ImageProcessorFast's defaults. */
export function llama4Processor(dir: string | undefined, imageSize: number): Llama4Processor {
  const p: Llama4Processor = {
    size: imageSize,
    maxPatches: 16,
    resizeToMaxCanvas: false,
    mean: [0.5, 0.5, 0.5],
    std: [0.5, 0.5, 0.5],
    rescale: 1 / 255,
  };
  const read = readProcessorFile(dir);
  if (!read) return p;
  const { file, raw } = read;
  readMeanStd(raw, file, p);
  const sz = raw.size as { height?: unknown; width?: unknown } | undefined;
  if (sz !== undefined && (sz.height !== imageSize || sz.width !== imageSize))
    throw new FormatError(file, `"size" is ${JSON.stringify(sz)} but the model's vision_config.image_size is ${imageSize} (square tiles)`);
  if (raw.max_patches !== undefined) {
    if (typeof raw.max_patches !== 'number' || !Number.isInteger(raw.max_patches) || raw.max_patches <= 0)
      throw new FormatError(file, '"max_patches" must be a positive integer');
    p.maxPatches = raw.max_patches;
  }
  if (raw.resize_to_max_canvas !== undefined) {
    if (typeof raw.resize_to_max_canvas !== 'boolean') throw new FormatError(file, '"resize_to_max_canvas" must be true or false');
    p.resizeToMaxCanvas = raw.resize_to_max_canvas;
  }
  if (raw.rescale_factor !== undefined) {
    if (typeof raw.rescale_factor !== 'number' || !(raw.rescale_factor > 0))
      throw new FormatError(file, '"rescale_factor" must be a positive number');
    p.rescale = raw.rescale_factor;
  }
  if (raw.resample !== undefined && raw.resample !== 2)
    throw new FormatError(file, `"resample" is ${String(raw.resample)} (bilinear, 2, is implemented)`);
  if (raw.do_resize === false || raw.do_rescale === false || raw.do_normalize === false || raw.do_convert_rgb === false)
    throw new FormatError(file, 'do_resize / do_rescale / do_normalize / do_convert_rgb = false is not supported by run --image');
  return p;
}

/** HF find_supported_resolutions: the canvases `[height, width]` in its order (aspect ratios by first appearance). */
export function llama4Canvases(maxPatches: number, size: number): [number, number][] {
  const byRatio = new Map<number, [number, number][]>();
  for (let n = maxPatches; n > 0; n--) {
    const factors: number[] = [];
    for (let i = 1; i <= n; i++) if (n % i === 0) factors.push(i);
    for (const h of factors) {
      const r = h / (n / h);
      if (!byRatio.has(r)) byRatio.set(r, []);
      byRatio.get(r)!.push([h, n / h]);
    }
  }
  return [...byRatio.values()].flat().map(([h, w]) => [h * size, w * size]);
}

/** HF get_best_fit: the canvas `[height, width]` for an image of `height` × `width`. */
export function llama4BestFit(height: number, width: number, canvases: [number, number][], toMax: boolean): [number, number] {
  const f = Math.fround;
  // torch: int64 / int64 → float32 scales
  const scales = canvases.map(([h, w]) => {
    const sw = f(w / width);
    const sh = f(h / height);
    return sh > sw ? sw : sh;
  });
  const up = scales.filter((s) => s >= 1);
  const chosen = up.length ? (toMax ? Math.max(...up) : Math.min(...up)) : Math.max(...scales.filter((s) => s < 1));
  let best: [number, number] | undefined;
  canvases.forEach((c, i) => {
    if (scales[i] === chosen && (!best || c[0] * c[1] < best[0] * best[1])) best = c;
  });
  return best!;
}

/** HF get_max_res_without_distortion. */
function maxResWithoutDistortion(height: number, width: number, th: number, tw: number): [number, number] {
  const sw = tw / width;
  const sh = th / height;
  if (sw < sh) return [Math.min(Math.floor(height * sw), th), tw];
  return [th, Math.min(Math.floor(width * sh), tw)];
}

const bits = new Float32Array(1);
const word = new Uint32Array(bits.buffer);
/** Rounds to bfloat16 (nearest, ties to even), as a torch.bfloat16 op's result. */
function bf16(x: number): number {
  bits[0] = x;
  word[0] = floatBitsToBf16Bits(word[0]!) << 16;
  return bits[0];
}

/** Rescale + normalize of `[H·W·3]` bytes into `[C, H, W]` at `out[offset…]`, each step in bf16. */
function normalizeInto(data: Uint8Array, n: number, p: Llama4Processor, out: Float32Array, offset: number): void {
  for (let ch = 0; ch < 3; ch++) {
    const mean = bf16(p.mean[ch]!);
    const std = bf16(p.std[ch]!);
    for (let i = 0; i < n; i++) out[offset + ch * n + i] = bf16(bf16(bf16(data[i * 3 + ch]! * Math.fround(p.rescale)) - mean) / std);
  }
}

/** One image → its tiles (then the global tile when there is more than one) `[tiles, C, S, S]` and the tile grid `[rows, cols]`. */
export function processLlama4Image(
  img: RgbImage,
  p: Llama4Processor,
): { pixelValues: Float32Array; tiles: number; aspect: [number, number] } {
  const S = p.size;
  const [th, tw] = llama4BestFit(img.height, img.width, llama4Canvases(p.maxPatches, S), p.resizeToMaxCanvas);
  const [ch, cw] = p.resizeToMaxCanvas ? [th, tw] : [Math.min(Math.max(img.height, S), th), Math.min(Math.max(img.width, S), tw)];
  const [nh, nw] = maxResWithoutDistortion(img.height, img.width, ch, cw).map((x) => Math.max(x, 1)) as [number, number];
  const resized = resizeBicubic(img, nh, nw, 'bilinear');
  const rows = th / S;
  const cols = tw / S;
  const global = rows * cols > 1;
  const tiles = rows * cols + (global ? 1 : 0);
  const out = new Float32Array(tiles * 3 * S * S);
  const zero = new Uint8Array(3);
  for (let ty = 0; ty < rows; ty++)
    for (let tx = 0; tx < cols; tx++) {
      // the tile's pixels of the padded canvas: outside the resized image, the pad value 0
      const tile = new Uint8Array(S * S * 3);
      for (let y = 0; y < S; y++)
        for (let x = 0; x < S; x++) {
          const gy = ty * S + y;
          const gx = tx * S + x;
          const inside = gy < nh && gx < nw;
          tile.set(inside ? resized.data.subarray((gy * nw + gx) * 3, (gy * nw + gx) * 3 + 3) : zero, (y * S + x) * 3);
        }
      normalizeInto(tile, S * S, p, out, (ty * cols + tx) * 3 * S * S);
    }
  if (global) normalizeInto(resizeBicubic(img, S, S, 'bilinear').data, S * S, p, out, rows * cols * 3 * S * S);
  return { pixelValues: out, tiles, aspect: [rows, cols] };
}

/** Llama4Processor._prompt_split_image: the image block's token strings for a tile grid. */
export function llama4ImageText(aspect: [number, number], tileTokens: number): string {
  const patches = '<|patch|>'.repeat(tileTokens);
  let s = '<|image_start|>';
  const [rh, rw] = aspect;
  if (rh * rw > 1)
    for (let y = 0; y < rh; y++) {
      for (let x = 0; x < rw; x++) s += patches + (x < rw - 1 ? '<|tile_x_separator|>' : '');
      s += '<|tile_y_separator|>';
    }
  return s + '<|image|>' + patches + '<|image_end|>';
}
