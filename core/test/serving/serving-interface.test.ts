/**
 * The interface of CCL and sampler exports against QEfficient's, transcribed from
 * quic/efficient-transformers:
 * - `QEfficient/transformers/models/modeling_auto.py` (commit a53a44dfd3efe0fe6fe11d8abccf184c4e6027fd)
 *   `QEFFAutoModelForCausalLM.export`: `comp_ctx_lengths` = `torch.randint(0, 512, (512,),
 *   dtype=torch.long)` with dynamic axis `{0: "comp_ctx_lengths"}`; output names
 *   `["probs"] if return_pdfs` + `["next_tokens"]` with the sampler, else `["logits"]`, then
 *   `past_{kv}.{i}_RetainedState`;
 * - `QEfficient/utils/sampler_utils.py` `get_sampling_inputs_and_outputs`: the sampler inputs,
 *   their dtypes and dynamic axes (buffers `[full_batch_size if continuous_batching else
 *   batch_size, vocab]` bool, `random_numbers` `[batch_size, max_top_k_ids]`), and the
 *   `past_{repetition,presence}_penalty_buffer_RetainedState` outputs;
 * - `QEfficient/transformers/sampler/sampler.py` `sampler_forward`: `next_tokens` int64
 *   `[batch, spec_length = 1, 1]`, `probs` float `[batch, 1, vocab]`.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { archFromConfig, buildCausalLM, checkGraph, encodeBuiltModel, type ValueInfoObj } from '../../src/export/exporter';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

const tmp = tempDirs('ws-serving-onnx-');
const ELEM: Record<number, string> = { 1: 'float', 6: 'int32', 7: 'int64', 9: 'bool' };
const describeIo = (vs: ValueInfoObj[]) =>
  vs.map((v) => [
    v.name,
    ELEM[v.type.tensorType.elemType],
    v.type.tensorType.shape.dim.map((d) => ('dimValue' in d ? d.dimValue : d.dimParam)),
  ]);

/** QEfficient's non-weight inputs of a continuous-batching CCL + sampler export (mistral: 2 layers, 2 kv heads, head_dim 8, vocab 96). */
function qeffInputs(ctx: number, k: number): [string, string, (number | string)[]][] {
  const cache = (n: string): [string, string, (number | string)[]] => [n, 'float', ['full_batch_size', 2, ctx, 8]];
  return [
    ['input_ids', 'int64', ['batch_size', 'seq_len']],
    ['position_ids', 'int64', ['batch_size', 'seq_len']],
    cache('past_key.0'),
    cache('past_value.0'),
    cache('past_key.1'),
    cache('past_value.1'),
    ['comp_ctx_lengths', 'int64', ['comp_ctx_lengths']],
    ['batch_index', 'int64', ['batch_size', 1]],
    ['last_accepted_output_tokens', 'int64', ['batch_size', 'seq_len']],
    ['past_repetition_penalty_buffer', 'bool', ['full_batch_size', 96]],
    ['repetition_penalties', 'float', ['batch_size', 1]],
    ['past_presence_penalty_buffer', 'bool', ['full_batch_size', 96]],
    ['presence_penalties', 'float', ['batch_size', 1]],
    ['temperatures', 'float', ['batch_size', 1]],
    ['top_ks', 'int32', ['batch_size', 1]],
    ['top_ps', 'float', ['batch_size', 1]],
    ['min_ps', 'float', ['batch_size', 1]],
    ['random_numbers', 'float', ['batch_size', k]],
  ];
}

it("a CCL + sampler export (continuous batching) has QEfficient's input and output names, dtypes and shapes", async () => {
  const a = archFromConfig(SYNTHETIC_CONFIGS.mistral, 'mistral/config.json');
  const g = buildCausalLM(a, {
    dtype: 'float32',
    ctxLen: 32,
    continuousBatching: true,
    compCtxLengths: { prefill: [16], decode: [16, 32] },
    sampler: { maxTopK: 40, returnPdfs: true },
  });
  expect(checkGraph(g.model)).toEqual([]);
  const weights = new Set(g.weights.map((w) => w.name));
  const inputs = describeIo(g.model.graph.input.filter((v) => !weights.has(v.name)));
  const byName = (xs: unknown[][]) => new Map(xs.map((x) => [x[0], x.slice(1)]));
  // same names with the same dtype and shape (batch_index sits before the caches here; order is not part of the interface)
  expect(byName(inputs)).toEqual(byName(qeffInputs(32, 40)));
  // the sampler's inputs in QEfficient's (forward signature) order, after the model's
  const sampler = qeffInputs(32, 40)
    .slice(8)
    .map((x) => x[0]);
  expect(inputs.slice(-sampler.length).map((x) => x[0])).toEqual(sampler);
  expect(describeIo(g.model.graph.output)).toEqual([
    ['probs', 'float', ['batch_size', 1, 96]],
    ['next_tokens', 'int64', ['batch_size', 1, 1]],
    ...[0, 1].flatMap((i) => ['key', 'value'].map((kv) => [`past_${kv}.${i}_RetainedState`, 'float', ['full_batch_size', 2, 32, 8]])),
    ['past_repetition_penalty_buffer_RetainedState', 'bool', ['full_batch_size', 96]],
    ['past_presence_penalty_buffer_RetainedState', 'bool', ['full_batch_size', 96]],
  ]);
  // ONNX Runtime's type and shape inference accepts the graph
  await ort.InferenceSession.create(encodeBuiltModel(g.model), { graphOptimizationLevel: 'disabled' });
});

it('without --return-pdfs only next_tokens; without CCL no comp_ctx_lengths; without the sampler logits as before', () => {
  const a = archFromConfig(SYNTHETIC_CONFIGS.mistral, 'mistral/config.json');
  const s = buildCausalLM(a, { dtype: 'float32', sampler: { maxTopK: 96, returnPdfs: false } });
  expect(s.io.outputs.slice(0, 1)).toEqual(['next_tokens']);
  expect(s.io.inputs).not.toContain('comp_ctx_lengths');
  expect(s.model.graph.input.find((v) => v.name === 'past_repetition_penalty_buffer')!.type.tensorType.shape.dim).toEqual([
    { dimParam: 'batch_size' },
    { dimValue: 96 },
  ]);
  const c = buildCausalLM(a, { dtype: 'float16', ctxLen: 64, compCtxLengths: { prefill: [32], decode: [48, 64] } });
  expect(c.io.outputs[0]).toBe('logits');
  expect(c.io.inputs).toContain('comp_ctx_lengths');
  expect(c.io.inputs).not.toContain('temperatures');
  expect(Object.fromEntries(c.model.metadataProps.map((e) => [e.key, e.value]))).toMatchObject({
    'weight_spec.comp_ctx_lengths_prefill': '32',
    'weight_spec.comp_ctx_lengths_decode': '48,64',
  });
});

describeOnnxChecker('ONNX checker (python3-onnx, strict shape inference) on CCL and sampler graphs', () => {
  it('opset 17: CCL + sampler + probs, with and without continuous batching, float32 and float16', () => {
    const dir = tmp();
    const a = archFromConfig(SYNTHETIC_CONFIGS.mistral, 'mistral/config.json');
    const files = [
      { continuousBatching: true, dtype: 'float32' as const },
      { continuousBatching: false, dtype: 'float16' as const },
    ].map((v, i) => {
      const g = buildCausalLM(a, {
        ...v,
        ctxLen: 32,
        compCtxLengths: { prefill: [16], decode: [16, 32] },
        sampler: { maxTopK: 40, returnPdfs: true },
      });
      expect(g.model.opsetImport[0]!.version).toBe(17);
      const f = path.join(dir, `serving-${i}.onnx`);
      fs.writeFileSync(f, encodeBuiltModel(g.model));
      return f;
    });
    expectOnnxValid(files);
  });
});
