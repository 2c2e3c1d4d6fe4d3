/**
 * The llama_gptq fixture (GPTQ v1, group 32, sym, `quantization_config` as GPTQModel writes it, one
 * module split across the two shards) through both paths of issue #46, judged by the fixture:
 * - dequantized: `prepare --dtype float32` writes `expected_dequant.safetensors` bit for bit under
 *   the plain `…weight` keys; float16 / bfloat16 are its one RNE rounding (references computed here
 *   by value arithmetic); `export --config` → compile → run reproduces reference.json's logits
 *   (≤ 1e-4) and greedy tokens.
 * - kept (`--keep-quantized`): the prepared MatMulNBits parts decode, by onnxruntime's definition of
 *   the op (test/support int4-checkpoint.ts `matMulNBitsWeight`), to the same exact weights; the
 *   graph computes with `com.microsoft` MatMulNBits; the same logits and tokens through compile → run;
 *   the prepared folder is under half the float32 one.
 * ONNX's checker runs on every graph. onnx 1.12 has no schema for com.microsoft ops: it checks the
 * opset import and that the node's inputs are defined, and types the rest of the graph through the
 * value_info the builder declares for MatMulNBits' output, but not the op's own attributes —
 * onnxruntime's session (compile checks one) does that.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { Checkpoint } from '../../src/formats/safetensors';
import { readCompileRecord } from '../../src/compile';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { describeFixtures, fixturesDir, float16Tolerance } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { refHalf } from '../support/prepare-support';
import { matMulNBitsWeight } from '../support/int4-checkpoint';
import { dumpLogits, generate, reference, ws } from '../support/serving-support';

const tmp = tempDirs('ws-gptq-fixture-');
const FAM = 'llama_gptq';

function f32(b: Uint8Array): Float32Array {
  return new Float32Array(b.slice().buffer);
}

/** Bytes of every file under `dir` (the prepared folder's size on disk, links resolved). */
function folderBytes(dir: string): number {
  return fs.readdirSync(dir).reduce((a, n) => a + fs.statSync(path.join(dir, n)).size, 0);
}

/** f32 → bf16 bits, round to nearest even (by value: the two neighbours and the tie rule). */
function refBf16(x: number): number {
  const bits = new Uint32Array(new Float32Array([x]).buffer)[0]!;
  const lo = bits >>> 16;
  const down = new Float32Array(new Uint32Array([lo << 16]).buffer)[0]!;
  const up = new Float32Array(new Uint32Array([((lo + 1) << 16) >>> 0]).buffer)[0]!;
  const dd = Math.abs(x - down);
  const du = Math.abs(up - x);
  return dd < du || (dd === du && lo % 2 === 0) ? lo : lo + 1;
}

async function prepare(root: string, dtype: string, keep: boolean): Promise<string> {
  const out = path.join(root, `p-${dtype}${keep ? '-kept' : ''}`);
  await ws(root, [
    'prepare',
    '--checkpoint',
    path.join(fixturesDir(), FAM),
    '--dtype',
    dtype,
    '--out',
    out,
    ...(keep ? ['--keep-quantized'] : []),
  ]);
  return out;
}

describeFixtures('llama_gptq: GPTQ v1 dequantized and kept', () => {
  let root = '';
  const dirs: Record<string, string> = {};
  const graphs: string[] = [];

  it('prepare --dtype float32 writes expected_dequant bit for bit under the plain weight keys', async () => {
    root = tmp();
    dirs.f32 = await prepare(root, 'float32', false);
    const got = await Checkpoint.open(dirs.f32);
    const want = await Checkpoint.open(path.join(fixturesDir(), FAM, 'expected_dequant.safetensors'));
    const keys = [...want.tensors()].map((t) => t.key);
    expect(keys.length).toBe(14);
    for (const k of keys) {
      expect(got.get(k)?.shape, k).toEqual(want.get(k)!.shape);
      expect(got.get(k)?.dtype, k).toBe('F32');
      expect(Buffer.compare(Buffer.from(await got.read(k)), Buffer.from(await want.read(k))), k).toBe(0);
    }
    // no packed key is left in the prepared checkpoint
    expect([...got.tensors()].filter((t) => /\.(qweight|qzeros|scales|g_idx)$/.test(t.key))).toEqual([]);
  });

  it('float16 and bfloat16: one RNE rounding of the exact weights', async () => {
    const want = await Checkpoint.open(path.join(fixturesDir(), FAM, 'expected_dequant.safetensors'));
    for (const [dtype, ref] of [
      ['float16', refHalf],
      ['bfloat16', refBf16],
    ] as const) {
      const got = await Checkpoint.open(await prepare(root, dtype, false));
      for (const t of want.tensors()) {
        const exp = f32(await want.read(t.key));
        const bits = new Uint16Array((await got.read(t.key)).slice().buffer);
        const wrong = [...exp].findIndex((v, i) => ref(v) !== bits[i]);
        expect(wrong, `${dtype} ${t.key}`).toBe(-1);
      }
    }
  });

  it('prepare --keep-quantized: MatMulNBits parts that decode to the exact weights; under half the float32 folder', async () => {
    dirs.kept = await prepare(root, 'float32', true);
    const got = await Checkpoint.open(dirs.kept);
    const want = await Checkpoint.open(path.join(fixturesDir(), FAM, 'expected_dequant.safetensors'));
    for (const t of want.tensors()) {
      const m = t.key.replace(/\.weight$/, '');
      const [N, K] = t.shape as [number, number];
      expect(got.get(t.key), `${t.key} is not written when kept`).toBeUndefined();
      expect(got.get(`${m}.qweight`)).toMatchObject({ dtype: 'U8', shape: [N, K / 32, 16] });
      expect(got.get(`${m}.scales`)).toMatchObject({ dtype: 'F32', shape: [N * (K / 32)] });
      expect(got.get(`${m}.qzeros`)).toMatchObject({ dtype: 'U8', shape: [N * Math.ceil(K / 32 / 2)] });
      expect(got.get(`${m}.g_idx`), 'desc_act false: no g_idx').toBeUndefined();
      const w = matMulNBitsWeight(
        { qweight: await got.read(`${m}.qweight`), scales: f32(await got.read(`${m}.scales`)), qzeros: await got.read(`${m}.qzeros`) },
        N,
        K,
        32,
      );
      expect([...w]).toEqual([...f32(await want.read(t.key))]);
    }
    const kept = folderBytes(dirs.kept);
    const float = folderBytes(dirs.f32);
    expect(kept).toBeLessThan(float / 2);
  });

  for (const kept of [false, true]) {
    it(`${kept ? 'kept (MatMulNBits)' : 'dequantized'}: export → compile → run reproduces reference.json (≤ 1e-4) and its greedy tokens`, async () => {
      const ref = reference(FAM);
      const out = path.join(root, kept ? 'e-kept' : 'e-float');
      await ws(root, ['export', '--config', path.join(fixturesDir(), FAM), '--out', out, ...(kept ? ['--keep-quantized'] : [])]);
      const model = fs.readFileSync(path.join(out, 'model.onnx'));
      const ops = parseWireModel(model, 'model.onnx');
      const nbits = (ops.inputs.map((i) => i.name) as string[]).filter((n) => n.endsWith('.qweight'));
      expect(nbits.length).toBe(kept ? 14 : 0);
      expect(model.includes(Buffer.from('MatMulNBits'))).toBe(kept);
      expect(model.includes(Buffer.from('com.microsoft'))).toBe(kept);
      await ws(root, ['compile', out, '--prepared', kept ? dirs.kept! : dirs.f32!]);
      graphs.push(path.join(out, 'model.onnx'), readCompileRecord(out)!.artifacts.model!);
      const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
      const logits = await dumpLogits(root, out, ids);
      expect(logits.length).toBe(ref.logits.length);
      let worst = 0;
      ref.logits.forEach((row, t) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - logits[t]![j]!)))));
      expect(worst).toBeLessThanOrEqual(1e-4);
      const { tokens } = await generate(root, out, ref.input_ids, ref.generated_ids.length);
      expect(tokens).toEqual(ref.generated_ids);
    }, 120_000);
  }

  it('kept in float16 (MatMulNBits over f16 activations and scales): logits within the float16 bound, the same greedy tokens', async () => {
    const ref = reference(FAM);
    const prepared = await prepare(root, 'float16', true);
    const out = path.join(root, 'e-kept-16');
    await ws(root, ['export', '--config', path.join(fixturesDir(), FAM), '--out', out, '--dtype', 'float16', '--keep-quantized']);
    await ws(root, ['compile', out, '--prepared', prepared]);
    graphs.push(path.join(out, 'model.onnx'));
    const logits = await dumpLogits(root, out, [...ref.input_ids, ...ref.generated_ids.slice(0, -1)]);
    let worst = 0;
    ref.logits.forEach((row, t) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - logits[t]![j]!)))));
    expect(worst).toBeLessThanOrEqual(float16Tolerance('llama'));
    expect((await generate(root, out, ref.input_ids, ref.generated_ids.length)).tokens).toEqual(ref.generated_ids);
  }, 120_000);

  describeOnnxChecker('ONNX checker', () => {
    it('every graph of both paths (exported and compiled) passes check_model and strict shape inference', () => {
      expect(graphs.length).toBe(5);
      expectOnnxValid(graphs);
    });
  });
});
