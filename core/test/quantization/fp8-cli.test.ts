/**
 * Quantized checkpoints through the CLI (issue 24): GPTQ 3-bit, AWQ GEMV and bitsandbytes configs (and
 * fp8 without scales) are refused by `prepare` and `export --config` with exit 1, one line
 * naming quant_method and what is supported, and nothing written (no output directory, no
 * lock, the parent directory unchanged); `inspect` reads F8_E8M0 and F8_E5M2 tensors.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { writeSafetensors } from '../../src/formats/safetensors';

const tmp = tempDirs('ws-fp8-cli-');
const cli = path.join(REPO_ROOT, 'dist', 'cli.js');
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

const LLAMA = {
  model_type: 'llama',
  vocab_size: 16,
  hidden_size: 8,
  intermediate_size: 16,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
};

async function model(root: string, quant: Record<string, unknown>, fp8 = false): Promise<string> {
  const dir = path.join(root, 'model');
  fs.mkdirSync(dir);
  await writeSafetensors(path.join(dir, 'model.safetensors'), [
    { key: 'model.embed_tokens.weight', dtype: 'BF16', shape: [16, 8], data: new Uint8Array(256) },
    { key: 'model.layers.0.self_attn.q_proj.weight', dtype: fp8 ? 'F8_E4M3' : 'BF16', shape: [8, 8], data: new Uint8Array(fp8 ? 64 : 128) },
  ]);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...LLAMA, quantization_config: quant }));
  return dir;
}

const listing = (d: string) => fs.readdirSync(d).sort();

describe('quantizations prepare cannot undo: exit 1, one line, nothing written', () => {
  const cases: [string, Record<string, unknown>, boolean][] = [
    ['gptq', { quant_method: 'gptq', bits: 3, group_size: 128, desc_act: false }, false],
    ['awq', { quant_method: 'awq', bits: 4, group_size: 128, version: 'gemv_fast', zero_point: true }, false],
    ['bitsandbytes', { quant_method: 'bitsandbytes', load_in_4bit: true, bnb_4bit_quant_type: 'nf4' }, false],
    ['fp8', { quant_method: 'fp8', weight_block_size: [128, 128] }, true], // fp8 without scales
  ];
  for (const [method, quant, fp8] of cases) {
    it(`${method}${fp8 ? ' without scales' : ''}: prepare (default and --out) and export --config`, async () => {
      const root = tmp();
      const dir = await model(root, quant, fp8);
      const before = listing(root);
      for (const args of [
        ['prepare', '--checkpoint', dir, '--dtype', 'bfloat16'],
        ['prepare', '--checkpoint', dir, '--dtype', 'float32', '--out', path.join(root, 'out')],
        ['export', '--config', dir, '--out', path.join(root, 'export')],
      ]) {
        const r = run(...args);
        expect(r.status, args.join(' ')).toBe(1);
        const lines = r.stderr.trim().split('\n');
        expect(lines, args.join(' ')).toHaveLength(1);
        expect(lines[0]).toContain(`weight-spec: ${path.join(dir, 'config.json')}: quantization_config.`);
        expect(lines[0]).toContain(`quant_method "${method}"`);
        expect(lines[0]).toMatch(
          fp8
            ? /has no scale tensor "model.layers.0.self_attn.q_proj.weight_scale_inv"/
            : /prepare dequantizes only fp8 .*compressed-tensors .*mxfp4/,
        );
        expect(r.stdout).toBe('');
        expect(listing(root), args.join(' ')).toEqual(before);
        expect(listing(dir)).toEqual(['config.json', 'model.safetensors']);
      }
    });
  }
});

describe('inspect reads the FP8 dtypes', () => {
  it('F8_E8M0, F8_E5M2 and F8_E4M3 rows in the table and --json', async () => {
    const file = path.join(tmp(), 'mx.safetensors');
    await writeSafetensors(file, [
      { key: 'experts.scales', dtype: 'F8_E8M0', shape: [2, 4], data: new Uint8Array(8).fill(127) },
      { key: 'w.e5m2', dtype: 'F8_E5M2', shape: [3], data: new Uint8Array(3) },
      { key: 'w.e4m3', dtype: 'F8_E4M3', shape: [3], data: new Uint8Array(3) },
    ]);
    const text = run('inspect', file);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/experts\.scales\s+F8_E8M0\s+\[2, 4\]/);
    const json = JSON.parse(run('inspect', file, '--json').stdout) as { tensors: { key: string; dtype: string; bytes: number }[] };
    expect(json.tensors.map((t) => [t.key, t.dtype, t.bytes])).toEqual([
      ['experts.scales', 'F8_E8M0', 8],
      ['w.e5m2', 'F8_E5M2', 3],
      ['w.e4m3', 'F8_E4M3', 3],
    ]);
  });
});
