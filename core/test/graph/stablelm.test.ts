/**
 * StableLM (`families/stablelm.ts`), the first classic family added as one file plus its test
 * (issue #29). The family kit (family-kit.ts) runs the shared part over the row's test configs:
 * a random BF16 checkpoint with HF's key names through `export --config`, ONNX Runtime prefill +
 * KV decode against the float64 reference (support/families/stablelm.ts, from transformers
 * `models/stablelm/modeling_stablelm.py` @ 00dcc6dda6f6d8e69541a6b51f97986a80242367), the spec's
 * inputs against the checkpoint and ONNX's checker. Special to StableLM here: which keys each
 * switch makes, the default partial_rotary_factor (0.25), rope_parameters and the refusals.
 */
import { describe, expect, it } from 'vitest';
import { archFromConfig } from '../../src/export/families/arch-from-config';
import { exportRandom, familyKit, KIT_PREFILL, kitIds, runExported } from '../support/family-kit';
import { familyTest } from '../support/families/stablelm';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';

familyKit(familyTest, {
  extra: (e, cfg) => {
    // parallel residual: one norm per layer; qkv bias: q/k/v biases
    expect([...e.raw.keys()].some((k) => k.includes('post_attention_layernorm'))).toBe(!cfg.use_parallel_residual);
    expect(e.raw.has('model.layers.0.self_attn.q_proj.bias')).toBe(!!cfg.use_qkv_bias);
  },
});

describe('stablelm: what is special to it', () => {
  it('partial_rotary_factor defaults to 0.25, and it matters: the default equals 0.25, 0.5 differs', async () => {
    const { partial_rotary_factor: _, ...cfg } = SYNTHETIC_CONFIGS.stablelm!;
    void _;
    const e = await exportRandom(familyTest, 'stablelm-default-rotary', cfg);
    const got = await runExported(e, cfg);
    const ids = kitIds(cfg);
    const ref = familyTest.reference({ ...cfg, partial_rotary_factor: 0.25 }, e.raw, ids).slice(KIT_PREFILL - 1);
    expect(maxAbsDiff(got, ref)).toBeLessThanOrEqual(1e-4);
    const half = familyTest.reference({ ...cfg, partial_rotary_factor: 0.5 }, e.raw, ids).slice(KIT_PREFILL - 1);
    expect(maxAbsDiff(got, half)).toBeGreaterThan(1e-3);
  });

  it('newer configs carry rope_theta in rope_parameters (configuration_stablelm.py): the same rope as rope_theta', () => {
    const { rope_theta: _t, rope_scaling: _s, ...cfg } = SYNTHETIC_CONFIGS.stablelm!;
    void [_t, _s];
    const a = archFromConfig({ ...cfg, rope_parameters: { rope_type: 'default', rope_theta: 5000 } }, 'c');
    expect(a.rope).toEqual(archFromConfig({ ...cfg, rope_theta: 5000 }, 'c').rope);
    expect(a.rope).not.toEqual(archFromConfig({ ...cfg, rope_theta: 10000 }, 'c').rope);
  });

  it('refuses what the graph does not implement, naming the field', () => {
    const cfg = SYNTHETIC_CONFIGS.stablelm!;
    expect(() => archFromConfig({ ...cfg, qk_layernorm: true }, 'c.json')).toThrow(/c\.json: .*qk_layernorm.*own LayerNorm weight/);
    expect(() => archFromConfig({ ...cfg, partial_rotary_factor: 0.1 }, 'c.json')).toThrow(/partial_rotary_factor/);
    expect(() => archFromConfig({ ...cfg, head_dim: 8 }, 'c.json')).toThrow(/head_dim/);
  });
});
