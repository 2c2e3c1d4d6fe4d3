/**
 * LLaVA-NeXT's anyres geometry, shared by the image processor (image-clip.ts), the prompt's token
 * count and the vision graph's pack index — one function each, so the processor's count and the
 * packed rows cannot disagree. It lives in artifacts/, below run/ (the processor and the prompt) and
 * beside the qaic specializations (qaic-vlm-specs-llava.ts sizes the graph by it), as geometry of
 * the exported vision graph. Ported from Hugging Face transformers:
 * `select_best_resolution` (image_processing_utils.py), `get_patch_output_size`
 * (models/llava_next/image_processing_llava_next.py), `unpad_image` / `pack_image_features`
 * (models/llava_next/modeling_llava_next.py) and `_get_unpadded_features`
 * (models/llava_next/processing_llava_next.py).
 */

/** HF select_best_resolution: the pinpoint `[height, width]` keeping the most of the image, then wasting the least. */
export function selectBestResolution(size: [number, number], pinpoints: readonly [number, number][]): [number, number] {
  const [oh, ow] = size;
  let best: [number, number] = pinpoints[0]!;
  let maxEffective = 0;
  let minWasted = Infinity;
  for (const [h, w] of pinpoints) {
    const scale = Math.min(w / ow, h / oh);
    const effective = Math.min(Math.trunc(ow * scale) * Math.trunc(oh * scale), ow * oh);
    const wasted = w * h - effective;
    if (effective > maxEffective || (effective === maxEffective && wasted < minWasted)) {
      maxEffective = effective;
      minWasted = wasted;
      best = [h, w];
    }
  }
  return best;
}

/** HF get_patch_output_size: the image resized into `target` keeping its aspect (ceil on the short side). */
export function patchOutputSize(size: [number, number], target: [number, number]): [number, number] {
  const [oh, ow] = size;
  const [th, tw] = target;
  const sw = tw / ow;
  const sh = th / oh;
  return sw < sh ? [Math.min(Math.ceil(oh * sw), th), tw] : [th, Math.min(Math.ceil(ow * sh), tw)];
}

/** Python's `int(round(x, 7))` for the non-negative sizes here. */
const round7Int = (x: number): number => Math.trunc(Math.round(x * 1e7) / 1e7);

/**
 * HF unpad_image on a `gh × gw` feature map of an image of `size` (height, width): the rows and
 * columns kept, `[start, end)` each.
 */
export function unpadRange(size: [number, number], gh: number, gw: number): { rows: [number, number]; cols: [number, number] } {
  const [oh, ow] = size;
  if (ow / oh > gw / gh) {
    const pad = Math.floor((gh - round7Int(oh * (gw / ow))) / 2);
    return { rows: [pad, gh - pad], cols: [0, gw] };
  }
  const pad = Math.floor((gw - round7Int(ow * (gh / oh))) / 2);
  return { rows: [0, gh], cols: [pad, gw - pad] };
}

/** What one image's anyres layout is. */
export interface AnyresLayout {
  best: [number, number];
  /** Tiles per column and per row of the best resolution (image_size each). */
  grid: [number, number];
  /** Patches the tower gives: the base image and the tiles. */
  patches: number;
}

/** The layout of an image of `size` under `pinpoints` with tiles of `imageSize`. */
export function anyresLayout(size: [number, number], pinpoints: readonly [number, number][], imageSize: number): AnyresLayout {
  const best = selectBestResolution(size, pinpoints);
  const grid: [number, number] = [Math.floor(best[0] / imageSize), Math.floor(best[1] / imageSize)];
  return { best, grid, patches: 1 + grid[0] * grid[1] };
}

/**
 * pack_image_features as an index over the projected rows `[patches · side², H]` of one image
 * (`offset` added to every row; the base image first, then the tiles row-major): the base
 * image's side² rows, then the unpadded map row by row with -1 (image_newline) after each row.
 * Its length is the image's token count (LlavaNextProcessor's `_get_number_of_features` with
 * the default strategy, the only one LLaVA-NeXT's grid view admits).
 */
export function packIndex(
  size: [number, number],
  pinpoints: readonly [number, number][],
  imageSize: number,
  side: number,
  offset = 0,
): number[] {
  const { grid } = anyresLayout(size, pinpoints, imageSize);
  const [nph, npw] = grid;
  const T = side * side;
  const out: number[] = [];
  for (let k = 0; k < T; k++) out.push(offset + k);
  const { rows, cols } = unpadRange(size, nph * side, npw * side);
  for (let y = rows[0]; y < rows[1]; y++) {
    for (let x = cols[0]; x < cols[1]; x++) {
      const tile = 1 + Math.floor(y / side) * npw + Math.floor(x / side);
      out.push(offset + tile * T + (y % side) * side + (x % side));
    }
    out.push(-1);
  }
  return out;
}
