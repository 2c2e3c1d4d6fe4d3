/**
 * Prepare on the shared fixtures: GPT-OSS MXFP4 experts against HF's dequantization
 * (`expected_dequant.safetensors`, exact in f32), Mixtral per-expert stacking in expert
 * order, and expert-parallel packing with the two (P, N) choices of 4 experts. Expected
 * tensors are QEfficient's canonical layout computed here from the source bytes
 * (quic/efficient-transformers `QEfficient/transformers/moe/weights.py` at 1b7aa83: gate/up
 * `[E, H, I]`, down `[E, I, H]`; packing `view(P, N, …).transpose(0, 1)`, N = E / P as in
 * `QEfficient/transformers/models/modeling_auto.py`, release/v1.22.8.0).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { Checkpoint } from '../../src/formats/safetensors';
import { UsageError } from '../../src/errors';
import { planPrepare, runPrepare } from '../../src/prepare';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { concat, packedOf, readKey, sameBytes, tempDir, transposeExperts, workerPath } from '../support/prepare-support';

/** Rows `parity::2` of each expert of an f32 `[E, R, C]` tensor. */
function rows(bytes: Uint8Array, E: number, R: number, C: number, parity: 0 | 1): Float32Array {
  const src = new Float32Array(bytes.slice().buffer);
  const out = new Float32Array((E * R * C) / 2);
  let o = 0;
  for (let e = 0; e < E; e++) for (let r = parity; r < R; r += 2) for (let c = 0; c < C; c++) out[o++] = src[(e * R + r) * C + c]!;
  return out;
}

function f32(b: Uint8Array): Float32Array {
  return new Float32Array(b.slice().buffer);
}

describeFixtures('prepare: gpt_oss fixture', () => {
  it('dequantizes every expert tensor exactly as HF (f32), splits gate/up interleaved, biases follow', async () => {
    const src = path.join(fixturesDir(), 'gpt_oss');
    const out = path.join(tempDir(), 'gpt_oss-prepared');
    const res = await runPrepare({ checkpoint: src, dtype: 'float32', out, workerPath: workerPath() });
    const ck = await Checkpoint.open(out);
    const expected = await Checkpoint.open(path.join(src, 'expected_dequant.safetensors'));
    for (const layer of [0, 1]) {
      const m = `model.layers.${layer}.mlp`;
      const gu = expected.get(`${m}.experts.gate_up_proj`)!;
      const [E, R, C] = gu.shape as [number, number, number];
      const guBytes = await expected.read(`${m}.experts.gate_up_proj`);
      const gate = await ck.read(`${m}.moe_weights.gate`);
      const up = await ck.read(`${m}.moe_weights.up`);
      // canonical gate/up [E, H, I] = rows 0::2 / 1::2 of HF's [E, 2I, H], each expert transposed
      expect(ck.get(`${m}.moe_weights.gate`)!.shape).toEqual([E, C, R / 2]);
      expect(ck.get(`${m}.moe_weights.gate`)!.dtype).toBe('F32');
      // Bit-exact (NaN-safe) comparison through the raw bytes.
      expect(sameBytes(gate, transposeExperts(new Uint8Array(rows(guBytes, E, R, C, 0).buffer), E, R / 2, C, 4))).toBe(true);
      expect(sameBytes(up, transposeExperts(new Uint8Array(rows(guBytes, E, R, C, 1).buffer), E, R / 2, C, 4))).toBe(true);
      const [, dR, dC] = expected.get(`${m}.experts.down_proj`)!.shape as [number, number, number];
      expect(
        sameBytes(await ck.read(`${m}.moe_weights.down`), transposeExperts(await expected.read(`${m}.experts.down_proj`), E, dR, dC, 4)),
      ).toBe(true);
      expect(ck.get(`${m}.moe_weights.down`)!.shape).toEqual([E, dC, dR]);

      const bias = new Uint16Array((await readKey(src, `${m}.experts.gate_up_proj_bias`)).slice().buffer);
      const widen = (keep: (i: number) => boolean) =>
        new Float32Array(new Uint32Array([...bias].filter((_, i) => keep(i % R)).map((b) => (b << 16) >>> 0)).buffer);
      expect([...f32(await ck.read(`${m}.moe_weights.gate_bias`))]).toEqual([...widen((i) => i % 2 === 0)]);
      expect([...f32(await ck.read(`${m}.moe_weights.up_bias`))]).toEqual([...widen((i) => i % 2 === 1)]);
      expect(ck.get(`${m}.moe_weights.gate_bias`)!.shape).toEqual([E, R / 2]);
      const dBias = new Uint16Array((await readKey(src, `${m}.experts.down_proj_bias`)).slice().buffer);
      expect([...new Uint32Array((await ck.read(`${m}.moe_weights.down_bias`)).slice().buffer)]).toEqual(
        [...dBias].map((b) => (b << 16) >>> 0),
      );
      expect(ck.has(`${m}.router.weight`) && ck.has(`${m}.router.bias`)).toBe(true);
    }
    expect(res.plan.tasks.filter((t) => t.transform === 'mxfp4').map((t) => t.file)).toEqual([
      'experts-layer-00000.safetensors',
      'experts-layer-00001.safetensors',
    ]);
  });
});

describeFixtures('prepare: mixtral fixture', () => {
  it('stacks w1/w3/w2 into moe_weights.{gate,up,down} in expert order, in the canonical orientation', async () => {
    const src = path.join(fixturesDir(), 'mixtral');
    const out = path.join(tempDir(), 'mixtral-prepared');
    await runPrepare({ checkpoint: src, dtype: 'bfloat16', out, workerPath: workerPath() });
    const ck = await Checkpoint.open(out);
    const srcCk = await Checkpoint.open(src);
    const H = 64,
      I = 96;
    for (const layer of [0, 1]) {
      const m = `model.layers.${layer}.block_sparse_moe`;
      for (const [role, w, rows, cols] of [
        ['gate', 'w1', I, H],
        ['up', 'w3', I, H],
        ['down', 'w2', H, I],
      ] as const) {
        const parts = await Promise.all([0, 1, 2, 3].map((e) => srcCk.read(`${m}.experts.${e}.${w}.weight`)));
        expect(sameBytes(await ck.read(`${m}.moe_weights.${role}`), transposeExperts(concat(parts), 4, rows, cols, 2))).toBe(true);
      }
      expect(ck.get(`${m}.moe_weights.gate`)!.shape).toEqual([4, H, I]);
      expect(ck.get(`${m}.moe_weights.up`)!.shape).toEqual([4, H, I]);
      expect(ck.get(`${m}.moe_weights.down`)!.shape).toEqual([4, I, H]);
      expect(sameBytes(await ck.read(`${m}.gate.weight`), await srcCk.read(`${m}.gate.weight`))).toBe(true);
    }
    expect(ck.keys().some((k) => k.includes('.experts.'))).toBe(false);
  });

  it('expert_parallel (P, N) = (2, 2) and (4, 1): two directories; packed = view(P, N, …).transpose(0, 1) of the canonical stacking', async () => {
    const src = path.join(tempDir(), 'mixtral');
    fs.cpSync(path.join(fixturesDir(), 'mixtral'), src, { recursive: true });
    for (const f of fs.readdirSync(src)) fs.chmodSync(path.join(src, f), 0o644);
    const plain = await runPrepare({ checkpoint: src, dtype: 'bfloat16', workerPath: workerPath() });
    const a = await runPrepare({
      checkpoint: src,
      dtype: 'bfloat16',
      moeFlavour: 'expert_parallel',
      pipelineStages: 2,
      parallelExperts: 2,
      workerPath: workerPath(),
    });
    const b = await runPrepare({
      checkpoint: src,
      dtype: 'bfloat16',
      moeFlavour: 'expert_parallel',
      pipelineStages: 4,
      parallelExperts: 1,
      workerPath: workerPath(),
    });
    expect(new Set([plain.fingerprint, a.fingerprint, b.fingerprint]).size).toBe(3);
    expect(new Set([plain.outDir, a.outDir, b.outDir]).size).toBe(3);
    for (const d of [plain.outDir, a.outDir, b.outDir]) expect(path.dirname(d)).toBe(path.dirname(src));
    const srcCk = await Checkpoint.open(src);
    const m = 'model.layers.1.block_sparse_moe';
    const H = 64,
      I = 96;
    for (const [res, P] of [
      [a, 2],
      [b, 4],
    ] as const) {
      const ck = await Checkpoint.open(res.outDir);
      for (const [role, w, rows, cols] of [
        ['gate', 'w1', I, H],
        ['up', 'w3', I, H],
        ['down', 'w2', H, I],
      ] as const) {
        const canonical = transposeExperts(
          concat(await Promise.all([0, 1, 2, 3].map((e) => srcCk.read(`${m}.experts.${e}.${w}.weight`)))),
          4,
          rows,
          cols,
          2,
        );
        expect(ck.get(`${m}.moe_weights.${role}`)!.shape).toEqual([4 / P, P, cols, rows]);
        expect(sameBytes(await ck.read(`${m}.moe_weights.${role}`), packedOf(canonical, 4, P))).toBe(true);
      }
      expect(res.plan.expertParallel).toEqual({ stages: P, experts: 4 / P });
    }
    // Export sees the packed layout through the planner without running prepare; N is derived when omitted.
    const plan = await planPrepare({ checkpoint: src, dtype: 'bfloat16', moeFlavour: 'expert_parallel', pipelineStages: 2 });
    expect(plan.outDir).toBe(a.outDir);
    expect(plan.outputs.get(`${m}.moe_weights.up`)).toEqual({
      file: 'experts-layer-00001.safetensors',
      dtype: 'BF16',
      shape: [2, 2, H, I],
    });
  });

  it('refuses P and N that do not fit the 4 experts, naming E, P and N', async () => {
    const src = path.join(fixturesDir(), 'mixtral');
    await expect(planPrepare({ checkpoint: src, dtype: 'bfloat16', moeFlavour: 'expert_parallel', pipelineStages: 3 })).rejects.toThrow(
      /4 experts \(E\) do not split into 3 pipeline stages \(P\)/,
    );
    // the old meaning (--parallel-experts = E) is now a usage error: P · N = 8 ≠ E = 4
    const e = await planPrepare({
      checkpoint: src,
      dtype: 'bfloat16',
      moeFlavour: 'expert_parallel',
      pipelineStages: 2,
      parallelExperts: 4,
    }).catch((x: Error) => x);
    expect(e).toBeInstanceOf(UsageError);
    expect((e as Error).message).toMatch(
      /--parallel-experts 4 \(N\) × --pipeline-stages 2 \(P\) = 8, but the model has 4 experts \(E\); N must be E \/ P = 2/,
    );
  });
});
