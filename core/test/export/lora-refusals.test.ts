/**
 * What `--lora` refuses, each with one line naming the file and the field (issue #46): adapters
 * PEFT saves whose math we do not implement (DoRA, …), an adapter of another base (a local
 * `base_model_name_or_path` that is not the base folder, shapes that do not fit, a module the
 * base has no weight for), and run ids the graph does not serve. Also PEFT's rsLoRA scaling
 * (lora_alpha / √r, peft/tuners/lora/layer.py `update_layer`) folded into the prepared B, checked
 * against the adapter's own bytes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { readSafetensorsHeader, readTensorBytes, writeSafetensors } from '../../src/formats/safetensors';
import { loraScaling } from '../../src/formats/peft-adapter';

const tmp = tempDirs('ws-lora-refuse-');

const base = () => path.join(fixturesDir(), 'llama');
const adapterA = () => path.join(fixturesDir(), 'llama_lora', 'adapter_a');

/** A copy of adapter_a with its config changed by `edit` (and its weights replaced when given). */
function adapterCopy(edit: (cfg: Record<string, unknown>) => void): string {
  const d = path.join(tmp(), 'adapter');
  fs.mkdirSync(d);
  const cfg = JSON.parse(fs.readFileSync(path.join(adapterA(), 'adapter_config.json'), 'utf8')) as Record<string, unknown>;
  cfg.base_model_name_or_path = base();
  edit(cfg);
  fs.writeFileSync(path.join(d, 'adapter_config.json'), JSON.stringify(cfg));
  fs.copyFileSync(path.join(adapterA(), 'adapter_model.safetensors'), path.join(d, 'adapter_model.safetensors'));
  return d;
}

async function exportLora(adapter: string): Promise<{ code: number; stderr: string }> {
  return cliInProcess(['export', '--config', base(), '--out', path.join(tmp(), 'out'), '--lora', adapter]);
}

/** Exit 1 and exactly one line on stderr, naming `file` and matching `what`. */
function expectOneLine(r: { code: number; stderr: string }, file: string, what: RegExp): void {
  expect(r.code).toBe(1);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toContain(file);
  expect(lines[0]).toMatch(what);
}

describeFixtures('--lora refuses what it does not implement, one line each', () => {
  for (const [field, value, what] of [
    ['use_dora', true, /use_dora: DoRA/],
    ['fan_in_fan_out', true, /fan_in_fan_out/],
    ['bias', 'lora_only', /bias: .*"none"/],
    ['modules_to_save', ['lm_head'], /modules_to_save/],
    ['rank_pattern', { q_proj: 8 }, /rank_pattern/],
    ['alpha_pattern', { q_proj: 8 }, /alpha_pattern/],
    ['layers_to_transform', [0], /layers_to_transform/],
    ['peft_type', 'IA3', /peft_type "IA3": only LORA/],
    ['init_lora_weights', 'pissa', /init_lora_weights: .*rewrites the base weights/],
  ] as const) {
    it(`${field}: ${JSON.stringify(value)}`, async () => {
      const d = adapterCopy((c) => (c[field] = value));
      expectOneLine(await exportLora(d), path.join(d, 'adapter_config.json'), what);
    });
  }

  it('--lora needs the base checkpoint (not config.json alone) and goes with --config', async () => {
    const cfgOnly = path.join(tmp(), 'cfg');
    fs.mkdirSync(cfgOnly);
    fs.copyFileSync(path.join(base(), 'config.json'), path.join(cfgOnly, 'config.json'));
    let r = await cliInProcess(['export', '--config', cfgOnly, '--out', path.join(tmp(), 'out'), '--lora', adapterA()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--lora needs the base checkpoint in the model directory/);
    r = await cliInProcess([
      'export',
      '--onnx',
      path.join(base(), 'legacy.onnx'),
      '--checkpoint',
      base(),
      '--out',
      path.join(tmp(), 'o'),
      '--lora',
      adapterA(),
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--lora goes with --config/);
  });

  it('a local base_model_name_or_path that is not the base folder', async () => {
    const other = path.join(fixturesDir(), 'qwen2');
    const d = adapterCopy((c) => (c.base_model_name_or_path = other));
    expectOneLine(await exportLora(d), 'adapter_config.json', /base_model_name_or_path .*qwen2.*not the base model/);
    const gone = adapterCopy((c) => (c.base_model_name_or_path = './no-such-model'));
    expectOneLine(await exportLora(gone), 'adapter_config.json', /a path that does not exist/);
    // prepare refuses the same adapter the same way
    const r = await cliInProcess(['prepare', '--checkpoint', base(), '--dtype', 'float32', '--out', path.join(tmp(), 'p'), '--lora', d]);
    expectOneLine(r, 'adapter_config.json', /not the base model/);
  });

  it('a Hub id as base_model_name_or_path is not a local path: the shapes decide', async () => {
    const d = adapterCopy((c) => (c.base_model_name_or_path = 'meta-llama/Llama-2-7b-hf'));
    expect((await exportLora(d)).code).toBe(0);
  });

  it('an adapter for other shapes, or for a module the base does not have', async () => {
    const d = adapterCopy(() => undefined);
    const file = path.join(d, 'adapter_model.safetensors');
    const f32 = (n: number) => new Uint8Array(new Float32Array(n).fill(0.01).buffer);
    const q = 'base_model.model.model.layers.0.self_attn.q_proj';
    // in = 32, but the base's q_proj takes hidden 64
    await writeSafetensors(file, [
      { key: `${q}.lora_A.weight`, dtype: 'F32', shape: [4, 32], data: f32(128) },
      { key: `${q}.lora_B.weight`, dtype: 'F32', shape: [64, 4], data: f32(256) },
    ]);
    expectOneLine(await exportLora(d), file, /for a \[64, 32\] Linear, but "model\.layers\.0\.self_attn\.q_proj\.weight" is \[64, 64\]/);
    const m = 'base_model.model.model.layers.7.self_attn.q_proj';
    await writeSafetensors(file, [
      { key: `${m}.lora_A.weight`, dtype: 'F32', shape: [4, 64], data: f32(256) },
      { key: `${m}.lora_B.weight`, dtype: 'F32', shape: [64, 4], data: f32(256) },
    ]);
    expectOneLine(await exportLora(d), file, /targets model\.layers\.7\.self_attn\.q_proj, but the base checkpoint .* has no/);
    await writeSafetensors(file, [
      { key: 'base_model.model.model.embed_tokens.lora_embedding_A', dtype: 'F32', shape: [4, 320], data: f32(1280) },
    ]);
    expectOneLine(await exportLora(d), file, /embedding LoRA is not supported/);
  });

  it('an adapter of a Linear the graph does not build as one (an MoE expert, served from the stacked experts)', async () => {
    const mixtral = path.join(fixturesDir(), 'mixtral');
    const d = adapterCopy((c) => (c.base_model_name_or_path = mixtral));
    const file = path.join(d, 'adapter_model.safetensors');
    const e = 'base_model.model.model.layers.0.block_sparse_moe.experts.0.w1';
    const f32 = (n: number) => new Uint8Array(new Float32Array(n).fill(0.01).buffer);
    await writeSafetensors(file, [
      { key: `${e}.lora_A.weight`, dtype: 'F32', shape: [4, 64], data: f32(256) },
      { key: `${e}.lora_B.weight`, dtype: 'F32', shape: [96, 4], data: f32(384) },
    ]);
    const r = await cliInProcess(['export', '--config', mixtral, '--out', path.join(tmp(), 'out'), '--lora', d]);
    expectOneLine(
      r,
      file,
      /targets model\.layers\.0\.block_sparse_moe\.experts\.0\.w1, which this mixtral graph does not build as a plain Linear/,
    );
  });

  it('use_rslora: B is folded with lora_alpha / √r (read back from the prepared tensor)', async () => {
    const d = adapterCopy((c) => (c.use_rslora = true));
    const prepared = path.join(tmp(), 'prepared');
    await cliStdout(undefined, 'prepare', '--checkpoint', base(), '--dtype', 'float32', '--out', prepared, '--lora', d);
    const scaling = 8 / Math.sqrt(4);
    expect(loraScaling(8, 4, true)).toBe(scaling);
    const src = await readSafetensorsHeader(path.join(d, 'adapter_model.safetensors'));
    const bInfo = src.tensors.get('base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight')!;
    const b = new Float32Array((await readTensorBytes(src.file, bInfo)).slice().buffer); // [out 32, r 4]
    const out = await readSafetensorsHeader(path.join(prepared, 'lora-adapters.safetensors'));
    const sInfo = out.tensors.get('model.layers.1.self_attn.v_proj.lora_b_weights')!;
    expect(sInfo.shape).toEqual([2, 1, 4, 32]);
    const stacked = new Float32Array((await readTensorBytes(out.file, sInfo)).slice().buffer);
    for (let j = 0; j < 4; j++)
      for (let o = 0; o < 32; o++) {
        expect(stacked[j * 32 + o]).toBe(0); // slot 0: the base
        expect(stacked[128 + j * 32 + o]).toBe(Math.fround(b[o * 4 + j]! * scaling));
      }
  });
});

describeFixtures('run refuses LoRA ids the graph does not serve', () => {
  it('--lora-id past the adapters, on a graph without lora_ids, and --lora-ids of the wrong length', async () => {
    const dir = tmp();
    const out = path.join(dir, 'export');
    const prepared = path.join(dir, 'prepared');
    await cliStdout(dir, 'export', '--config', base(), '--out', out, '--ctx-len', '16', '--lora', adapterA());
    await cliStdout(dir, 'prepare', '--checkpoint', base(), '--dtype', 'float32', '--out', prepared, '--lora', adapterA());
    await cliStdout(dir, 'compile', out, '--prepared', prepared);
    // a folder stacking other adapters (or the same in another order) would swap the ids: refused
    const other = path.join(dir, 'prepared-b');
    const adapterB = path.join(fixturesDir(), 'llama_lora', 'adapter_b');
    await cliStdout(dir, 'prepare', '--checkpoint', base(), '--dtype', 'float32', '--out', other, '--lora', adapterB);
    const bad = await cliInProcess(['compile', out, '--prepared', other]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/stacks the LoRA adapters 1 = .*adapter_b, but the export serves 1 = .*adapter_a/);
    let r = await cliInProcess(['run', out, '--input-ids', '1,2,3', '--lora-id', '2']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/^weight-spec: LoRA id 2 is not served by .*: ids are 0 \(base\) … 1 \(its adapters\)$/);
    r = await cliInProcess(['run', out, '--input-ids', '1,2;3,4', '--lora-ids', '1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--lora-ids has 1 id\(s\) for 2 --input-ids row\(s\)/);
    r = await cliInProcess(['run', out, '--input-ids', '1,2;3', '--lora-ids', '0,1']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/^weight-spec: the batch rows must be non-empty and of equal length/);
    r = await cliInProcess(['run', out, '--input-ids', '1,2;3,4', '--lora-ids', '0,1', '--temperature', '0.7']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/a batch of rows .* decodes greedily/);
    const fixedBatch = path.join(dir, 'batch2');
    await cliStdout(dir, 'export', '--config', base(), '--out', fixedBatch, '--ctx-len', '16', '--batch-size', '2', '--lora', adapterA());
    await cliStdout(dir, 'compile', fixedBatch, '--prepared', prepared);
    r = await cliInProcess(['run', fixedBatch, '--input-ids', '1,2;3,4;5,6', '--lora-ids', '0,1,1']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(/the graph's batch is fixed at 2; give 2 rows \(3 given\)$/);
    const plain = path.join(dir, 'plain');
    const prep2 = path.join(dir, 'prepared-plain');
    await cliStdout(dir, 'export', '--config', base(), '--out', plain, '--ctx-len', '16');
    await cliStdout(dir, 'prepare', '--checkpoint', base(), '--dtype', 'float32', '--out', prep2);
    await cliStdout(dir, 'compile', plain, '--prepared', prep2);
    r = await cliInProcess(['run', plain, '--input-ids', '1,2,3', '--lora-id', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/has no lora_ids input \(export it with --lora/);
    // id 0 on a plain graph is the base model: allowed
    expect((await cliInProcess(['run', plain, '--input-ids', '1,2,3', '--lora-id', '0', '--max-new-tokens', '1'])).code).toBe(0);
  });
});
