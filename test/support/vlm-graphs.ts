/**
 * What the VLM graph tests (core/test/vlm/vlm-vision, vlm-language, vlm-gemma3-vision,
 * vlm-gemma3-language, vlm-legacy) do alike: read a fixture's config and reference, run a built
 * graph in ONNX Runtime with the fixture checkpoint's weights fed as inputs, walk a language
 * graph through prefill and KV decode, and compare against the reference.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';
import { encodeBuiltModel, type BuiltGraph } from '../../core/src/export/exporter';
import { fixturesDir } from './fixtures';

/** Largest |a[i] − b[i]|, after checking the lengths agree. */
export function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/** An int64 tensor of `v`. */
export const i64 = (v: number[], dims: number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), dims);

/** A fixture VLM: its folder, config.json path and parsed content, and reference.json. */
export interface VlmFixture {
  dir: string;
  cfgFile: string;
  config: Record<string, unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- reference.json's fields differ per family
  ref: any;
}

/** The fixture `name` under the fixtures folder. */
export function vlmFixture(name: string): VlmFixture {
  const dir = path.join(fixturesDir(), name);
  const cfgFile = path.join(dir, 'config.json');
  return {
    dir,
    cfgFile,
    config: JSON.parse(readFileSync(cfgFile, 'utf8')),
    ref: JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8')),
  };
}

/** A float32 weight as the tests read it from a checkpoint. */
export interface Weight {
  shape: number[];
  data: Float32Array;
}

/**
 * An ONNX Runtime session on `built`'s model, and feeds holding each of its weights from `w`
 * under the graph's declared shape; with `sameShape`, the checkpoint's shape must be that one.
 */
export async function weightFedSession(
  built: { model: BuiltGraph['model']; weights: { name: string; shape: number[] }[] },
  w: Map<string, Weight>,
  sameShape = false,
): Promise<{ session: ort.InferenceSession; feeds: Record<string, ort.Tensor> }> {
  const session = await ort.InferenceSession.create(encodeBuiltModel(built.model));
  const feeds: Record<string, ort.Tensor> = {};
  for (const x of built.weights) {
    const t = w.get(x.name)!;
    if (sameShape) expect(t.shape).toEqual(x.shape);
    feeds[x.name] = new ort.Tensor('float32', t.data, x.shape);
  }
  return { session, feeds };
}

/** Zero KV caches `past_{key,value}.{i}` of `dims` for `layers` layers, into `feeds`. */
export function zeroCaches(feeds: Record<string, ort.Tensor>, layers: number, dims: number[]): void {
  for (let i = 0; i < layers; i++)
    for (const kv of ['key', 'value'])
      feeds[`past_${kv}.${i}`] = new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
}

/**
 * A language graph (`layers` layers, QEfficient's retained-state interface) on the prompt
 * `ref.input_ids` then each generated token but the last, one call each through the KV cache,
 * with `positions(ids, from)` as position_ids: the largest difference from the reference's
 * logit rows (the last prompt row, then one per decoded token).
 */
export async function worstDecodeDiff(
  session: ort.InferenceSession,
  feeds: Record<string, ort.Tensor>,
  layers: number,
  ref: { input_ids: number[]; generated_ids: number[]; logits: number[][] },
  positions: (ids: number[], from: number, to: number) => ort.Tensor,
): Promise<number> {
  const all: number[] = [...ref.input_ids, ...ref.generated_ids];
  const step = async (from: number, to: number) => {
    const ids = all.slice(from, to);
    const out = await session.run({ ...feeds, input_ids: i64(ids, [1, ids.length]), position_ids: positions(ids, from, to) });
    for (let i = 0; i < layers; i++) for (const kv of ['key', 'value']) feeds[`past_${kv}.${i}`] = out[`past_${kv}.${i}_RetainedState`]!;
    feeds.image_idx = out.image_idx_output!;
    return out.logits!.data as Float32Array;
  };
  const n = ref.input_ids.length;
  let worst = maxDiff(await step(0, n), ref.logits[n - 1]!);
  for (let t = n; t < all.length - 1; t++) worst = Math.max(worst, maxDiff(await step(t, t + 1), ref.logits[t]!));
  return worst;
}
