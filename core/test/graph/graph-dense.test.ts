/**
 * Gemma-2, Granite, OLMo-2, Falcon and CodeGen: what their configs turn into, the one-line
 * refusals of config fields that change the math but are not implemented, and that each
 * family's traps are real (the independent reference — graph-reference-dense.ts, written from
 * the HF modeling files cited there — changes when a trap is taken the careless way).
 * Numerical parity of the graphs is in graph.test.ts (fixtures) and graph-families.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig, buildCausalLM, checkGraph, weightInputs } from '../../src/export/exporter';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-graph-dense-');
const IDS = [5, 17, 3, 70, 41, 9, 60, 2, 33, 71];
const cfg = (name: string, patch: Record<string, unknown> = {}) => ({ ...SYNTHETIC_CONFIGS[name]!, ...patch });
const arch = (c: Record<string, unknown>) => archFromConfig(c, 'm/config.json');
const refuses = (c: Record<string, unknown>, re: RegExp) => expect(() => arch(c)).toThrow(re);

describe('dense families: configs → architecture', () => {
  it('falcon 7B (old architecture, multi_query) has ONE kv head whatever num_kv_heads says', () => {
    const a = arch(cfg('falcon-7b', { num_kv_heads: 6 }));
    expect(a.nKv).toBe(1);
    const qkv = weightInputs(a).find((w) => w.name.endsWith('query_key_value.weight'))!;
    expect(qkv.shape).toEqual([48 + 2 * 8, 48]); // hidden + 2·head_dim
    expect(weightInputs(a).some((w) => w.name === 'lm_head.weight')).toBe(false); // tied by default
  });

  it('falcon 40B (new architecture): grouped kv heads, ln_attn + ln_mlp, untied head', () => {
    const a = arch(cfg('falcon-40b'));
    expect(a.nKv).toBe(2);
    const names = weightInputs(a).map((w) => w.name);
    expect(names).toContain('transformer.h.0.ln_attn.weight');
    expect(names).toContain('transformer.h.0.ln_mlp.bias');
    expect(names).not.toContain('transformer.h.0.input_layernorm.weight');
    expect(names).toContain('lm_head.weight');
    expect(weightInputs(a).find((w) => w.name === 'transformer.h.0.self_attention.query_key_value.weight')!.shape).toEqual([
      (2 * 2 + 8) * 8,
      64,
    ]);
  });

  it('gemma2 slides on the even layers (or per layer_types), olmo2 has no input norm, codegen a biased untied head', () => {
    expect(arch(cfg('gemma2')).layers.map((l) => l.slidingWindow)).toEqual([3, undefined, 3]);
    const typed = arch(cfg('gemma2', { layer_types: ['full_attention', 'sliding_attention', 'full_attention'] }));
    expect(typed.layers.map((l) => l.slidingWindow)).toEqual([undefined, 3, undefined]);
    const o = weightInputs(arch(cfg('olmo2'))).map((w) => w.name);
    expect(o.some((n) => n.includes('input_layernorm'))).toBe(false);
    expect(weightInputs(arch(cfg('olmo2'))).find((w) => w.name === 'model.layers.0.self_attn.k_norm.weight')!.shape).toEqual([3 * 8]);
    const c = weightInputs(arch(cfg('codegen'))).map((w) => w.name);
    expect(c.slice(-2)).toEqual(['lm_head.weight', 'lm_head.bias']);
  });

  it('every dense synthetic config builds a structurally sound graph', () => {
    for (const name of ['gemma2', 'granite', 'olmo2', 'falcon-7b', 'falcon-40b', 'falcon-new-1ln', 'falcon-seq', 'codegen']) {
      expect(checkGraph(buildCausalLM(arch(cfg(name)), { dtype: 'float16', ctxLen: 8 }).model), name).toEqual([]);
    }
  });
});

describe('dense families: config fields that change the math and are not implemented are refused by name', () => {
  it('falcon alibi, impossible block wirings, kv heads', () => {
    refuses(cfg('falcon-7b', { alibi: true }), /m\/config\.json: "alibi" is true \(ALiBi/);
    refuses(cfg('falcon-7b', { num_ln_in_parallel_attn: 2 }), /"num_ln_in_parallel_attn" is 2 without new_decoder_architecture/);
    refuses(cfg('falcon-40b', { parallel_attn: false }), /"parallel_attn" is false with new_decoder_architecture/);
    refuses(cfg('falcon-seq', { num_kv_heads: 2 }), /"num_kv_heads" \(2\) must equal num_attention_heads/);
    refuses(cfg('falcon-40b', { num_kv_heads: 3 }), /"num_kv_heads" \(3\) does not divide/);
  });

  it('unknown layer_types entries, unknown rope types, codegen without rotary_dim', () => {
    refuses(
      cfg('gemma2', { layer_types: ['sliding_attention', 'chunked_attention', 'full_attention'] }),
      /"layer_types" entry "chunked_attention" is not one of/,
    );
    refuses(cfg('gemma2', { layer_types: ['sliding_attention'] }), /"layer_types" has 1 entries for 3 layers/);
    for (const name of ['gemma2', 'granite', 'olmo2', 'falcon-40b']) {
      refuses(cfg(name, { rope_scaling: { rope_type: 'dynamic', factor: 4 } }), /rope_scaling type "dynamic" is not supported/);
    }
    refuses(cfg('codegen', { rotary_dim: null }), /"rotary_dim" is not set/);
    refuses(cfg('codegen', { n_head: 6, n_embd: 48 }), /"n_head" \(6\) is not divisible by CodeGen's mp_num = 4/);
    refuses(cfg('olmo2', { mlp_bias: true }), /"mlp_bias" is true but OLMo-2/);
  });

  it('expert-parallel export of a dense family is a usage error naming the file', () => {
    for (const name of ['gemma2', 'falcon-40b', 'codegen']) {
      expect(() => archFromConfig(cfg(name), 'm/config.json', { expertParallel: { stages: 2 } })).toThrow(
        /m\/config\.json: --moe-flavour expert_parallel, but this model has no MoE experts/,
      );
    }
  });

  it('the CLI prints the refusal as one line and exits 1', () => {
    const dir = path.join(tmp(), 'falcon-alibi');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg('falcon-7b', { alibi: true })));
    const r = spawnSync(
      process.execPath,
      [path.join(REPO_ROOT, 'dist', 'cli.js'), 'export', '--config', dir, '--out', path.join(dir, 'out')],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^weight-spec: .*config\.json: "alibi" is true/)]);
  });
});

describe('dense families: the traps change the reference (so the parity tests can see them)', () => {
  const differs = (name: string, patch: Record<string, unknown>, min = 1e-3) => {
    const c = cfg(name);
    const w = randomCheckpoint(c, 7);
    expect(maxAbsDiff(referenceForward(c, w, IDS), referenceForward({ ...c, ...patch }, w, IDS))).toBeGreaterThan(min);
  };
  it('gemma2: query_pre_attn_scalar, both soft-caps and the window matter', () => {
    differs('gemma2', { query_pre_attn_scalar: 16 });
    differs('gemma2', { attn_logit_softcapping: null });
    differs('gemma2', { final_logit_softcapping: null });
    differs('gemma2', { sliding_window: null });
  });
  it('granite: each multiplier matters', () => {
    for (const k of ['embedding_multiplier', 'attention_multiplier', 'residual_multiplier', 'logits_scaling'])
      differs('granite', { [k]: 1 });
  });
  it('falcon: with one kv group, the new-architecture and multi_query splits of HF agree on the same bytes', () => {
    const c = cfg('falcon-new-1ln');
    const w = randomCheckpoint(c, 7);
    // 4 heads, 1 kv group: new architecture is [q×4 | k | v] — the same bytes as multi_query's [q heads | k | v]
    const viaMq = { ...c, new_decoder_architecture: false, multi_query: true, parallel_attn: true, num_ln_in_parallel_attn: null };
    expect(maxAbsDiff(referenceForward(c, w, IDS), referenceForward(viaMq, w, IDS))).toBeLessThan(1e-9);
  });
});
