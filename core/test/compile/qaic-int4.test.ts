/**
 * A kept GPTQ graph (`export --keep-quantized` of the llama_gptq fixture) through `compile --backend
 * qaic` with the recording compiler (test/support/recording-compiler.ts): qaic-compile gets the
 * command, specializations and custom IO QEfficient's rules give any causal LM of this shape
 * (test/support/qeff-qaic-rules.ts, the parity suite's transcription), and the graph it is handed
 * is QEfficient's quantized form: every decoder Linear a `com.microsoft` MatMulNBits with the
 * attributes and inputs `QuantLinearTorchFunction.symbolic` emits
 * (quic/efficient-transformers `QEfficient/customop/matmulnbits.py`, main ebf55e8: inputs
 * x, qweight, scales, qzeros[, g_idx]; `K_i`, `N_i`, `bits_i`, `block_size_i`), qweight uint8
 * `[N, K/block, block/2]`, scales float32 `[N·K/block]`, qzeros uint8 flattened (QuantLinearORT's
 * buffers), bound through the embedded weight spec to the prepared folder's keys.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { recordingCompiler } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';
import { readModel } from '../../src/formats/onnx';
import { SPEC_METADATA_KEY } from '../../src/spec';

const tmp = tempDirs('ws-qaic-int4-');

describeFixtures('qaic: a kept GPTQ graph in QEfficient MatMulNBits form', () => {
  it('argv / specializations / custom IO as QEfficient, the graph handed over computes with MatMulNBits', async () => {
    const root = tmp();
    const model = path.join(root, 'llama_gptq');
    fs.cpSync(path.join(fixturesDir(), 'llama_gptq'), model, { recursive: true });
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
    await ok(['prepare', '--checkpoint', model, '--dtype', 'float32', '--keep-quantized']);
    const out = path.join(root, 'export');
    await ok(['export', '--config', model, '--out', out, '--ctx-len', '64', '--keep-quantized']);
    const r = await ok(['compile', out, '--backend', 'qaic']);
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
      prefill_seq_len: 32,
      ctx_len: 64,
      compiler: bin,
      num_layers: 2,
      onnx: path.join(out, 'model.onnx'),
      compile_dir: qpc,
    });
    expect(fs.readFileSync(path.join(record, 'argv'), 'utf8').trim().split('\n')).toEqual(want.argv);
    expect(fs.readFileSync(path.join(record, 'specializations.json'), 'utf8')).toBe(want.specializations);
    expect(fs.readFileSync(path.join(record, 'custom_io.yaml'), 'utf8')).toBe(want.custom_io);

    const m = await readModel(path.join(out, 'model.onnx'));
    const g = m.graph!;
    expect((m.opsetImport ?? []).map((o) => `${o.domain || 'ai.onnx'}:${Number(o.version)}`).sort()).toEqual([
      'ai.onnx:17',
      'com.microsoft:1',
    ]);
    const nodes = (g.node ?? []).filter((n) => n.opType === 'MatMulNBits');
    expect(nodes.length).toBe(14);
    const inputs = new Map((g.input ?? []).map((i) => [i.name!, i]));
    const spec = JSON.parse((m.metadataProps ?? []).find((p) => p.key === SPEC_METADATA_KEY)!.value!) as {
      inputs: { name: string; location: { key: string } }[];
    };
    const bound = new Map(spec.inputs.map((i) => [i.name, i.location.key]));
    const dims = (name: string) => (inputs.get(name)!.type!.tensorType!.shape!.dim ?? []).map((d) => Number(d.dimValue));
    const elem = (name: string) => inputs.get(name)!.type!.tensorType!.elemType;
    for (const n of nodes) {
      expect(n.domain).toBe('com.microsoft');
      const attrs = Object.fromEntries((n.attribute ?? []).map((a) => [a.name!, Number(a.i)]));
      const ins = n.input ?? [];
      const mod = ins[1]!.replace(/\.qweight$/, '');
      expect(ins.slice(1)).toEqual([`${mod}.qweight`, `${mod}.scales`, `${mod}.qzeros`]);
      const [N, K] = [attrs.N!, attrs.K!];
      expect(attrs).toEqual({ K, N, bits: 4, block_size: 32 });
      expect([elem(`${mod}.qweight`), dims(`${mod}.qweight`)]).toEqual([2, [N, K / 32, 16]]);
      expect([elem(`${mod}.scales`), dims(`${mod}.scales`)]).toEqual([1, [(N * K) / 32]]);
      expect([elem(`${mod}.qzeros`), dims(`${mod}.qzeros`)]).toEqual([2, [N * Math.ceil(K / 32 / 2)]]);
      for (const p of ['qweight', 'scales', 'qzeros']) expect(bound.get(`${mod}.${p}`)).toBe(`${mod}.${p}`);
      expect(inputs.has(`${mod}.weight`)).toBe(false);
    }
  }, 120_000);
});
