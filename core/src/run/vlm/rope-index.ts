/**
 * MRoPE position ids for a prompt with images: HF transformers 4.57
 * `Qwen3VLMoeModel.get_rope_index` (models/qwen3_vl_moe/modeling_qwen3_vl_moe.py) for one
 * unpadded sequence. Text runs get consecutive positions on all three rows; each image
 * (found after a vision-start token) gets t/h/w grid positions (h and w in merged patches)
 * offset by the text before it; the next text continues at max + 1. The rope delta
 * (max + 1 − length) shifts every generated token: position = cache position + delta.
 */
import { UsageError } from '../../errors';

/** Token ids and the merge size get_rope_index reads from the config. */
export interface RopeIndexConfig {
  imageTokenId: number;
  videoTokenId: number;
  visionStartTokenId: number;
  spatialMergeSize: number;
}

/** Rows t, h, w (each of the prompt's length) and the delta for generated tokens. */
export interface RopeIndex {
  positions: [number[], number[], number[]];
  delta: number;
}

/** `image_grid_thw` rows `[t, h, w]` (in patches), one per image in prompt order. */
export function getRopeIndex(ids: readonly number[], grids: readonly (readonly [number, number, number])[], c: RopeIndexConfig): RopeIndex {
  const rows: [number[], number[], number[]] = [[], [], []];
  const push = (t: number, h: number, w: number) => {
    rows[0].push(t);
    rows[1].push(h);
    rows[2].push(w);
  };
  let images = 0;
  for (let i = 0; i + 1 < ids.length; i++) if (ids[i] === c.visionStartTokenId && ids[i + 1] === c.imageTokenId) images++;
  for (let i = 0; i + 1 < ids.length; i++) {
    if (ids[i] === c.visionStartTokenId && ids[i + 1] === c.videoTokenId)
      throw new UsageError('run: video tokens in --input-ids are not supported (images only)');
  }
  if (images > grids.length)
    throw new UsageError(
      `run: --input-ids hold ${images} images (vision-start + image token) but only ${grids.length} image grid(s) were given`,
    );
  let st = 0;
  let next = 0; // max position so far + 1
  for (let k = 0; k < images; k++) {
    const ed = ids.indexOf(c.imageTokenId, st);
    const [t, h, w] = grids[k]!;
    const m = c.spatialMergeSize;
    if (h % m !== 0 || w % m !== 0) throw new UsageError(`run: image ${k} grid ${h}×${w} is not a multiple of spatial_merge_size ${m}`);
    const gh = h / m;
    const gw = w / m;
    const textLen = ed - st;
    for (let j = 0; j < textLen; j++) push(next + j, next + j, next + j);
    const base = next + textLen;
    let max = base - 1;
    for (let a = 0; a < t; a++)
      for (let b = 0; b < gh; b++)
        for (let d = 0; d < gw; d++) {
          push(base + a, base + b, base + d);
          max = Math.max(max, base + a, base + b, base + d);
        }
    const n = t * gh * gw;
    for (let j = ed; j < ed + n; j++) {
      if (ids[j] !== c.imageTokenId)
        throw new UsageError(
          `run: image ${k} needs ${n} image tokens (grid ${t}×${h}×${w}, merge ${m}) from position ${ed}, but token ${j} is ${ids[j] ?? 'missing'}`,
        );
    }
    next = max + 1;
    st = ed + n;
  }
  for (let j = 0; j < ids.length - st; j++) push(next + j, next + j, next + j);
  const max = Math.max(...rows[0], ...rows[1], ...rows[2]);
  return { positions: rows, delta: max + 1 - ids.length };
}
