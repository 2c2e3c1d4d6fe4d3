/**
 * The Gemma 3 image processor's steps (HF `Gemma3ImageProcessor`, models/gemma3/
 * image_processing_gemma3.py, without pan-and-scan): convert to RGB, resize to image_size ×
 * image_size with PIL bilinear (its default resample), rescale by 1/255, normalize by mean/std
 * (IMAGENET_STANDARD 0.5 unless preprocessor_config.json says otherwise), channels first.
 */
import { FormatError } from '../../errors';
import { readMeanStd, readProcessorFile, resizeBicubic, type RgbImage } from './image';

/** Mean / std / rescale of the Gemma 3 processor. */
export interface Gemma3Processor {
  size: number;
  mean: [number, number, number];
  std: [number, number, number];
  rescale: number;
}

/** Reads preprocessor_config.json in `dir` (if any) over Gemma3ImageProcessor's defaults. */
export function gemma3Processor(dir: string | undefined, size: number): Gemma3Processor {
  const p: Gemma3Processor = { size, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], rescale: 1 / 255 };
  const read = readProcessorFile(dir);
  if (!read) return p;
  const { file, raw } = read;
  readMeanStd(raw, file, p);
  if (raw.rescale_factor !== undefined) {
    if (typeof raw.rescale_factor !== 'number' || !(raw.rescale_factor > 0))
      throw new FormatError(file, '"rescale_factor" must be a positive number');
    p.rescale = raw.rescale_factor;
  }
  const sz = raw.size as { height?: unknown; width?: unknown } | undefined;
  if (sz && (sz.height !== undefined || sz.width !== undefined) && (sz.height !== size || sz.width !== size))
    throw new FormatError(file, `"size" is ${JSON.stringify(sz)} but the model's vision_config.image_size is ${size}`);
  if (raw.do_pan_and_scan === true)
    throw new FormatError(file, '"do_pan_and_scan" is true (pan-and-scan crops are not supported by run --image)');
  if (raw.do_resize === false || raw.do_rescale === false || raw.do_normalize === false)
    throw new FormatError(file, 'do_resize / do_rescale / do_normalize = false is not supported by run --image');
  return p;
}

/** One image → pixel values `[C, S, S]` (float32, channels first). */
export function processGemma3Image(img: RgbImage, p: Gemma3Processor): Float32Array {
  const S = p.size;
  const r = resizeBicubic(img, S, S, 'bilinear');
  const f = Math.fround;
  const out = new Float32Array(3 * S * S);
  for (let ch = 0; ch < 3; ch++) {
    const mean = f(p.mean[ch]!);
    const std = f(p.std[ch]!);
    for (let i = 0; i < S * S; i++) out[ch * S * S + i] = f(f(f(r.data[i * 3 + ch]! * p.rescale) - mean) / std);
  }
  return out;
}
