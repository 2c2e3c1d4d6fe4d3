/**
 * `export --dtype bfloat16` (issue 47): the graph computes and caches in bf16 as QEfficient's
 * bf16 export does (`_resolve_torch_dtype` keeps bf16 for ai200, quic/efficient-transformers main
 * ebf55e81), and runs on ONNX Runtime's CPU provider through the bf16 emulation of the ORT
 * compile (formats/onnx/bf16-cpu.ts: the CPU provider has no bf16 arithmetic kernel and the Node
 * binding no bf16 tensor; each op computes in float32 and rounds its result to bf16).
 *
 * Judged against reference.json (fp32 logits on the bf16 weights) within bf16 tolerance: 4 units
 * of bf16 roundoff (u = 2⁻⁸) of the largest reference logit — and not within 1e-5, which a float32
 * computation would meet: the bf16 rounding is really there.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { emulateBf16OnCpu } from '../../src/formats/onnx/bf16-cpu';
import { decodeModel, encodeModel } from '../../src/formats/onnx/codec';
import { makeNode, makeValueInfo } from '../../src/formats/onnx/builders';
import type { ModelProto } from '../../src/formats/onnx/types';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/compile-support';
import { dumpLogits, generate, ort, reference, ws } from '../support/serving-support';

const tmp = tempDirs('ws-bf16-');

/** One Add of two bf16 graph inputs, output bf16. */
function addModel(): ModelProto {
  return {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'add',
      node: [makeNode('Add', ['a', 'b'], ['y'])],
      input: [makeValueInfo('a', 16, [2]), makeValueInfo('b', 16, [2])],
      output: [makeValueInfo('y', 16, [2])],
    },
  } as ModelProto;
}

it('the emulation rounds each op to bf16: 1 + 2⁻⁸ → 1 (tie to even), 1 + 3·2⁻⁹ → 1 + 2⁻⁷; bf16 I/O becomes float32', async () => {
  const m = decodeModel(encodeModel(addModel()), 'add.onnx');
  const r = emulateBf16OnCpu(m);
  expect(r.emulated).toEqual({ Add: 1 });
  expect(r.retyped.sort()).toEqual(['a', 'b', 'y']);
  const file = path.join(tmp(), 'add.onnx');
  fs.writeFileSync(file, encodeModel(m));
  const s = await ort.InferenceSession.create(file);
  const out = await s.run({
    a: new ort.Tensor('float32', Float32Array.from([1, 1]), [2]),
    b: new ort.Tensor('float32', Float32Array.from([2 ** -8, 3 * 2 ** -9]), [2]),
  });
  // float32 would give 1.00390625 and 1.005859375
  expect(Array.from(out.y!.data as Float32Array)).toEqual([1, 1 + 2 ** -7]);
  // the unemulated model does not load at all (no bf16 Add kernel / no bf16 tensors in the binding)
  const raw = path.join(tmp(), 'raw.onnx');
  fs.writeFileSync(raw, encodeModel(addModel()));
  await expect(ort.InferenceSession.create(raw)).rejects.toThrow();
});

describeFixtures('bf16 export of the llama fixture on ONNX Runtime', () => {
  it('bf16 inputs and KV cache; compiled against a bf16 prepared checkpoint it reproduces reference.json within bf16 tolerance', async () => {
    const root = tmp();
    const ref = reference('llama');
    const out = path.join(root, 'bf16');
    await ws(root, ['export', '--config', path.join(fixturesDir(), 'llama'), '--out', out, '--dtype', 'bfloat16', '--ctx-len', '32']);
    const m = parseWireModel(fs.readFileSync(path.join(out, 'model.onnx')), 'model.onnx');
    expect(m.inputs.find((i) => i.name === 'past_key.0')!.elemType).toBe(16);
    expect(m.inputs.find((i) => i.name === 'model.embed_tokens.weight')!.elemType).toBe(16);
    const prep = path.join(root, 'llama-qeff-prepared-bfloat16');
    await ws(root, ['prepare', '--checkpoint', path.join(fixturesDir(), 'llama'), '--dtype', 'bfloat16', '--out', prep]);
    await ws(root, ['compile', out, '--prepared', prep]);
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const rows = await dumpLogits(root, out, ids);
    const peak = Math.max(...ref.logits.flat().map(Math.abs));
    const diff = maxAbsDiff(rows, ref.logits);
    expect(diff).toBeLessThanOrEqual(4 * 2 ** -8 * peak);
    expect(diff).toBeGreaterThan(1e-5);
    expect((await generate(root, out, ref.input_ids, ref.generated_ids.length)).tokens).toEqual(ref.generated_ids);
  });

  describeOnnxChecker('python3-onnx', () => {
    it('the bf16 graph passes check_model and strict shape inference', async () => {
      const root = tmp();
      const out = path.join(root, 'bf16');
      await ws(root, ['export', '--config', path.join(fixturesDir(), 'llama'), '--out', out, '--dtype', 'bfloat16', '--ctx-len', '32']);
      expectOnnxValid([path.join(out, 'model.onnx')]);
    });
  });
});
