/**
 * Cohere (Command-R, `families/cohere.ts`) through the family kit (family-kit.ts): the row's test
 * configs exported from random BF16 checkpoints, ONNX Runtime prefill + KV decode against the
 * float64 reference (support/families/cohere.ts, from transformers
 * `models/cohere/modeling_cohere.py` @ dbb5a504d1ba0043124f7951c0ee3473be1dbcfc), the spec's
 * inputs against the checkpoint and ONNX's checker. Special to Cohere here: one bias-free norm
 * per layer, logit_scale and the interleaved rotary matter, the defaults, the use_qk_norm refusal.
 */
import { describe, expect, it } from 'vitest';
import { archFromConfig } from '../../src/export/families/arch-from-config';
import { familyKit } from '../support/family-kit';
import { familyTest, randomCohere } from '../support/families/cohere';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';

familyKit(familyTest, {
  extra: (e, cfg) => {
    const keys = [...e.raw.keys()];
    // CohereLayerNorm has no bias, and the parallel block has no second norm
    expect(keys.filter((k) => k.includes('layernorm') || k.includes('norm.'))).toEqual(keys.filter((k) => /norm\.weight$/.test(k)));
    expect(keys.some((k) => k.includes('post_attention_layernorm'))).toBe(false);
    expect(e.raw.has('model.layers.0.self_attn.o_proj.bias')).toBe(!!cfg.attention_bias);
    expect(e.raw.has('lm_head.weight')).toBe(cfg.tie_word_embeddings === false);
  },
});

describe('cohere: what is special to it', () => {
  const ids = [5, 17, 3, 78, 41, 9];

  it('logit_scale multiplies the logits; the reference without it differs', () => {
    const cfg = SYNTHETIC_CONFIGS.cohere!;
    const w = randomCohere(cfg, 3);
    const a = familyTest.reference(cfg, w, ids);
    const b = familyTest.reference({ ...cfg, logit_scale: 1 }, w, ids);
    expect(
      maxAbsDiff(
        a.map((r) => r.map((z) => z / (cfg.logit_scale as number))),
        b,
      ),
    ).toBeLessThan(1e-9);
    expect(maxAbsDiff(a, b)).toBeGreaterThan(1e-2);
  });

  it('ArchSpec: rotary over adjacent pairs on the whole head, one shared norm (parallel), LayerNorm without bias, CohereConfig defaults', () => {
    const a = archFromConfig(SYNTHETIC_CONFIGS['cohere-gqa-bias']!, 'c');
    expect(a.rope?.interleaved).toBe(true);
    expect(a.rope?.rotaryDim).toBe(12);
    expect(a.rope?.invFreq[1]).toBeCloseTo(1 / 10000 ** (2 / 12), 6); // default rope_theta 10000 (v4 CohereConfig)
    expect(a.logitsScale).toBe(0.0625);
    expect(a.layers.every((l) => l.parallel && l.norm2 === undefined && l.norm1?.bias === undefined)).toBe(true);
    expect(a.norm.kind).toBe('layer');
  });

  it('refuses use_qk_norm (a LayerNorm weight per head), naming the field', () => {
    expect(() => archFromConfig({ ...SYNTHETIC_CONFIGS.cohere!, use_qk_norm: true }, 'c.json')).toThrow(/^c\.json: "use_qk_norm" is true/);
    expect(() => archFromConfig({ ...SYNTHETIC_CONFIGS.cohere!, hidden_size: 66 }, 'c.json')).toThrow(/hidden_size/);
  });
});
