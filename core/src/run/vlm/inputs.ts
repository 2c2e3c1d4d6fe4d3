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
import type { VlmImages } from './vlm-runner';

/** Reads `{pixel_values, image_grid_thw}` from a JSON file. */
export function readPixelValues(file: string): VlmImages {
  const text = readJsonTextSync(file); // refuses FIFOs, devices and directories with one line
  let raw: { pixel_values?: unknown; image_grid_thw?: unknown };
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch (e) {
    throw new FormatError(file, `not valid JSON: ${(e as Error).message.split('\n')[0]}`);
  }
  let pv = raw?.pixel_values;
  // Gemma 3's processor gives whole images [n, C, S, S]: one row per image, grid [1, S, S]
  const images = Array.isArray(pv) && Array.isArray(pv[0]) && Array.isArray(pv[0][0]) && Array.isArray(pv[0][0][0]);
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
  const rows = images ? grids.length : grids.reduce((s, [t, h, w]) => s + t * h * w, 0);
  if (rows !== pv.length) throw new FormatError(file, `"pixel_values" has ${pv.length} rows but "image_grid_thw" needs ${rows}`);
  return { pixelValues: data, patchDim: dim, grids };
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
