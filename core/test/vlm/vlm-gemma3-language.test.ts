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
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { buildGemma3Language, gemma3LanguageArch } from '../../src/export/vlm/language-gemma3';
import { describeFixtures } from '../../../test/support/fixtures';
import { i64, vlmFixture, weightFedSession, worstDecodeDiff, zeroCaches } from '../../../test/support/vlm-graphs';
import { loadCheckpoint } from '../support/graph-support';

describeFixtures('gemma3_vlm language graph', () => {
  it('prefill + KV decode reproduce the reference logits within 1e-4 (weights fed as inputs)', async () => {
    const { dir, cfgFile, config, ref } = vlmFixture('gemma3_vlm');
    const arch = gemma3LanguageArch(config, cfgFile);
    expect(arch.text.finalSoftcap).toBeUndefined();
    const built = buildGemma3Language(arch, { dtype: 'float32', ctxLen: 32 });
    const { session, feeds } = await weightFedSession(built, await loadCheckpoint(dir));
    const n = ref.image_embeds.length;
    feeds.vision_embeds = new ort.Tensor('float32', Float32Array.from(ref.image_embeds.flat(2)), [n, 16, 64]);
    feeds.image_idx = i64([0], [1, 1]);
    zeroCaches(feeds, 4, [1, 2, 32, 32]);
    const positions = (ids: number[], from: number) =>
      i64(
        ids.map((_, k) => from + k),
        [1, ids.length],
      );
    expect(await worstDecodeDiff(session, feeds, 4, ref, positions)).toBeLessThan(1e-4);
  });
});
