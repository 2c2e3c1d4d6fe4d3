/**
 * Transform tests on checkpoints built in code: dense dtype conversion + index, per-expert
 * stacking (Qwen-MoE keys), fused splits (generic gate_up_proj and GraniteMoE), and MXFP4
 * dequantization checked against hand-computed values.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../../src/formats/safetensors';
import { runPrepare } from '../../src/prepare';
import { CHUNK_ELEMS } from '../../src/prepare/kernels';
import {
  bf16ToNumber,
  concat,
  readKey,
  refHalf,
  sameBytes,
  t,
  tempDir,
  transposeExperts,
  u16,
  workerPath,
  writeCheckpoint,
} from '../support/prepare-support';

async function prepare(dir: string, dtype: 'float32' | 'float16' | 'bfloat16', extra: Record<string, unknown> = {}) {
  return runPrepare({ checkpoint: dir, dtype, workerPath: workerPath(), ...extra });
}

describe('prepare: dense dtype conversion', () => {
  it('dense dtype conversion + valid index: floats RNE, integers kept, index and sidecars written', async () => {
    const root = tempDir();
    const src = path.join(root, 'dense');
    const special = new Float32Array([
      1,
      65504,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
      65520,
      2 ** -24,
      2 ** -25,
      3 * 2 ** -26,
      -0,
      -1.5,
      1e-8,
      70000,
    ]);
    const wantSpecial = [0x3c00, 0x7bff, 0x3c00, 0x3c02, 0x7c00, 0x0001, 0x0000, 0x0001, 0x8000, 0xbe00, 0x0000, 0x7c00];
    const ids = new BigInt64Array([1n, -2n, 3n]);
    await writeCheckpoint(
      src,
      [
        [t('model.embed_tokens.weight', [64, 32], 1), t('special', [12], 0, 'F32', new Uint8Array(special.buffer))],
        [t('model.norm.weight', [32], 2), t('position_ids', [3], 0, 'I64', new Uint8Array(ids.buffer)), t('odd', [7], 3)],
      ],
      { model_type: 'llama' },
    );
    fs.writeFileSync(path.join(src, 'tokenizer.json'), '{}');
    // 65520 and 70000 overflow to Inf: kept only with allowOverflow (issue #28), and counted
    await expect(prepare(src, 'float16')).rejects.toThrow(/"special" would hold 2 non-finite values/);
    const res = await prepare(src, 'float16', { allowOverflow: true });
    expect(res.nonFinite).toEqual({ special: 2 });
    expect(res.upToDate).toBe(false);
    const out = res.outDir;
    expect(path.basename(out)).toMatch(/^dense-prepared-float16-[0-9a-f]{10}$/);

    const ck = await Checkpoint.open(out);
    expect(ck.layout).toBe('index');
    expect(ck.keys().sort()).toEqual(['model.embed_tokens.weight', 'model.norm.weight', 'odd', 'position_ids', 'special']);
    const index = JSON.parse(fs.readFileSync(path.join(out, 'model.safetensors.index.json'), 'utf8'));
    // One base shard per source shard, keys sorted in the index.
    expect(index.weight_map).toEqual({
      'model.embed_tokens.weight': 'base-0000.safetensors',
      'model.norm.weight': 'base-0001.safetensors',
      odd: 'base-0001.safetensors',
      position_ids: 'base-0001.safetensors',
      special: 'base-0000.safetensors',
    });
    expect(index.metadata.total_size).toBe(64 * 32 * 2 + 12 * 2 + 32 * 2 + 3 * 8 + 7 * 2);
    for (const sidecar of ['config.json', 'tokenizer.json']) expect(fs.existsSync(path.join(out, sidecar))).toBe(true);

    expect(ck.get('special')!.dtype).toBe('F16');
    expect([...u16(await ck.read('special'))]).toEqual(wantSpecial);
    expect(ck.get('position_ids')!.dtype).toBe('I64');
    expect(sameBytes(await ck.read('position_ids'), new Uint8Array(ids.buffer))).toBe(true);
    const srcEmb = u16(await readKey(src, 'model.embed_tokens.weight'));
    const outEmb = u16(await ck.read('model.embed_tokens.weight'));
    const want = Uint16Array.from(srcEmb, (b) => refHalf(bf16ToNumber(b)));
    expect(outEmb).toEqual(want);
    const odd = u16(await readKey(src, 'odd'));
    expect([...u16(await ck.read('odd'))]).toEqual([...odd].map((b) => refHalf(bf16ToNumber(b))));
  });

  it('widens bf16 to f32 exactly, also for tensors streamed in several chunks', async () => {
    const src = path.join(tempDir(), 'w');
    const big = CHUNK_ELEMS + 1027; // two chunks, an odd tail
    await writeCheckpoint(src, [[t('a', [1000], 7), t('big', [big], 8)]]);
    const res = await prepare(src, 'float32');
    for (const key of ['a', 'big']) {
      const got = new Uint32Array((await readKey(res.outDir, key)).slice().buffer);
      const bits = u16(await readKey(src, key));
      expect(got.length).toBe(bits.length);
      expect(got.every((g, i) => g === (bits[i]! << 16) >>> 0)).toBe(true);
    }
    const half = await prepare(src, 'float16');
    const got = u16(await readKey(half.outDir, 'big'));
    const bits = u16(await readKey(src, 'big'));
    for (const i of [0, 1, CHUNK_ELEMS - 1, CHUNK_ELEMS, CHUNK_ELEMS + 1, big - 1]) expect(got[i]).toBe(refHalf(bf16ToNumber(bits[i]!)));
  });
});

describe('prepare: per-expert stacking', () => {
  it('per-expert stacking writes canonical keys: Qwen-MoE gate_proj/up_proj/down_proj → moe_weights in expert order', async () => {
    const src = path.join(tempDir(), 'qwen-moe');
    const E = 3,
      I = 8,
      H = 4;
    const m = 'model.layers.0.mlp';
    const experts = [];
    // Written in reverse expert order, so file order differs from expert order.
    for (let e = E - 1; e >= 0; e--) {
      experts.push(
        t(`${m}.experts.${e}.gate_proj.weight`, [I, H], 10 + e),
        t(`${m}.experts.${e}.up_proj.weight`, [I, H], 20 + e),
        t(`${m}.experts.${e}.down_proj.weight`, [H, I], 30 + e),
      );
    }
    await writeCheckpoint(src, [[t(`${m}.gate.weight`, [E, H], 1), t(`${m}.shared_expert.gate_proj.weight`, [I, H], 2), ...experts]], {
      model_type: 'qwen2_moe',
      num_experts: E,
    });
    const res = await prepare(src, 'bfloat16');
    const ck = await Checkpoint.open(res.outDir);
    expect(ck.keys().sort()).toEqual([
      `${m}.gate.weight`,
      `${m}.moe_weights.down`,
      `${m}.moe_weights.gate`,
      `${m}.moe_weights.up`,
      `${m}.shared_expert.gate_proj.weight`,
    ]);
    // QEfficient's canonical orientation: gate/up [E, H, I], down [E, I, H] (each [out, in] → [in, out]).
    expect(ck.get(`${m}.moe_weights.gate`)!.shape).toEqual([E, H, I]);
    expect(ck.get(`${m}.moe_weights.up`)!.shape).toEqual([E, H, I]);
    expect(ck.get(`${m}.moe_weights.down`)!.shape).toEqual([E, I, H]);
    expect(ck.fileOf(`${m}.moe_weights.gate`)).toBe(path.join(res.outDir, 'experts-layer-00000.safetensors'));
    for (const [role, name, rows, cols] of [
      ['gate', 'gate_proj', I, H],
      ['up', 'up_proj', I, H],
      ['down', 'down_proj', H, I],
    ] as const) {
      const stackedSource = concat(
        await Promise.all(Array.from({ length: E }, (_, e) => readKey(src, `${m}.experts.${e}.${name}.weight`))),
      );
      expect(sameBytes(await ck.read(`${m}.moe_weights.${role}`), transposeExperts(stackedSource, E, rows, cols, 2))).toBe(true);
    }
  });
});

describe('prepare: Mixtral experts converted while stacked (fused convert + transpose, batched writes)', () => {
  // Sizes that are not multiples of the kernel's 16-element tile, odd (the element loop) and even
  // (2×2 blocks through 32-bit words); experts larger than a write batch (SLOT_BATCH_BYTES, 1 MiB:
  // one per write) and smaller (602 × 148 in f16: 5 per batch, so 9 experts end in a partial one).
  const E = 9;
  const m = 'model.layers.0.block_sparse_moe';
  it.each([
    ['float16', 2, 601, 501],
    ['float16', 2, 602, 494],
    ['float16', 2, 602, 148],
    ['float16', 2, 512, 136], // sides multiples of 8: the SIMD transposer (7 per batch)
    ['float32', 4, 601, 501],
  ] as const)(
    'bf16 experts → %s (%i-byte elements, I = %i, H = %i): each expert [out, in] transposed, values converted (RNE), expert order',
    async (dtype, size, I, H) => {
      const src = path.join(tempDir(), `mixtral-${dtype}-${I}`);
      const experts = [];
      for (let e = 0; e < E; e++)
        experts.push(
          t(`${m}.experts.${e}.w1.weight`, [I, H], 100 + e),
          t(`${m}.experts.${e}.w2.weight`, [H, I], 200 + e),
          t(`${m}.experts.${e}.w3.weight`, [I, H], 300 + e),
        );
      await writeCheckpoint(src, [[t(`${m}.gate.weight`, [E, H], 1), ...experts]], { model_type: 'mixtral', num_local_experts: E });
      const res = await prepare(src, dtype);
      const ck = await Checkpoint.open(res.outDir);
      // The reference per bf16 bit pattern, computed once each (8 M elements are checked).
      const memo = new Map<number, number>();
      const ref = (b: number) => {
        let v = memo.get(b);
        if (v === undefined) memo.set(b, (v = size === 2 ? refHalf(bf16ToNumber(b)) : bf16ToNumber(b)));
        return v;
      };
      for (const [role, name, rows, cols] of [
        ['gate', 'w1', I, H],
        ['up', 'w3', I, H],
        ['down', 'w2', H, I],
      ] as const) {
        const got = await ck.read(`${m}.moe_weights.${role}`);
        expect(ck.get(`${m}.moe_weights.${role}`)!.shape).toEqual([E, cols, rows]);
        const view = size === 2 ? u16(got) : new Float32Array(got.buffer, got.byteOffset, got.byteLength / 4);
        for (let e = 0; e < E; e++) {
          const bits = u16(await readKey(src, `${m}.experts.${e}.${name}.weight`));
          // Every element of the expert, at its transposed place (index arithmetic written here, not taken from the kernel).
          for (let r = 0; r < rows; r++) {
            for (let c = 0; c < cols; c++) {
              const want = ref(bits[r * cols + c]!);
              const at = e * rows * cols + c * rows + r;
              if (view[at] !== want)
                expect(`${role} expert ${e} [${r}, ${c}] = ${view[at]}`).toBe(`${role} expert ${e} [${r}, ${c}] = ${want}`);
            }
          }
        }
      }
    },
  );
});

describe('prepare: fused split', () => {
  const E = 2,
    I = 3,
    H = 4;
  async function checkSplit(src: string, fusedKey: string, downKey: string, m: string) {
    const res = await prepare(src, 'bfloat16');
    const ck = await Checkpoint.open(res.outDir);
    const fused = await readKey(src, fusedKey);
    const row = H * 2;
    const gate: Uint8Array[] = [];
    const up: Uint8Array[] = [];
    for (let e = 0; e < E; e++) {
      const base = e * 2 * I * row;
      gate.push(fused.subarray(base, base + I * row));
      up.push(fused.subarray(base + I * row, base + 2 * I * row));
    }
    // canonical: gate/up [E, H, I], down [E, I, H] (QEfficient build_canonical_expert_weights, fused_split_dim=1)
    expect(ck.get(`${m}.moe_weights.gate`)!.shape).toEqual([E, H, I]);
    expect(ck.get(`${m}.moe_weights.down`)!.shape).toEqual([E, I, H]);
    expect(sameBytes(await ck.read(`${m}.moe_weights.gate`), transposeExperts(concat(gate), E, I, H, 2))).toBe(true);
    expect(sameBytes(await ck.read(`${m}.moe_weights.up`), transposeExperts(concat(up), E, I, H, 2))).toBe(true);
    expect(sameBytes(await ck.read(`${m}.moe_weights.down`), transposeExperts(await readKey(src, downKey), E, H, I, 2))).toBe(true);
    expect(ck.has(fusedKey) || ck.has(downKey)).toBe(false);
  }

  it('fused split, Mixtral-style experts.gate_up_proj [E, 2I, H]: gate = first I rows, up = the rest', async () => {
    const src = path.join(tempDir(), 'fused');
    const m = 'model.layers.0.block_sparse_moe';
    await writeCheckpoint(src, [
      [t(`${m}.experts.gate_up_proj`, [E, 2 * I, H], 1), t(`${m}.experts.down_proj`, [E, H, I], 2), t(`${m}.gate.weight`, [E, H], 3)],
    ]);
    await checkSplit(src, `${m}.experts.gate_up_proj`, `${m}.experts.down_proj`, m);
  });

  it('fused split, GraniteMoE-style input_linear [E, 2I, H] / output_linear [E, H, I]', async () => {
    const src = path.join(tempDir(), 'granite');
    const m = 'model.layers.0.block_sparse_moe';
    await writeCheckpoint(
      src,
      [
        [
          t(`${m}.input_linear.weight`, [E, 2 * I, H], 4),
          t(`${m}.output_linear.weight`, [E, H, I], 5),
          t(`${m}.router.layer.weight`, [E, H], 6),
        ],
      ],
      { model_type: 'granitemoe', num_local_experts: E },
    );
    await checkSplit(src, `${m}.input_linear.weight`, `${m}.output_linear.weight`, m);
  });
});

describe('prepare: MXFP4 dequant and interleaved split', () => {
  it('MXFP4 dequant/split: hand-made blocks, rows 0::2 / 1::2 → gate / up, biases alike', async () => {
    // H = 32 and I = 32 (one 32-value group per row): gate_up has 2I = 64 rows, down H = 32.
    const E = 1,
      I = 32,
      H = 32;
    const m = 'model.layers.0.mlp';
    const guBlocks = new Uint8Array(E * 2 * I * 16);
    const guScales = new Uint8Array(E * 2 * I);
    for (let r = 0; r < 2 * I; r++) {
      guScales[r] = 127 + (r % 3); // ×1, ×2, ×4
      for (let j = 0; j < 16; j++) guBlocks[r * 16 + j] = ((j + r) & 15) | (((15 - j) & 15) << 4);
    }
    const dBlocks = new Uint8Array(E * H * 16).fill(0x9a); // low 0xa → -1, high 0x9 → -0.5
    const dScales = new Uint8Array(E * H).fill(126); // ×0.5
    const bias = new Uint16Array(2 * I);
    for (let i = 0; i < 2 * I; i++) bias[i] = new Uint32Array(new Float32Array([i]).buffer)[0]! >>> 16;
    const dBias = new Uint16Array(H).fill(0x3f80); // 1.0
    const src = path.join(tempDir(), 'mx');
    await writeCheckpoint(src, [
      [
        t(`${m}.experts.gate_up_proj_blocks`, [E, 2 * I, 1, 16], 0, 'U8', guBlocks),
        t(`${m}.experts.gate_up_proj_scales`, [E, 2 * I, 1], 0, 'U8', guScales),
        t(`${m}.experts.gate_up_proj_bias`, [E, 2 * I], 0, 'BF16', new Uint8Array(bias.buffer)),
        t(`${m}.experts.down_proj_blocks`, [E, H, 1, 16], 0, 'U8', dBlocks),
        t(`${m}.experts.down_proj_scales`, [E, H, 1], 0, 'U8', dScales),
        t(`${m}.experts.down_proj_bias`, [E, H], 0, 'BF16', new Uint8Array(dBias.buffer)),
        t(`${m}.router.weight`, [E, H], 1),
      ],
    ]);
    const res = await prepare(src, 'float32');
    const ck = await Checkpoint.open(res.outDir);
    const fp4 = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];
    const rowOf = (r: number) => {
      const out: number[] = [];
      for (let j = 0; j < 16; j++) out.push(fp4[(j + r) & 15]! * 2 ** (r % 3), fp4[(15 - j) & 15]! * 2 ** (r % 3));
      return out;
    };
    const f32 = async (k: string) => [...new Float32Array((await ck.read(k)).slice().buffer)];
    // canonical [E, H, I]: element [h, i] is dequantized row 2i (gate) / 2i + 1 (up), column h
    expect(ck.get(`${m}.moe_weights.gate`)!.shape).toEqual([E, H, I]);
    const colMajor = (parity: number) =>
      Array.from({ length: H }, (_, h) => Array.from({ length: I }, (_, i) => rowOf(2 * i + parity)[h]!)).flat();
    expect(await f32(`${m}.moe_weights.gate`)).toEqual(colMajor(0));
    expect(await f32(`${m}.moe_weights.up`)).toEqual(colMajor(1));
    expect(ck.get(`${m}.moe_weights.down`)!.shape).toEqual([E, I, H]);
    // dequantized down [H, I] has -0.5 in even columns, -0.25 in odd ones; transposed, row i of [I, H] is column i
    expect(await f32(`${m}.moe_weights.down`)).toEqual(
      Array.from({ length: H * I }, (_, k) => (Math.floor(k / H) % 2 === 0 ? -0.5 : -0.25)),
    );
    expect(await f32(`${m}.moe_weights.gate_bias`)).toEqual(Array.from({ length: I }, (_, i) => 2 * i));
    expect(await f32(`${m}.moe_weights.up_bias`)).toEqual(Array.from({ length: I }, (_, i) => 2 * i + 1));
    expect(await f32(`${m}.moe_weights.down_bias`)).toEqual(Array.from({ length: H }, () => 1));
    expect(ck.has(`${m}.router.weight`)).toBe(true);
    // Every source byte read once, every output byte written once.
    const stats = [...res.executor!.stats.values()].find((s) => `${m}.moe_weights.gate` in s.writtenBytes)!;
    expect(stats.readBytes[`${m}.experts.gate_up_proj_blocks`]).toBe(guBlocks.byteLength);
    expect(stats.readBytes[`${m}.experts.gate_up_proj_bias`]).toBe(bias.byteLength);
    expect(stats.writtenBytes[`${m}.moe_weights.up`]).toBe(I * H * 4);
  });
});
