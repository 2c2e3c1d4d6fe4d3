/**
 * A VLM's legacy export is two graphs over one checkpoint (the fixture's vision.legacy.onnx and
 * decoder.legacy.onnx, real torch.onnx.export of HF transformers 4.57 Qwen3-VL-MoE with
 * weights embedded). `export --onnx` on each, one `prepare`, `compile` of each: the bound
 * graphs run in ONNX Runtime reproduce reference.json (vision outputs and full-sequence logits
 * within 1e-4), and both specs point into the same prepared checkpoint. The decoder's fused
 * `experts.gate_up_proj [E, H, 2I]` is rebuilt in the graph from the prepared gate ⧺ up.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { maxDiff } from '../../../test/support/vlm-graphs';

const cli = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-vlm-legacy-');

describeFixtures('qwen3_vl_moe legacy graphs through export --onnx', () => {
  it('vision + decoder: weight-free over one prepared checkpoint, reproduce the reference in ORT', async () => {
    const fx = path.join(fixturesDir(), 'qwen3_vl_moe');
    const ref = JSON.parse(readFileSync(path.join(fx, 'reference.json'), 'utf8'));
    const work = tmp();
    mkdirSync(path.join(work, 'model'));
    for (const f of ['config.json', 'model.safetensors']) copyFileSync(path.join(fx, f), path.join(work, 'model', f));
    const ok = (...args: string[]) => {
      const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', cwd: work });
      if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')} → ${r.status}: ${r.stderr}`);
      return r;
    };
    for (const g of ['vision', 'decoder']) ok('export', '--onnx', path.join(fx, `${g}.legacy.onnx`), '--checkpoint', 'model', '--out', g);
    ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
    const spec = (g: string) => JSON.parse(readFileSync(path.join(work, g, 'weight_spec.json'), 'utf8'));
    expect(spec('vision').model_id).toBe(spec('decoder').model_id);
    const keys = spec('decoder').inputs.map((i: { location: { key: string } }) => i.location.key);
    expect(keys).toContain('model.language_model.layers.0.mlp.moe_weights.up');
    const session = async (g: string) => {
      ok('compile', g);
      return ort.InferenceSession.create(JSON.parse(readFileSync(path.join(work, g, 'compile.json'), 'utf8')).artifacts.model);
    };

    const pv = ref.pixel_values as number[][];
    const v = await (
      await session('vision')
    ).run({ pixel_values: new ort.Tensor('float32', Float32Array.from(pv.flat()), [pv.length, pv[0]!.length]) });
    expect(maxDiff(v.vision_embeds!.data as Float32Array, ref.image_embeds.flat())).toBeLessThan(1e-4);
    expect(maxDiff(v.deepstack_features!.data as Float32Array, ref.deepstack_features.flat(2))).toBeLessThan(1e-4);

    const ids: number[] = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const pos: number[][] = ref.position_ids_logits;
    const d = await (
      await session('decoder')
    ).run({
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      position_ids: new ort.Tensor('int64', BigInt64Array.from(pos.flat().map(BigInt)), [3, 1, ids.length]),
      vision_embeds: v.vision_embeds!,
      deepstack_features: v.deepstack_features!,
    });
    expect(d.logits!.dims).toEqual([1, ids.length, 320]);
    expect(maxDiff(d.logits!.data as Float32Array, (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
  });
});
