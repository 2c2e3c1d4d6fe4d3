/**
 * `export --onnx` on an FP8 checkpoint (issue 24): a legacy ONNX made from the dequantized
 * model (the llama fixture's torch.onnx.export with its quantized Linear weights replaced by
 * their dequantized values, in the orientation torch stored them — `onnx::MatMul_N` holds
 * W.T) resolves against the FP8 checkpoint by content: each such initializer matches its
 * quantized key's dequantized values (read through prepare's kernel), nothing resolves to a
 * scale, and the export → prepare → compile → run gives the logits of the `export --config`
 * path over the same checkpoint (the same dequantized weights in two graphs: within 2e-4,
 * the two exporters' agreement on the fixtures).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { cliStdout } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { decodeModel, encodeModel } from '../../src/formats/onnx';
import { quantizeCheckpoint } from '../support/fp8-support';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-fp8-onnx-');
/** The CLI in this process (test/support/cli.ts); the stdout of a successful call. */
const ws = (...args: string[]): Promise<string> => cliStdout(undefined, ...args);

interface ReportInput {
  initializer: string;
  key: string;
  input: string;
  transposed: boolean;
}

function transpose(v: Float32Array, r: number, c: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = v[i * c + j]!;
  return out;
}

describeFixtures('export --onnx: a legacy graph of the dequantized model over the FP8 checkpoint', () => {
  it('resolves every quantized weight by its dequantized content, no scale becomes an input, logits equal the --config path', async () => {
    const root = tmp();
    const llama = path.join(fixturesDir(), 'llama');
    const fp8 = path.join(root, 'llama-fp8');
    const expected = await quantizeCheckpoint(llama, fp8, { method: 'fp8', block: [32, 32] });

    // Which initializer of the legacy export holds which key (resolved against the bf16 original).
    await ws('export', '--onnx', path.join(llama, 'legacy.onnx'), '--checkpoint', llama, '--out', path.join(root, 'orig'));
    const orig = (JSON.parse(fs.readFileSync(path.join(root, 'orig', 'export-report.json'), 'utf8')) as { inputs: ReportInput[] }).inputs;
    const model = decodeModel(fs.readFileSync(path.join(llama, 'legacy.onnx')), 'legacy.onnx');
    let replaced = 0;
    for (const init of model.graph!.initializer!) {
      const hit = orig.find((i) => i.initializer === init.name);
      const want = hit && expected.get(hit.key);
      if (!hit || !want) continue;
      const [r, c] = (init.dims as number[]).map(Number) as [number, number];
      const values = hit.transposed ? transpose(want, c, r) : want;
      init.rawData = new Uint8Array(values.buffer.slice(0));
      init.floatData = [];
      replaced++;
    }
    expect(replaced).toBe(expected.size);
    const legacy = path.join(root, 'legacy-dequantized.onnx');
    fs.writeFileSync(legacy, encodeModel(model));

    const out = path.join(root, 'onnx-export');
    await ws('export', '--onnx', legacy, '--checkpoint', fp8, '--out', out);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8')) as {
      inputs: ReportInput[];
      unresolved: unknown[];
    };
    expect(report.unresolved).toEqual([]);
    expect(new Set(report.inputs.map((i) => i.key).filter((k) => expected.has(k))).size).toBe(expected.size);
    expect(report.inputs.filter((i) => /scale/.test(i.key))).toEqual([]);
    const spec = JSON.parse(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8')) as {
      inputs: { name: string; location: { key: string } }[];
    };
    expect(spec.inputs.filter((i) => /scale/.test(i.name + i.location.key))).toEqual([]);
    await ws('prepare', '--checkpoint', fp8, '--dtype', 'float32');
    await ws('compile', out);
    const ref = JSON.parse(fs.readFileSync(path.join(llama, 'reference.json'), 'utf8')) as { input_ids: number[] };
    const ids = ref.input_ids.join(',');
    await ws('run', out, '--input-ids', ids, '--dump-logits', path.join(root, 'onnx.json'));

    const cfgOut = path.join(root, 'config-export');
    const prepared = path.join(root, 'llama-fp8-qeff-prepared-float32');
    await ws('export', '--config', fp8, '--out', cfgOut, '--ctx-len', '32');
    await ws('prepare', '--checkpoint', fp8, '--dtype', 'float32', '--out', prepared);
    await ws('compile', cfgOut, '--prepared', prepared);
    await ws('run', cfgOut, '--input-ids', ids, '--dump-logits', path.join(root, 'config.json'));
    const a = (JSON.parse(fs.readFileSync(path.join(root, 'onnx.json'), 'utf8')) as { logits: number[][] }).logits;
    const b = (JSON.parse(fs.readFileSync(path.join(root, 'config.json'), 'utf8')) as { logits: number[][] }).logits;
    expect(a).toHaveLength(ref.input_ids.length);
    expect(maxAbsDiff(a, b)).toBeLessThanOrEqual(2e-4);
  });
});
