/**
 * The Qwen3-VL-MoE language graph against the fixture's reference logits (HF transformers 4.57
 * `Qwen3VLMoeForConditionalGeneration`, fp32 on the bf16 weights), weights fed from the fixture
 * checkpoint: prefill of the prompt with the reference image_embeds / deepstack_features and
 * MRoPE position_ids, then one generated token per call through the KV cache. Ported from HF
 * src/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py (4.57: interleaved MRoPE,
 * deepstack after the first layers, top-k renormalized router) and QEfficient
 * QEfficient/transformers/models/qwen3_vl_moe/modeling_qwen3_vl_moe.py (release/v1.22.8.0:
 * QEffQwen3VLDecoderWrapper's inputs, image merge by cumsum + image_idx, position_ids [4, B, S]).
 *
 * Qwen2.5-VL: HF src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py (Qwen2 layers with
 * q/k/v biases; apply_multimodal_rotary_pos_emb splits cos/sin by mrope_section · 2 into
 * contiguous t | h | w chunks) and QEfficient QEfficient/transformers/models/qwen2_5_vl/
 * modeling_qwen2_5_vl.py (commit 02cdf56d505bdc3cf033e515713360c6322021ea: the interface;
 * its qeff_apply_rotary_pos_emb hard-codes 0:32 | 32:80 | 80:128, which the fixture's
 * mrope_section [2, 3, 3] over head_dim 16 tells apart).
 */
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { vlmArchFromConfig } from '../../src/export/vlm/vlm-arch';
import { buildLanguage, mropeRows } from '../../src/export/vlm/language';
import { describeFixtures } from '../../../test/support/fixtures';
import { i64, vlmFixture, weightFedSession, worstDecodeDiff, zeroCaches } from '../../../test/support/vlm-graphs';
import { loadCheckpoint, type F32 } from '../support/graph-support';

/**
 * Released Qwen3-VL-MoE experts `gate_up_proj [E, H, 2I]` (gate = first I of the last axis) and
 * `down_proj [E, I, H]` → the stacked tensors in the orientation the graph declares.
 */
export function splitFusedExperts(w: Map<string, F32>, declared: Map<string, number[]>, H: number, I: number): void {
  for (const [k, t] of [...w]) {
    const m = /^(.*)\.experts\.gate_up_proj$/.exec(k);
    if (!m) continue;
    const E = t.shape[0]!;
    const down = w.get(`${m[1]}.experts.down_proj`)!;
    const at = (e: number, h: number, j: number) => t.data[(e * H + h) * 2 * I + j]!;
    for (const [role, off] of [
      ['gate', 0],
      ['up', I],
    ] as const) {
      const key = `${m[1]}.moe_weights.${role}`;
      const shape = declared.get(key)!;
      const data = new Float32Array(E * H * I);
      const canonical = shape[1] === H; // [E, H, I]
      for (let e = 0; e < E; e++)
        for (let h = 0; h < H; h++)
          for (let j = 0; j < I; j++) {
            data[canonical ? (e * H + h) * I + j : (e * I + j) * H + h] = at(e, h, off + j);
          }
      w.set(key, { shape, data });
    }
    const dkey = `${m[1]}.moe_weights.down`;
    const dshape = declared.get(dkey)!;
    if (dshape[1] === I) w.set(dkey, { shape: dshape, data: down.data });
    else {
      const data = new Float32Array(E * H * I);
      for (let e = 0; e < E; e++)
        for (let j = 0; j < I; j++) for (let h = 0; h < H; h++) data[(e * H + h) * I + j] = down.data[(e * I + j) * H + h]!;
      w.set(dkey, { shape: dshape, data });
    }
  }
}

it('interleaves the MRoPE rows like HF apply_interleaved_mrope', () => {
  // mrope_section [6, 5, 5] over 16 frequencies: h at 1,4,…,13; w at 2,5,…,14; t elsewhere
  expect(mropeRows(16, [6, 5, 5])).toEqual([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0]);
  // the real model: [24, 20, 20] over 64 → the last four are t
  const r = mropeRows(64, [24, 20, 20]);
  expect(r.slice(57)).toEqual([0, 1, 2, 0, 0, 0, 0]);
  expect(r.filter((x) => x === 1).length).toBe(20);
});

it('splits the MRoPE rows into contiguous chunks like HF apply_multimodal_rotary_pos_emb (Qwen2.5-VL)', () => {
  expect(mropeRows(8, [2, 3, 3], false)).toEqual([0, 0, 1, 1, 1, 2, 2, 2]);
  // Qwen2.5-VL-7B: [16, 24, 24] over 64
  const r = mropeRows(64, [16, 24, 24], false);
  expect([r.indexOf(1), r.indexOf(2), r.filter((x) => x === 2).length]).toEqual([16, 40, 24]);
});

describeFixtures('qwen2_5_vl language graph', () => {
  it('prefill + KV decode reproduce the reference logits within 1e-4 (weights fed as inputs)', async () => {
    const { dir, cfgFile, config, ref } = vlmFixture('qwen2_5_vl');
    const arch = vlmArchFromConfig(config, cfgFile);
    const built = buildLanguage(arch, { dtype: 'float32', ctxLen: 32 });
    expect(built.io.inputs).not.toContain('deepstack_features');
    const { session, feeds } = await weightFedSession(built, await loadCheckpoint(dir));
    const nv = ref.image_embeds.length;
    feeds.vision_embeds = new ort.Tensor('float32', Float32Array.from(ref.image_embeds.flat()), [1, nv, 64]);
    feeds.image_idx = i64([0], [1, 1]);
    zeroCaches(feeds, 2, [1, 2, 32, 16]);
    const pos: number[][] = ref.position_ids_logits;
    const mrope = (ids: number[], from: number, to: number) =>
      i64([ids.map((_, k) => from + k), ...pos.map((r) => r.slice(from, to))].flat(), [4, 1, ids.length]);
    expect(await worstDecodeDiff(session, feeds, 2, ref, mrope)).toBeLessThan(1e-4);
  });
});

describeFixtures('qwen3_vl_moe language graph', () => {
  it('prefill + KV decode reproduce the reference logits within 1e-4 (weights fed as inputs)', async () => {
    const { dir, cfgFile, config, ref } = vlmFixture('qwen3_vl_moe');
    const arch = vlmArchFromConfig(config, cfgFile);
    const built = buildLanguage(arch, { dtype: 'float32', ctxLen: 32 });
    const w = await loadCheckpoint(dir);
    splitFusedExperts(w, new Map(built.weights.map((x) => [x.name, x.shape])), 64, 48);
    const { session, feeds } = await weightFedSession(built, w);
    const nv = ref.image_embeds.length;
    feeds.vision_embeds = new ort.Tensor('float32', Float32Array.from(ref.image_embeds.flat()), [1, nv, 64]);
    feeds.deepstack_features = new ort.Tensor('float32', Float32Array.from(ref.deepstack_features.flat(2)), [2, 1, nv, 64]);
    feeds.image_idx = i64([0], [1, 1]);
    zeroCaches(feeds, 2, [1, 2, 32, 32]);
    const pos: number[][] = ref.position_ids_logits; // [3, 19]
    const mrope = (ids: number[], from: number, to: number) =>
      i64([ids.map((_, k) => from + k), ...pos.map((r) => r.slice(from, to))].flat(), [4, 1, ids.length]);
    expect(await worstDecodeDiff(session, feeds, 2, ref, mrope)).toBeLessThan(1e-4);
  });
});
