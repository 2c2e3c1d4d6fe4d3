/**
 * StableLM (`families/stablelm.ts`), the first classic family added as one file plus its test
 * (issue #29). A random BF16 checkpoint with HF's key names (graph-reference-stablelm.ts, from
 * transformers `models/stablelm/modeling_stablelm.py` @ 00dcc6dda6f6d8e69541a6b51f97986a80242367)
 * goes through `export --config` (real files); the written model.onnx runs on ONNX Runtime with
 * the weights weight_spec.json names, and its logits (a 7-token prefill, then one token per decode
 * step through the KV cache) are judged against the independent float64 reference forward.
 * Also: ONNX's checker on the written graph, the spec's inputs against the checkpoint's keys, the
 * default partial_rotary_factor (0.25) and the qk_layernorm refusal.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig } from '../../src/export/families/arch-from-config';
import { exportFromConfig } from '../../src/export/export-config';
import { planLayout } from '../../src/export/exporter/plan-layout';
import { parseSpecText } from '../../src/spec';
import { stablelmReference } from '../support/graph-reference-stablelm';
import { SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { maxAbsDiff, type F32 } from '../support/graph-support';

const tmp = tempDirs('ws-stablelm-');
const CTX = 16;
const IDS = [5, 17, 3, 78, 41, 9, 60, 2, 33, 71]; // < 80, the smaller config's vocab
const PREFILL = 7;

interface Exported {
  dir: string;
  raw: Map<string, F32>;
  onnx: string;
  spec: ReturnType<typeof parseSpecText>['spec'] & object;
}

/** A random model folder of `cfg` exported with `export --config` (KV cache of CTX). */
async function exportRandom(name: string, cfg: Record<string, unknown>): Promise<Exported> {
  const root = tmp();
  const dir = path.join(root, name);
  const raw = await writeRandomModel(dir, cfg, 11);
  const out = path.join(root, `${name}-out`);
  await exportFromConfig({ config: dir, out, ctxLen: CTX, planner: planLayout });
  const parsed = parseSpecText(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), 'weight_spec.json');
  expect(parsed.problems.filter((p) => p.severity === 'error')).toEqual([]);
  return { dir, raw, onnx: path.join(out, 'model.onnx'), spec: parsed.spec! };
}

/** Prefill of IDS[0..PREFILL) then one decode step per remaining token: the logits rows of positions PREFILL-1 … end. */
async function runExported(e: Exported, nKv: number, hd: number, layers: number): Promise<number[][]> {
  const session = await ort.InferenceSession.create(readFileSync(e.onnx));
  const weights: Record<string, ort.Tensor> = {};
  // feed each graph weight input from the checkpoint key weight_spec.json names for it
  for (const i of e.spec.inputs) {
    const t = e.raw.get(i.location.key);
    if (!t) throw new Error(`checkpoint lacks ${i.location.key}`);
    weights[i.name] = new ort.Tensor('float32', t.data, t.shape);
  }
  let cache: ort.Tensor[] = [];
  for (let l = 0; l < layers; l++)
    for (let kv = 0; kv < 2; kv++) cache.push(new ort.Tensor('float32', new Float32Array(nKv * CTX * hd), [1, nKv, CTX, hd]));
  const names = Array.from({ length: layers }, (_, l) => [`past_key.${l}`, `past_value.${l}`]).flat();
  const step = async (ids: number[], start: number) => {
    const feeds: Record<string, ort.Tensor> = { ...weights };
    feeds.input_ids = new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
    feeds.position_ids = new ort.Tensor('int64', BigInt64Array.from(ids.map((_, i) => BigInt(start + i))), [1, ids.length]);
    names.forEach((n, k) => (feeds[n] = cache[k]!));
    const r = await session.run(feeds);
    cache = names.map((n) => r[`${n}_RetainedState`]!);
    const lg = r.logits!;
    const V = lg.dims.at(-1)!;
    return Array.from((lg.data as Float32Array).subarray(lg.data.length - V));
  };
  const rows = [await step(IDS.slice(0, PREFILL), 0)];
  for (let t = PREFILL; t < IDS.length; t++) rows.push(await step([IDS[t]!], t));
  return rows;
}

describe('stablelm: export --config, ONNX Runtime vs the float64 reference (modeling_stablelm.py)', () => {
  for (const name of ['stablelm', 'stablelm-parallel-bias']) {
    it(`${name}: prefill + KV decode logits ≤ 1e-4; weight_spec.json inputs are exactly the checkpoint's HF keys`, async () => {
      const cfg = SYNTHETIC_CONFIGS[name]!;
      const e = await exportRandom(name, cfg);
      // every graph weight input maps to a checkpoint key of HF's name, and every key is used
      const session = await ort.InferenceSession.create(readFileSync(e.onnx));
      const state = /^(input_ids|position_ids|past_key\.\d+|past_value\.\d+)$/;
      expect(e.spec.inputs.map((i) => i.name).sort()).toEqual(session.inputNames.filter((n) => !state.test(n)).sort());
      expect(e.spec.inputs.map((i) => i.location.key).sort()).toEqual([...e.raw.keys()].sort());
      expect(e.spec.model_name).toBe('StableLmForCausalLM');
      if (cfg.use_parallel_residual) expect([...e.raw.keys()].some((k) => k.includes('post_attention_layernorm'))).toBe(false);
      if (cfg.use_qkv_bias) expect(e.raw.has('model.layers.0.self_attn.q_proj.bias')).toBe(true);

      const a = archFromConfig(cfg, name);
      const got = await runExported(e, a.nKv, a.headDim, a.layers.length);
      const ref = stablelmReference(cfg, e.raw, IDS);
      expect(maxAbsDiff(got, ref.slice(PREFILL - 1))).toBeLessThanOrEqual(1e-4);
    });
  }

  it('partial_rotary_factor defaults to 0.25, and it matters: the default equals 0.25, 0.5 differs', async () => {
    const { partial_rotary_factor: _, ...cfg } = SYNTHETIC_CONFIGS.stablelm!;
    void _;
    const e = await exportRandom('stablelm-default-rotary', cfg);
    const a = archFromConfig(cfg, 'c');
    const got = await runExported(e, a.nKv, a.headDim, a.layers.length);
    const ref = stablelmReference({ ...cfg, partial_rotary_factor: 0.25 }, e.raw, IDS).slice(PREFILL - 1);
    expect(maxAbsDiff(got, ref)).toBeLessThanOrEqual(1e-4);
    const half = stablelmReference({ ...cfg, partial_rotary_factor: 0.5 }, e.raw, IDS).slice(PREFILL - 1);
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

describeOnnxChecker('stablelm: ONNX checker (python3-onnx, strict shape inference)', () => {
  it('the exported model.onnx of both configs passes', async () => {
    const files: string[] = [];
    for (const name of ['stablelm', 'stablelm-parallel-bias']) {
      const e = await exportRandom(`${name}-check`, SYNTHETIC_CONFIGS[name]!);
      expect(existsSync(e.onnx)).toBe(true);
      files.push(e.onnx);
    }
    expectOnnxValid(files);
  });
});
