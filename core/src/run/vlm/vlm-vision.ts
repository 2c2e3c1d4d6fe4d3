/**
 * The vision side of a VLM run (vlm-runner.ts): the vision graph's calls for a prompt's images —
 * one call per image size (Qwen: images of one size share a call), whole tiles for Gemma 3,
 * LLaVA, InternVL and Llama 4, one call per image for Mistral 3 (its own size) and LLaVA-NeXT
 * (its tile count, packed in the graph by {@link packIndex}) — giving the language graph's
 * vision_embeds and deepstack_features, in the dtype the language graph takes.
 */
import { PipelineError, UsageError } from '../../errors';
import { fromFloat32, toFloat32 } from '../../formats/float-convert';
import type { WireValueInfo } from '../../formats/onnx/wire-model';
import { TensorDataType } from '../../formats/onnx/types';
import type { VlmManifest } from '../../artifacts/vlm-manifest';
import { anyresLayout, packIndex } from '../../artifacts/anyres';
import type { OrtModule, OrtSession, OrtTensor } from '../../ort/loader';

/** Images as the processor gives them: patch rows in merge-block order and one grid per image. */
export interface VlmImages {
  /** `[rows, patchDim]` row-major. */
  pixelValues: Float32Array;
  patchDim: number;
  /** `[t, h, w]` in patches, one per image, in prompt order (Gemma 3 / LLaVA: `[1, S, S]`; LLaVA-NeXT: `[patches, S, S]`). */
  grids: [number, number, number][];
  /** LLaVA-NeXT: each image's original `[height, width]` (HF `image_sizes`), which fixes its tiles and packing. */
  imageSizes?: [number, number][];
  /** Llama 4: each image's tile grid `[rows, cols]` (HF `aspect_ratios`), which fixes its image block's tokens. */
  tileGrids?: [number, number][];
}

/** An int64 tensor of `v` at `dims`. */
export function int64(ort: OrtModule, v: number[], dims: number[]): OrtTensor {
  return new ort.Tensor('int64', BigInt64Array.from(v.map((x) => BigInt(x))), dims);
}

/** One inference call; a failure is one line naming the graph. */
export async function ortRun(s: OrtSession, file: string, feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>> {
  try {
    return await s.run(feeds);
  } catch (e) {
    throw new PipelineError(`${file}: inference failed: ${(e as Error).message.split('\n')[0]}`);
  }
}

/** What the vision calls need from the opened export. */
export interface VisionContext {
  ort: OrtModule;
  m: VlmManifest;
  vision: OrtSession;
  visionModel: string;
  pixelInfo: WireValueInfo;
  /** num_feature_layers (Qwen3-VL's deepstack), 0 otherwise. */
  F: number;
  /** The text model's hidden size. */
  H: number;
  /** The language graph takes float16 vision_embeds. */
  half: boolean;
  /** Whole images/tiles `[n, C, S, S]` (no grid), LLaVA-NeXT's anyres, Mistral 3's Pixtral. */
  whole: boolean;
  anyres: boolean;
  pixtral: boolean;
}

/** The vision output for the language graph: its embeds, deepstack features and the number of rows. */
export interface VisionOut {
  embeds: OrtTensor;
  deep: OrtTensor;
  rows: number;
}

/** The function that runs the vision graph for a prompt's images (none: one zero row, no image token selects it). */
export function visionCalls(c: VisionContext): (img: VlmImages | undefined) => Promise<VisionOut> {
  const { ort, m, vision, visionModel, pixelInfo, F, H, half, whole, anyres, pixtral } = c;
  const i64 = (v: number[], dims: number[]) => int64(ort, v, dims);
  const float = (v: Float32Array, dims: number[], f16: boolean) => {
    if (!f16) return new ort.Tensor('float32', v, dims);
    const b = fromFloat32(v, 'F16');
    return new ort.Tensor('float16', new Uint16Array(b.buffer, b.byteOffset, b.byteLength / 2), dims);
  };
  const run = ortRun;

  const f32 = (x: OrtTensor) => {
    if (x.type !== 'float16') return x.data as Float32Array;
    const u = x.data as Uint16Array;
    return toFloat32(new Uint8Array(u.buffer, u.byteOffset, u.byteLength), 'F16');
  };
  /** vision_embeds [1, total, H] and deepstack_features [F, 1, total, H] for all images. */
  const runVision = async (img: VlmImages | undefined): Promise<{ embeds: OrtTensor; deep: OrtTensor; rows: number }> => {
    if (!img || img.grids.length === 0) {
      // text-only prompt: one zero row keeps the gather in range; no image token selects it
      const zeroRows = whole ? (m.mm_tokens_per_image ?? 1) : 1;
      return {
        embeds: float(new Float32Array(zeroRows * H), [1, zeroRows, H], half),
        deep: float(new Float32Array(F * H), [F, 1, 1, H], half),
        rows: 0,
      };
    }
    if (pixtral) return runPixtral(img);
    // InternVL: an image of t tiles ([t, S, S], image-internvl.ts) is t whole tiles for the vision graph
    if (m.model_type === 'internvl')
      img = { ...img, grids: img.grids.flatMap(([t, h, w]) => Array.from({ length: t }, () => [1, h, w] as [number, number, number])) };
    const expectDim = whole
      ? m.vision.in_channels * (m.image_size ?? 0) ** 2
      : m.vision.in_channels * m.vision.temporal_patch_size * m.vision.patch_size ** 2;
    if (img.patchDim !== expectDim)
      throw new UsageError(
        `run: pixel_values rows have ${img.patchDim} values; this model's patches have ${expectDim} (channels·temporal_patch·patch²)`,
      );
    if (anyres) return runAnyres(img);
    const total = whole ? img.grids.length : img.grids.reduce((s, [t, h, w]) => s + t * h * w, 0);
    if (img.pixelValues.length !== total * img.patchDim)
      throw new UsageError(`run: pixel_values has ${img.pixelValues.length / img.patchDim} rows but image_grid_thw needs ${total}`);
    const same = whole || img.grids.every((g) => g.join() === img.grids[0]!.join());
    const groups = same ? [img.grids] : img.grids.map((g) => [g]);
    const embeds: Float32Array[] = [];
    const deep: Float32Array[][] = Array.from({ length: F }, () => []);
    let row = 0;
    for (const grp of groups) {
      const [t, h, w] = grp[0]!;
      const n = grp.length * t * h * w;
      const pvDims = whole ? [grp.length, m.vision.in_channels, h, w] : [n, img.patchDim];
      const pv = img.pixelValues.subarray(row * img.patchDim, (row + (whole ? grp.length : n)) * img.patchDim);
      row += whole ? grp.length : n;
      const out = await run(vision, visionModel, {
        pixel_values: float(pv, pvDims, pixelInfo.elemType === TensorDataType.FLOAT16),
        ...(whole ? {} : { image_grid_thw: i64(new Array(grp.length * t * h * w).fill(0), [grp.length, t, h, w]) }),
      });
      const ve = out.vision_embeds!;
      const ds = out.deepstack_features;
      embeds.push(f32(ve));
      if (ds) {
        const dsData = f32(ds);
        const per = dsData.length / F;
        for (let k = 0; k < F; k++) deep[k]!.push(dsData.subarray(k * per, (k + 1) * per));
      }
    }
    const cat = (parts: Float32Array[]) => {
      const outArr = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
      let o = 0;
      for (const p of parts) outArr.set(p, (o += p.length) - p.length);
      return outArr;
    };
    const all = cat(embeds);
    const rows = all.length / H;
    const mm = m.mm_tokens_per_image ?? rows;
    return {
      embeds: float(all, whole ? [rows / mm, mm, H] : [1, rows, H], half),
      deep: float(cat(deep.flat()), [F, 1, rows, H], half),
      rows,
    };
  };

  /** Mistral 3: one vision call per image (the graph takes one size), rows concatenated in image order. */
  const runPixtral = async (img: VlmImages): Promise<{ embeds: OrtTensor; deep: OrtTensor; rows: number }> => {
    const C = m.vision.in_channels;
    const unit = m.vision.patch_size * m.vision.spatial_merge_size;
    // whole images: Pixtral's cropped ones (patchDim C) or unpadded [n, C, S, S] without image_sizes (patchDim C·S·S)
    if (img.grids.some(([t, h, w]) => t !== 1 || (img.patchDim !== C && img.patchDim !== C * h * w)))
      throw new UsageError(`run: Mistral 3 takes whole images (pixel_values [n, ${C}, h, w], with image_sizes when padded)`);
    const parts: Float32Array[] = [];
    let at = 0;
    for (const [k, [, h, w]] of img.grids.entries()) {
      if (h % unit || w % unit)
        throw new UsageError(
          `run: image ${k} is ${h}×${w}; Mistral 3 needs sides that are multiples of patch_size · spatial_merge_size (${unit})`,
        );
      const out = await run(vision, visionModel, {
        pixel_values: float(img.pixelValues.subarray(at, at + C * h * w), [1, C, h, w], pixelInfo.elemType === TensorDataType.FLOAT16),
      });
      at += C * h * w;
      parts.push(f32(out.vision_embeds!));
    }
    if (at !== img.pixelValues.length)
      throw new UsageError(`run: pixel_values hold ${img.pixelValues.length} values but the image sizes need ${at}`);
    const all = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
    parts.reduce((o, p) => (all.set(p, o), o + p.length), 0);
    return { embeds: float(all, [1, all.length / H, H], half), deep: float(new Float32Array(0), [0, 1, 0, H], half), rows: all.length / H };
  };

  /** LLaVA-NeXT: one vision call per image (its tile count is its own), packed in the graph by {@link packIndex}. */
  const runAnyres = async (img: VlmImages): Promise<{ embeds: OrtTensor; deep: OrtTensor; rows: number }> => {
    const S = m.image_size!;
    const per = img.patchDim;
    const sizes = img.imageSizes ?? [];
    if (sizes.length !== img.grids.length)
      throw new UsageError(`run: LLaVA-NeXT needs each image's size (image_sizes): ${img.grids.length} images, ${sizes.length} sizes`);
    const parts: Float32Array[] = [];
    let row = 0;
    for (const [k, [given]] of img.grids.entries()) {
      const size = sizes[k]!;
      const { patches } = anyresLayout(size, m.image_grid_pinpoints!, S);
      // HF pads every image's patches to the batch's most (_pad_for_batching): the first `patches` are real
      if (patches > given)
        throw new UsageError(`run: image ${k} (${size.join('×')}) needs ${patches} patches (base + tiles) but pixel_values holds ${given}`);
      const side = S / m.vision.patch_size;
      const index = packIndex(size, m.image_grid_pinpoints!, S, side);
      const out = await run(vision, visionModel, {
        pixel_values: float(
          img.pixelValues.subarray(row * per, (row + patches) * per),
          [1, patches, m.vision.in_channels, S, S],
          pixelInfo.elemType === TensorDataType.FLOAT16,
        ),
        pack_index: i64(index, [index.length]),
      });
      row += given;
      parts.push(f32(out.vision_embeds!));
    }
    const all = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
    parts.reduce((o, p) => (all.set(p, o), o + p.length), 0);
    return { embeds: float(all, [1, all.length / H, H], half), deep: float(new Float32Array(0), [0, 1, 0, H], half), rows: all.length / H };
  };
  return runVision;
}
