/**
 * `run --pixel-values <file.json>` / `run --image <file>`: the images a VLM prompt refers to,
 * as {@link VlmImages}. The JSON holds `pixel_values` (rows of numbers, the processor's patches)
 * and `image_grid_thw` (`[[t, h, w], …]`), as the fixtures' reference.json does; images go
 * through the Qwen processor steps (image.ts) with the model's preprocessor_config.json.
 */
import path from 'node:path';
import { FormatError, UsageError } from '../../errors';
import { readJsonTextSync } from '../../paths';
import type { VlmManifest } from '../../export/vlm/export-vlm';
import { decodeImage, processImage, processorConfig, smartResize } from './image';
import { gemma3Processor, processGemma3Image } from './image-gemma3';
import { pixtralProcessor, processPixtralImage } from './image-pixtral';
import { internvlProcessor, processInternVLImage } from './image-internvl';
import { clipProcessor, processAnyresImage, processClipImage } from './image-clip';
import type { VlmImages } from './vlm-runner';

/** Reads `{pixel_values, image_grid_thw}` from a JSON file. */
export function readPixelValues(file: string): VlmImages {
  const text = readJsonTextSync(file); // refuses FIFOs, devices and directories with one line
  let raw: { pixel_values?: unknown; image_grid_thw?: unknown; image_sizes?: unknown };
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch (e) {
    throw new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  let pv = raw?.pixel_values;
  // LLaVA-NeXT's processor gives [n, patches, C, S, S] and image_sizes: one row per patch, grid [patches, S, S]
  const tiled = Array.isArray(pv) && is4d((pv as unknown[])[0]);
  let imageSizes: [number, number][] | undefined;
  if (tiled) {
    const all = pv as unknown[][][][][];
    const sizes = raw.image_sizes;
    if (!Array.isArray(sizes) || sizes.length !== all.length)
      throw new FormatError(file, '"image_sizes" must give [height, width] for each image of the 5-D "pixel_values"');
    imageSizes = sizes.map((x, i) => {
      if (!Array.isArray(x) || x.length !== 2 || !x.every((d) => Number.isInteger(d) && d > 0))
        throw new FormatError(file, `"image_sizes"[${i}] must be two positive integers [height, width]`);
      return x as [number, number];
    });
    const S = all[0]![0]![0]!.length;
    raw.image_grid_thw = all.map((im) => [im.length, S, S]);
    pv = all.flat(1);
  }
  // Gemma 3's processor gives whole images [n, C, S, S]: one row per image, grid [1, S, S]
  const images = Array.isArray(pv) && Array.isArray(pv[0]) && Array.isArray(pv[0][0]) && Array.isArray(pv[0][0][0]);
  // Pixtral's gives [n, C, Hmax, Wmax] padded bottom/right, with each image's [h, w] in image_sizes
  if (images && !tiled && raw.image_sizes !== undefined) return pixtralPixels(file, pv as unknown[][][][], raw.image_sizes);
  // …or unpadded non-square images without it (one size: the tensor's)
  const hw = images ? [(pv as unknown[][][][])[0]![0]!.length, ((pv as unknown[][][][])[0]![0]![0] as unknown[]).length] : [];
  if (images && !tiled && hw[0] !== hw[1])
    return pixtralPixels(
      file,
      pv as unknown[][][][],
      (pv as unknown[]).map(() => hw),
    );
  if (images) {
    const all = pv as unknown[][][][];
    const S = all[0]![0]!.length;
    if (
      !all.every(
        (im) => im.length === all[0]!.length && im.every((ch) => ch.length === S && ch.every((r) => Array.isArray(r) && r.length === S)),
      )
    )
      throw new FormatError(file, '"pixel_values" images must all be [channels, size, size]');
    pv = all.map((im) => im.flat(2));
    raw.image_grid_thw ??= all.map(() => [1, S, S]);
  }
  if (!Array.isArray(pv) || pv.length === 0 || !Array.isArray(pv[0]))
    throw new FormatError(file, '"pixel_values" must be a non-empty array of rows (numbers)');
  const dim = (pv[0] as unknown[]).length;
  const data = new Float32Array(pv.length * dim);
  pv.forEach((row, r) => {
    if (!Array.isArray(row) || row.length !== dim)
      throw new FormatError(file, `"pixel_values"[${r}] must be ${dim} numbers like the first row`);
    row.forEach((x, k) => {
      if (typeof x !== 'number' || !Number.isFinite(x)) throw new FormatError(file, `"pixel_values"[${r}][${k}] is not a finite number`);
      data[r * dim + k] = x;
    });
  });
  const thw = raw.image_grid_thw;
  if (!Array.isArray(thw) || thw.length === 0) throw new FormatError(file, '"image_grid_thw" must be a non-empty array of [t, h, w]');
  const grids = thw.map((g, i) => {
    if (!Array.isArray(g) || g.length !== 3 || !g.every((x) => Number.isInteger(x) && x > 0))
      throw new FormatError(file, `"image_grid_thw"[${i}] must be three positive integers [t, h, w]`);
    return g as [number, number, number];
  });
  const rows = tiled ? grids.reduce((s, [t]) => s + t, 0) : images ? grids.length : grids.reduce((s, [t, h, w]) => s + t * h * w, 0);
  if (rows !== pv.length) throw new FormatError(file, `"pixel_values" has ${pv.length} rows but "image_grid_thw" needs ${rows}`);
  return { pixelValues: data, patchDim: dim, grids, ...(imageSizes ? { imageSizes } : {}) };
}

/** `[[[[…]]]]`: an array nested four deep (one image's patches [P, C, S, S]). */
function is4d(x: unknown): boolean {
  let y = x;
  for (let d = 0; d < 4; d++) {
    if (!Array.isArray(y)) return false;
    y = y[0];
  }
  return true;
}

/** Limits of {@link readImages}, judged on each image's declared size before it is decoded. */
export interface ImageLimits {
  /** `run --max-image-pixels` (default Pillow's limit). */
  maxPixels?: number;
  /** The language graph's KV cache length, when known: the images' vision rows must fit it. */
  ctxLen?: number;
}

/** Decodes and processes image files (in prompt order) for the model in `m`. */
export function readImages(files: string[], m: VlmManifest, limits: ImageLimits = {}): VlmImages {
  if (m.model_type === 'llava' || m.model_type === 'llava_next') return readClipImages(files, m, limits);
  if (m.model_type === 'internvl') {
    // GotOcr2ImageProcessor's tiles (thumbnail last) per image: grid [tiles, S, S] as LLaVA-NeXT's
    const S = m.image_size!;
    const p = internvlProcessor(path.dirname(m.config), S);
    const parts = files.map((f) => processInternVLImage(decodeImage(f, { maxPixels: limits.maxPixels }), p));
    const pixelValues = new Float32Array(parts.reduce((s, x) => s + x.pixelValues.length, 0));
    parts.reduce((o, x) => (pixelValues.set(x.pixelValues, o), o + x.pixelValues.length), 0);
    return { pixelValues, patchDim: 3 * S * S, grids: parts.map((x) => [x.tiles, S, S] as [number, number, number]) };
  }
  if (m.model_type === 'mistral3') {
    // Pixtral: each image keeps its own processed size; grid [1, h, w] in pixels
    const p = pixtralProcessor(path.dirname(m.config), m.vision.patch_size, m.vision.spatial_merge_size);
    const parts = files.map((f) => processPixtralImage(decodeImage(f, { maxPixels: limits.maxPixels }), p));
    const pixelValues = new Float32Array(parts.reduce((s, x) => s + x.pixelValues.length, 0));
    parts.reduce((o, x) => (pixelValues.set(x.pixelValues, o), o + x.pixelValues.length), 0);
    const sizes = parts.map((x) => x.size);
    return { pixelValues, patchDim: 3, grids: sizes.map(([h, w]) => [1, h, w] as [number, number, number]), imageSizes: sizes };
  }
  if (m.model_type === 'gemma3') {
    // Gemma 3's processor resizes every image to image_size: a fixed token count, so only the pixel limit applies
    const S = m.image_size!;
    const p = gemma3Processor(path.dirname(m.config), S);
    const parts = files.map((f) => processGemma3Image(decodeImage(f, { maxPixels: limits.maxPixels }), p));
    const pixelValues = new Float32Array(parts.length * 3 * S * S);
    parts.forEach((x, i) => pixelValues.set(x, i * x.length));
    return { pixelValues, patchDim: 3 * S * S, grids: parts.map(() => [1, S, S] as [number, number, number]) };
  }
  const cfg = processorConfig(
    path.dirname(m.config),
    {
      patch: m.vision.patch_size,
      temporalPatch: m.vision.temporal_patch_size,
      merge: m.vision.spatial_merge_size,
    },
    m.model_type,
  );
  const factor = cfg.patch * cfg.merge;
  let rows = 0;
  const parts = files.map((f) => {
    const checkSize = (width: number, height: number) => {
      // The grid smart_resize will give, from the declared size: its merged rows are the
      // image's tokens, which must fit the cache together with the earlier images'.
      const [h, w] = smartResize(height, width, factor, cfg.minPixels, cfg.maxPixels);
      rows += (h / factor) * (w / factor);
      if (limits.ctxLen !== undefined && rows > limits.ctxLen) {
        throw new UsageError(
          `${f}: ${width}×${height} resizes to ${w}×${h}, ${(h / factor) * (w / factor)} image tokens; ` +
            `the images need ${rows} positions but ctx_len is ${limits.ctxLen} (refused before decoding; use a smaller image or a larger ctx_len)`,
        );
      }
    };
    return processImage(decodeImage(f, { maxPixels: limits.maxPixels, checkSize }), cfg);
  });
  const total = parts.reduce((s, p) => s + p.pixelValues.length, 0);
  const pixelValues = new Float32Array(total);
  let o = 0;
  for (const p of parts) {
    pixelValues.set(p.pixelValues, o);
    o += p.pixelValues.length;
  }
  return { pixelValues, patchDim: 3 * m.vision.temporal_patch_size * m.vision.patch_size ** 2, grids: parts.map((p) => p.grid) };
}

/** LLaVA (CLIP resize + crop: `[C, S, S]` per image) and LLaVA-NeXT (anyres: `[patches, C, S, S]` per image, with its size). */
function readClipImages(files: string[], m: VlmManifest, limits: ImageLimits): VlmImages {
  const S = m.image_size!;
  const p = clipProcessor(path.dirname(m.config), S);
  const parts = files.map((f) => {
    const img = decodeImage(f, { maxPixels: limits.maxPixels });
    if (m.model_type === 'llava')
      return { pixelValues: processClipImage(img, p), patches: 1, size: [img.height, img.width] as [number, number] };
    return { ...processAnyresImage(img, p, m.image_grid_pinpoints!), size: [img.height, img.width] as [number, number] };
  });
  const pixelValues = new Float32Array(parts.reduce((s, x) => s + x.pixelValues.length, 0));
  parts.reduce((o, x) => (pixelValues.set(x.pixelValues, o), o + x.pixelValues.length), 0);
  return {
    pixelValues,
    patchDim: 3 * S * S,
    grids: parts.map((x) => [x.patches, S, S] as [number, number, number]),
    ...(m.model_type === 'llava_next' ? { imageSizes: parts.map((x) => x.size) } : {}),
  };
}

/**
 * Pixtral's `pixel_values` `[n, C, Hmax, Wmax]` (zero-padded bottom/right to the batch's largest)
 * and `image_sizes` `[[h, w], …]`: each image cropped to its size, channels first, concatenated;
 * `patchDim` is the channel count and each grid `[1, h, w]` in pixels.
 */
function pixtralPixels(file: string, all: unknown[][][][], sizes: unknown): VlmImages {
  if (!Array.isArray(sizes) || sizes.length !== all.length)
    throw new FormatError(file, '"image_sizes" must give [height, width] for each image of "pixel_values"');
  const C = all[0]!.length;
  const parts = all.map((im, i) => {
    const s = sizes[i] as unknown;
    if (!Array.isArray(s) || s.length !== 2 || !s.every((d) => Number.isInteger(d) && d > 0))
      throw new FormatError(file, `"image_sizes"[${i}] must be two positive integers [height, width]`);
    const [h, w] = s as [number, number];
    if (im.length !== C || im.some((ch) => !Array.isArray(ch) || ch.length < h || ch.some((r) => !Array.isArray(r) || r.length < w)))
      throw new FormatError(file, `"pixel_values"[${i}] must be [${C}, ≥${h}, ≥${w}] (its image_sizes entry)`);
    const out = new Float32Array(C * h * w);
    for (let c = 0; c < C; c++)
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) {
          const v = (im[c]![y] as unknown[])[x];
          if (typeof v !== 'number' || !Number.isFinite(v))
            throw new FormatError(file, `"pixel_values"[${i}][${c}][${y}][${x}] is not a finite number`);
          out[(c * h + y) * w + x] = v;
        }
    return out;
  });
  const pixelValues = new Float32Array(parts.reduce((s, x) => s + x.length, 0));
  parts.reduce((o, x) => (pixelValues.set(x, o), o + x.length), 0);
  const imageSizes = sizes as [number, number][];
  return { pixelValues, patchDim: C, grids: imageSizes.map(([h, w]) => [1, h, w] as [number, number, number]), imageSizes };
}
