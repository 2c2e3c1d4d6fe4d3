/**
 * The Gemma 3 VLM language graph against the fixture's reference logits (HF transformers 4.53
 * `Gemma3ForConditionalGeneration`, fp32 on the bf16 weights; token_type_ids mark the image
 * tokens, which attend bidirectionally within their image in every layer), weights fed from the
 * fixture checkpoint: prefill of the prompt with the reference image_embeds, then one generated
 * token per call through the KV cache. Ported from HF src/transformers/models/gemma3/
 * modeling_gemma3.py (token_type_ids_mask_function OR-ed with the causal / sliding mask; image
 * features placed by masked_scatter after the √hidden embedding scale; no final soft cap) over
 * the gemma3_text layers (families/gemma3.ts), with QEfficient's interface
 * (QEfficient/transformers/models/gemma3/modeling_gemma3.py, QEffGemma3DecoderWrapper:
 * vision_embeds, image_idx, position_ids [batch, seq], _RetainedState outputs, image_idx_output).
 * The fixture's sliding window (6) is shorter than its image (16 tokens), so the bidirectional
 * term reaches past the window: a graph without it, or without the window, fails here.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { encodeBuiltModel } from '../src/export/exporter';
import { buildGemma3Language, gemma3LanguageArch } from '../src/export/vlm/language-gemma3';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { loadCheckpoint } from './graph-support';

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}
const i64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), dims);

describeFixtures('gemma3_vlm language graph', () => {
  it('prefill + KV decode reproduce the reference logits within 1e-4 (weights fed as inputs)', async () => {
    const dir = path.join(fixturesDir(), 'gemma3_vlm');
    const cfgFile = path.join(dir, 'config.json');
    const ref = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8'));
    const arch = gemma3LanguageArch(JSON.parse(readFileSync(cfgFile, 'utf8')), cfgFile);
    expect(arch.text.finalSoftcap).toBeUndefined();
    const built = buildGemma3Language(arch, { dtype: 'float32', ctxLen: 32 });
    const w = await loadCheckpoint(dir);
    const session = await ort.InferenceSession.create(encodeBuiltModel(built.model));
    const feeds: Record<string, ort.Tensor> = {};
    for (const x of built.weights) feeds[x.name] = new ort.Tensor('float32', w.get(x.name)!.data, x.shape);
    const n = ref.image_embeds.length;
    feeds.vision_embeds = new ort.Tensor('float32', Float32Array.from(ref.image_embeds.flat(2)), [n, 16, 64]);
    feeds.image_idx = i64([0], [1, 1]);
    for (let i = 0; i < 4; i++)
      for (const kv of ['key', 'value'])
        feeds[`past_${kv}.${i}`] = new ort.Tensor('float32', new Float32Array(2 * 32 * 32), [1, 2, 32, 32]);
    const all: number[] = [...ref.input_ids, ...ref.generated_ids];
    const step = async (from: number, to: number) => {
      const ids = all.slice(from, to);
      const out = await session.run({
        ...feeds,
        input_ids: i64(ids, [1, ids.length]),
        position_ids: i64(
          ids.map((_, k) => from + k),
          [1, ids.length],
        ),
      });
      for (let i = 0; i < 4; i++) for (const kv of ['key', 'value']) feeds[`past_${kv}.${i}`] = out[`past_${kv}.${i}_RetainedState`]!;
      feeds.image_idx = out.image_idx_output!;
      return out.logits!.data as Float32Array;
    };
    const len = ref.input_ids.length;
    let worst = maxDiff(await step(0, len), ref.logits[len - 1]);
    for (let t = len; t < all.length - 1; t++) worst = Math.max(worst, maxDiff(await step(t, t + 1), ref.logits[t]));
    expect(worst).toBeLessThan(1e-4);
  });
});
