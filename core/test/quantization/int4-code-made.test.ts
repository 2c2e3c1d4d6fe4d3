/**
 * GPTQ and AutoAWQ-GEMM checkpoints made in code (test/support int4-checkpoint.ts packs them from
 * the formats' definitions and computes each Linear's weight in float64): AWQ's interleaved
 * nibble order [0, 2, 4, 6, 1, 3, 5, 7] with random zero points, GPTQ act-order (a permuting
 * g_idx, which QEfficient's QEffGPTQConfig refuses), GPTQ v2 asymmetric, tied heads, group sizes
 * 32, 64 and 128, a quantized GPTQ head. For each:
 * - `prepare --dtype float32` writes every `…weight` equal to the float64 dequant (exact in f32);
 * - `prepare --keep-quantized` writes MatMulNBits parts that decode, by onnxruntime's definition
 *   of the op, to the same weights (g_idx only under act-order);
 * - both exports compile and run in onnxruntime; the kept graph's logits (MatMulNBits on the packed
 *   codes) match the dequantized graph's (the llama graph judged against HF elsewhere, here over
 *   weights just shown exact) within 1e-4, and ONNX's checker passes both.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../../src/formats/safetensors';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { int4Checkpoint, matMulNBitsWeight, type Int4Case } from '../support/int4-checkpoint';
import { dumpLogits, ws } from '../support/serving-support';

const tmp = tempDirs('ws-int4-');

const f32 = (b: Uint8Array) => new Float32Array(b.slice().buffer);
const i32 = (b: Uint8Array) => new Int32Array(b.slice().buffer);

const CASES: Record<string, Int4Case> = {
  'awq group 32': { format: 'awq', group: 32, hidden: 64 },
  'awq group 128, tied head': { format: 'awq', group: 128, hidden: 128, tied: true },
  'gptq v1 act-order (desc_act), group 32': { format: 'gptq', group: 32, hidden: 64, descAct: true },
  'gptq v2 asymmetric, group 64, tied head': { format: 'gptq_v2', group: 64, hidden: 128, asym: true, tied: true },
  'gptq v1 group 128': { format: 'gptq', group: 128, hidden: 128 },
  'gptq v1 quantized head (lm_head true)': {
    format: 'gptq',
    group: 32,
    hidden: 64,
    quantHead: true,
  },
};

const graphs: string[] = [];

describe('int4 checkpoints made in code: dequantized and kept', () => {
  for (const [name, c] of Object.entries(CASES)) {
    it(
      name,
      async () => {
        const root = tmp();
        const ck = await int4Checkpoint(root, 'model', c);
        const float = path.join(root, 'p-float');
        const kept = path.join(root, 'p-kept');
        await ws(root, ['prepare', '--checkpoint', ck.dir, '--dtype', 'float32', '--out', float]);
        await ws(root, ['prepare', '--checkpoint', ck.dir, '--dtype', 'float32', '--out', kept, '--keep-quantized']);
        const pf = await Checkpoint.open(float);
        const pk = await Checkpoint.open(kept);
        for (const [key, d] of ck.dequant) {
          expect([...f32(await pf.read(key))], key).toEqual([...d.w]);
          if (key === 'lm_head.weight') {
            // the graph's head is a plain MatMul: kept prepare dequantizes it
            expect([...f32(await pk.read(key))], `${key} kept`).toEqual([...d.w]);
            continue;
          }
          const m = key.replace(/\.weight$/, '');
          const gIdx = pk.get(`${m}.g_idx`) ? i32(await pk.read(`${m}.g_idx`)) : undefined;
          expect(gIdx !== undefined, `${m}: g_idx kept only under act-order`).toBe(!!c.descAct);
          const w = matMulNBitsWeight(
            {
              qweight: await pk.read(`${m}.qweight`),
              scales: f32(await pk.read(`${m}.scales`)),
              qzeros: await pk.read(`${m}.qzeros`),
              ...(gIdx ? { gIdx } : {}),
            },
            d.out,
            d.in,
            c.group,
          );
          expect([...w], `${m} kept`).toEqual([...d.w]);
        }
        expect(pf.get('lm_head.weight') === undefined).toBe(!!c.tied);
        expect(pk.get('lm_head.qweight')).toBeUndefined();

        const ids = [3, 17, 5, 60, 2, 41];
        const rows: number[][][] = [];
        for (const [tag, prepared, flags] of [
          ['float', float, []],
          ['kept', kept, ['--keep-quantized']],
        ] as const) {
          const out = path.join(root, `e-${tag}`);
          await ws(root, ['export', '--config', ck.dir, '--out', out, ...flags]);
          await ws(root, ['compile', out, '--prepared', prepared]);
          graphs.push(path.join(out, 'model.onnx'));
          expect(fs.readFileSync(path.join(out, 'model.onnx')).includes(Buffer.from('MatMulNBits'))).toBe(tag === 'kept');
          rows.push(await dumpLogits(root, out, ids));
        }
        let worst = 0;
        rows[0]!.forEach((row, t) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - rows[1]![t]![j]!)))));
        expect(rows[0]!.length).toBe(ids.length);
        expect(worst).toBeLessThanOrEqual(1e-4);
      },
      120_000,
    );
  }

  it('an AutoGPTQ checkpoint whose quantization lives only in quantize_config.json', async () => {
    const root = tmp();
    const ck = await int4Checkpoint(root, 'model', { format: 'gptq', group: 32, hidden: 64 });
    const { quantization_config: q, ...rest } = ck.config as { quantization_config: Record<string, unknown> };
    const { quant_method: _m, ...quantizeConfig } = q;
    fs.writeFileSync(path.join(ck.dir, 'config.json'), JSON.stringify(rest));
    fs.writeFileSync(path.join(ck.dir, 'quantize_config.json'), JSON.stringify(quantizeConfig));
    const out = path.join(root, 'p');
    await ws(root, ['prepare', '--checkpoint', ck.dir, '--dtype', 'float32', '--out', out]);
    const p = await Checkpoint.open(out);
    for (const [key, d] of ck.dequant) expect([...f32(await p.read(key))], key).toEqual([...d.w]);
  });

  describeOnnxChecker('ONNX checker', () => {
    it('every exported graph (float and MatMulNBits) passes', () => {
      expect(graphs.length).toBe(2 * Object.keys(CASES).length);
      expectOnnxValid(graphs);
    });
  });
});
