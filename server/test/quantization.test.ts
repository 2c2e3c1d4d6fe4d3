// Quantized checkpoints in the editor (issue 24): hover on a key of an FP8 checkpoint shows
// the stored dtype, the block size and the dequantized dtype; a spec naming a *_scale_inv
// tensor as a weight, or binding a raw FP8 weight, gets a diagnostic; a checkpoint whose
// quantization prepare cannot undo gets prepare's refusal — the same line `weight-spec
// check` prints (real JSON-RPC, real safetensors files).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Diagnostic, Hover } from 'vscode-languageserver-protocol';
import { REPO_ROOT } from '../../test/support/fixtures';
import { writeSafetensors } from '../../core/src/formats/safetensors';
import { runPrepare } from '../../core/src/prepare';
import { tempDir, writeTensors } from '../../core/test/support/check-helpers';
import { positionOf, startInMemory, textOf, type TestClient } from './harness';

function checkpoint(dir: string, quant: Record<string, unknown>): void {
  mkdirSync(dir, { recursive: true });
  writeTensors(path.join(dir, 'model.safetensors'), [
    { key: 'model.layers.0.self_attn.q_proj.weight', dtype: 'F8_E4M3', shape: [256, 320] },
    { key: 'model.layers.0.self_attn.q_proj.weight_scale_inv', dtype: 'F32', shape: [2, 3] },
    { key: 'model.norm.weight', dtype: 'BF16', shape: [320] },
    { key: 'mlp.gate.e8m0', dtype: 'F8_E8M0', shape: [4] },
  ]);
  writeFileSync(
    path.join(dir, 'config.json'),
    JSON.stringify({ model_type: 'qwen3_moe', torch_dtype: 'bfloat16', quantization_config: quant }),
  );
}

function spec(keys: string[]): string {
  return JSON.stringify(
    {
      files: [{ format: 'safetensors', path: 'ckpt/model.safetensors' }],
      inputs: keys.map((key) => ({ location: { file: 0, key }, name: key })),
      model_name: 'm',
      version: 5,
    },
    null,
    2,
  );
}

describe('quantized checkpoints: diagnostics and hover', () => {
  let client: TestClient;
  let dir: string;
  beforeAll(async () => {
    client = await startInMemory();
    dir = tempDir('ws-lsp-fp8-');
    checkpoint(path.join(dir, 'ckpt'), { quant_method: 'fp8', weight_block_size: [128, 128], fmt: 'e4m3' });
  });
  afterAll(() => client.close());

  it('a *_scale_inv key named as a weight and a raw FP8 weight get diagnostics on their keys; hover shows stored dtype, block and dequantized dtype', async () => {
    const file = path.join(dir, 'a.weight_spec.json');
    const text = spec(['model.layers.0.self_attn.q_proj.weight', 'model.layers.0.self_attn.q_proj.weight_scale_inv', 'model.norm.weight']);
    writeFileSync(file, text);
    const { uri, diagnostics } = await client.open(file, text);
    const by = (code: string) => diagnostics.filter((d: Diagnostic) => d.code === code);
    expect(by('quantization-scale')).toHaveLength(1);
    expect(textOf(text, by('quantization-scale')[0]!.range)).toBe('"model.layers.0.self_attn.q_proj.weight_scale_inv"');
    expect(by('quantization-scale')[0]!.message).toContain(
      'is a quantization scale of "model.layers.0.self_attn.q_proj.weight", not a weight',
    );
    expect(by('quantized-weight')).toHaveLength(1);
    expect(textOf(text, by('quantized-weight')[0]!.range)).toBe('"model.layers.0.self_attn.q_proj.weight"');
    expect(by('quantized-weight')[0]!.message).toMatch(
      /stored as F8_E4M3 scaled by "model.layers.0.self_attn.q_proj.weight_scale_inv" \(fp8, blocks 128×128\).*weight-spec prepare/,
    );
    expect(diagnostics.filter((d: Diagnostic) => /norm/.test(textOf(text, d.range)))).toEqual([]);

    const at = text.indexOf('"key": "model.layers.0.self_attn.q_proj.weight"') + 10;
    const hover = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: positionOf(text, at) });
    const value = (hover.contents as { value: string }).value;
    expect(value).toContain('dtype `F8_E4M3`');
    expect(value).toContain('quantized: stored `F8_E4M3` · fp8, blocks 128×128');
    expect(value).toContain('block size 128×128 · scale `model.layers.0.self_attn.q_proj.weight_scale_inv` `F32` [2, 3]');
    expect(value).toContain('model dtype: `bfloat16`');
    const atScale = text.indexOf('"key": "model.layers.0.self_attn.q_proj.weight_scale_inv"') + 10;
    const onScale = await client.request<Hover>('textDocument/hover', { textDocument: { uri }, position: positionOf(text, atScale) });
    expect((onScale.contents as { value: string }).value).toContain('quantization scale of `model.layers.0.self_attn.q_proj.weight`');
  });

  it('hover on a key of the prepared checkpoint names its FP8 origin: stored dtype, scale, block size, dequantized dtype', async () => {
    const root = tempDir('ws-lsp-fp8-prep-');
    const src = path.join(root, 'model');
    mkdirSync(src);
    await writeSafetensors(path.join(src, 'model.safetensors'), [
      { key: 'model.layers.0.self_attn.q_proj.weight', dtype: 'F8_E4M3', shape: [256, 320], data: new Uint8Array(256 * 320).fill(0x38) },
      {
        key: 'model.layers.0.self_attn.q_proj.weight_scale_inv',
        dtype: 'F32',
        shape: [2, 3],
        // finite, non-zero scales: prepare refuses zero or non-finite ones (issue 28)
        data: new Uint8Array(new Float32Array(6).fill(0.5).buffer),
      },
      { key: 'model.norm.weight', dtype: 'BF16', shape: [320], data: new Uint8Array(640) },
    ]);
    writeFileSync(
      path.join(src, 'config.json'),
      JSON.stringify({
        model_type: 'qwen3',
        torch_dtype: 'bfloat16',
        quantization_config: { quant_method: 'fp8', weight_block_size: [128, 128] },
      }),
    );
    const res = await runPrepare({ checkpoint: src, dtype: 'float32', out: path.join(root, 'model-qeff-prepared-float32'), workers: 0 });
    const file = path.join(root, 'p.weight_spec.json');
    const text = JSON.stringify(
      {
        files: [
          {
            format: 'safetensors',
            path: `model-qeff-prepared-float32/${res.plan.outputs.get('model.layers.0.self_attn.q_proj.weight')!.file}`,
          },
        ],
        inputs: [{ location: { file: 0, key: 'model.layers.0.self_attn.q_proj.weight' }, name: 'model.layers.0.self_attn.q_proj.weight' }],
        model_name: 'm',
        version: 5,
      },
      null,
      2,
    );
    writeFileSync(file, text);
    const { uri, diagnostics } = await client.open(file, text);
    expect(diagnostics.filter((d: Diagnostic) => /quantiz/.test(String(d.code)))).toEqual([]);
    const hover = await client.request<Hover>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('"key": "model.layers.0.self_attn.q_proj.weight"') + 10),
    });
    const value = (hover.contents as { value: string }).value;
    expect(value).toContain('dtype `F32` · shape `[256, 320]`');
    expect(value).toContain('dequantized by `weight-spec prepare` from FP8 (fp8, blocks 128×128)');
    expect(value).toContain('- stored `model.layers.0.self_attn.q_proj.weight` `F8_E4M3` [256, 320]');
    expect(value).toContain('- scale `model.layers.0.self_attn.q_proj.weight_scale_inv` `F32` [2, 3]');
    expect(value).toContain('block size 128×128');
    expect(value).toContain('dequantized dtype `F32` [256, 320]');
  });

  it('F8_E8M0 tensors are read (hover names the dtype)', async () => {
    const file = path.join(dir, 'c.weight_spec.json');
    const text = spec(['mlp.gate.e8m0']);
    writeFileSync(file, text);
    const { uri, diagnostics } = await client.open(file, text);
    expect(diagnostics.filter((d: Diagnostic) => d.code === 'file-not-safetensors')).toEqual([]);
    const hover = await client.request<Hover>('textDocument/hover', {
      textDocument: { uri },
      position: positionOf(text, text.indexOf('"key": "mlp.gate.e8m0"') + 10),
    });
    expect((hover.contents as { value: string }).value).toContain('dtype `F8_E8M0` · shape `[4]`');
  });

  it("a GPTQ checkpoint: the server and `weight-spec check` report prepare's refusal", async () => {
    const gdir = tempDir('ws-lsp-gptq-');
    checkpoint(path.join(gdir, 'ckpt'), { quant_method: 'gptq', bits: 8, group_size: 128 });
    const file = path.join(gdir, 'g.weight_spec.json');
    const text = spec(['model.norm.weight']);
    writeFileSync(file, text);
    const { diagnostics } = await client.open(file, text);
    const d = diagnostics.filter((x: Diagnostic) => x.code === 'quantization-unsupported');
    expect(d).toHaveLength(1);
    expect(textOf(text, d[0]!.range)).toBe('"ckpt/model.safetensors"');
    expect(d[0]!.message).toMatch(/quantization_config\.bits 8 \(quant_method "gptq"\) is not 4: .*; prepare dequantizes only fp8/);
    const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli.js'), 'check', file, '--no-onnx'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('error [quantization-unsupported]');
    expect(r.stdout).toContain(d[0]!.message);
  });
});
