/**
 * Issue #23, MoE half: gpt_oss and glm4_moe through the real CLI against the fixtures'
 * reference logits (fp32 HF forward, written by hand in PyTorch) — export --config → prepare →
 * compile (ORT) → run --dump-logits (fed through the KV cache one id at a time) ≤ 1e-4 in
 * float32 (≤ 2e-2 in float16), and greedy decoding gives generated_ids; the same through
 * export --onnx legacy.onnx --checkpoint (GPT-OSS's dequantized experts resolved through the
 * MXFP4 transform).
 *
 * Ported from huggingface/transformers (read at these commits):
 * - src/transformers/models/gpt_oss/modeling_gpt_oss.py @ 00d4b3d2142cb4ced2f51b90614b5d26bc045015
 *   (sinks, layer_types, yarn via modeling_rope_utils.py @ 0044e3b3 / `truncate`, router bias +
 *   softmax over the top-k logits, interleaved gate/up, clamped SwiGLU, down bias)
 * - src/transformers/models/glm4_moe/modeling_glm4_moe.py @ 000c33fdfde12e1ffafbfcdb3c926df5727a00b6
 *   (partial rotary, q/k/v bias without o bias, use_qk_norm, first_k_dense_replace, shared
 *   experts, sigmoid + e_score_correction_bias grouped top-k, norm_topk_prob, routed_scaling_factor)
 * - src/transformers/models/granitemoe/modeling_granitemoe.py @ 013458c1caaacbd32680c030827296fa65d6fe99
 *   (no fixture: a bf16 checkpoint made in code, judged by the float64 reference of
 *   graph-reference-dense.ts)
 * Config fields that would change the math but are not implemented are refused by name.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, type FixtureRef } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig, buildCausalLM } from '../../src/export/exporter';
import * as ort from 'onnxruntime-node';
import { toFloat32 } from '../../src/formats/float-convert';
import { Checkpoint } from '../../src/formats/safetensors';
import { referenceForward } from '../support/graph-reference';
import { rng, SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { glm4MoeReference, randomGlmCheckpoint } from '../support/graph-reference-glm';
import { dequantMxfp4Reference, gptOssReference, preparedFromInMemory } from '../support/graph-reference-gpt-oss';
import { GraphRunner, identityGraph, loadCheckpoint, maxAbsDiff, stackExperts } from '../support/graph-support';

const tmp = tempDirs('ws-moe-families-')();

/** The CLI in this process (test/support/cli.ts): ONNX Runtime loads once for the file. */
function run(...args: string[]) {
  return cliInProcess(args, { cwd: tmp });
}

const ws = (...args: string[]): Promise<string> => cliStdout(tmp, ...args);

/** The MoE families of the issue that ship a fixture. */
export const MOE_FIXTURE_FAMILIES = ['gpt_oss_full', 'glm4_moe'] as const;

describeFixtures('export --config → prepare → compile → run: gpt_oss and glm4_moe equal the HF reference', () => {
  for (const fam of MOE_FIXTURE_FAMILIES) {
    for (const dtype of ['float32', 'float16'] as const) {
      it(`${fam} ${dtype}`, async () => {
        const src = path.join(fixturesDir(), fam);
        const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as FixtureRef;
        const prepared = path.join(tmp, `${fam}-prepared-${dtype}`);
        const out = path.join(tmp, `${fam}-${dtype}-export`);
        await ws('export', '--config', src, '--out', out, '--dtype', dtype, '--ctx-len', '32');
        await ws('prepare', '--checkpoint', src, '--dtype', dtype, '--out', prepared);
        await ws('compile', out, '--prepared', prepared);
        const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
        const dump = path.join(tmp, `${fam}-${dtype}-logits.json`);
        await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
        const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
        expect(rows.length).toBe(ref.logits.length);
        expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(dtype === 'float32' ? 1e-4 : 2e-2);
        if (dtype === 'float32') {
          const gen = (await ws('run', out, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5')).trim();
          expect(gen).toBe(ref.generated_ids.join(','));
        }
      });
    }
  }

  for (const fam of MOE_FIXTURE_FAMILIES) {
    it(`${fam}: expert-parallel (--moe-flavour expert_parallel --pipeline-stages 2) gives the same logits`, async () => {
      const src = path.join(fixturesDir(), fam);
      const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as FixtureRef;
      const ep = ['--moe-flavour', 'expert_parallel', '--pipeline-stages', '2'];
      const prepared = path.join(tmp, `${fam}-ep-prepared`);
      const out = path.join(tmp, `${fam}-ep-export`);
      await ws('export', '--config', src, '--out', out, '--ctx-len', '32', ...ep);
      await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared, ...ep);
      await ws('compile', out, '--prepared', prepared);
      const dump = path.join(tmp, `${fam}-ep-logits.json`);
      await ws('run', out, '--input-ids', [...ref.input_ids, ...ref.generated_ids.slice(0, -1)].join(','), '--dump-logits', dump);
      expect(maxAbsDiff((JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits, ref.logits)).toBeLessThanOrEqual(1e-4);
    });

    it(`${fam}: export --onnx legacy.onnx --checkpoint → prepare → compile → run equals the reference`, async () => {
      const src = path.join(fixturesDir(), fam);
      const ref = JSON.parse(readFileSync(path.join(src, 'reference.json'), 'utf8')) as FixtureRef;
      const prepared = path.join(tmp, `${fam}-legacy-prepared`);
      const out = path.join(tmp, `${fam}-legacy-export`);
      await ws('export', '--onnx', path.join(src, 'legacy.onnx'), '--checkpoint', src, '--out', out);
      const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
      expect(report.unresolved).toEqual([]);
      await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
      await ws('compile', out, '--prepared', prepared);
      const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
      const dump = path.join(tmp, `${fam}-legacy-logits.json`);
      await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
      const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
      expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
      const gen = (await ws('run', out, '--input-ids', ref.input_ids.join(','), '--max-new-tokens', '5')).trim();
      expect(gen).toBe(ref.generated_ids.join(','));
    });
  }

  it('gpt_oss legacy: the dequantized experts and folded biases resolve by content through the MXFP4 transform', () => {
    const report = JSON.parse(readFileSync(path.join(tmp, 'gpt_oss_full-legacy-export', 'export-report.json'), 'utf8'));
    type Input = {
      initializer: string;
      key: string;
      input: string;
      strategy: string;
      interleaved_with?: string;
      dequantized_from?: string[];
      shape: number[];
    };
    const by = new Map((report.inputs as Input[]).map((i) => [i.initializer, i]));
    for (const layer of [0, 1]) {
      const m = `model.layers.${layer}.mlp`;
      // HF's in-memory gate_up_proj [E, H, 2I] (gate on even columns) = prepared gate and up interleaved
      const gu = by.get(`${m}.experts.gate_up_proj`)!;
      expect(gu).toMatchObject({ input: `${m}.moe_weights.gate`, interleaved_with: `${m}.moe_weights.up`, shape: [4, 64, 192] });
      expect(gu.dequantized_from).toEqual([`${m}.experts.gate_up_proj_blocks`, `${m}.experts.gate_up_proj_scales`]);
      const down = by.get(`${m}.experts.down_proj`)!;
      expect(down).toMatchObject({ input: `${m}.moe_weights.down`, shape: [4, 96, 64] });
      expect(down.dequantized_from).toEqual([`${m}.experts.down_proj_blocks`, `${m}.experts.down_proj_scales`]);
    }
    // the constant-folded biases ([E, 1, 2I] and [E, 1, H]) are found by content, not name
    const biases = (report.inputs as Input[]).filter((i) => i.initializer.startsWith('onnx::Add_'));
    expect(
      biases.map((b) => [b.key.replace(/^model\.layers\.\d\./, ''), b.strategy, b.input.replace(/^model\.layers\.\d\./, '')]).sort(),
    ).toEqual([
      ['mlp.experts.down_proj_bias', 'content', 'mlp.moe_weights.down_bias'],
      ['mlp.experts.down_proj_bias', 'content', 'mlp.moe_weights.down_bias'],
      ['mlp.experts.gate_up_proj_bias', 'content', 'mlp.moe_weights.gate_bias'],
      ['mlp.experts.gate_up_proj_bias', 'content', 'mlp.moe_weights.gate_bias'],
    ]);
    // the spec points only at prepared keys, and the scratch dequantization is gone
    const spec = JSON.parse(readFileSync(path.join(tmp, 'gpt_oss_full-legacy-export', 'weight_spec.json'), 'utf8'));
    expect(spec.inputs.some((i: { name: string }) => /experts\.(gate_up|down)_proj/.test(i.name))).toBe(false);
  });

  it('gpt_oss: the graph takes the sinks, the router bias and the dequantized expert tensors; sliding layers follow layer_types', () => {
    const cfg = JSON.parse(readFileSync(path.join(fixturesDir(), 'gpt_oss_full', 'config.json'), 'utf8'));
    const a = archFromConfig(cfg, 'config.json');
    expect(a.layers.map((l) => l.slidingWindow)).toEqual([4, undefined]);
    expect(a.layers[0]!.sinks).toBe('model.layers.0.self_attn.sinks');
    const m = a.layers[1]!.mlp;
    expect(m.kind === 'moe' && [m.routerBias, m.weights.gateBias, m.weights.upBias, m.weights.downBias]).toEqual([
      'model.layers.1.mlp.router.bias',
      'model.layers.1.mlp.moe_weights.gate_bias',
      'model.layers.1.mlp.moe_weights.up_bias',
      'model.layers.1.mlp.moe_weights.down_bias',
    ]);
  });

  it('gpt_oss: without rope_scaling in config.json the GptOssConfig default (yarn ×32, attention factor) applies; null means none', () => {
    const cfg = JSON.parse(readFileSync(path.join(fixturesDir(), 'gpt_oss_full', 'config.json'), 'utf8'));
    delete cfg.rope_scaling;
    const rope = archFromConfig(cfg, 'config.json').rope!;
    expect(rope.attentionScale).toBeCloseTo(0.1 * Math.log(32) + 1, 12);
    const none = archFromConfig({ ...cfg, rope_scaling: null }, 'config.json').rope!;
    expect(none.attentionScale).toBe(1);
    expect(none.invFreq[none.invFreq.length - 1]).toBeGreaterThan(rope.invFreq[rope.invFreq.length - 1]!);
  });

  it('glm4_moe: num_nextn_predict_layers weights in the checkpoint are left out of the graph', () => {
    // a GLM-4.5-Air-like checkpoint carries its MTP layer at index num_hidden_layers
    const cfg = { ...JSON.parse(readFileSync(path.join(fixturesDir(), 'glm4_moe', 'config.json'), 'utf8')), num_nextn_predict_layers: 1 };
    const a = archFromConfig(cfg, 'config.json');
    expect(a.layers.length).toBe(3);
    expect(a.layers[0]!.mlp.kind).toBe('gated');
    expect(a.layers[2]!.o.bias).toBeUndefined();
  });
});

describeFixtures('glm4_moe configurations beyond the fixture, judged by an independent float64 reference', () => {
  it('the float64 GLM-4-MoE reference reproduces the fixture reference.json (validates the judge)', async () => {
    const dir = path.join(fixturesDir(), 'glm4_moe');
    const cfg = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
    const ref = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8')) as FixtureRef;
    const raw = await loadCheckpoint(dir);
    expect(maxAbsDiff(glm4MoeReference(cfg, raw, [...ref.input_ids, ...ref.generated_ids.slice(0, -1)]), ref.logits)).toBeLessThanOrEqual(
      1e-4,
    );
  });

  const base = {
    model_type: 'glm4_moe',
    vocab_size: 80,
    hidden_size: 32,
    intermediate_size: 48,
    moe_intermediate_size: 12,
    num_hidden_layers: 3,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    rope_theta: 10000.0,
    rms_norm_eps: 1e-5,
    attention_bias: true,
    n_routed_experts: 8,
    num_experts_per_tok: 3,
    first_k_dense_replace: 1,
    hidden_act: 'silu',
    tie_word_embeddings: false,
  };
  const variants: [string, Record<string, unknown>][] = [
    ['one group (GLM-4.5-Air), no q/k norm', { n_group: 1, topk_group: 1, use_qk_norm: false, routed_scaling_factor: 1.0 }],
    [
      '4 groups, top-2 groups, q/k norm, scaling 2.5, two shared experts',
      { n_group: 4, topk_group: 2, use_qk_norm: true, routed_scaling_factor: 2.5, n_shared_experts: 2 },
    ],
    [
      'no renormalization, no shared experts, two dense layers, partial rotary 0.25',
      { n_group: 2, topk_group: 1, norm_topk_prob: false, n_shared_experts: 0, first_k_dense_replace: 2, partial_rotary_factor: 0.25 },
    ],
  ];
  it.each(variants)('%s: token-at-a-time logits match', async (_name, patch) => {
    const cfg = { ...base, ...patch };
    const raw = randomGlmCheckpoint(cfg, 3);
    const ids = [5, 17, 3, 64, 41, 9, 60, 2, 33];
    const a = archFromConfig(cfg, 'config.json');
    const r = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: 16 }), stackExperts(raw));
    const { rows } = await r.tokenByToken(ids, r.emptyCache(1, a.nKv, 16, a.headDim));
    expect(maxAbsDiff(rows, glm4MoeReference(cfg, raw, ids))).toBeLessThanOrEqual(1e-4);
  });
});

describeFixtures('gpt_oss configurations beyond the fixture, judged by an independent float64 reference', () => {
  it('the float64 GPT-OSS reference (own MXFP4 decode) reproduces the fixture reference.json (validates the judge)', async () => {
    const dir = path.join(fixturesDir(), 'gpt_oss_full');
    const cfg = JSON.parse(readFileSync(path.join(dir, 'config.json'), 'utf8'));
    const ref = JSON.parse(readFileSync(path.join(dir, 'reference.json'), 'utf8')) as FixtureRef;
    const ck = await Checkpoint.open(dir);
    const w = new Map<string, { shape: number[]; data: Float32Array }>();
    for (const t of ck.tensors()) if (t.dtype !== 'U8') w.set(t.key, { shape: t.shape, data: toFloat32(await ck.read(t.key), t.dtype) });
    for (const key of ck.keys().filter((k) => k.endsWith('_blocks'))) {
      const [E, R, G] = ck.get(key)!.shape as [number, number, number];
      w.set(
        key.replace(/_blocks$/, ''),
        dequantMxfp4Reference(await ck.read(key), await ck.read(key.replace(/_blocks$/, '_scales')), E, R, G),
      );
    }
    expect(maxAbsDiff(gptOssReference(cfg, w, [...ref.input_ids, ...ref.generated_ids.slice(0, -1)]), ref.logits)).toBeLessThanOrEqual(
      1e-4,
    );
  });

  const base = {
    model_type: 'gpt_oss',
    vocab_size: 80,
    hidden_size: 32,
    intermediate_size: 24,
    num_hidden_layers: 3,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    num_local_experts: 5,
    num_experts_per_tok: 2,
    sliding_window: 3,
    rope_theta: 150000.0,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-5,
    tie_word_embeddings: false,
  };
  const variants: [string, Record<string, unknown>][] = [
    [
      'yarn with truncate (floored/ceiled ramp), no attention bias, full/sliding/full',
      {
        attention_bias: false,
        layer_types: ['full_attention', 'sliding_attention', 'full_attention'],
        rope_scaling: {
          rope_type: 'yarn',
          factor: 8.0,
          beta_fast: 32.0,
          beta_slow: 1.0,
          original_max_position_embeddings: 64,
          truncate: true,
        },
      },
    ],
    [
      'the GptOssConfig defaults: rope_scaling and layer_types absent, swiglu_limit 1.5, swiglu_alpha 1.0',
      { swiglu_limit: 1.5, swiglu_alpha: 1.0 },
    ],
  ];
  it.each(variants)('%s: token-at-a-time logits match', async (_name, patch) => {
    const cfg = { ...base, ...patch };
    const r0 = rng(9);
    const w = new Map<string, { shape: number[]; data: Float32Array }>();
    const put = (k: string, shape: number[], scale: number, center = 0) =>
      w.set(k, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => center + scale * r0()) });
    const {
      hidden_size: H,
      head_dim: hd,
      num_attention_heads: nh,
      num_key_value_heads: nkv,
      num_local_experts: E,
      intermediate_size: I,
    } = cfg;
    put('model.embed_tokens.weight', [80, H], 0.5);
    for (let l = 0; l < 3; l++) {
      const p = `model.layers.${l}`,
        a = `${p}.self_attn`,
        m = `${p}.mlp`;
      put(`${p}.input_layernorm.weight`, [H], 0.1, 1);
      put(`${p}.post_attention_layernorm.weight`, [H], 0.1, 1);
      for (const [n, out, inp] of [
        ['q', nh * hd, H],
        ['k', nkv * hd, H],
        ['v', nkv * hd, H],
        ['o', H, nh * hd],
      ] as const) {
        put(`${a}.${n}_proj.weight`, [out, inp], 1 / Math.sqrt(inp));
        if ((cfg as Record<string, unknown>).attention_bias !== false) put(`${a}.${n}_proj.bias`, [out], 0.1);
      }
      put(`${a}.sinks`, [nh], 1);
      put(`${m}.router.weight`, [E, H], 1);
      put(`${m}.router.bias`, [E], 0.5);
      put(`${m}.experts.gate_up_proj`, [E, H, 2 * I], 1.5 / Math.sqrt(H));
      put(`${m}.experts.gate_up_proj_bias`, [E, 2 * I], 0.5);
      put(`${m}.experts.down_proj`, [E, I, H], 1 / Math.sqrt(I));
      put(`${m}.experts.down_proj_bias`, [E, H], 0.1);
    }
    put('model.norm.weight', [H], 0.1, 1);
    put('lm_head.weight', [80, H], 1 / Math.sqrt(H));
    const ids = [5, 17, 3, 64, 41, 9, 60, 2, 33];
    const a = archFromConfig(cfg, 'config.json');
    const runner = await GraphRunner.open(buildCausalLM(a, { dtype: 'float32', ctxLen: 16 }), preparedFromInMemory(w, 3));
    const { rows } = await runner.tokenByToken(ids, runner.emptyCache(1, a.nKv, 16, a.headDim));
    expect(maxAbsDiff(rows, gptOssReference(cfg, w, ids))).toBeLessThanOrEqual(1e-4);
  });
});

describe('granitemoe (no fixture): a bf16 checkpoint made in code, judged by the float64 reference', () => {
  it('export --config → prepare (input_linear split into the canonical layout) → compile → run, float32 and float16', async () => {
    const cfg = SYNTHETIC_CONFIGS.granitemoe!;
    const src = path.join(tmp, 'synthetic-granitemoe');
    const raw = await writeRandomModel(src, cfg, 23);
    const ids = [4, 19, 33, 7, 61, 2, 45, 12, 28];
    const ref = referenceForward(cfg, raw, ids);
    for (const dtype of ['float32', 'float16']) {
      const prepared = path.join(tmp, `synthetic-granitemoe-prepared-${dtype}`);
      const out = path.join(tmp, `synthetic-granitemoe-${dtype}-export`);
      await ws('export', '--config', src, '--out', out, '--dtype', dtype, '--ctx-len', '16');
      await ws('prepare', '--checkpoint', src, '--dtype', dtype, '--out', prepared);
      await ws('compile', out, '--prepared', prepared);
      const dump = path.join(tmp, `synthetic-granitemoe-${dtype}.json`);
      await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
      const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
      expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(dtype === 'float32' ? 1e-4 : 2e-2);
      if (dtype === 'float32') {
        // greedy decoding gives the reference's argmax continuation, fed back one token at a time
        const want: number[] = [];
        let seq = [...ids];
        for (let t = 0; t < 3; t++) {
          const last = referenceForward(cfg, raw, seq).at(-1)!;
          const next = last.indexOf(Math.max(...last));
          want.push(next);
          seq = [...seq, next];
        }
        expect((await ws('run', out, '--input-ids', ids.join(','), '--max-new-tokens', '3')).trim()).toBe(want.join(','));
      }
    }
  });
});

describe('granitemoe legacy graphs: fused experts as HF holds them bind to the canonical prepared layout', () => {
  it('input_linear [E, 2I, H] and output_linear [E, H, I] initializers resolve and are rebuilt bit for bit from prepared gate/up/down', async () => {
    const cfg = SYNTHETIC_CONFIGS.granitemoe!;
    const src = path.join(tmp, 'legacy-granitemoe');
    const raw = await writeRandomModel(src, cfg, 5);
    // a graph that embeds the layer-0 experts as the module holds them (QEfficient's patched
    // GraniteMoE gathers rows of the whole parameters) and returns them unchanged
    const m = 'model.layers.0.block_sparse_moe';
    const names = [`${m}.input_linear.weight`, `${m}.output_linear.weight`];
    const tensors = names.map((n) => raw.get(n)!);
    const onnx = path.join(tmp, 'granitemoe-legacy.onnx');
    writeFileSync(onnx, identityGraph(names.map((n, i) => [n, tensors[i]!])));
    const out = path.join(tmp, 'granitemoe-legacy-export');
    await ws('export', '--onnx', onnx, '--checkpoint', src, '--out', out);
    const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
    expect(report.unresolved).toEqual([]);
    expect(report.inputs.map((i: { input: string }) => i.input)).toEqual([`${m}.moe_weights.gate`, `${m}.moe_weights.down`]);
    const prepared = path.join(tmp, 'granitemoe-legacy-prepared');
    await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
    await ws('compile', out, '--prepared', prepared);
    const rec = JSON.parse(readFileSync(path.join(out, 'compile.json'), 'utf8')) as { artifacts: { model: string } };
    const session = await ort.InferenceSession.create(path.resolve(out, rec.artifacts.model));
    const res = await session.run({});
    tensors.forEach((t, i) => {
      const got = res[`out${i}`]!;
      expect(got.dims).toEqual(t.shape);
      expect(Array.from(got.data as Float32Array)).toEqual(Array.from(t.data));
    });
  });
});

describe('config fields that change the math but are not implemented are refused by name', () => {
  const gptOss = {
    model_type: 'gpt_oss',
    vocab_size: 32,
    hidden_size: 16,
    intermediate_size: 16,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 8,
    num_local_experts: 4,
    num_experts_per_tok: 2,
  };
  const glm = {
    model_type: 'glm4_moe',
    vocab_size: 32,
    hidden_size: 16,
    intermediate_size: 32,
    moe_intermediate_size: 8,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    n_routed_experts: 8,
    num_experts_per_tok: 2,
  };
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      'gpt_oss unknown layer_types entry',
      { ...gptOss, layer_types: ['sliding_attention', 'chunked_attention'] },
      /"layer_types" entry "chunked_attention" is not implemented/,
    ],
    ['gpt_oss layer_types of the wrong length', { ...gptOss, layer_types: ['full_attention'] }, /"layer_types" has 1 entries for 2 layers/],
    [
      'gpt_oss sliding layers without a window',
      { ...gptOss, sliding_window: null },
      /"sliding_window" is null but layer_types has sliding_attention layers/,
    ],
    [
      'gpt_oss unknown rope type',
      { ...gptOss, rope_scaling: { rope_type: 'dynamic', factor: 2 } },
      /rope_scaling type "dynamic" is not supported/,
    ],
    ['gpt_oss yarn without factor', { ...gptOss, rope_scaling: { rope_type: 'yarn' } }, /"yarn" needs a positive numeric "factor"/],
    ['gpt_oss a quantization prepare cannot undo', { ...gptOss, quantization_config: { quant_method: 'gptq' } }, /quant_method "gptq"/],
    ['glm4_moe n_group not dividing the experts', { ...glm, n_group: 3 }, /"n_group" \(3\) does not divide n_routed_experts \(8\)/],
    [
      'granitemoe position embeddings other than rope',
      {
        model_type: 'granitemoe',
        vocab_size: 32,
        hidden_size: 16,
        intermediate_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        position_embedding_type: 'nope',
      },
      /"position_embedding_type" "nope" is not implemented/,
    ],
    [
      'granitemoe top-k above the experts',
      {
        model_type: 'granitemoe',
        vocab_size: 32,
        hidden_size: 16,
        intermediate_size: 8,
        num_hidden_layers: 1,
        num_attention_heads: 2,
        num_local_experts: 2,
        num_experts_per_tok: 3,
      },
      /"num_experts_per_tok" \(3\) exceeds the expert count \(2\)/,
    ],
    ['glm4_moe topk_group above n_group', { ...glm, n_group: 2, topk_group: 3 }, /"topk_group" \(3\) exceeds n_group \(2\)/],
  ];
  it.each(cases)('%s', (_name, cfg, message) => {
    expect(() => archFromConfig(cfg, '/m/config.json')).toThrow(message);
    expect(() => archFromConfig(cfg, '/m/config.json')).toThrow(/^\/m\/config\.json: /);
  });

  it('the CLI prints one line naming the file and the field and exits 1', async () => {
    const dir = path.join(tmp, 'bad-layer-types');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...gptOss, layer_types: ['sliding_attention', 'local'] }));
    const r = await run('export', '--config', dir, '--out', path.join(tmp, 'bad-out'));
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`weight-spec: ${path.join(dir, 'config.json')}: "layer_types" entry "local"`);
  });
});
