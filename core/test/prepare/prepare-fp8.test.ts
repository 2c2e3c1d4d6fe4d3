/**
 * FP8 checkpoints through prepare (issue 24): the kernels against every FP8 code, the llama
 * fixture quantized in code (fp8 blocks, partial edge blocks, bf16 scales, compressed-tensors
 * per-channel) equal to the expected dequantized tensors computed in fp8-support.ts, bit for
 * bit in f32 and after RNE in bf16; the MoE transforms composing with dequantization (prepare
 * of the FP8 checkpoint = prepare of its dequantized twin, also expert-parallel); and every
 * quantization prepare cannot undo refused at planning, before anything is written.
 * Semantics: HF transformers `integrations/finegrained_fp8.py` (Fp8Quantize / Fp8Dequantize,
 * 0095b97), DeepSeek-V3 `inference/kernel.py` `weight_dequant` (0623163), compressed-tensors
 * `quantization/lifecycle/forward.py` `_dequantize` (00e56c6) — see fp8-support.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { fromFloat32, toFloat32 } from '../../src/formats/float-convert';
import { Checkpoint, writeSafetensors } from '../../src/formats/safetensors';
import { dequantFp8, fp8Values, planPrepare, runPrepare } from '../../src/prepare';
import { CHUNK_ELEMS } from '../../src/prepare/kernels';
import { isPieceable } from '../../src/prepare/run-piece';
import { bf16Bits, e4m3, e5m2, quantizeBlocks, quantizeCheckpoint } from '../support/fp8-support';
import { rng, tempDir, workerPath } from '../support/prepare-support';

const same = (a: number, b: number) => (Number.isNaN(a) ? Number.isNaN(b) : Object.is(a, b));

describe('FP8 kernels: every code', () => {
  it('E4M3: all 256 codes decode as float8_e4m3fn (±0, subnormals, 448, NaN at 0x7F/0xFF)', () => {
    const v = fp8Values('F8_E4M3');
    for (let b = 0; b < 256; b++) expect(same(v[b]!, e4m3(b)), `code 0x${b.toString(16)}`).toBe(true);
    expect([v[0x7e], v[0x01], v[0x80]]).toEqual([448, 2 ** -9, -0]);
    expect(Number.isNaN(v[0x7f]!) && Number.isNaN(v[0xff]!)).toBe(true);
  });

  it('E5M2 and E8M0: all 256 codes', () => {
    const v = fp8Values('F8_E5M2');
    for (let b = 0; b < 256; b++) expect(same(v[b]!, e5m2(b)), `e5m2 0x${b.toString(16)}`).toBe(true);
    const s = fp8Values('F8_E8M0');
    for (let b = 0; b < 255; b++) expect(s[b]).toBe(Math.fround(2 ** (b - 127)));
    expect(Number.isNaN(s[255]!)).toBe(true);
  });

  it('dequantFp8 over all 256 codes in a 16×16 matrix with 8×4 blocks (partial edge columns too): f32(q)·s, NaN stays NaN', () => {
    const q = new Uint8Array(256).map((_, i) => i);
    const shape = [16, 16];
    const block: [number, number] = [8, 6]; // 6 does not divide 16: the last column block is partial
    const grid: [number, number] = [2, 3];
    const scale = new Float32Array([0.375, 1 / 3, 2 ** -10, 7.5, -0.125, 1e-3].map(Math.fround));
    const out = dequantFp8(q, 'F8_E4M3', 0, shape, scale, { key: 's', block, grid });
    for (let f = 0; f < 256; f++) {
      const i = Math.floor(f / 16);
      const j = f % 16;
      const want = Math.fround(e4m3(f) * scale[Math.floor(i / 8) * 3 + Math.floor(j / 6)]!);
      expect(same(out[f]!, want), `code ${f}`).toBe(true);
    }
    // a run starting mid-row (a streamed chunk) computes the same values
    const part = dequantFp8(q.subarray(37, 200), 'F8_E4M3', 37, shape, scale, { key: 's', block, grid });
    expect(Array.from(part).every((x, k) => same(x, out[37 + k]!))).toBe(true);
  });
});

async function prepared(src: string, dtype: 'float32' | 'bfloat16', extra: Record<string, unknown> = {}): Promise<Checkpoint> {
  const res = await runPrepare({
    checkpoint: src,
    dtype,
    workerPath: workerPath(),
    out: path.join(path.dirname(src), `${path.basename(src)}-${dtype}-${Object.keys(extra).length}`),
    ...extra,
  });
  return Checkpoint.open(res.outDir);
}

/** Checks each expected key bit for bit: f32 as is, bf16 after RNE of the f32 value. */
async function expectDequantized(out: Checkpoint, expected: Map<string, Float32Array>, dtype: 'F32' | 'BF16'): Promise<void> {
  for (const [key, want] of expected) {
    const info = out.get(key)!;
    expect(info.dtype, key).toBe(dtype);
    const got = await out.read(key);
    if (dtype === 'F32') {
      expect(Buffer.compare(Buffer.from(got), Buffer.from(want.buffer, want.byteOffset, want.byteLength)), key).toBe(0);
    } else {
      const bits = new Uint16Array(got.buffer, got.byteOffset, got.byteLength / 2);
      const bad = Array.from(want).findIndex((x, i) => bits[i] !== bf16Bits(x));
      expect(bad, `${key} element ${bad}`).toBe(-1);
    }
  }
}

describeFixtures('prepare dequantizes the llama fixture quantized to FP8 in code', () => {
  it('fp8 32×32 blocks, f32 scales: bit for bit in f32, RNE in bf16; scales gone, other tensors as before', async () => {
    const src = path.join(tempDir('ws-fp8-'), 'llama-fp8');
    const expected = await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, { method: 'fp8', block: [32, 32] });
    expect(expected.size).toBe(14);
    const f32 = await prepared(src, 'float32');
    await expectDequantized(f32, expected, 'F32');
    expect(f32.keys().filter((k) => k.includes('scale'))).toEqual([]);
    // the first symptom: q_proj.weight[0] was −64 (the raw E4M3 value), not ≈ −0.04
    const q0 = toFloat32(await f32.read('model.layers.0.self_attn.q_proj.weight'), 'F32')[0]!;
    expect(Math.abs(q0)).toBeLessThan(1);
    const orig = await Checkpoint.open(path.join(fixturesDir(), 'llama'));
    expect(f32.keys().sort()).toEqual(orig.keys().sort());
    const norm = 'model.layers.0.input_layernorm.weight';
    expect(Buffer.from(await f32.read(norm)).equals(Buffer.from(fromFloat32(toFloat32(await orig.read(norm), 'BF16'), 'F32')))).toBe(true);
    await expectDequantized(await prepared(src, 'bfloat16'), expected, 'BF16');
  });

  it('partial edge blocks (48×40 on 64/128-wide matrices) with bf16 scales: bit for bit', async () => {
    const src = path.join(tempDir('ws-fp8-'), 'llama-fp8-edge');
    const expected = await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, {
      method: 'fp8',
      block: [48, 40],
      scaleDtype: 'BF16',
    });
    const ck = await Checkpoint.open(src);
    expect(ck.get('model.layers.0.mlp.down_proj.weight_scale_inv')!.shape).toEqual([2, 4]); // [64, 128] → ceil(64/48) × ceil(128/40)
    await expectDequantized(await prepared(src, 'float32'), expected, 'F32');
    await expectDequantized(await prepared(src, 'bfloat16'), expected, 'BF16');
  });

  it('compressed-tensors float8 per-channel (bf16 weight_scale [R, 1]), input_scale dropped: bit for bit', async () => {
    const src = path.join(tempDir('ws-fp8-'), 'llama-ct');
    const expected = await quantizeCheckpoint(path.join(fixturesDir(), 'llama'), src, {
      method: 'compressed-tensors-channel',
      inputScales: true,
    });
    expect((await Checkpoint.open(src)).keys().filter((k) => k.endsWith('.input_scale')).length).toBe(14);
    const f32 = await prepared(src, 'float32');
    await expectDequantized(f32, expected, 'F32');
    expect(f32.keys().filter((k) => /scale/.test(k))).toEqual([]);
    await expectDequantized(await prepared(src, 'bfloat16'), expected, 'BF16');
  });
});

/** A MoE checkpoint with FP8 experts (per-expert Qwen-MoE keys, fused gate_up/down in both layouts), and its dequantized f32 twin. */
async function moePair(root: string, block: [number, number]): Promise<{ fp8: string; twin: string }> {
  const E = 4;
  const H = 40;
  const I = 24; // 2I = 48 rows: with 16-row blocks, the gate/up boundary (row 24) falls inside a block
  const r = rng(7);
  const rand = (n: number) => Float32Array.from({ length: n }, () => (r() - 0.5) * 0.2);
  const fp8: Parameters<typeof writeSafetensors>[1] = [];
  const twin: Parameters<typeof writeSafetensors>[1] = [];
  const add = (key: string, shape: number[], scaleKey: string) => {
    const w = rand(shape.reduce((a, b) => a * b, 1));
    const z = quantizeBlocks(w, shape, block);
    fp8.push(
      { key, dtype: 'F8_E4M3', shape, data: z.q },
      { key: scaleKey, dtype: 'F32', shape: z.scaleShape, data: fromFloat32(z.scale, 'F32') },
    );
    twin.push({ key, dtype: 'F32', shape, data: fromFloat32(z.expected, 'F32') });
  };
  for (let e = 0; e < E; e++) {
    for (const [p, shape] of [
      ['gate_proj', [I, H]],
      ['up_proj', [I, H]],
      ['down_proj', [H, I]],
    ] as const) {
      add(`model.layers.0.mlp.experts.${e}.${p}.weight`, [...shape], `model.layers.0.mlp.experts.${e}.${p}.weight_scale_inv`);
    }
  }
  add('model.layers.1.mlp.experts.gate_up_proj', [E, 2 * I, H], 'model.layers.1.mlp.experts.gate_up_proj_scales_inv');
  add('model.layers.1.mlp.experts.down_proj', [E, H, I], 'model.layers.1.mlp.experts.down_proj_scales_inv');
  // transformers 4.57's Qwen3-VL-MoE layout: gate_up [E, H, 2I], down [E, I, H]
  add('model.layers.2.mlp.experts.gate_up_proj', [E, H, 2 * I], 'model.layers.2.mlp.experts.gate_up_proj_scales_inv');
  add('model.layers.2.mlp.experts.down_proj', [E, I, H], 'model.layers.2.mlp.experts.down_proj_scales_inv');
  const router = { key: 'model.layers.0.mlp.gate.weight', dtype: 'F32' as const, shape: [E, H], data: fromFloat32(rand(E * H), 'F32') };
  fp8.push(router);
  twin.push(router);
  const dirs = { fp8: path.join(root, 'moe-fp8'), twin: path.join(root, 'moe-twin') };
  for (const [d, tensors, q] of [
    [dirs.fp8, fp8, { quant_method: 'fp8', weight_block_size: block }],
    [dirs.twin, twin, undefined],
  ] as const) {
    fs.mkdirSync(d);
    await writeSafetensors(path.join(d, 'model.safetensors'), tensors);
    fs.writeFileSync(
      path.join(d, 'config.json'),
      JSON.stringify({ model_type: 'qwen3_moe', num_experts: E, ...(q ? { quantization_config: q } : {}) }),
    );
  }
  return dirs;
}

describe('FP8 composes with the MoE transforms (dequantize first)', () => {
  for (const parallel of [false, true]) {
    it(`per-expert stacking and fused gate_up splits ([E, 2I, H] and [E, H, 2I])${parallel ? ', expert-parallel P=2' : ''}: equal to prepare of the dequantized twin`, async () => {
      const { fp8, twin } = await moePair(tempDir('ws-fp8-moe-'), [16, 16]);
      const ep = parallel ? { moeFlavour: 'expert_parallel', pipelineStages: 2, parallelExperts: 2 } : undefined; // N = E/P
      const a = await prepared(fp8, 'float32', ep ?? {});
      const b = await prepared(twin, 'float32', ep ?? {});
      expect(a.keys().sort()).toEqual(b.keys().sort());
      expect(a.keys().some((k) => k.includes('moe_weights'))).toBe(true);
      for (const k of b.keys()) {
        expect(a.get(k)!.shape, k).toEqual(b.get(k)!.shape);
        expect(Buffer.from(await a.read(k)).equals(Buffer.from(await b.read(k))), k).toBe(true);
      }
      const plan = await planPrepare({ checkpoint: fp8, dtype: 'float32', ...(ep ?? {}) } as Parameters<typeof planPrepare>[0]);
      const experts = plan.tasks.filter((t) => t.id.startsWith('experts:'));
      expect(experts.every((t) => t.transform.startsWith('fp8-dequant+'))).toBe(true);
      expect(experts.flatMap((t) => t.inputs.map((i) => i.key)).filter((k) => k.includes('scale')).length).toBe(16);
    });
  }
});

describe('FP8 experts into bf16/f16/f32: dequantized, transposed and stacked by the SIMD kernels (issue 35)', () => {
  for (const dtype of ['bfloat16', 'float16', 'float32'] as const) {
    it(`per-expert stacking → ${dtype}: the SIMD and the scalar paths both equal prepare of the dequantized twin`, async () => {
      const { fp8, twin } = await moePair(tempDir('ws-fp8-moe-simd-'), [16, 16]);
      const saved = process.env.WEIGHT_SPEC_SIMD;
      const run = async (src: string, simd: 'on' | 'off') => {
        process.env.WEIGHT_SPEC_SIMD = simd;
        try {
          const out = path.join(path.dirname(src), `${path.basename(src)}-${dtype}-simd-${simd}`);
          return Checkpoint.open((await runPrepare({ checkpoint: src, dtype, workerPath: workerPath(), out })).outDir);
        } finally {
          if (saved === undefined) delete process.env.WEIGHT_SPEC_SIMD;
          else process.env.WEIGHT_SPEC_SIMD = saved;
        }
      };
      const want = await run(twin, 'off');
      for (const simd of ['on', 'off'] as const) {
        const got = await run(fp8, simd);
        expect(got.keys().sort()).toEqual(want.keys().sort());
        expect(got.keys().some((k) => k.startsWith('model.layers.0.') && k.includes('moe_weights'))).toBe(true);
        for (const k of want.keys())
          expect(Buffer.from(await got.read(k)).equals(Buffer.from(await want.read(k))), `${k} (SIMD ${simd})`).toBe(true);
      }
    });
  }
});

describe('FP8 experts made in pieces (issue 35: a layer is one task; its stacks are cut between expert slices)', () => {
  for (const direct of ['off', 'on'] as const) {
    it(`two workers filling pieces of a few slices (direct writes ${direct}): byte for byte the run in one piece, each source byte read once`, async () => {
      const { fp8 } = await moePair(tempDir('ws-fp8-moe-pieces-'), [16, 16]);
      const saved = process.env.WEIGHT_SPEC_DIRECT_IO;
      process.env.WEIGHT_SPEC_DIRECT_IO = direct;
      try {
        const run = (name: string, workers: number, pieceBytes?: number) =>
          runPrepare({
            checkpoint: fp8,
            dtype: 'bfloat16',
            workerPath: workerPath(),
            out: path.join(path.dirname(fp8), name),
            workers,
            ...(pieceBytes ? { pieceBytes } : {}),
          });
        const whole = await run('whole', 0);
        const pieced = await run('pieced', 2, 2000); // about one slice per piece
        expect(whole.executor!.pieces).toBe(0);
        expect(pieced.executor!.pieces).toBeGreaterThan(1);
        const files = fs.readdirSync(whole.outDir).filter((f) => f.endsWith('.safetensors'));
        expect(files.length).toBeGreaterThan(0);
        for (const f of files)
          expect(fs.readFileSync(path.join(pieced.outDir, f)).equals(fs.readFileSync(path.join(whole.outDir, f))), f).toBe(true);
        if (direct === 'on') {
          // and the same bytes as through the page cache
          process.env.WEIGHT_SPEC_DIRECT_IO = 'off';
          const cached = await run('cached', 0);
          for (const f of files)
            expect(fs.readFileSync(path.join(cached.outDir, f)).equals(fs.readFileSync(path.join(whole.outDir, f))), f).toBe(true);
        }
        const plan = await planPrepare({ checkpoint: fp8, dtype: 'bfloat16' });
        // the expert stacks are what was cut (a dense task would be cut anyway)
        expect(plan.tasks.some((t) => isPieceable(t) && t.tensors.some((x) => x.recipe.kind === 'slots'))).toBe(true);
        for (const task of plan.tasks) {
          const st = pieced.executor!.stats.get(task.id)!;
          for (const x of Object.values(task.sources)) expect(st.readBytes[x.key] ?? 0, x.key).toBe(x.byteLength);
        }
      } finally {
        if (saved === undefined) delete process.env.WEIGHT_SPEC_DIRECT_IO;
        else process.env.WEIGHT_SPEC_DIRECT_IO = saved;
      }
    });
  }
});

describe('a dense FP8 tensor larger than one streamed chunk', () => {
  it(`[600, 520] in 128×128 blocks (${600 * 520} elements > CHUNK_ELEMS ${CHUNK_ELEMS}: chunks start mid-row and mid-block): bit for bit`, async () => {
    const shape = [600, 520];
    const r = rng(3);
    const z = quantizeBlocks(
      Float32Array.from({ length: 600 * 520 }, () => (r() - 0.5) * 3),
      shape,
      [128, 128],
      'BF16',
    );
    const d = path.join(tempDir('ws-fp8-big-'), 'big');
    fs.mkdirSync(d);
    await writeSafetensors(path.join(d, 'model.safetensors'), [
      { key: 'w.weight', dtype: 'F8_E4M3', shape, data: z.q },
      { key: 'w.weight_scale_inv', dtype: 'BF16', shape: z.scaleShape, data: fromFloat32(z.scale, 'BF16') },
    ]);
    fs.writeFileSync(
      path.join(d, 'config.json'),
      JSON.stringify({ quantization_config: { quant_method: 'fp8', weight_block_size: [128, 128] } }),
    );
    expect(600 * 520).toBeGreaterThan(CHUNK_ELEMS);
    await expectDequantized(await prepared(d, 'float32'), new Map([['w.weight', z.expected]]), 'F32');
  });
});

describe('compressed-tensors float8 strategies: tensor, group, block', () => {
  // llm-compressor's FP8-BLOCK writes strategy "block" with block_structure; W = q · weight_scale (forward.py _dequantize)
  const cases: [string, Record<string, unknown>, [number, number], number[] | undefined][] = [
    ['tensor', { strategy: 'tensor' }, [100, 70], [1]],
    ['group', { strategy: 'group', group_size: 14 }, [1, 14], undefined],
    ['block', { strategy: 'block', block_structure: [32, 32] }, [32, 32], undefined],
  ];
  for (const [name, weights, block, scaleShape] of cases) {
    it(`${name}: bit for bit in f32`, async () => {
      const r = rng(11);
      const z = quantizeBlocks(
        Float32Array.from({ length: 100 * 70 }, () => (r() - 0.5) * 2),
        [100, 70],
        block,
        'BF16',
      );
      const d = path.join(tempDir('ws-ct-'), name);
      fs.mkdirSync(d);
      await writeSafetensors(path.join(d, 'model.safetensors'), [
        { key: 'l.weight', dtype: 'F8_E4M3', shape: [100, 70], data: z.q },
        { key: 'l.weight_scale', dtype: 'BF16', shape: scaleShape ?? z.scaleShape, data: fromFloat32(z.scale, 'BF16') },
        { key: 'l.input_scale', dtype: 'F32', shape: [1], data: new Uint8Array(4) },
      ]);
      const quantization_config = {
        quant_method: 'compressed-tensors',
        format: 'float-quantized',
        config_groups: {
          group_0: { targets: ['Linear'], weights: { type: 'float', num_bits: 8, symmetric: true, dynamic: false, ...weights } },
        },
      };
      fs.writeFileSync(path.join(d, 'config.json'), JSON.stringify({ quantization_config }));
      const out = await prepared(d, 'float32');
      expect(out.keys()).toEqual(['l.weight']);
      await expectDequantized(out, new Map([['l.weight', z.expected]]), 'F32');
    });
  }
});

describe('quantizations prepare cannot undo are refused at planning', () => {
  async function ckptWith(quant: Record<string, unknown> | undefined, tensors: Parameters<typeof writeSafetensors>[1]): Promise<string> {
    const d = path.join(tempDir('ws-fp8-refuse-'), 'model');
    fs.mkdirSync(d);
    await writeSafetensors(path.join(d, 'model.safetensors'), tensors);
    fs.writeFileSync(
      path.join(d, 'config.json'),
      JSON.stringify({ model_type: 'llama', ...(quant ? { quantization_config: quant } : {}) }),
    );
    return d;
  }
  type Tensors = Parameters<typeof writeSafetensors>[1];
  const plain: Tensors = [{ key: 'a.weight', dtype: 'F32', shape: [2, 2], data: new Uint8Array(16) }];
  const f8: Tensors = [{ key: 'a.weight', dtype: 'F8_E4M3', shape: [2, 2], data: new Uint8Array(4) }];
  const cases: [string, Record<string, unknown> | undefined, Tensors, RegExp][] = [
    [
      'gptq 8-bit',
      { quant_method: 'gptq', bits: 8, group_size: 128 },
      plain,
      /quantization_config\.bits 8 \(quant_method "gptq"\) is not 4/,
    ],
    [
      'gptq marlin layout',
      { quant_method: 'gptq', bits: 4, group_size: 128, checkpoint_format: 'marlin' },
      plain,
      /quantization_config\.checkpoint_format "marlin" \(quant_method "gptq"\) is not a layout prepare reads \(gptq, gptq_v2\)/,
    ],
    [
      'gptq v1 asymmetric',
      { quant_method: 'gptq', bits: 4, group_size: 128, sym: false },
      plain,
      /quantization_config\.sym false \(quant_method "gptq"\) with checkpoint_format "gptq" \(v1\) stores zero − 1/,
    ],
    ['gptq pack_dtype', { quant_method: 'gptq', bits: 4, pack_dtype: 'int16' }, plain, /quantization_config\.pack_dtype "int16"/],
    [
      'awq gemv',
      { quant_method: 'awq', bits: 4, version: 'gemv' },
      plain,
      /quantization_config\.version "gemv" \(quant_method "awq"\) is not the GEMM layout/,
    ],
    [
      'awq llm-awq',
      { quant_method: 'awq', bits: 4, backend: 'llm-awq' },
      plain,
      /quantization_config\.backend "llm-awq" \(quant_method "awq"\) is not AutoAWQ/,
    ],
    ['exllamav2 (exl2)', { quant_method: 'exl2', bits: 4 }, plain, /quant_method "exl2" cannot be undone by prepare/],
    ['bitsandbytes', { quant_method: 'bitsandbytes', load_in_4bit: true }, plain, /quant_method "bitsandbytes"/],
    ['legacy bitsandbytes (load_in_8bit, no quant_method)', { load_in_8bit: true }, plain, /quant_method "bitsandbytes"/],
    [
      'compressed-tensors int4',
      { quant_method: 'compressed-tensors', format: 'pack-quantized', config_groups: { g: { weights: { type: 'int', num_bits: 4 } } } },
      plain,
      /quant_method "compressed-tensors" with format "pack-quantized"/,
    ],
    [
      'fp8 without scales',
      { quant_method: 'fp8', weight_block_size: [128, 128] },
      f8,
      /quant_method "fp8" but "a.weight" \(F8_E4M3\) has no scale tensor "a.weight_scale_inv"/,
    ],
  ];
  for (const [name, quant, tensors, re] of cases) {
    it(`${name}: one line naming quant_method and what is supported`, async () => {
      const d = await ckptWith(quant, tensors);
      const err = await planPrepare({ checkpoint: d, dtype: 'float32' }).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).toMatch(re);
      expect(err!.message).toContain(path.join(d, 'config.json'));
      if (name !== 'fp8 without scales') expect(err!.message).toMatch(/prepare dequantizes only fp8 .*compressed-tensors .*mxfp4/);
      expect(err!.message.split('\n')).toHaveLength(1);
    });
  }

  it('FP8 weights or scales without any quantization_config are refused, not misread', async () => {
    await expect(planPrepare({ checkpoint: await ckptWith(undefined, f8), dtype: 'float32' })).rejects.toThrow(
      /"a.weight" is F8_E4M3 but config.json declares no quantization_config/,
    );
    const withScale = [...f8, { key: 'a.weight_scale_inv', dtype: 'F32' as const, shape: [1, 1], data: new Uint8Array(4) }];
    await expect(planPrepare({ checkpoint: await ckptWith(undefined, withScale), dtype: 'float32' })).rejects.toThrow(
      /"a.weight_scale_inv" is a quantization scale, but config.json declares no quantization_config/,
    );
  });

  it('a scale whose shape does not fit the block grid names both shapes', async () => {
    const d = await ckptWith({ quant_method: 'fp8', weight_block_size: [1, 1] }, [
      ...f8,
      { key: 'a.weight_scale_inv', dtype: 'F32' as const, shape: [1, 1], data: new Uint8Array(4) },
    ]);
    await expect(planPrepare({ checkpoint: d, dtype: 'float32' })).rejects.toThrow(
      /scale "a.weight_scale_inv" is \[1,1\], but "a.weight" \[2,2\] in 1×1 blocks needs \[2,2\]/,
    );
  });
});
