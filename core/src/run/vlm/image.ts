/**
 * The Qwen2-VL / Qwen3-VL image processor's steps (HF `Qwen2VLImageProcessor`,
 * models/qwen2_vl/image_processing_qwen2_vl.py, which Qwen3-VL uses): decode to RGB,
 * `smart_resize` to multiples of patch·merge within [min_pixels, max_pixels], bicubic resize
 * when the size changes, rescale by 1/255, normalize by mean/std, repeat the frame
 * temporal_patch_size times, and flatten patches in merge-block order:
 * `reshape(t, tp, C, h/m, m, p, w/m, m, p).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)`.
 * PNG and JPEG are decoded by maintained libraries (pngjs, jpeg-js), loaded on first use.
 */
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { FormatError, PipelineError, UsageError } from '../../errors';
import { pyRound } from '../../foundation/py-round';
import { readJsonTextSync, readRegularFileSync } from '../../paths';
import { checkImagePixels, readImageHeader } from './image-header';

export { DEFAULT_MAX_IMAGE_PIXELS } from './image-header';

/** An RGB image, `height × width × 3` bytes, row-major. */
export interface RgbImage {
  width: number;
  height: number;
  data: Uint8Array;
}

/** Processor settings (preprocessor_config.json fields). */
export interface ProcessorConfig {
  minPixels: number;
  maxPixels: number;
  mean: [number, number, number];
  std: [number, number, number];
  rescale: number;
  patch: number;
  temporalPatch: number;
  merge: number;
}

/** Qwen3-VL's released preprocessor_config.json values (size.shortest_edge / longest_edge, mean = std = 0.5). */
export const QWEN3_VL_PROCESSOR_DEFAULTS = {
  minPixels: 65536,
  maxPixels: 16777216,
  mean: [0.5, 0.5, 0.5],
  std: [0.5, 0.5, 0.5],
  rescale: 1 / 255,
} as const;

/**
 * HF `Qwen2VLImageProcessor`'s own defaults, which Qwen2.5-VL uses (image_processing_qwen2_vl.py:
 * size shortest_edge 56·56, longest_edge 28·28·1280, OPENAI_CLIP_MEAN / OPENAI_CLIP_STD).
 */
export const QWEN2_VL_PROCESSOR_DEFAULTS = {
  minPixels: 56 * 56,
  maxPixels: 28 * 28 * 1280,
  mean: [0.48145466, 0.4578275, 0.40821073],
  std: [0.26862954, 0.26130258, 0.27577711],
  rescale: 1 / 255,
} as const;

function req(): NodeRequire {
  return createRequire(typeof __filename === 'string' ? __filename : path.join(process.cwd(), 'index.js'));
}
function load<T>(name: string): T {
  try {
    return req()(name) as T;
  } catch {
    throw new PipelineError(`${name} is not installed: run \`npm install ${name}\` (needed to decode images for run --image)`);
  }
}

/** Options of {@link decodeImage}. */
export interface DecodeOptions {
  /** Refuse a declared size above this many pixels (default Pillow's, {@link DEFAULT_MAX_IMAGE_PIXELS}). */
  maxPixels?: number;
  /** Judges the declared size (width, height) before decoding; throws to refuse (run: the ctx_len check). */
  checkSize?: (width: number, height: number) => void;
}

type Rgba = { width: number; height: number; data: Uint8Array | Uint16Array };

/**
 * 16-bit samples to 8 bits as Pillow does (and so the reference processor): RGB(A) and
 * grey+alpha unpack through "…;16B", which keeps the high byte (3000 → 11, where scaling
 * would round to 12); plain 16-bit grey opens as mode I;16, whose conversion to RGB clips
 * at 255.
 */
function to8bit(v: number, colorType: number): number {
  return colorType === 0 ? Math.min(v, 255) : v >>> 8;
}

/**
 * What a decoder's error means, in words a user can act on: pngjs reports a truncated or
 * damaged file through its stream internals ("There are some read requests waitng on finished
 * stream", "have should not go down") and zlib's codes; those become what is wrong with the file.
 */
function decoderReason(kind: string, e: unknown): string {
  const msg = (e instanceof Error ? e.message : String(e)).split('\n')[0]!.trim();
  if (kind !== 'png') return msg;
  if (/read requests wait|unexpected end|end of file|buffer length/i.test(msg)) return 'the PNG data ends early (the file is truncated)';
  if (/should not go down|incorrect header check|invalid (distance|block|stored|code|literal)|too far back|zlib|inflate/i.test(msg))
    return "the PNG's compressed image data is corrupt";
  if (/unrecognised content at end of stream/i.test(msg)) return "the PNG's image data does not fit its declared size (corrupt file)";
  if (/crc/i.test(msg)) return 'a PNG chunk fails its checksum (corrupt file)';
  return `the PNG data is corrupt (${msg})`;
}

/**
 * Decodes a PNG or JPEG file (by its signature) to 8-bit RGB. The declared size is judged
 * first (image-header.ts): above the pixel limit, or refused by `checkSize`, nothing is
 * decoded. JPEG's EXIF orientation is applied as transformers' load_image does
 * (`PIL.ImageOps.exif_transpose`).
 */
export function decodeImage(file: string, opts: DecodeOptions = {}): RgbImage {
  const bytes = readRegularFileSync(file); // refuses FIFOs, devices and directories with one line
  const header = readImageHeader(file, bytes);
  checkImagePixels(file, header, opts.maxPixels);
  opts.checkSize?.(header.width, header.height);
  let rgba: Rgba;
  try {
    if (header.kind === 'png') {
      const { PNG } = load<{ PNG: { sync: { read(b: Buffer, o?: Record<string, unknown>): Rgba } } }>('pngjs');
      // RGBA out; palettes expanded, 1/2/4-bit grey scaled as Pillow's unpackers do. 16-bit kept (to8bit).
      rgba = PNG.sync.read(bytes, { skipRescale: header.bitDepth === 16 });
    } else {
      const jpeg = load<{ decode(b: Buffer, o: Record<string, unknown>): Rgba }>('jpeg-js');
      const mp = Math.ceil((header.width * header.height) / 1e6) + 1;
      rgba = jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true, maxMemoryUsageInMB: 1024, maxResolutionInMP: mp });
    }
  } catch (e) {
    if (e instanceof FormatError || e instanceof PipelineError) throw e;
    throw new FormatError(file, `cannot decode image: ${decoderReason(header.kind, e)}`);
  }
  const n = rgba.width * rgba.height;
  const data = new Uint8Array(n * 3);
  const src = rgba.data;
  const wide = src instanceof Uint16Array;
  const ct = header.colorType ?? 2;
  // alpha is dropped, as PIL's convert("RGB") does for the processor's input
  for (let i = 0; i < n; i++) {
    for (let ch = 0; ch < 3; ch++) data[i * 3 + ch] = wide ? to8bit(src[i * 4 + ch]!, ct) : src[i * 4 + ch]!;
  }
  return orient({ width: rgba.width, height: rgba.height, data }, header.orientation);
}

/**
 * Applies EXIF orientation `o` as Pillow's exif_transpose: 2 FLIP_LEFT_RIGHT, 3 ROTATE_180,
 * 4 FLIP_TOP_BOTTOM, 5 TRANSPOSE, 6 ROTATE_270, 7 TRANSVERSE, 8 ROTATE_90 (PIL's rotations
 * are counter-clockwise).
 */
export function orient(img: RgbImage, o: number): RgbImage {
  if (o <= 1 || o > 8) return img;
  const { width: W, height: H } = img;
  const swap = o >= 5;
  const w = swap ? H : W;
  const h = swap ? W : H;
  // (r, c) of the output → (row, col) of the input
  const at: (r: number, c: number) => [number, number] = [
    (r: number, c: number): [number, number] => [r, c],
    (r: number, c: number): [number, number] => [r, c],
    (r: number, c: number): [number, number] => [r, W - 1 - c],
    (r: number, c: number): [number, number] => [H - 1 - r, W - 1 - c],
    (r: number, c: number): [number, number] => [H - 1 - r, c],
    (r: number, c: number): [number, number] => [c, r],
    (r: number, c: number): [number, number] => [H - 1 - c, r],
    (r: number, c: number): [number, number] => [H - 1 - c, W - 1 - r],
    (r: number, c: number): [number, number] => [c, W - 1 - r],
  ][o]!;
  const out = new Uint8Array(w * h * 3);
  for (let r = 0; r < h; r++)
    for (let c = 0; c < w; c++) {
      const [y, x] = at(r, c);
      const s = (y * W + x) * 3;
      const d = (r * w + c) * 3;
      out[d] = img.data[s]!;
      out[d + 1] = img.data[s + 1]!;
      out[d + 2] = img.data[s + 2]!;
    }
  return { width: w, height: h, data: out };
}

/** HF `smart_resize` (image_processing_qwen2_vl.py). */
export function smartResize(height: number, width: number, factor: number, minPixels: number, maxPixels: number): [number, number] {
  if (Math.max(height, width) / Math.min(height, width) > 200) {
    throw new UsageError(`run --image: aspect ratio must be at most 200 (got ${width}×${height})`);
  }
  let h = pyRound(height / factor) * factor;
  let w = pyRound(width / factor) * factor;
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return [h, w];
}

/** PIL's resampling filters: bicubic (a = −0.5, support 2) and bilinear (triangle, support 1). */
export type Resample = 'bicubic' | 'bilinear';

/** Filter weights for one axis, PIL's resampling (support grows when shrinking). */
function axisWeights(inSize: number, outSize: number, filter: Resample): { start: number[]; w: Float64Array[] } {
  const scale = inSize / outSize;
  const fscale = Math.max(scale, 1);
  const support = (filter === 'bilinear' ? 1 : 2) * fscale;
  const triangle = (x: number) => Math.max(0, 1 - Math.abs(x));
  const bicubic = (x: number) => {
    const a = -0.5;
    x = Math.abs(x);
    if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
    if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
    return 0;
  };
  const start: number[] = [];
  const w: Float64Array[] = [];
  for (let o = 0; o < outSize; o++) {
    const center = (o + 0.5) * scale;
    const lo = Math.max(0, Math.trunc(center - support + 0.5));
    const hi = Math.min(inSize, Math.trunc(center + support + 0.5));
    const ws = new Float64Array(hi - lo);
    let sum = 0;
    const kernel = filter === 'bilinear' ? triangle : bicubic;
    for (let i = lo; i < hi; i++) sum += ws[i - lo] = kernel((i - center + 0.5) / fscale);
    if (sum !== 0) for (let k = 0; k < ws.length; k++) ws[k]! /= sum;
    start.push(lo);
    w.push(ws);
  }
  return { start, w };
}

/** Resizes RGB bytes with PIL-style separable resampling (bicubic unless told; 8-bit rounding between passes, as PIL does). */
export function resizeBicubic(img: RgbImage, height: number, width: number, filter: Resample = 'bicubic'): RgbImage {
  if (img.height === height && img.width === width) return img;
  const clip = (v: number) => (v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v));
  const hx = axisWeights(img.width, width, filter);
  const tmp = new Uint8Array(img.height * width * 3);
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < width; x++)
      for (let ch = 0; ch < 3; ch++) {
        let s = 0;
        const ws = hx.w[x]!;
        for (let k = 0; k < ws.length; k++) s += ws[k]! * img.data[(y * img.width + hx.start[x]! + k) * 3 + ch]!;
        tmp[(y * width + x) * 3 + ch] = clip(s);
      }
  const vy = axisWeights(img.height, height, filter);
  const out = new Uint8Array(height * width * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      for (let ch = 0; ch < 3; ch++) {
        let s = 0;
        const ws = vy.w[y]!;
        for (let k = 0; k < ws.length; k++) s += ws[k]! * tmp[((vy.start[y]! + k) * width + x) * 3 + ch]!;
        out[(y * width + x) * 3 + ch] = clip(s);
      }
  return { width, height, data: out };
}

/**
 * `dir`'s preprocessor_config.json with its path, or undefined when `dir` is undefined or has
 * none; a file that is not JSON is one line naming it.
 */
export function readProcessorFile(dir: string | undefined): { file: string; raw: Record<string, unknown> } | undefined {
  const file = dir ? path.join(dir, 'preprocessor_config.json') : undefined;
  if (!file || !fs.existsSync(file)) return undefined;
  try {
    return { file, raw: JSON.parse(readJsonTextSync(file)) as Record<string, unknown> };
  } catch (e) {
    throw new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** `image_mean` / `image_std` of `raw` (three finite numbers each, when present) into `into`. */
export function readMeanStd(
  raw: Record<string, unknown>,
  file: string,
  into: { mean: [number, number, number]; std: [number, number, number] },
): void {
  for (const k of ['image_mean', 'image_std'] as const) {
    const v = raw[k];
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.length !== 3 || !v.every((x) => typeof x === 'number' && Number.isFinite(x)))
      throw new FormatError(file, `"${k}" must be three numbers`);
    if (k === 'image_mean') into.mean = v as [number, number, number];
    else into.std = v as [number, number, number];
  }
}

/** Reads preprocessor_config.json in `dir` (if any) over the model type's defaults (Qwen3-VL's unless `modelType` is qwen2_5_vl). */
export function processorConfig(
  dir: string | undefined,
  sizes: { patch: number; temporalPatch: number; merge: number },
  modelType?: string,
): ProcessorConfig {
  const d = modelType === 'qwen2_5_vl' ? QWEN2_VL_PROCESSOR_DEFAULTS : QWEN3_VL_PROCESSOR_DEFAULTS;
  const c: ProcessorConfig = { ...d, mean: [...d.mean], std: [...d.std], ...sizes };
  const read = readProcessorFile(dir);
  if (!read) return c;
  const { file, raw } = read;
  const num = (v: unknown, field: string): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new FormatError(file, `"${field}" must be a positive number`);
    return v;
  };
  const size = (raw.size ?? {}) as Record<string, unknown>;
  c.minPixels = num(raw.min_pixels, 'min_pixels') ?? num(size.shortest_edge, 'size.shortest_edge') ?? c.minPixels;
  c.maxPixels = num(raw.max_pixels, 'max_pixels') ?? num(size.longest_edge, 'size.longest_edge') ?? c.maxPixels;
  readMeanStd(raw, file, c);
  c.rescale = raw.rescale_factor === undefined ? c.rescale : num(raw.rescale_factor, 'rescale_factor')!;
  for (const [k, want] of [
    ['patch_size', sizes.patch],
    ['temporal_patch_size', sizes.temporalPatch],
    ['merge_size', sizes.merge],
  ] as const) {
    if (raw[k] !== undefined && raw[k] !== want)
      throw new FormatError(file, `"${k}" is ${String(raw[k])} but the model's vision_config says ${want}`);
  }
  if (raw.do_resize === false || raw.do_rescale === false || raw.do_normalize === false || raw.do_convert_rgb === false) {
    throw new FormatError(file, 'do_resize / do_rescale / do_normalize / do_convert_rgb = false is not supported by run --image');
  }
  return c;
}

/** One image → its patch rows `[t·h·w, 3·tp·p·p]` (merge-block order) and grid `[1, h, w]`. */
export function processImage(img: RgbImage, c: ProcessorConfig): { pixelValues: Float32Array; grid: [number, number, number] } {
  const [H, W] = smartResize(img.height, img.width, c.patch * c.merge, c.minPixels, c.maxPixels);
  const r = resizeBicubic(img, H, W);
  // rescale in float64 then float32 (HF rescale(dtype=float32)); normalize in float32
  const f = Math.fround;
  const norm = new Float32Array(3 * H * W); // [C, H, W]
  for (let ch = 0; ch < 3; ch++) {
    const mean = f(c.mean[ch]!);
    const std = f(c.std[ch]!);
    for (let i = 0; i < H * W; i++) norm[ch * H * W + i] = f(f(f(r.data[i * 3 + ch]! * c.rescale) - mean) / std);
  }
  const p = c.patch;
  const m = c.merge;
  const tp = c.temporalPatch;
  const gh = H / p;
  const gw = W / p;
  const dim = 3 * tp * p * p;
  const out = new Float32Array(gh * gw * dim);
  let o = 0;
  // rows (bh, bw, ih, iw); columns (channel, temporal copy, py, px) — one frame repeated tp times
  for (let bh = 0; bh < gh / m; bh++)
    for (let bw = 0; bw < gw / m; bw++)
      for (let ih = 0; ih < m; ih++)
        for (let iw = 0; iw < m; iw++) {
          const y0 = (bh * m + ih) * p;
          const x0 = (bw * m + iw) * p;
          for (let ch = 0; ch < 3; ch++)
            for (let t = 0; t < tp; t++)
              for (let py = 0; py < p; py++)
                for (let px = 0; px < p; px++) {
                  out[o++] = norm[ch * H * W + (y0 + py) * W + x0 + px]!;
                }
        }
  return { pixelValues: out, grid: [1, gh, gw] };
}
