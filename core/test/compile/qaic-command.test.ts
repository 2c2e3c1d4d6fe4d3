/**
 * qaic-compile command construction against QEfficient's rules (QEfficient/base/modeling_qeff.py
 * `_compile` and QEFFAutoModelForCausalLM.compile; see core/src/compile/qaic-command.ts). The
 * expected lines are written out by hand from those rules, not produced by the code. Names and
 * CB batches follow main ebf55e81: `build_prefill_specialization` tags its entry "Prefill"
 * (prefill_only None) whatever its seq_len, and sets `full_batch_exec_size = exec_batch_size` (1
 * for a CB prefill of seq_len > 1).
 */
import { describe, expect, it } from 'vitest';
import { customIoYaml, optionFlags, parseExtraOptions, shellLine, specializationsJson } from '../../src/artifacts/qaic-plan';
import { buildQaicPlan, causalLmCustomIo } from '../../src/compile/qaic-command';

/** The state inputs of a two-layer KV graph, in graph order. */
const KV2 = ['past_key.0', 'past_value.0', 'past_key.1', 'past_value.1'];
describe('qaic option → flag rules', () => {
  it('maps a_b=v to -a-b=v, True to a bare flag, False to nothing (every underscore replaced)', () => {
    expect(
      optionFlags([
        ['aic_num_cores', 16],
        ['convert_to_fp16', true],
        ['mxfp6_matmul', false],
        ['aic_hw_version', 'ai200'],
        ['mos', 1],
        ['aic_enable_depth_first', true],
      ]),
    ).toEqual(['-aic-num-cores=16', '-convert-to-fp16', '-aic-hw-version=ai200', '-mos=1', '-aic-enable-depth-first']);
  });

  it('parses --qaic-option words like Python kwargs', () => {
    expect(parseExtraOptions(['mos=1', 'aic_enable_depth_first', 'stats-level=10', 'x=false'])).toEqual([
      ['mos', '1'],
      ['aic_enable_depth_first', true],
      ['stats_level', '10'],
      ['x', false],
    ]);
    expect(() => parseExtraOptions(['=3'])).toThrow(/bad qaic option/);
  });
});

describe('causal-LM compile (QEFFAutoModelForCausalLM.compile → _compile)', () => {
  const g = { states: KV2, continuousBatching: false, ctxLen: 256, batch: undefined };

  it('builds the full command in QEfficient order', () => {
    const plan = buildQaicPlan('/e/model.qaic.onnx', '/e/qpc-0123456789abcdef', { numCores: 14, mxfp6Matmul: true }, g);
    expect(plan.command).toEqual([
      '/opt/qti-aic/exec/qaic-compile',
      '-aic-hw',
      '-aic-hw-version=ai100',
      '-m=/e/model.qaic.onnx',
      '-retained-state',
      '-convert-to-fp16',
      '-mxfp6-matmul',
      '-aic-num-cores=14',
      '-network-specialization-config=/e/qpc-0123456789abcdef/specializations.json',
      '-custom-IO-list-file=/e/qpc-0123456789abcdef/custom_io.yaml',
      '-aic-binary-dir=/e/qpc-0123456789abcdef/qpc',
    ]);
  });

  it('defaults: 16 cores, no -mxfp6-matmul, ai100; extra options after, aic_hw_version popped to the front', () => {
    const plan = buildQaicPlan('/m.onnx', '/c', { extra: ['mos=1', 'aic_hw_version=ai200', 'aic_enable_depth_first'] }, g);
    expect(shellLine(plan.command)).toBe(
      '/opt/qti-aic/exec/qaic-compile -aic-hw -aic-hw-version=ai200 -m=/m.onnx -retained-state -convert-to-fp16 ' +
        '-aic-num-cores=16 -mos=1 -aic-enable-depth-first -network-specialization-config=/c/specializations.json ' +
        '-custom-IO-list-file=/c/custom_io.yaml -aic-binary-dir=/c/qpc',
    );
  });

  it('writes specializations.json as create_json(to_named_specializations(…)): indent 4, "," / ":", sorted keys', () => {
    const plan = buildQaicPlan('/m.onnx', '/c', { prefillSeqLen: 32 }, g);
    expect(plan.specializationsText).toBe(
      '{\n    "specializations":[\n        {\n            "name":"Prefill",\n            "symbols":{\n                "batch_size":"1",\n' +
        '                "ctx_len":"256",\n                "seq_len":"32"\n            }\n        },\n        {\n            "name":"Decode",\n' +
        '            "symbols":{\n                "batch_size":"1",\n                "ctx_len":"256",\n                "seq_len":"1"\n            }\n        }\n    ]\n}',
    );
    // prefill_seq_len == 1 → only the prefill specialization, tagged "Prefill" (prefill_only is None, not False)
    expect(JSON.parse(buildQaicPlan('/m.onnx', '/c', { prefillSeqLen: 1 }, g).specializationsText!).specializations).toEqual([
      { name: 'Prefill', symbols: { batch_size: '1', seq_len: '1', ctx_len: '256' } },
    ]);
  });

  it('continuous batching: prefill batch 1 with full_batch_size and full_batch_exec_size 1, decode batch = full_batch_size', () => {
    const plan = buildQaicPlan('/m.onnx', '/c', { fullBatchSize: 4, ctxLen: 256 }, { ...g, continuousBatching: true });
    expect(JSON.parse(plan.specializationsText!).specializations).toEqual([
      { name: 'Prefill', symbols: { batch_size: '1', seq_len: '32', ctx_len: '256', full_batch_size: '4', full_batch_exec_size: '1' } },
      { name: 'Decode', symbols: { batch_size: '4', seq_len: '1', ctx_len: '256', full_batch_size: '4' } },
    ]);
    expect(() => buildQaicPlan('/m.onnx', '/c', {}, { ...g, continuousBatching: true })).toThrow(/--full-batch-size/);
  });

  it('custom IO: each past_{kv}.{i} next to its _RetainedState output, layer by layer, float16 or mxint8', () => {
    expect(causalLmCustomIo(KV2, false).map((e) => e[0])).toEqual([
      'past_key.0',
      'past_key.0_RetainedState',
      'past_value.0',
      'past_value.0_RetainedState',
      'past_key.1',
      'past_key.1_RetainedState',
      'past_value.1',
      'past_value.1_RetainedState',
    ]);
    expect(customIoYaml(causalLmCustomIo(['past_key.0', 'past_value.0'], true))).toBe(
      ' - IOName: past_key.0\n   Precision: mxint8\n\n - IOName: past_key.0_RetainedState\n   Precision: mxint8\n\n' +
        ' - IOName: past_value.0\n   Precision: mxint8\n\n - IOName: past_value.0_RetainedState\n   Precision: mxint8\n\n',
    );
  });

  it('drops compile_only with a warning (qaic-compile no longer takes -compile-only)', () => {
    const plan = buildQaicPlan('/m.onnx', '/c', { extra: ['compile_only', 'mos=1'] }, g);
    expect(plan.command).not.toContain('-compile-only');
    expect(plan.command).toContain('-mos=1');
    expect(plan.warnings).toEqual([expect.stringMatching(/ignoring compile_only/)]);
  });

  it('a graph without a KV cache gets no -retained-state and no custom IO file', () => {
    const plan = buildQaicPlan('/m.onnx', '/c', {}, { states: [], continuousBatching: false });
    expect(plan.command).not.toContain('-retained-state');
    expect(plan.customIoFile).toBeUndefined();
    expect(plan.command.at(-1)).toBe('-aic-binary-dir=/c/qpc');
    expect(
      specializationsJson([
        [
          ['batch_size', 1],
          ['seq_len', 32],
        ],
      ]),
    ).toContain('"seq_len":"32"');
  });

  it('quotes words with spaces for the printed line', () => {
    expect(shellLine(['/a b/qaic-compile', "-m=/x/it's.onnx"])).toBe(`'/a b/qaic-compile' '-m=/x/it'\\''s.onnx'`);
  });
});
