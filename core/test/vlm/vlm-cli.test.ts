/**
 * Qwen3-VL-MoE end to end through the CLI (in this process, test/support/cli.ts) on the fixture:
 * `export --config` → `prepare --dtype float32` → `compile` (both graphs) → `run
 * --pixel-values reference.json` / `--image` reproduces reference.json (HF transformers 4.57,
 * fp32 on the bf16 weights): generated_ids, logits within 1e-4, the compiled vision graph's
 * outputs within 1e-4. Prepared experts are checked against an independent split of the
 * released `gate_up_proj [E, H, 2I]` / `down_proj [E, I, H]` into QEfficient's canonical
 * `[E, H, I]` / `[E, I, H]` (QEfficient/transformers/moe/weights.py; DESIGN.md "Prepared checkpoint").
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, expect, it } from 'vitest';
import { toFloat32 } from '../../src/formats/float-convert';
import { Checkpoint } from '../../src/formats/safetensors';
import { describeFixtures } from '../../../test/support/fixtures';
import { haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import {
  dumpedLogits,
  expectConfigRefusals,
  expectGeneratedIds,
  expectGraphsAndArtifactsValid,
  exportPrepareCompile,
  exportRealConfig,
  itFloat16AndContinuousBatching,
  maxDiff,
  specKeys,
  vlmFixtureCli,
  vlmSpecs,
  writePng,
} from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-cli-');

describeFixtures('qwen3_vl_moe through the CLI', () => {
  // in this process (test/support/cli.ts): ONNX Runtime loads once for the file
  const { fx, ref, h, begin } = vlmFixtureCli('qwen3_vl_moe', tmp);
  let work = '';
  const { cliRun, ok } = h;

  beforeAll(async () => {
    work = begin(['config.json', 'model.safetensors']);
    // min_pixels below 16·16: smart_resize keeps the fixture image's size, as the reference did
    writeFileSync(
      path.join(work, 'model', 'preprocessor_config.json'),
      JSON.stringify({ min_pixels: 64, max_pixels: 1 << 20, image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5] }),
    );
    const c = await exportPrepareCompile(h);
    expect(c.stdout).toMatch(/^compile: ort → .*compiled-model-vision-\w+\.onnx/m);
    expect(c.stdout).toMatch(/^compile: ort → .*compiled-model-language-\w+\.onnx/m);
  }, 120_000);

  it('writes vision/ and language/ whose specs point into one prepared checkpoint with the real keys', async () => {
    const { v, l } = vlmSpecs(path.join(work, 'out'));
    expect(specKeys(v).every((k) => k.startsWith('model.visual.'))).toBe(true);
    const keys = specKeys(l);
    expect(keys).toContain('lm_head.weight');
    expect(keys).toContain('model.language_model.layers.1.mlp.moe_weights.gate');
    for (const d of ['vision', 'language']) expect((await ok('check', path.join('out', d, 'weight_spec.json'))).code).toBe(0);
  });

  it('prepare splits gate_up_proj [E, H, 2I] / down_proj [E, I, H] into canonical [E, H, I] / [E, I, H]', async () => {
    const src = await Checkpoint.open(path.join(work, 'model'));
    const l = JSON.parse(readFileSync(path.join(work, 'out', 'language', 'weight_spec.json'), 'utf8'));
    const prep = await Checkpoint.open(l.model_id);
    const [E, H, I] = [8, 64, 48];
    for (const layer of [0, 1]) {
      const m = `model.language_model.layers.${layer}.mlp`;
      const fused = toFloat32(await src.read(`${m}.experts.gate_up_proj`), 'BF16');
      const down = toFloat32(await src.read(`${m}.experts.down_proj`), 'BF16');
      const gate = new Float32Array(E * H * I);
      const up = new Float32Array(E * H * I);
      for (let e = 0; e < E; e++)
        for (let h = 0; h < H; h++)
          for (let j = 0; j < I; j++) {
            gate[(e * H + h) * I + j] = fused[(e * H + h) * 2 * I + j]!;
            up[(e * H + h) * I + j] = fused[(e * H + h) * 2 * I + I + j]!;
          }
      for (const [k, want, shape] of [
        ['gate', gate, [E, H, I]],
        ['up', up, [E, H, I]],
        ['down', down, [E, I, H]],
      ] as const) {
        expect(prep.get(`${m}.moe_weights.${k}`)!.shape).toEqual(shape);
        expect(toFloat32(await prep.read(`${m}.moe_weights.${k}`), 'F32')).toEqual(want);
      }
    }
  });

  it('the compiled vision graph gives image_embeds and deepstack_features within 1e-4', async () => {
    const rec = JSON.parse(readFileSync(path.join(work, 'out', 'vision', 'compile.json'), 'utf8'));
    const s = await ort.InferenceSession.create(rec.artifacts.model);
    const pv = ref.pixel_values as number[][];
    const [[t, h, w]] = ref.image_grid_thw;
    const out = await s.run({
      pixel_values: new ort.Tensor('float32', Float32Array.from(pv.flat()), [pv.length, pv[0]!.length]),
      image_grid_thw: new ort.Tensor('int64', new BigInt64Array(t * h * w), [1, t, h, w]),
    });
    expect(maxDiff(out.vision_embeds!.data as Float32Array, ref.image_embeds.flat())).toBeLessThan(1e-4);
    expect(maxDiff(out.deepstack_features!.data as Float32Array, ref.deepstack_features.flat(2))).toBeLessThan(1e-4);
  });

  it('run --pixel-values: --max-new-tokens 5 gives generated_ids; --dump-logits is within 1e-4', async () => {
    const source = ['--pixel-values', path.join(fx, 'reference.json')];
    await expectGeneratedIds(h, 'out', source, ref);
    const got = await dumpedLogits(h, source, ref);
    expect(maxDiff(got.flat(), (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
  });

  it('run --image on a PNG of the fixture image gives generated_ids', async () => {
    writePng(path.join(work, 'image.png'), ref.image);
    await expectGeneratedIds(h, 'out', ['--image', 'image.png'], ref);
  });

  it('CCL: a --comp-ctx-lengths-* export takes comp_ctx_lengths and gives generated_ids; --sampler is refused in one line (exit 2)', async () => {
    const ccl = ['--ctx-len', '64', '--comp-ctx-lengths-prefill', '32', '--comp-ctx-lengths-decode', '32,64'];
    await ok('export', '--config', 'model', '--out', 'out-ccl', ...ccl);
    await ok('compile', 'out-ccl');
    const report = JSON.parse(readFileSync(path.join(work, 'out-ccl', 'language', 'export-report.json'), 'utf8'));
    expect(report.graph.inputs).toContain('comp_ctx_lengths');
    await expectGeneratedIds(h, 'out-ccl', ['--pixel-values', path.join(fx, 'reference.json')], ref);
    // QEfficient's SamplerTransform has no Qwen3-VL decoder (pytorch_transforms.py, main ebf55e8)
    const r = await cliRun('export', '--config', fx, '--out', 'refused-sampler', '--sampler');
    expect(r.code).toBe(2);
    // a usage error: one line naming the flag, then the command's usage (the CLI's convention)
    expect(r.stderr.split('\n')[0]).toMatch(/--sampler: QEfficient's on-device sampler does not take qwen3_vl_moe/);
    expect(existsSync(path.join(work, 'refused-sampler'))).toBe(false);
  }, 60_000);

  it("qaic compile of either VLM graph plans QEfficient's Vision / language specializations (the full parity is qaic-recording-vlm.test.ts); image flags need --backend qaic", async () => {
    const v = await cliRun('compile', path.join('out', 'vision'), '--backend', 'qaic', '--dry-run');
    expect(v.code, v.stderr).toBe(0);
    expect(v.stdout).toContain('"name":"Vision"');
    const l = await cliRun(
      'compile',
      path.join('out', 'language'),
      '--backend',
      'qaic',
      '--dry-run',
      '--img-height',
      '64',
      '--img-width',
      '96',
    );
    expect(l.code, l.stderr).toBe(0);
    expect(l.stdout).toContain('"vision_size":');
    const o = await cliRun('compile', 'out', '--img-height', '64', '--img-width', '64');
    expect(o.code).toBe(2);
    expect(o.stderr.split('\n')[0]).toMatch(/--img-height sizes the qaic specializations of a VLM export; it needs --backend qaic/);
  });

  it('refuses unsupported VLM types and vision features with one line (exit 1), writing nothing', async () => {
    const cfg = JSON.parse(readFileSync(path.join(fx, 'config.json'), 'utf8'));
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['mllama', { ...cfg, model_type: 'mllama' }, /vision-language model_type "mllama" is not supported/],
      [
        'bicubic',
        { ...cfg, vision_config: { ...cfg.vision_config, interpolation_mode: 'bicubic' } },
        /vision_config\.interpolation_mode" "bicubic" is not supported/,
      ],
      [
        'deep',
        { ...cfg, vision_config: { ...cfg.vision_config, deepstack_visual_indexes: [0, 5] } },
        /deepstack_visual_indexes" names block 5 but depth is 3/,
      ],
      [
        'mrope',
        { ...cfg, text_config: { ...cfg.text_config, rope_scaling: { rope_type: 'default', mrope_section: [6, 5, 4] } } },
        /mrope_section" sums to 15 but head_dim \/ 2 is 16/,
      ],
    ];
    await expectConfigRefusals(h, cases);
  });

  it('run --pixel-values on a text export, or a bad pixel file, is one line', async () => {
    writeFileSync(path.join(work, 'bad.json'), JSON.stringify({ pixel_values: [[1, 2]], image_grid_thw: [[1, 4, 4]] }));
    const r = await cliRun('run', 'out', '--pixel-values', 'bad.json', '--input-ids', '1,2');
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/bad\.json: "pixel_values" has 1 rows but "image_grid_thw" needs 16/);
  });

  itFloat16AndContinuousBatching(h, fx, ref, 32);

  // last: onnx 1.12's check_model(path, full_check=True) writes the inferred shapes back into the
  // file, which makes every compile of it stale for the tests after it
  it.runIf(haveOnnxChecker())("both graphs and both compiled artifacts pass ONNX's checker with strict shape inference at opset 17", () => {
    for (const r of expectGraphsAndArtifactsValid(work, ['out/vision', 'out/language'])) expect(r.opset).toEqual([17]);
  });
});

describeFixtures('the real Qwen3-VL-30B-A3B config (benchmark: npm run bench vlm-export)', () => {
  it('exports both graphs from config.json alone: 27 vision blocks, deepstack [8, 16, 24], 48 MoE layers over one derived layout', async () => {
    const work = tmp();
    const r = await exportRealConfig(work, 'qwen3-vl-30b-a3b.json', 'Qwen3-VL-30B-A3B');
    expect(r.stdout).toMatch(/qwen3_vl_moe: vision 27 blocks, deepstack \[8, 16, 24\]; text 48 layers, 128 experts top-8/);
    const { v, l } = vlmSpecs(path.join(work, 'out'));
    expect(v.inputs).toHaveLength(351);
    expect(l.inputs.filter((i) => i.name.endsWith('.moe_weights.gate'))).toHaveLength(48);
    const manifest = JSON.parse(readFileSync(path.join(work, 'out', 'vlm.json'), 'utf8'));
    expect(manifest).toMatchObject({ kind: 'vlm', image_token_id: 151655, vision: { patch_size: 16, num_feature_layers: 3 } });
  });
});
