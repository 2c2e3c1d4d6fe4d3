/**
 * Phi, StarCoder2 and GPT-J (issue 32): what their published configs turn into, the one-line
 * refusals of config values the builder does not implement, and that each family's traps are
 * real (the independent reference — graph-reference-classic.ts, written from the HF files cited
 * there — changes when a trap is taken the careless way). Numerical parity of the graphs is in
 * graph.test.ts (the phi and starcoder2 fixtures), graph-families.test.ts (the code-made
 * configs of graph-random-classic.ts) and export-classic.test.ts (GPT-J judged by a PyTorch
 * reference, second configurations through the CLI).
 *
 * The graph interface (QEfficient's, quic/efficient-transformers): `QEfficient/transformers/models/
 * phi/modeling_phi.py` @ 3dee232, `starcoder2/modeling_starcoder2.py` @ 0e4081d (a full ctx_len
 * cache with the sliding window in the causal mask, as attention.ts builds it) and
 * `gptj/modeling_gptj.py` @ fc7a71a: input_ids / position_ids (/ batch_index), past_key.{i} /
 * past_value.{i} written at position_ids, logits of the last valid position.
 *
 * The published configs under test/configs/: microsoft/phi-2 (transformers_version 4.37.0),
 * bigcode/starcoder2-15b (4.37.0.dev0, untied head), EleutherAI/gpt-j-6b (4.18.0.dev0).
 * Each was checked field by field against a published copy; test/configs/README.md names them.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig, buildCausalLM, checkGraph, weightInputs } from '../../src/export/exporter';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-graph-classic-');
const IDS = [5, 17, 3, 70, 41, 9, 60, 2, 33, 71];
const published = (name: string) =>
  JSON.parse(readFileSync(path.join(REPO_ROOT, 'test', 'configs', `${name}.json`), 'utf8')) as Record<string, unknown>;
const cfg = (name: string, patch: Record<string, unknown> = {}) => ({ ...SYNTHETIC_CONFIGS[name]!, ...patch });
const arch = (c: Record<string, unknown>) => archFromConfig(c, 'm/config.json');
const refuses = (c: Record<string, unknown>, re: RegExp) => expect(() => arch(c)).toThrow(re);
const shapes = (c: Record<string, unknown>) => new Map(weightInputs(arch(c)).map((w) => [w.name, w.shape]));

describe('classic families: published configs → architecture', () => {
  it('phi-2: parallel block from one input_layernorm, rotary on 32 of 80 dims, dense and lm_head with biases', () => {
    const a = arch(published('phi-2'));
    expect([a.nHeads, a.nKv, a.headDim, a.layers.length]).toEqual([32, 32, 80, 32]);
    expect(a.rope!.rotaryDim).toBe(32); // int(80 · 0.4)
    expect(a.rope!.interleaved).toBeFalsy();
    expect(a.act).toBe('gelu_tanh'); // gelu_new
    expect(a.norm).toEqual({ kind: 'layer', eps: 1e-5, plusOne: false });
    expect(a.layers.every((l) => l.parallel && l.norm1 && !l.norm2 && !l.postAttnNorm && !l.qNorm)).toBe(true);
    const w = shapes(published('phi-2'));
    expect(w.get('model.layers.0.self_attn.dense.bias')).toEqual([2560]);
    expect(w.get('model.layers.0.mlp.fc1.weight')).toEqual([10240, 2560]);
    expect(w.get('model.final_layernorm.bias')).toEqual([2560]);
    expect(w.get('lm_head.weight')).toEqual([51200, 2560]);
    expect(w.get('lm_head.bias')).toEqual([51200]);
    expect([...w.keys()].some((k) => k.includes('post_attention_layernorm') || k.includes('o_proj'))).toBe(false);
  });

  it('phi with qk_layernorm: LayerNorm with bias over each head, a tied head keeping its bias', () => {
    const a = arch(cfg('phi-qk-gqa'));
    expect(a.layers[0]!.kNorm).toEqual({
      weight: 'model.layers.0.self_attn.k_layernorm.weight',
      bias: 'model.layers.0.self_attn.k_layernorm.bias',
      size: 12,
    });
    expect(a.layers[0]!.qkNormOver).toBe('head');
    const tied = shapes(cfg('phi-qk-gqa'));
    expect(tied.has('lm_head.weight')).toBe(false);
    expect(tied.get('lm_head.bias')).toEqual([80]);
    expect(tied.get('model.layers.0.self_attn.k_proj.weight')).toEqual([2 * 12, 48]);
  });

  it('starcoder2-15b: GQA 48/4, biases everywhere, LayerNorm norm_epsilon, window 4096, untied head', () => {
    const a = arch(published('starcoder2-15b'));
    expect([a.nHeads, a.nKv, a.headDim, a.layers.length, a.slidingWindow]).toEqual([48, 4, 128, 40, 4096]);
    expect(a.act).toBe('gelu_tanh');
    expect(a.rope!.invFreq[1]).toBeCloseTo(Math.pow(100000, -2 / 128), 7);
    const w = shapes(published('starcoder2-15b'));
    for (const k of ['q_proj', 'k_proj', 'v_proj', 'o_proj']) expect(w.has(`model.layers.0.self_attn.${k}.bias`)).toBe(true);
    expect(w.get('model.layers.0.mlp.c_fc.bias')).toEqual([24576]);
    expect(w.get('model.layers.0.post_attention_layernorm.bias')).toEqual([6144]);
    expect(w.get('lm_head.weight')).toEqual([49152, 6144]);
    // the fixture's config ties the head; use_bias false drops every linear bias but not the norms'
    expect(shapes(cfg('starcoder2')).has('lm_head.weight')).toBe(false);
    const nb = [...shapes(cfg('starcoder2-nobias')).keys()];
    expect(nb.filter((k) => k.endsWith('.bias')).every((k) => k.includes('layernorm') || k === 'model.norm.bias')).toBe(true);
  });

  it('gpt-j-6b: interleaved rotary on 64 of 256 dims, n_inner null → 4×, unbiased attention, biased fc and head', () => {
    const a = arch(published('gpt-j-6b'));
    expect([a.nHeads, a.nKv, a.headDim, a.layers.length]).toEqual([16, 16, 256, 28]);
    expect(a.rope!.rotaryDim).toBe(64);
    expect(a.rope!.interleaved).toBe(true);
    expect(a.scoresInFloat32).toBe(true);
    expect(a.scoreScale).toEqual({ op: 'div', value: 16 });
    expect(a.layers.every((l) => l.parallel && !l.norm2)).toBe(true);
    const w = shapes(published('gpt-j-6b'));
    expect(w.get('transformer.h.0.mlp.fc_in.weight')).toEqual([16384, 4096]);
    expect(w.get('transformer.h.0.mlp.fc_in.bias')).toEqual([16384]);
    expect(w.has('transformer.h.0.attn.q_proj.bias') || w.has('transformer.h.0.attn.out_proj.bias')).toBe(false);
    expect(w.get('lm_head.bias')).toEqual([50400]);
    expect(shapes(cfg('gptj-inner')).get('transformer.h.0.mlp.fc_out.weight')).toEqual([64, 80]);
  });

  it('every published and code-made config builds a structurally sound graph', () => {
    const all: Record<string, unknown>[] = [published('phi-2'), published('starcoder2-15b'), published('gpt-j-6b')].map((c) => ({
      ...c,
      num_hidden_layers: 2,
      n_layer: 2,
    }));
    for (const name of ['phi', 'phi-qk-gqa', 'starcoder2', 'starcoder2-nobias', 'gptj', 'gptj-inner']) all.push(cfg(name));
    for (const c of all)
      expect(checkGraph(buildCausalLM(arch(c), { dtype: 'float16', ctxLen: 8 }).model), String(c.model_type)).toEqual([]);
  });
});

describe('classic families: config values that change the math and are not implemented are refused by name', () => {
  it('phi: head counts, head_dim, rotary dims, rope types', () => {
    refuses(cfg('phi', { num_key_value_heads: 3 }), /m\/config\.json: "num_key_value_heads" \(3\) does not divide/);
    refuses(cfg('phi', { hidden_size: 60 }), /"hidden_size" \(60\) is not divisible by num_attention_heads \(8\)/);
    refuses(cfg('phi', { head_dim: 16 }), /"head_dim" \(16\) differs from hidden_size \/ num_attention_heads \(8\)/);
    refuses(cfg('phi', { partial_rotary_factor: 0.4 }), /"partial_rotary_factor" gives a rotary dim of 3/);
    refuses(cfg('phi', { rope_scaling: { rope_type: 'dynamic', factor: 2 } }), /rope_scaling type "dynamic" is not supported/);
    refuses(cfg('phi', { hidden_act: 'gelu_fast' }), /"hidden_act" = "gelu_fast" is not a supported activation/);
  });

  it('starcoder2 and gptj: kv heads, rope types, rotary_dim', () => {
    refuses(cfg('starcoder2', { num_key_value_heads: 4 }), /"num_key_value_heads" \(4\) does not divide num_attention_heads \(6\)/);
    refuses(cfg('starcoder2', { rope_scaling: { rope_type: 'dynamic', factor: 2 } }), /rope_scaling type "dynamic" is not supported/);
    refuses(cfg('gptj', { rotary_dim: null }), /"rotary_dim" is null/);
    refuses(cfg('gptj', { rotary_dim: 14 }), /"rotary_dim" \(14\) must be even and at most the head dim 12/);
    refuses(cfg('gptj', { rotary_dim: 5 }), /"rotary_dim" \(5\) must be even/);
    refuses(cfg('gptj', { n_head: 5 }), /"n_embd" \(48\) is not divisible by n_head \(5\)/);
  });

  it('expert-parallel export of these dense families is a usage error naming the file', () => {
    for (const name of ['phi', 'starcoder2', 'gptj'])
      expect(() => archFromConfig(cfg(name), 'm/config.json', { expertParallel: { stages: 2 } })).toThrow(
        /m\/config\.json: --moe-flavour expert_parallel, but this model has no MoE experts/,
      );
  });

  it('the CLI prints the refusal as one line and exits 1', () => {
    const dir = path.join(tmp(), 'gptj-no-rotary');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg('gptj', { rotary_dim: null })));
    const r = spawnSync(
      process.execPath,
      [path.join(REPO_ROOT, 'dist', 'cli.js'), 'export', '--config', dir, '--out', path.join(dir, 'out')],
      {
        encoding: 'utf8',
      },
    );
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^weight-spec: .*config\.json: "rotary_dim" is null/)]);
  });
});

describe('classic families: the traps change the reference (so the parity tests can see them)', () => {
  const differs = (name: string, patch: Record<string, unknown>, min = 1e-3) => {
    const c = cfg(name);
    const w = randomCheckpoint(c, 7);
    expect(maxAbsDiff(referenceForward(c, w, IDS), referenceForward({ ...c, ...patch }, w, IDS))).toBeGreaterThan(min);
  };
  it('phi: qk_layernorm, the partial rotary factor, the tied head, rope_theta', () => {
    differs('phi-qk-gqa', { qk_layernorm: false });
    differs('phi', { partial_rotary_factor: 0.25 });
    differs('phi', { partial_rotary_factor: 1 });
    differs('phi', { rope_theta: 500 });
    // tie_word_embeddings: the same checkpoint plus an lm_head.weight gives other logits untied
    const c = cfg('phi-qk-gqa');
    const w = randomCheckpoint(c, 7);
    w.set('lm_head.weight', randomCheckpoint(cfg('phi-qk-gqa', { tie_word_embeddings: false }), 9).get('lm_head.weight')!);
    expect(maxAbsDiff(referenceForward(c, w, IDS), referenceForward({ ...c, tie_word_embeddings: false }, w, IDS))).toBeGreaterThan(1e-3);
  });
  it('starcoder2: the window only changes rows past it; the rope base matters', () => {
    const c = cfg('starcoder2');
    const w = randomCheckpoint(c, 7);
    const windowed = referenceForward(c, w, IDS);
    const full = referenceForward({ ...c, sliding_window: null }, w, IDS);
    expect(maxAbsDiff(windowed.slice(0, 3), full.slice(0, 3))).toBe(0); // t < W sees everything either way
    expect(maxAbsDiff(windowed, full)).toBeGreaterThan(1e-3);
    differs('starcoder2', { rope_theta: 10000 });
  });
  it('gptj: rotary_dim, the norm epsilon', () => {
    differs('gptj', { rotary_dim: 4 });
    differs('gptj', { rotary_dim: 12 });
    differs('gptj', { layer_norm_epsilon: 0.5 }, 1e-4);
  });
});
