/**
 * The graph-interface descriptor (`core/src/artifacts/graph-interface.ts`, issue #29): the
 * runtime inputs and state tensors of a graph with their retained outputs, dims and dtypes, as
 * data from the ArchSpec. It expresses today's per-layer KV, K and V of different head dims
 * (MLA per head), other per-layer state names (MLA's compressed cache) and states without
 * ctx_len (linear attention's conv and recurrent states), each with its `_RetainedState` in
 * layer order, and `batch_index` under continuous batching. The decoder builds from it; qaic,
 * the runners, `check` and `checkGraph` read states back from a graph with `statesOfGraph`.
 */
import { describe, expect, it } from 'vitest';
import { graphFacts } from '../../src/compile/qaic';
import { causalLmCustomIo } from '../../src/compile/qaic-command';
import { RUNTIME_INPUT } from '../../src/check/check-onnx';
import { checkGraph } from '../../src/export/exporter/check-graph';
import { buildCausalLM } from '../../src/export/exporter/decoder';
import { archFromConfig } from '../../src/export/families/arch-from-config';
import { ctxState, decoderInterface, stateDims, statesOfGraph, type StateDecl } from '../../src/artifacts/graph-interface';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { encodeBuiltModel } from '../../src/export/exporter/encode';
import { SYNTHETIC_CONFIGS } from '../support/graph-random';

const dims = { batch: 'batch_size', seq: 'seq_len', cacheBatch: 'batch_size', ctxLen: 'ctx_len', dtype: 'float16' };
const arch = (states: StateDecl[][] | undefined, nKv = 2, headDim = 8) => ({
  nKv,
  headDim,
  layers: (states ?? [undefined, undefined]).map((s) => (s ? { states: s } : {})),
});

describe('graph interface', () => {
  it("today's per-layer KV: past_key.{i} / past_value.{i} [batch, nKv, ctx_len, head_dim], retained in layer order", () => {
    const i = decoderInterface(arch(undefined), { ...dims, continuousBatching: false, ccl: false });
    expect(i.inputs.map((x) => x.name)).toEqual(['input_ids', 'position_ids', 'past_key.0', 'past_value.0', 'past_key.1', 'past_value.1']);
    expect(i.states.map((s) => s.retained)).toEqual([
      'past_key.0_RetainedState',
      'past_value.0_RetainedState',
      'past_key.1_RetainedState',
      'past_value.1_RetainedState',
    ]);
    for (const s of i.states) expect([s.dims, s.dtype, s.ctxAxis]).toEqual([['batch_size', 2, 'ctx_len', 8], 'float16', 2]);
    // continuous batching: batch_index after position_ids, the cache on the full batch; CCL last
    const cb = decoderInterface(arch(undefined), { ...dims, cacheBatch: 'full_batch_size', continuousBatching: true, ccl: true });
    expect(cb.inputs.map((x) => x.name)).toEqual([
      'input_ids',
      'position_ids',
      'batch_index',
      'past_key.0',
      'past_value.0',
      'past_key.1',
      'past_value.1',
      'comp_ctx_lengths',
    ]);
    expect(cb.inputs[2]).toEqual({ name: 'batch_index', dtype: 'int64', dims: ['batch_size', 1] });
    expect(cb.states[0]!.dims[0]).toBe('full_batch_size');
  });

  it('MLA per head (K and V of different head dims) and MLA compressed (other state names)', () => {
    const perHead: StateDecl[] = [
      { kind: 'past_key', dims: ['batch', 4, 'ctx', 16 + 8] },
      { kind: 'past_value', dims: ['batch', 4, 'ctx', 12] },
    ];
    const i = decoderInterface(arch([perHead, perHead]), { ...dims, ctxLen: 64, continuousBatching: false, ccl: false });
    expect(i.states.map((s) => [s.name, s.dims])).toEqual([
      ['past_key.0', ['batch_size', 4, 64, 24]],
      ['past_value.0', ['batch_size', 4, 64, 12]],
      ['past_key.1', ['batch_size', 4, 64, 24]],
      ['past_value.1', ['batch_size', 4, 64, 12]],
    ]);
    const compressed: StateDecl[] = [
      { kind: 'compressed_kv', dims: ['batch', 1, 'ctx', 32] },
      { kind: 'k_pe', dims: ['batch', 1, 'ctx', 8] },
    ];
    const c = decoderInterface(arch([compressed, compressed]), { ...dims, continuousBatching: false, ccl: false });
    expect(c.states.map((s) => [s.name, s.retained, s.dims, s.ctxAxis])).toEqual([
      ['compressed_kv.0', 'compressed_kv.0_RetainedState', ['batch_size', 1, 'ctx_len', 32], 2],
      ['k_pe.0', 'k_pe.0_RetainedState', ['batch_size', 1, 'ctx_len', 8], 2],
      ['compressed_kv.1', 'compressed_kv.1_RetainedState', ['batch_size', 1, 'ctx_len', 32], 2],
      ['k_pe.1', 'k_pe.1_RetainedState', ['batch_size', 1, 'ctx_len', 8], 2],
    ]);
  });

  it('recurrent states have no ctx_len; a hybrid model mixes them with KV layers', () => {
    const delta: StateDecl[] = [
      { kind: 'conv_state', dims: ['batch', 2, 48, 4] },
      { kind: 'recurrent_state', dims: ['batch', 4, 16, 16], dtype: 'float32' },
    ];
    const i = decoderInterface(arch([delta, undefined as unknown as StateDecl[]]), { ...dims, continuousBatching: false, ccl: false });
    expect(i.states.map((s) => [s.name, s.dims, s.dtype, s.ctxAxis])).toEqual([
      ['conv_state.0', ['batch_size', 2, 48, 4], 'float16', undefined],
      ['recurrent_state.0', ['batch_size', 4, 16, 16], 'float32', undefined],
      ['past_key.1', ['batch_size', 2, 'ctx_len', 8], 'float16', 2],
      ['past_value.1', ['batch_size', 2, 'ctx_len', 8], 'float16', 2],
    ]);
    expect(ctxState(i.states)!.name).toBe('past_key.1');
    expect(stateDims(i.states[1]!, 3, 100)).toEqual([3, 4, 16, 16]);
    expect(stateDims(i.states[2]!, 3, 100)).toEqual([3, 2, 100, 8]);
    // read back from a graph's inputs, qaic's custom IO pairs each with its retained output in order
    const read = statesOfGraph(i.inputs);
    expect(read.map((s) => s.name)).toEqual(i.states.map((s) => s.name));
    expect(
      causalLmCustomIo(
        read.map((s) => s.name),
        false,
      ).slice(0, 4),
    ).toEqual([
      ['conv_state.0', 'float16'],
      ['conv_state.0_RetainedState', 'float16'],
      ['recurrent_state.0', 'float16'],
      ['recurrent_state.0_RetainedState', 'float16'],
    ]);
    for (const s of i.states) expect(RUNTIME_INPUT.test(s.name), s.name).toBe(true);
    expect(RUNTIME_INPUT.test('model.layers.0.mlp.gate_proj.weight')).toBe(false);
  });

  it('a built graph: its states, what qaic reads from it, and checkGraph on a state without its retained output', () => {
    const a = archFromConfig(SYNTHETIC_CONFIGS.mistral!, 'c');
    const g = buildCausalLM(a, { dtype: 'float16', ctxLen: 32, continuousBatching: true, batchSize: 4 });
    const wire = parseWireModel(encodeBuiltModel(g.model), 'm.onnx');
    const facts = graphFacts(wire);
    expect(facts.states).toEqual(['past_key.0', 'past_value.0', 'past_key.1', 'past_value.1']);
    expect([facts.ctxLen, facts.cacheBatch, facts.continuousBatching]).toEqual([32, 4, true]);
    expect(g.io.outputs.slice(1)).toEqual(facts.states.map((s) => `${s}_RetainedState`));
    expect(checkGraph(g.model)).toEqual([]);
    const broken = {
      ...g.model,
      graph: { ...g.model.graph, output: g.model.graph.output.filter((o) => o.name !== 'past_value.1_RetainedState') },
    };
    expect(checkGraph(broken).map((p) => p.message)).toContain('state input past_value.1 has no past_value.1_RetainedState output');
  });
});
