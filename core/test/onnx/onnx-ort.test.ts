/**
 * Models made with the builders are real ONNX: onnxruntime-node loads and runs them, with
 * weights in raw_data, in typed fields and in an external data file beside the model.
 * Expected outputs are worked out by hand from the inputs below.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, test } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import {
  externalTensor,
  getMetadata,
  makeAttribute,
  makeNode,
  makeTensor,
  makeValueInfo,
  readInitializerBytes,
  readModel,
  setMetadata,
  summarizeOnnx,
  TensorDataType,
  writeModel,
  type ModelProto,
  type TensorProto,
} from '../../src/formats/onnx';

const tmp = tempDirs('onnx-ort-')();

const f32 = (xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);
// W = [[1, 2, 3], [4, 5, 6]]  (2 × 3)
const W = [1, 2, 3, 4, 5, 6];

function model(weight: TensorProto): ModelProto {
  const bias: TensorProto = makeTensor('bias_value', 'F32', [3], f32([0.5, -1, 2]));
  // Wt = Wᵀ (3 × 2) in typed float_data, used by Gemm with transB = 1 and alpha = 2
  const wt: TensorProto = { name: 'Wt', dataType: TensorDataType.FLOAT, dims: [3, 2], floatData: [1, 4, 2, 5, 3, 6] };
  const m: ModelProto = {
    irVersion: 8,
    producerName: 'weight-spec-test',
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'tiny',
      node: [
        makeNode('MatMul', ['X', 'W'], ['XW'], [], 'matmul'),
        makeNode('Constant', [], ['B'], [makeAttribute('value', 'tensor', bias)]),
        makeNode('Add', ['XW', 'B'], ['Y']),
        makeNode('Transpose', ['Y'], ['YT'], [makeAttribute('perm', 'ints', [1, 0])]),
        makeNode('Gemm', ['X', 'Wt'], ['G'], [makeAttribute('alpha', 'float', 2), makeAttribute('transB', 'int', 1)]),
      ],
      initializer: [weight, wt],
      input: [makeValueInfo('X', 'F32', ['batch', 2])],
      output: [
        makeValueInfo('Y', 'F32', ['batch', 3]),
        makeValueInfo('YT', TensorDataType.FLOAT, [3, null]),
        makeValueInfo('G', 'F32', ['batch', 3]),
      ],
    },
  };
  setMetadata(m, 'com.example.note', 'built by the test');
  return m;
}

async function runAndCheck(file: string): Promise<void> {
  const session = await ort.InferenceSession.create(file);
  const x = new ort.Tensor('float32', Float32Array.from([1, 2, 3, -1]), [2, 2]);
  const out = await session.run({ X: x });
  // X·W: [1,2]·W = [9, 12, 15]; [3,-1]·W = [-1, 1, 3]; + bias [0.5, -1, 2]
  expect(Array.from(out.Y!.data as Float32Array)).toEqual([9.5, 11, 17, -0.5, 0, 5]);
  expect(out.YT!.dims).toEqual([3, 2]);
  expect(Array.from(out.YT!.data as Float32Array)).toEqual([9.5, -0.5, 11, 0, 17, 5]);
  // Gemm: 2 · X · (Wt)ᵀ = 2 · X · W
  expect(Array.from(out.G!.data as Float32Array)).toEqual([18, 24, 30, -2, 2, 6]);
  await session.release();
}

describe('builders → onnxruntime-node', () => {
  test('initializer in raw_data', async () => {
    const file = path.join(tmp, 'raw.onnx');
    await writeModel(file, model(makeTensor('W', 'F32', [2, 3], f32(W))));
    await runAndCheck(file);
    const back = await readModel(file);
    expect(getMetadata(back, 'com.example.note')).toBe('built by the test');
    const s = await summarizeOnnx(file);
    expect(s.initializers.map((t) => [t.name, t.storage])).toEqual([
      ['W', 'raw'],
      ['Wt', 'typed'],
    ]);
    expect(Array.from(new Float32Array((await readInitializerBytes(file, s.initializers[1]!)).slice().buffer))).toEqual([1, 4, 2, 5, 3, 6]);
    expect(s.consumers).toMatchObject({ X: ['MatMul', 'Gemm'], W: ['MatMul'], Wt: ['Gemm'] });
    expect(s.outputs[1]!.dims).toEqual([3, '']);
    expect(fs.readdirSync(tmp).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });

  test('initializer in an external data file beside the model', async () => {
    const dir = path.join(tmp, 'ext');
    fs.mkdirSync(dir);
    // 12 bytes of something else first, so the offset matters
    fs.writeFileSync(path.join(dir, 'weights.bin'), Buffer.concat([Buffer.from('not-weights!'), f32(W)]));
    const file = path.join(dir, 'model.onnx');
    await writeModel(file, model(externalTensor('W', 'F32', [2, 3], { location: 'weights.bin', offset: 12, length: 24 })));
    await runAndCheck(file);
    const s = await summarizeOnnx(file);
    const w = s.initializers.find((t) => t.name === 'W')!;
    expect(w).toMatchObject({ storage: 'external', byteLength: 24, external: { location: 'weights.bin', offset: 12, length: 24 } });
    expect(Buffer.from(await readInitializerBytes(file, w)).equals(Buffer.from(f32(W)))).toBe(true);
  });
});
