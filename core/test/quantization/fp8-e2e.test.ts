/**
 * The FP8 fixture through the CLI (in this process) (issue 24): the llama fixture quantized in code (HF
 * fine-grained FP8, 32×32 blocks; and compressed-tensors float8 per-channel) runs
 * export --config → prepare → compile → run, and its logits stay within the quantization
 * error of the bf16 model's reference logits (the bound is derived below).
 *
 * The bound. Each quantized weight is w' = w(1 + δ): E4M3 keeps 4 significant bits, so
 * round-to-nearest-even is off by at most half an ulp, |δ| ≤ u = 2⁻⁴, for every normal code
 * (the block / channel scale maps each block's amax to 448, so all but the elements below
 * 2⁻⁶·amax are normal; those few have an absolute error ≤ 2⁻¹⁰·amax, no larger). Rounding
 * errors are independent with zero mean and at most uniform on [−u, u], so a quantized
 * matmul's output moves by a relative RMS error of at most u/√3 (Σ wⱼxⱼδⱼ against Σ wⱼxⱼ),
 * and independent errors of matmuls in series add in quadrature. From the embeddings to the
 * logits (embeddings, norms and lm_head are not quantized; the logits are a fixed linear map
 * of the normalized state) a token passes per layer at most k = 4 quantized matmuls in
 * series (q·k → softmax weights and v → o in attention, gate·up → down in the MLP), L = 2:
 *   ‖Δlogits_t‖₂ ≤ B · ‖ref_t‖₂,  B = √(L·k) · u / √3 = √8 / (16·√3) ≈ 0.102
 * for every position t (conservative: the residual stream carries the unquantized part). The
 * reference is the bf16 model's fp32 logits (reference.json). Misread weights (raw E4M3 values,
 * 448/amax times too large, or scales ignored) give relative errors ≫ 1.
 *
 * A Qwen3-MoE checkpoint made in code with FP8 experts and attention (block 16, partial
 * edges) goes the same way and is judged exactly: against the float64 reference forward of
 * its dequantized weights (computed in the test), within the 1e-4 every f32 export meets.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir, type FixtureRef } from '../../../test/support/fixtures';
import { cliStdout } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { fromFloat32 } from '../../src/formats/float-convert';
import { writeSafetensors } from '../../src/formats/safetensors';
import { quantizeBlocks, quantizeCheckpoint, type QuantizeOptions } from '../support/fp8-support';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS } from '../support/graph-random';
import { maxAbsDiff } from '../support/graph-support';

const tmp = tempDirs('ws-fp8-e2e-')();

/** The CLI in this process (test/support/cli.ts); the stdout of a successful call. */
const ws = (...args: string[]): Promise<string> => cliStdout(tmp, ...args);

/** The derived bound on ‖Δlogits‖₂ / ‖ref‖₂ per position (see the file comment). */
const U = 2 ** -4;
const BOUND = (Math.sqrt(2 * 4) * U) / Math.sqrt(3);

function relErrors(rows: number[][], ref: number[][]): number[] {
  return ref.map((r, t) => {
    const d = Math.hypot(...r.map((x, j) => rows[t]![j]! - x));
    return d / Math.hypot(...r);
  });
}

describeFixtures('FP8 llama fixture: export --config → prepare → compile → run within the quantization bound', () => {
  const cases: [string, QuantizeOptions][] = [
    ['fp8 32×32 blocks', { method: 'fp8', block: [32, 32] }],
    ['compressed-tensors per-channel', { method: 'compressed-tensors-channel', inputScales: true }],
  ];
  for (const [name, opts] of cases) {
    it(name, async () => {
      const src = path.join(tmp, name.replace(/\W+/g, '-'));
      await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, opts);
      const ref = JSON.parse(readFileSync(path.join(fixturesDir(), 'llama', 'reference.json'), 'utf8')) as FixtureRef;
      const out = `${src}-export`;
      const prepared = `${src}-qeff-prepared-float32`;
      await ws('export', '--config', src, '--out', out, '--ctx-len', '32');
      const spec = JSON.parse(readFileSync(path.join(out, 'weight_spec.json'), 'utf8')) as {
        inputs: { name: string; location: { key: string } }[];
      };
      expect(spec.inputs.some((i) => i.name === 'model.layers.0.self_attn.q_proj.weight')).toBe(true);
      expect(spec.inputs.filter((i) => /scale/.test(i.name) || /scale/.test(i.location.key))).toEqual([]);
      await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
      await ws('compile', out, '--prepared', prepared);
      const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
      const dump = `${src}-logits.json`;
      await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
      const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
      const rel = relErrors(rows, ref.logits);
      expect(Math.max(...rel)).toBeLessThanOrEqual(BOUND);
      // and the weights really are the quantized ones, not the bf16 originals
      expect(Math.max(...rel)).toBeGreaterThan(1e-4);
    });
  }
});

it('qwen3_moe with FP8 experts and attention (checkpoint made in code): logits equal the reference forward of the dequantized weights', async () => {
  const cfg = {
    ...SYNTHETIC_CONFIGS.qwen3_moe!,
    quantization_config: { quant_method: 'fp8', fmt: 'e4m3', activation_scheme: 'dynamic', weight_block_size: [16, 16] },
  };
  const raw = randomCheckpoint(cfg, 5);
  const src = path.join(tmp, 'qwen3-moe-fp8');
  const tensors: Parameters<typeof writeSafetensors>[1] = [];
  const dequantized = new Map(raw);
  let quantized = 0;
  for (const [key, t] of raw) {
    if (!/(proj|experts\.\d+\.\w+)\.weight$/.test(key) || t.shape.length !== 2) {
      tensors.push({ key, dtype: 'BF16', shape: t.shape, data: fromFloat32(t.data, 'BF16') });
      continue;
    }
    const z = quantizeBlocks(t.data, t.shape, [16, 16]);
    tensors.push(
      { key, dtype: 'F8_E4M3', shape: t.shape, data: z.q },
      { key: key.replace(/weight$/, 'weight_scale_inv'), dtype: 'F32', shape: z.scaleShape, data: fromFloat32(z.scale, 'F32') },
    );
    dequantized.set(key, { shape: t.shape, data: z.expected });
    quantized++;
  }
  expect(quantized).toBeGreaterThan(2 * 6 * 3); // every expert of both layers, and the attention
  mkdirSync(src);
  writeFileSync(path.join(src, 'config.json'), JSON.stringify(cfg));
  await writeSafetensors(path.join(src, 'model.safetensors'), tensors);
  const ids = [4, 19, 33, 7, 61, 2, 45, 12, 28];
  const ref = referenceForward(cfg, dequantized, ids);
  const out = `${src}-export`;
  const prepared = `${src}-qeff-prepared-float32`;
  await ws('export', '--config', src, '--out', out, '--ctx-len', '16');
  await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
  await ws('compile', out, '--prepared', prepared);
  const dump = `${src}-logits.json`;
  await ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
  const rows = (JSON.parse(readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
  expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(1e-4);
});
