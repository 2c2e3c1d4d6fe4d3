/**
 * qaic for a LoRA graph: QEfficient compiles its LoRA model with the causal LM's own compile —
 * `QEffAutoLoraModelForCausalLM` (QEfficient/peft/lora/auto.py, quic/efficient-transformers
 * ebf55e8159c8b87bff6d8028541b824244b16c81) overrides export and generate, not compile, and its
 * `lora_ids` takes `{0: "batch_size"}` as dynamic axis, a symbol the specializations already
 * bind. So the recording compiler must receive exactly what QEfficient's rules give the plain
 * graph (test/support/qeff-qaic-rules.ts, as qaic-recording-parity.test.ts checks): the same
 * argv, specializations and custom IO (the caches only; lora_ids is int64 and the stacked
 * adapters are weights the spec binds, like every other weight).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { BUILT_LORA, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { recordingCompiler } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';
import { parseWireModel } from '../../src/formats/onnx/wire-model';

const tmp = tempDirs('ws-qaic-lora-');

describeFixtures('qaic-compile of a LoRA graph through a recording compiler', () => {
  it('argv, specializations.json, custom_io.yaml and hashed_compile_params.json as QEfficient compiles its LoRA model', async () => {
    const root = tmp();
    // the adapters name their base as ../../llama: copied side by side, as in the fixtures
    const model = path.join(root, 'llama');
    fs.cpSync(path.join(fixturesDir(), 'llama'), model, { recursive: true });
    fs.cpSync(path.join(fixturesDir(), BUILT_LORA[0]), path.join(root, BUILT_LORA[0]), { recursive: true });
    const lora = ['adapter_a', 'adapter_b'].flatMap((a) => ['--lora', path.join(root, BUILT_LORA[0], a)]);
    const record = path.join(root, 'record');
    const bin = recordingCompiler(root, record);
    const ok = async (args: string[]) => {
      const r = await cliInProcess(args, {
        cwd: root,
        env: { WEIGHT_SPEC_QAIC_COMPILE: bin, WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') },
      });
      expect(r.code, r.stderr).toBe(0);
      return r;
    };
    await ok(['prepare', '--checkpoint', model, '--dtype', 'float32', ...lora]);
    const out = path.join(root, 'export-lora');
    await ok(['export', '--config', model, '--out', out, '--ctx-len', '64', ...lora]);
    const inputs = parseWireModel(fs.readFileSync(path.join(out, 'model.onnx')), 'model.onnx').inputs.map((i) => i.name);
    expect(inputs).toContain('lora_ids');
    const r = await ok(['compile', out, '--backend', 'qaic', '--prefill-seq-len', '16']);
    const qpc = /-aic-binary-dir=(\S+)\/qpc$/m.exec(r.stderr + r.stdout)![1]!;
    const want = qeffQaicCompile({
      batch_size: 1,
      full_batch_size: null,
      continuous_batching: false,
      decode_only: false,
      ccl: null,
      num_cores: 16,
      mxfp6_matmul: false,
      mxint8_kv_cache: false,
      hw: 'ai100',
      prefill_seq_len: 16,
      ctx_len: 64,
      compiler: bin,
      num_layers: 2,
      onnx: path.join(out, 'model.onnx'),
      compile_dir: qpc,
    });
    expect(fs.readFileSync(path.join(record, 'argv'), 'utf8').trim().split('\n')).toEqual(want.argv);
    expect(fs.readFileSync(path.join(record, 'specializations.json'), 'utf8')).toBe(want.specializations);
    expect(fs.readFileSync(path.join(record, 'custom_io.yaml'), 'utf8')).toBe(want.custom_io);
    expect(fs.readFileSync(path.join(qpc, 'hashed_compile_params.json'), 'utf8')).toBe(want.hashed);
  });
});
