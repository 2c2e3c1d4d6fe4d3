/**
 * `export --sliding-cache window`: Gemma 3's sliding layers over a ring of `sliding_window`
 * cache slots, QEfficient's layout, through the real CLI (in this process) and ONNX Runtime:
 * export --config → prepare → compile (ORT) → run against the fixtures' reference.json
 * (gemma3: window 4, 7 prompt ids + 4 generated = 11 positions; gemma3_vlm: window 6, a 26-id
 * prompt with a 16-token image, 30 positions), so every decode runs past the window and every
 * prefill is longer than it; ONNX's checker on every exported graph and compiled artifact.
 *
 * Sources read for the port:
 * - QEfficient (quic/efficient-transformers) `QEfficient/transformers/models/gemma3/modeling_gemma3.py`
 *   at 00f00e10dea37470d285bd98e152814ed535f2d5: `get_onnx_dynamic_axes` names axis 2 of the
 *   sliding layers' past_key/past_value `sliding_window` (full layers `ctx_len`),
 *   `get_dummy_pkv_cache` shapes them `[b, kv, sliding_window, d]`, and `get_specializations` sets
 *   `sliding_window` to the config's value;
 * - QEfficient `QEfficient/transformers/cache_utils.py` at 00b114982da842f2cb5ee57fe04cf9c58a6dc444:
 *   `QEffSlidingWindowCache.update` scatters position p at p mod sliding_window (−1 stays −1);
 *   `QEfficient/transformers/modeling_attn_mask_utils.py` at 01f07b9bcc785394c7e5291d2d16490f496b6909:
 *   `_create_causal_mask` maps ring slot j to the latest position ≤ max(position_ids) congruent
 *   to j. Its one scatter of a whole prefill chunk longer than the window overwrites keys the
 *   chunk's earlier queries still need; the graph here reads [ring before the call ‖ the call's
 *   keys] and writes only the last window of the chunk (attention-window.ts), so the logits are
 *   HF's for any chunk length;
 * - Hugging Face `src/transformers/masking_utils.py` at 2ccc6cae21faaf11631efa5fb9054687ae5dc931
 *   (`sliding_window_overlay`: kv_idx > q_idx − sliding_window, AND causal) is the rule both
 *   layouts implement; the reference logits judge it.
 * - QEfficient's gemma2 (`models/gemma2/modeling_gemma2.py` at 00bd2d259cefee7b26c1fd43687163fd03b49650)
 *   keeps ctx_len caches (QEffDynamicCache) for every layer, so the flag is refused for gemma2.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { graphFacts } from '../../src/compile/qaic';
import { buildQaicPlan } from '../../src/compile/qaic-command';
import * as ort from 'onnxruntime-node';
import { archFromConfig, buildCausalLM, checkGraph } from '../../src/export/exporter';
import { stateDims, statesOfGraph, WINDOW_CACHE_METADATA } from '../../src/artifacts/graph-interface';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, float16Tolerance, type FixtureRef } from '../../../test/support/fixtures';
import { expectOnnxValid, haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS } from '../support/graph-random';
import { GraphRunner, maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-sliding-cache-');

/** The ORT artifact the latest compile of an export dir wrote (compile.json). */
const compiledModel = (dir: string): string => JSON.parse(readFileSync(path.join(dir, 'compile.json'), 'utf8')).artifacts.model;

const dimsOf = (file: string) => {
  const m = parseWireModel(readFileSync(file), file);
  return { m, dims: new Map(m.inputs.map((i) => [i.name, i.dims])) };
};

describeFixtures('--sliding-cache window reproduces the fixtures through export → prepare → compile → run', () => {
  const ws = cliStdout;

  it('gemma3 (text): rings of 4 on the sliding layers, ctx_len on layer 5; logits ≤ 1e-4 and generated_ids, also chunked, batched and float16', async () => {
    const work = tmp();
    const src = path.join(fixturesDir(), 'gemma3');
    const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as FixtureRef;
    const cfg = JSON.parse(readFileSync(path.join(src, 'config.json'), 'utf8'));
    expect(cfg.sliding_window).toBe(4);
    expect(ref.logits.length).toBeGreaterThan(2 * cfg.sliding_window);
    await ws(work, 'export', '--config', src, '--out', 'out', '--ctx-len', '32', '--sliding-cache', 'window');
    const { m, dims } = dimsOf(path.join(work, 'out', 'model.onnx'));
    cfg.layer_types.forEach((t: string, i: number) => {
      const len = t === 'sliding_attention' ? 4 : 32;
      expect(dims.get(`past_key.${i}`)).toEqual(['batch_size', 1, len, 32]);
      expect(dims.get(`past_value.${i}`)).toEqual(['batch_size', 1, len, 32]);
      expect(m.outputs.find((o) => o.name === `past_key.${i}_RetainedState`)?.dims).toEqual(['batch_size', 1, len, 32]);
    });
    // the descriptor read back: rings have no ctx_len axis, so qaic's ctx_len is the full layer's
    const states = statesOfGraph(m.inputs, m.metadata);
    expect(states.filter((s) => s.window === 4).map((s) => s.name)).toHaveLength(12);
    expect(states.find((s) => s.name === 'past_key.0')).not.toHaveProperty('ctxAxis');
    expect(states.find((s) => s.name === 'past_key.5')?.ctxAxis).toBe(2);
    expect(graphFacts(m).ctxLen).toBe(32);
    // qaic: the specializations' ctx_len is the full layer's; the rings' fixed length needs no symbol
    const plan = buildQaicPlan('/e/model.qaic.onnx', '/e/qpc', {}, graphFacts(m));
    expect(
      JSON.parse(plan.specializationsText!).specializations.every((s: { symbols: { ctx_len: string } }) => s.symbols.ctx_len === '32'),
    ).toBe(true);
    expect(plan.customIoText).toContain('past_key.0_RetainedState');
    const rep = JSON.parse(readFileSync(path.join(work, 'out', 'export-report.json'), 'utf8'));
    expect(rep.options.sliding_cache).toBe('window');

    await ws(work, 'prepare', '--checkpoint', src, '--dtype', 'float32', '--out', 'prep');
    await ws(work, 'compile', 'out', '--prepared', 'prep');
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    await ws(work, 'run', 'out', '--input-ids', ids.join(','), '--dump-logits', 'logits.json');
    const rows = (JSON.parse(readFileSync(path.join(work, 'logits.json'), 'utf8')) as { logits: number[][] }).logits;
    expect(rows).toHaveLength(ref.logits.length);
    expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
    const prompt = ref.input_ids.join(',');
    // one prefill of 7 > 4, then chunks of 3 (the last padded at −1) and of 5 (> 4, padded)
    for (const chunk of [[], ['--prefill-seq-len', '3'], ['--prefill-seq-len', '5']]) {
      const gen = (await ws(work, 'run', 'out', '--input-ids', prompt, '--max-new-tokens', '5', ...chunk)).trim();
      expect(gen).toBe(ref.generated_ids.join(','));
    }

    // continuous batching (rings gathered and written back by batch_index) and float16
    await ws(
      work,
      'export',
      '--config',
      src,
      '--out',
      'cb',
      '--ctx-len',
      '32',
      '--sliding-cache',
      'window',
      '--continuous-batching',
      '--batch-size',
      '2',
    );
    await ws(work, 'compile', 'cb', '--prepared', 'prep');
    expect((await ws(work, 'run', 'cb', '--input-ids', prompt, '--max-new-tokens', '5')).trim()).toBe(ref.generated_ids.join(','));
    await ws(work, 'export', '--config', src, '--out', 'f16', '--dtype', 'float16', '--sliding-cache', 'window');
    await ws(work, 'prepare', '--checkpoint', src, '--dtype', 'float16', '--out', 'prep16');
    await ws(work, 'compile', 'f16', '--prepared', 'prep16');
    await ws(work, 'run', 'f16', '--input-ids', ids.join(','), '--dump-logits', 'logits16.json');
    const rows16 = (JSON.parse(readFileSync(path.join(work, 'logits16.json'), 'utf8')) as { logits: number[][] }).logits;
    expect(maxAbsDiff(rows16, ref.logits)).toBeLessThanOrEqual(float16Tolerance('gemma3'));
    if (haveOnnxChecker())
      expectOnnxValid(['out', 'cb', 'f16'].flatMap((d) => [path.join(work, d, 'model.onnx'), compiledModel(path.join(work, d))]));
  }, 120_000);

  it('gemma3 (text): --sliding-cache full writes the default graph byte for byte', async () => {
    const work = tmp();
    const src = path.join(fixturesDir(), 'gemma3');
    await ws(work, 'export', '--config', src, '--out', 'default');
    await ws(work, 'export', '--config', src, '--out', 'full', '--sliding-cache', 'full');
    const bytes = (d: string) => readFileSync(path.join(work, d, 'model.onnx'));
    expect(bytes('full').equals(bytes('default'))).toBe(true);
    const { m } = dimsOf(path.join(work, 'default', 'model.onnx'));
    expect(m.metadata.some((e) => e.key === WINDOW_CACHE_METADATA)).toBe(false);
  });

  it('gemma3_vlm: the language graph has rings of 6 and still gives generated_ids and the logits (≤ 1e-4 outside image interiors)', async () => {
    const work = tmp();
    const fx = path.join(fixturesDir(), 'gemma3_vlm');
    const ref = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8')) as FixtureRef;
    const cfg = JSON.parse(readFileSync(path.join(fx, 'config.json'), 'utf8'));
    expect(cfg.text_config.sliding_window).toBe(6);
    await ws(work, 'export', '--config', fx, '--out', 'out', '--sliding-cache', 'window');
    const { m, dims } = dimsOf(path.join(work, 'out', 'language', 'model.onnx'));
    cfg.text_config.layer_types.forEach((t: string, i: number) =>
      expect(dims.get(`past_key.${i}`)).toEqual(['batch_size', 2, t === 'sliding_attention' ? 6 : 'ctx_len', 32]),
    );
    expect(graphFacts(m).vlmRole).toBe('language');
    await ws(work, 'prepare', '--checkpoint', fx, '--dtype', 'float32', '--out', 'prep');
    await ws(work, 'compile', 'out', '--prepared', 'prep');
    const ids = ref.input_ids;
    const run = (...args: string[]) => ws(work, 'run', 'out', '--pixel-values', path.join(fx, 'reference.json'), ...args);
    expect((await run('--input-ids', ids.join(','), '--max-new-tokens', '5')).trim()).toBe(ref.generated_ids.join(','));
    const all = [...ids, ...ref.generated_ids.slice(0, -1)];
    await run('--input-ids', all.join(','), '--dump-logits', 'logits.json');
    const got = (JSON.parse(readFileSync(path.join(work, 'logits.json'), 'utf8')) as { logits: number[][] }).logits;
    expect(got).toHaveLength(ref.logits.length);
    // rows of tokens inside the image are HF's with the whole image visible; QEfficient's interface cannot give them (vlm-gemma3-cli.test.ts)
    const first = ids.indexOf(300);
    const last = ids.lastIndexOf(300);
    const rows = got.map((_, t) => t).filter((t) => t < first || t >= last);
    expect(
      maxAbsDiff(
        rows.map((t) => got[t]!),
        rows.map((t) => ref.logits[t]!),
      ),
    ).toBeLessThanOrEqual(1e-4);
    if (haveOnnxChecker())
      expectOnnxValid(
        ['vision', 'language'].flatMap((g) => [path.join(work, 'out', g, 'model.onnx'), compiledModel(path.join(work, 'out', g))]),
      );
  }, 120_000);

  it('is refused by name, writing nothing, for families without QEfficient sliding caches and configs without a full layer', async () => {
    const work = tmp();
    const fx = fixturesDir();
    const allSliding = path.join(work, 'all-sliding.json');
    const g3 = JSON.parse(readFileSync(path.join(fx, 'gemma3', 'config.json'), 'utf8'));
    writeFileSync(allSliding, JSON.stringify({ ...g3, layer_types: g3.layer_types.map(() => 'sliding_attention') }));
    const cases: [string[], RegExp][] = [
      [
        ['--config', path.join(fx, 'gemma2'), '--sliding-cache', 'window'],
        /gemma2\/config\.json: --sliding-cache goes with Gemma 3 .*; not gemma2$/,
      ],
      [['--config', path.join(fx, 'llama'), '--sliding-cache', 'full'], /--sliding-cache goes with Gemma 3 .*; not llama$/],
      [['--config', path.join(fx, 'qwen2_5_vl'), '--sliding-cache', 'window'], /--sliding-cache goes with Gemma 3 .*; not qwen2_5_vl$/],
      [
        ['--config', allSliding, '--sliding-cache', 'window'],
        /all-sliding\.json: "layer_types" has only sliding_attention layers: --sliding-cache window needs a full_attention layer/,
      ],
      [['--config', path.join(fx, 'gemma3'), '--sliding-cache', 'ring'], /--sliding-cache must be one of full, window/],
      [
        ['--onnx', path.join(fx, 'gemma3', 'legacy.onnx'), '--checkpoint', path.join(fx, 'gemma3'), '--sliding-cache', 'window'],
        /--sliding-cache goes with --config/,
      ],
    ];
    for (const [args, msg] of cases) {
      const r = await cliInProcess(['export', ...args, '--out', 'refused'], { cwd: work });
      expect(r.code, args.join(' ')).not.toBe(0);
      const lines = r.stderr.trim().split('\n');
      expect(lines[0]).toMatch(msg);
      // a flag that does not fit the model is a usage error (the line, then the usage text, as --mla-cache's); a config's is one line
      if (args[1] === allSliding) expect(lines, r.stderr).toHaveLength(1);
      expect(existsSync(path.join(work, 'refused'))).toBe(false);
    }
  });
});

/**
 * The code-made gemma3_text config (window 3, pattern 3: layers 0, 1, 3 slide; final soft cap)
 * against the independent float64 reference (graph-reference-mpt-bigcode-gemma3.ts): 20 ids fed
 * in calls of `chunk` ids (the last padded at position −1), each call's logits against the
 * reference row of its last id; the zeroed states sized as the graph declares them.
 */
async function windowedCalls(chunk: number, ctx: number): Promise<number> {
  const c = SYNTHETIC_CONFIGS['gemma3_text']!;
  const ids = Array.from({ length: 20 }, (_, i) => (i * 37 + 11) % 80);
  const raw = randomCheckpoint(c, 7);
  const a = archFromConfig(c, 'config.json', { keys: new Set(raw.keys()), slidingCache: 'window' });
  expect(a.layers.map((l) => !!l.windowCache)).toEqual([true, true, false, true]);
  const g = buildCausalLM(a, { dtype: 'float32', ctxLen: ctx });
  expect(checkGraph(g.model)).toEqual([]);
  const values = g.model.graph.input.map((v) => ({
    name: v.name,
    dims: v.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : d.dimParam)),
  }));
  let cache: ort.Tensor[] = statesOfGraph(values, g.model.metadataProps).map((st) => {
    const dims = stateDims(st, 1, ctx)!;
    return new ort.Tensor('float32', new Float32Array(dims.reduce((x, y) => x * y, 1)), dims);
  });
  expect(cache.map((t) => t.dims[2])).toEqual([3, 3, 3, 3, ctx, ctx, 3, 3]);
  const r = await GraphRunner.open(g, raw);
  const ref = referenceForward(c, raw, ids);
  let worst = 0;
  for (let at = 0; at < ids.length; at += chunk) {
    const part = ids.slice(at, at + chunk);
    const pad = Array<number>(chunk - part.length).fill(0);
    const s = await r.step([[...part, ...pad]], [[...part.map((_, k) => at + k), ...pad.map(() => -1)]], cache);
    worst = Math.max(worst, maxAbsDiff([s.logits[0]!], [ref[at + part.length - 1]!]));
    cache = s.cache;
  }
  return worst;
}

describe('--sliding-cache window on a code-made gemma3_text config (window 3) against the float64 reference', () => {
  it('one id per call, calls of 2 (< window), 5 and 17 (> window, padded): every call ≤ 1e-4, ctx_len 24 and 64', async () => {
    for (const ctx of [24, 64])
      for (const chunk of [1, 2, 5, 17]) expect(await windowedCalls(chunk, ctx), `chunk ${chunk} ctx ${ctx}`).toBeLessThanOrEqual(1e-4);
  });
});

describe('the window rings in a graph read back', () => {
  it('refuses a malformed sliding_cache metadata entry rather than guessing the rings', () => {
    const inputs = [{ name: 'past_key.0', dims: ['batch_size', 1, 4, 8] }];
    expect(() => statesOfGraph(inputs, [{ key: WINDOW_CACHE_METADATA, value: '{"sliding_window": 0}' }])).toThrow(
      /weight_spec\.sliding_cache/,
    );
    expect(statesOfGraph(inputs, [{ key: WINDOW_CACHE_METADATA, value: '{"sliding_window": 4, "layers": [0]}' }])[0]).toMatchObject({
      window: 4,
    });
    expect(statesOfGraph(inputs)[0]!.ctxAxis).toBe(2);
  });
});
