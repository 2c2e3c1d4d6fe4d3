/**
 * Structural checks of the exported graphs (the onnx.checker subset in check-graph.ts, plus
 * ONNX Runtime loading the encoded bytes), the checker's own ability to fail, and the clear
 * refusals for configs the builder does not implement.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { archFromConfig, buildCausalLM, checkGraph, encodeBuiltModel, type ModelObj } from '../../src/export/exporter';
import { keyForInput, type PreparedLayout } from '../../src/export/exporter/layout';
import { decodeModel, encodeModel } from '../../src/formats/onnx';
import { configsDir, fixturesDir, haveFixtures, LEGACY_FAMILIES } from '../../../test/support/fixtures';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

const readJson = (f: string) => JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;
const FULL_SIZE = ['qwen3-30b-a3b', 'llama-3.1-8b', 'mixtral-8x7b'];
const configs: [string, Record<string, unknown>][] = [
  ...Object.entries(SYNTHETIC_CONFIGS),
  ...(haveFixtures()
    ? [
        ...LEGACY_FAMILIES.map((f) => [f, readJson(path.join(fixturesDir(), f, 'config.json'))] as [string, Record<string, unknown>]),
        ...FULL_SIZE.map((n) => [n, readJson(path.join(configsDir(), `${n}.json`))] as [string, Record<string, unknown>]),
      ]
    : []),
];

describe('exported graphs are structurally sound', () => {
  for (const [name, cfg] of configs) {
    for (const variant of [
      {},
      { continuousBatching: true, batchSize: 4 },
      { phase: 'decode' as const, ctxLen: 64 },
      { phase: 'prefill' as const, dtype: 'float16' as const },
    ]) {
      // full-size graphs take seconds to load under ORT; load their default variant only
      const load = !FULL_SIZE.includes(name) || Object.keys(variant).length === 0;
      it(`${name} ${JSON.stringify(variant)}: checker passes${load ? ' and ONNX Runtime loads it' : ''}`, async () => {
        const g = buildCausalLM(archFromConfig(cfg, `${name}/config.json`), { dtype: 'float32', ...variant });
        expect(checkGraph(g.model)).toEqual([]);
        if (!load) return;
        // load = ORT's own type and shape inference over the graph (optimizations off: load-time only)
        const s = await ort.InferenceSession.create(encodeBuiltModel(g.model), { graphOptimizationLevel: 'disabled' });
        const weights = g.weights.map((w) => w.name);
        expect(s.inputNames).toEqual(expect.arrayContaining([...g.io.inputs, ...weights]));
        expect(s.inputNames.length).toBe(g.io.inputs.length + weights.length);
        expect(s.outputNames).toEqual(g.io.outputs);
        if (variant.continuousBatching) expect(s.inputNames).toContain('batch_index');
        await s.release();
      });
    }
  }

  it('the direct encoder writes what the onnx.proto codec reads (decode → re-encode is byte-identical)', () => {
    for (const name of ['gemma', 'qwen3_moe', 'gpt2-prefixed']) {
      const g = buildCausalLM(archFromConfig(SYNTHETIC_CONFIGS[name]!, 'c'), { dtype: 'float16', continuousBatching: true });
      const bytes = encodeBuiltModel(g.model);
      const decoded = decodeModel(bytes, `${name}.onnx`);
      expect(Buffer.compare(Buffer.from(encodeModel(decoded)), Buffer.from(bytes))).toBe(0);
      expect(decoded.graph?.node?.length).toBe(g.model.graph.node.length);
      expect(checkGraph(decoded as unknown as ModelObj)).toEqual([]);
    }
  });

  it('the checker finds undefined inputs, missing opsets, unproduced outputs and retained-state drift', () => {
    const fresh = () => buildCausalLM(archFromConfig(SYNTHETIC_CONFIGS.qwen3!, 'c'), { dtype: 'float32' }).model;
    const a = fresh();
    a.graph.node.splice(a.graph.node.length - 10, 1);
    expect(checkGraph(a).map((p) => p.code)).toContain('undefined-input');
    const b = fresh();
    b.opsetImport = [];
    expect(checkGraph(b).map((p) => p.code)).toContain('opset');
    const c = fresh();
    c.graph.node = c.graph.node.filter((n) => n.output[0] !== 'logits');
    expect(checkGraph(c).map((p) => p.code)).toContain('output-undefined');
    const d = fresh();
    d.graph.output[1]!.type.tensorType.shape.dim[2] = { dimValue: 7 };
    expect(checkGraph(d).map((p) => p.code)).toContain('retained-mismatch');
  });
});

describe('config fields map to the architecture', () => {
  it('rope_parameters (newer HF configs) means the same as rope_theta + rope_scaling', () => {
    const old = SYNTHETIC_CONFIGS['llama-rope-llama3']!;
    const { rope_scaling, rope_theta, ...rest } = old as Record<string, unknown>;
    const newer = { ...rest, rope_parameters: { ...(rope_scaling as object), rope_theta } };
    expect(archFromConfig(newer, 'c').rope).toEqual(archFromConfig(old, 'c').rope);
  });
  it('qwen3_moe: mlp_only_layers and decoder_sparse_step choose dense layers', () => {
    const cfg = { ...SYNTHETIC_CONFIGS.qwen3_moe!, num_hidden_layers: 4, decoder_sparse_step: 2, mlp_only_layers: [3] };
    expect(archFromConfig(cfg, 'c').layers.map((l) => l.mlp.kind)).toEqual(['gated', 'moe', 'gated', 'gated']);
  });
  it('GPT-2 inputs are GPT2LMHeadModel parameter paths; a checkpoint without the prefix is mapped by key', () => {
    // QEfficient names inputs by the module's parameter path whatever the checkpoint holds
    // (issue 21.8); the spec maps the name to the checkpoint's key (GPT2Model saves `wte.weight`).
    const cfg = SYNTHETIC_CONFIGS['gpt2-prefixed']!;
    expect(archFromConfig(cfg, 'c').embed).toBe('transformer.wte.weight');
    expect(archFromConfig(cfg, 'c', { keys: new Set(['wte.weight', 'wpe.weight']) }).embed).toBe('transformer.wte.weight');
    const t = { file: 'model.safetensors', dtype: 'F32', shape: [1] };
    const layout = (keys: string[]): PreparedLayout =>
      ({ dir: '/p', tensors: new Map(keys.map((k) => [k, t] as const)), source: 'plan' }) as PreparedLayout;
    expect(keyForInput('transformer.wte.weight', layout(['wte.weight', 'h.0.ln_1.weight']), cfg)).toBe('wte.weight');
    expect(keyForInput('transformer.h.0.ln_1.weight', layout(['wte.weight', 'h.0.ln_1.weight']), cfg)).toBe('h.0.ln_1.weight');
    expect(keyForInput('transformer.wte.weight', layout(['transformer.wte.weight', 'wte.weight']), cfg)).toBe('transformer.wte.weight');
    expect(keyForInput('transformer.wte.weight', layout(['other.weight']), cfg)).toBeUndefined();
  });
});

describe('configs the builder does not implement are refused with one line', () => {
  const llama = SYNTHETIC_CONFIGS['llama-rope-llama3']!;
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['unknown model_type', { ...llama, model_type: 'bloom' }, /model_type "bloom" is not supported/],
    ['missing model_type', { hidden_size: 4 }, /"model_type" is missing/],
    ['unknown rope type', { ...llama, rope_scaling: { rope_type: 'dynamic', factor: 4 } }, /rope_scaling type "dynamic" is not supported/],
    ['dynamic rope', { ...llama, rope_scaling: { type: 'dynamic', factor: 2 } }, /rope_scaling type "dynamic"/],
    ['llama3 rope without its fields', { ...llama, rope_scaling: { rope_type: 'llama3', factor: 8 } }, /needs a numeric "low_freq_factor"/],
    [
      'longrope outside phi3',
      { ...llama, rope_scaling: { type: 'longrope', short_factor: [1], long_factor: [1] } },
      /"rope_scaling" type "longrope" is only implemented for phi3/,
    ],
    [
      'phi3 longrope with wrong factor count',
      { ...llama, model_type: 'phi3', rope_scaling: { type: 'longrope', short_factor: [1], long_factor: [1] } },
      /"short_factor" must be 8 positive numbers/,
    ],
    ['quantized', { ...llama, quantization_config: { quant_method: 'awq' } }, /quantization_config/],
    ['wrong field type', { ...llama, num_hidden_layers: '2' }, /: num_hidden_layers: .*expected number, received string/],
    ['unsupported activation', { ...llama, hidden_act: 'gelu_fast' }, /"hidden_act" = "gelu_fast"/],
    ['qwen2 sliding windows', { ...llama, model_type: 'qwen2', use_sliding_window: true }, /use_sliding_window/],
    ['heads not dividing', { ...llama, num_key_value_heads: 3 }, /num_key_value_heads/],
    [
      'gpt2 inverse layer scaling',
      { ...SYNTHETIC_CONFIGS['gpt2-prefixed']!, scale_attn_by_inverse_layer_idx: true },
      /scale_attn_by_inverse_layer_idx/,
    ],
    ['moe without experts', { ...llama, model_type: 'mixtral' }, /num_local_experts/],
  ];
  for (const [what, cfg, re] of cases) {
    it(what, () => {
      let msg = '';
      try {
        archFromConfig(cfg, '/m/config.json');
      } catch (e) {
        msg = (e as Error).message;
      }
      expect(msg).toMatch(re);
      expect(msg.startsWith('/m/config.json: ')).toBe(true);
      expect(msg).not.toContain('\n');
    });
  }
});
