/**
 * MPT, GPTBigCode and Gemma-3 text beyond the fixtures (issues 31 and 32): ALiBi slopes as HF
 * computes them, the traps of each family change the independent reference
 * (graph-reference-mpt-bigcode-gemma3.ts, written from the HF files cited there), configurations
 * other than the fixtures' against that reference through the KV-cache graph, the
 * one-line refusals, and GPTBigCode — which ships no fixture — end to end from a random
 * checkpoint written in code: export --config → prepare → compile → run, ONNX's checker.
 *
 * Interface checked against QEfficient (quic/efficient-transformers):
 * `QEfficient/transformers/models/mpt/modeling_mpt.py` @ 87a463efd664de13f98441d8ddef4418e3655201
 * (it drops clip_qkv and sizes its ALiBi table by max_seq_len — not copied),
 * `QEfficient/transformers/models/gpt_bigcode/modeling_gpt_bigcode.py` @ 0498a5a9a2ac21a62bcdbd2f742f45b9c3c752a0
 * (one kv head under multi_query), `QEfficient/transformers/models/gemma3/modeling_gemma3.py` @ af8f1970fbcaa6d7d21431a772c8af7f9d677d72.
 *
 * test/configs/mpt-7b.json and starcoder.json: what each was verified against (and that
 * bigcode/starcoder's own config.json was not found) is in test/configs/README.md.
 */
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { configsDir, REPO_ROOT } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig, buildCausalLM, checkGraph, encodeBuiltModel, weightInputs } from '../../src/export/exporter';
import { alibiSlopes } from '../../src/export/blocks/alibi';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { GraphRunner, maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-mpt-bigcode-gemma3-');
const cfg = (name: string, patch: Record<string, unknown> = {}) => ({ ...SYNTHETIC_CONFIGS[name]!, ...patch });
const arch = (c: Record<string, unknown>) => archFromConfig(c, 'm/config.json');
const refuses = (c: Record<string, unknown>, re: RegExp) => expect(() => arch(c)).toThrow(re);
const IDS = Array.from({ length: 20 }, (_, i) => (i * 37 + 11) % 80);
const differs = (c: Record<string, unknown>, patch: Record<string, unknown>) => {
  const w = randomCheckpoint(c, 7);
  expect(maxAbsDiff(referenceForward(c, w, IDS.slice(0, 12)), referenceForward({ ...c, ...patch }, w, IDS.slice(0, 12)))).toBeGreaterThan(
    1e-3,
  );
};
const mptAttn = (patch: Record<string, unknown>) => {
  const c = cfg('mpt-6h-clip');
  return { ...c, attn_config: { ...(c.attn_config as object), ...patch } };
};

/** Prefill `n` tokens in one call, then decode the rest one at a time, against the reference. */
async function prefillDecode(c: Record<string, unknown>, ids: number[], n: number, ctx: number): Promise<number> {
  const raw = randomCheckpoint(c, 7);
  const a = archFromConfig(c, 'config.json', { keys: new Set(raw.keys()) });
  const g = buildCausalLM(a, { dtype: 'float32', ctxLen: ctx });
  expect(checkGraph(g.model)).toEqual([]);
  const r = await GraphRunner.open(g, raw);
  const s = await r.step([ids.slice(0, n)], [ids.slice(0, n).map((_, i) => i)], r.emptyCache(1, a.nKv, ctx, a.headDim));
  const dec = await r.tokenByToken(ids.slice(n), s.cache, n);
  return maxAbsDiff([s.logits[0]!, ...dec.rows], referenceForward(c, raw, ids).slice(n - 1));
}

describe('ALiBi slopes (HF build_mpt_alibi_tensor)', () => {
  it('powers of two: 1 / 2^((h + 1)·bias_max / n)', () => {
    expect(alibiSlopes(8, 8)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((k) => 2 ** -k));
    expect(alibiSlopes(4, 4)).toEqual([1, 2, 3, 4].map((k) => 2 ** -k));
    expect(alibiSlopes(4, 8)).toEqual([2, 4, 6, 8].map((k) => 2 ** -k));
  });
  it('other head counts: the slopes of the next power of two, odd ones first, cut to the head count', () => {
    // 6 heads → over 8: [2^-1 … 2^-8]; concat(slopes[1::2], slopes[::2])[:6]
    expect(alibiSlopes(6, 8)).toEqual([2, 4, 6, 8, 1, 3].map((k) => 2 ** -k));
    // 3 heads → over 4 with step 2: [2^-2, 2^-4, 2^-6, 2^-8] → [2^-4, 2^-8 | 2^-2, 2^-6][:3]
    expect(alibiSlopes(3, 8)).toEqual([4, 8, 2].map((k) => 2 ** -k));
  });
});

describe('mpt: traps and configurations other than the fixture', () => {
  it('clip_qkv and alibi_bias_max change the reference', () => {
    const c = cfg('mpt-6h-clip');
    const w = randomCheckpoint(c, 7);
    const ids = IDS.slice(0, 12);
    expect(maxAbsDiff(referenceForward(c, w, ids), referenceForward(mptAttn({ clip_qkv: null }), w, ids))).toBeGreaterThan(1e-3);
    expect(maxAbsDiff(referenceForward(c, w, ids), referenceForward(mptAttn({ alibi_bias_max: 4 }), w, ids))).toBeGreaterThan(1e-3);
  });

  it('6 heads with clip_qkv: a 20-token prompt past max_seq_len (8) in a ctx_len of 40, prefill + decode, ≤ 1e-4', async () => {
    expect(await prefillDecode(cfg('mpt-6h-clip'), IDS, 13, 40)).toBeLessThanOrEqual(1e-4);
    expect(await prefillDecode(mptAttn({ clip_qkv: null, alibi_bias_max: 4 }), IDS, 5, 40)).toBeLessThanOrEqual(1e-4);
  });

  it('MosaicML (MPTForCausalLM + auto_map) and HF (MptForCausalLM) spellings give the same graph', () => {
    const mosaic = buildCausalLM(arch(cfg('mpt-6h-clip')), { dtype: 'float32' });
    const hf = buildCausalLM(arch({ ...cfg('mpt-6h-clip'), architectures: ['MptForCausalLM'], auto_map: undefined }), { dtype: 'float32' });
    expect(JSON.stringify(hf.model.graph)).toBe(JSON.stringify(mosaic.model.graph));
    expect(weightInputs(arch(cfg('mpt-6h-clip'))).some((w) => w.name.includes('wpe') || w.name === 'lm_head.weight')).toBe(false);
  });

  it('fields neither HF nor the graph implements are refused by name', () => {
    refuses(mptAttn({ attn_type: 'multiquery_attention' }), /m\/config\.json: "attn_config\.attn_type" is "multiquery_attention"/);
    refuses(mptAttn({ alibi: false }), /"attn_config\.alibi" is false/);
    refuses(mptAttn({ qk_ln: true }), /"attn_config\.qk_ln" is true/);
    refuses(mptAttn({ prefix_lm: true }), /"attn_config\.prefix_lm" is true/);
    refuses(mptAttn({ rope: true }), /"attn_config\.rope" is true/);
    refuses(cfg('mpt-6h-clip', { expansion_ratio: 2 }), /"expansion_ratio" \(2\) is not 4/);
    refuses(cfg('mpt-6h-clip', { no_bias: false }), /"no_bias" is false/);
    refuses(cfg('mpt-6h-clip', { logit_scale: 0.5 }), /"logit_scale" \(0\.5\) is set/);
    refuses(cfg('mpt-6h-clip', { norm_type: 'rmsnorm' }), /"norm_type" "rmsnorm" is not a LayerNorm/);
  });
});

describe('gpt_bigcode: multi-query and multi-head', () => {
  it('multi_query: c_attn [H + 2·head_dim, H], one kv head, caches [batch, 1, ctx_len, head_dim]; MHA: [3H, H], a kv head per head', () => {
    const mq = arch(cfg('gpt_bigcode-mq'));
    expect(mq.nKv).toBe(1);
    expect(weightInputs(mq).find((w) => w.name === 'transformer.h.0.attn.c_attn.weight')!.shape).toEqual([48 + 2 * 8, 48]);
    const g = buildCausalLM(mq, { dtype: 'float32', ctxLen: 16 });
    const past = g.model.graph.input.find((i) => i.name === 'past_key.1')!;
    expect(past.type.tensorType.shape.dim).toEqual([{ dimParam: 'batch_size' }, { dimValue: 1 }, { dimValue: 16 }, { dimValue: 8 }]);
    const mha = arch(cfg('gpt_bigcode-mha'));
    expect(mha.nKv).toBe(4);
    expect(weightInputs(mha).find((w) => w.name === 'transformer.h.0.attn.c_attn.weight')!.shape).toEqual([3 * 32, 32]);
    expect(weightInputs(mha).find((w) => w.name === 'transformer.h.1.mlp.c_fc.weight')!.shape).toEqual([4 * 32, 32]); // n_inner null
    expect(weightInputs(mha).find((w) => w.name === 'transformer.wpe.weight')!.shape).toEqual([48, 32]);
  });

  it('the traps change the reference: scale_attn_weights, the per-head row order without multi_query', () => {
    differs(cfg('gpt_bigcode-mq'), { scale_attn_weights: false });
    // the same bytes read as [q | k | v] blocks (GPT-2's order) instead of per head
    const c = cfg('gpt_bigcode-mha');
    const w = randomCheckpoint(c, 7);
    const H = 32,
      hd = 8;
    const perHead = new Map(w);
    for (const [k, t] of w) {
      if (!k.endsWith('c_attn.weight') && !k.endsWith('c_attn.bias')) continue;
      const row = t.shape.length === 2 ? H : 1;
      const data = new Float32Array(t.data.length);
      for (let j = 0; j < 4; j++)
        for (let r = 0; r < 3; r++) data.set(t.data.subarray((r * H + j * hd) * row, (r * H + (j + 1) * hd) * row), (j * 3 + r) * hd * row);
      perHead.set(k, { shape: t.shape, data });
    }
    expect(maxAbsDiff(referenceForward(c, w, IDS.slice(0, 10)), referenceForward(c, perHead, IDS.slice(0, 10)))).toBeGreaterThan(1e-3);
  });

  it('continuous batching: two sequences in different cache rows of the one-head cache', async () => {
    const c = cfg('gpt_bigcode-mq');
    const raw = randomCheckpoint(c, 7);
    const a = arch(c);
    const r = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: 24, continuousBatching: true, batchSize: 3 }), raw);
    const A = IDS.slice(0, 10),
      B = IDS.slice(5, 15);
    const pa = await r.step([A.slice(0, 4)], [[0, 1, 2, 3]], r.emptyCache(3, 1, 24, a.headDim), [2]);
    const pb = await r.step([B.slice(0, 4)], [[0, 1, 2, 3]], pa.cache, [0]);
    let cache = pb.cache;
    const rowsA = [pa.logits[0]!],
      rowsB = [pb.logits[0]!];
    for (let t = 4; t < 10; t++) {
      const s = await r.step([[A[t]!], [B[t]!]], [[t], [t]], cache, [2, 0]);
      rowsA.push(s.logits[0]!);
      rowsB.push(s.logits[1]!);
      cache = s.cache;
    }
    expect(maxAbsDiff(rowsA, referenceForward(c, raw, A).slice(3))).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(rowsB, referenceForward(c, raw, B).slice(3))).toBeLessThanOrEqual(1e-4);
  });

  it('refusals: cross-attention, an activation HF has but the graph does not, heads not dividing n_embd', () => {
    refuses(cfg('gpt_bigcode-mq', { add_cross_attention: true }), /"add_cross_attention" is true/);
    refuses(cfg('gpt_bigcode-mq', { activation_function: 'tanh' }), /"activation_function" = "tanh" is not a supported activation/);
    refuses(cfg('gpt_bigcode-mq', { n_head: 5 }), /"n_embd" \(48\) is not divisible by n_head \(5\)/);
  });
});

describe('gemma3_text: traps and a prompt longer than the window through the KV graph', () => {
  it('layer_types derive from sliding_window_pattern; sliding layers get the local rope, full layers the scaled global one', () => {
    const a = arch(cfg('gemma3_text'));
    expect(a.layers.map((l) => l.slidingWindow)).toEqual([3, 3, undefined, 3]);
    expect(a.layers[0]!.rope).toBe(a.layers[1]!.rope);
    expect(a.layers[2]!.rope).toBeUndefined();
    expect(a.layers[0]!.rope!.invFreq[1]).toBeCloseTo(100 ** (-2 / 16), 6);
    expect(a.rope!.invFreq[1]).toBeCloseTo(1e6 ** (-2 / 16) / 2, 6); // linear factor 2 on the global layers only
    const typed = arch(cfg('gemma3_text', { layer_types: ['full_attention', 'sliding_attention', 'sliding_attention', 'full_attention'] }));
    expect(typed.layers.map((l) => l.slidingWindow)).toEqual([undefined, 3, 3, undefined]);
    // transformers 5 writes per-layer-type rope_parameters: the same architecture
    const v5 = arch({
      ...cfg('gemma3_text'),
      rope_scaling: undefined,
      rope_theta: undefined,
      rope_local_base_freq: undefined,
      rope_parameters: {
        full_attention: { rope_type: 'linear', factor: 2.0, rope_theta: 1e6 },
        sliding_attention: { rope_type: 'default', rope_theta: 100 },
      },
    });
    expect(v5.rope).toEqual(a.rope);
    expect(v5.layers[0]!.rope).toEqual(a.layers[0]!.rope);
  });

  it('each trap changes the reference; attn_logit_softcapping does not (HF never applies it)', () => {
    const c = cfg('gemma3_text');
    differs(c, { rope_local_base_freq: 10000 });
    differs(c, { rope_scaling: null });
    differs(c, { sliding_window: 64 });
    differs(c, { sliding_window_pattern: 2 });
    differs(c, { query_pre_attn_scalar: 16 });
    differs(c, { final_logit_softcapping: null });
    const w = randomCheckpoint(c, 7);
    expect(maxAbsDiff(referenceForward(c, w, IDS), referenceForward({ ...c, attn_logit_softcapping: null }, w, IDS))).toBe(0);
  });

  it('a 20-token prompt over a window of 3, prefilled at once and then decoded, in ctx_len 24 and 64: ≤ 1e-4', async () => {
    for (const ctx of [24, 64]) expect(await prefillDecode(cfg('gemma3_text'), IDS, 17, ctx)).toBeLessThanOrEqual(1e-4);
  });

  it('refusals', () => {
    refuses(cfg('gemma3_text', { use_bidirectional_attention: true }), /"use_bidirectional_attention" is true/);
    refuses(cfg('gemma3_text', { layer_types: ['sliding_attention'] }), /"layer_types" has 1 entries for 4 layers/);
    refuses(cfg('gemma3_text', { layer_types: ['chunked_attention', 'a', 'b', 'c'] }), /"layer_types" entry "chunked_attention"/);
    refuses(cfg('gemma3_text', { sliding_window: null }), /"sliding_window" is null but layer_types has sliding_attention layers/);
    refuses(cfg('gemma3_text', { rope_scaling: { rope_type: 'dynamic', factor: 2 } }), /rope_scaling type "dynamic" is not supported/);
  });
});

describe('published configs (the bench exports them)', () => {
  const real = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  it('mpt-7b (MPTForCausalLM + auto_map): 32 layers of 32 heads, 4096 wide, tied head, power-of-two slopes', () => {
    const a = arch(real(path.join(REPO_ROOT, 'test', 'configs', 'mpt-7b.json')));
    expect([a.layers.length, a.nHeads, a.nKv, a.hidden, a.vocab, a.lmHead]).toEqual([32, 32, 32, 4096, 50432, undefined]);
    expect(a.alibi!.slopes).toEqual(Array.from({ length: 32 }, (_, h) => 2 ** -((h + 1) / 4)).map(Math.fround));
  });
  it('starcoder (15.5B): multi-query, 40 layers, c_attn [6144 + 2·128, 6144], n_inner 24576, 8192 positions', () => {
    const a = arch(real(path.join(REPO_ROOT, 'test', 'configs', 'starcoder.json')));
    const w = new Map(weightInputs(a).map((x) => [x.name, x.shape]));
    expect([a.layers.length, a.nKv, a.headDim]).toEqual([40, 1, 128]);
    expect(w.get('transformer.h.39.attn.c_attn.weight')).toEqual([6144 + 256, 6144]);
    expect(w.get('transformer.h.0.mlp.c_fc.weight')).toEqual([24576, 6144]);
    expect(w.get('transformer.wpe.weight')).toEqual([8192, 6144]);
  });
  it.runIf(existsSync(path.join(configsDir(), 'gemma-3-1b.json')))(
    'gemma-3-1b: five local layers per global one, window 512, a graph under 2 MiB',
    () => {
      const a = arch(real(path.join(configsDir(), 'gemma-3-1b.json')));
      expect(a.layers.map((l) => (l.slidingWindow === undefined ? 'G' : 'L')).join('')).toBe('LLLLLG'.repeat(4) + 'LL');
      expect(a.layers[0]!.slidingWindow).toBe(512);
      expect(encodeBuiltModel(buildCausalLM(a, { dtype: 'float32' }).model).length).toBeLessThan(2 * 2 ** 20);
    },
  );
});

describe('a refusal through the CLI', () => {
  it('is one line naming the file and the field, exit 1', async () => {
    const dir = path.join(tmp(), 'mpt-qk-ln');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify(mptAttn({ qk_ln: true })));
    const r = await cliInProcess(['export', '--config', dir, '--out', path.join(dir, 'out')]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^weight-spec: .*config\.json: "attn_config\.qk_ln" is true/)]);
  });
});

describeOnnxChecker('gpt_bigcode from a random checkpoint written in code, through the CLI', () => {
  for (const name of ['gpt_bigcode-mq', 'gpt_bigcode-mha']) {
    it(`${name}: export --config → prepare → compile → run equals the reference; CCL too; ONNX's checker passes`, async () => {
      const root = tmp();
      const ws = (...args: string[]) => cliStdout(root, ...args);
      const c = cfg(name);
      const src = path.join(root, name);
      const raw = await writeRandomModel(src, c, 23);
      const ids = IDS.slice(0, 9);
      const ref = referenceForward(c, raw, ids);
      const prepared = path.join(root, `${name}-prepared`);
      await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
      const outs: string[] = [];
      for (const [tag, flags] of [
        ['plain', []],
        ['ccl', ['--comp-ctx-lengths-prefill', '8', '--comp-ctx-lengths-decode', '8,16']],
      ] as const) {
        const out = path.join(root, `${name}-${tag}`);
        await ws('export', '--config', src, '--out', out, '--ctx-len', '16', ...flags);
        await ws('compile', out, '--prepared', prepared);
        const dump = path.join(root, `${tag}.json`);
        await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
        expect(maxAbsDiff((JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits, ref), tag).toBeLessThanOrEqual(1e-4);
        outs.push(path.join(out, 'model.onnx'));
      }
      expectOnnxValid(outs);
    });
  }
});
