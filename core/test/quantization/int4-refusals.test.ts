/**
 * What prepare cannot read exactly from a GPTQ/AWQ checkpoint is refused with one line naming the
 * file and the field or tensor, before anything is written (the config's fields are refused at
 * planning: core/test/prepare/prepare-fp8.test.ts "quantizations prepare cannot undo"):
 * a GPTQ v1 zero point nibble of 15 (zero 16, not 4-bit), a permuting g_idx a kept graph would
 * not read (desc_act false), a group size MatMulNBits cannot take, missing or misshapen companion
 * tensors, packed weights without a quantization_config, and `--keep-quantized` where there is
 * nothing to keep.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSafetensorsHeaderSync, writeSafetensors } from '../../src/formats/safetensors';
import { describeQuantizedKey } from '../../src/check';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { int4Checkpoint } from '../support/int4-checkpoint';

const tmp = tempDirs('ws-int4-refuse-');

type Tensors = Parameters<typeof writeSafetensors>[1];

/** One GPTQ Linear [out 8, in 32] with the given overrides, and its config. */
async function oneLinear(
  root: string,
  quant: Record<string, unknown> | undefined,
  edit: (t: Tensors) => Tensors = (t) => t,
): Promise<string> {
  const dir = path.join(root, 'ckpt');
  fs.mkdirSync(dir);
  const m = 'model.layers.0.mlp.up_proj';
  const tensors: Tensors = [
    { key: `${m}.qweight`, dtype: 'I32', shape: [4, 8], data: new Uint8Array(4 * 8 * 4).fill(0x11) },
    { key: `${m}.qzeros`, dtype: 'I32', shape: [2, 1], data: new Uint8Array(new Int32Array([0x77777777, 0x77777777]).buffer) },
    { key: `${m}.scales`, dtype: 'F16', shape: [2, 8], data: new Uint8Array(new Uint16Array(16).fill(0x3c00).buffer) },
    { key: `${m}.g_idx`, dtype: 'I32', shape: [32], data: new Uint8Array(Int32Array.from({ length: 32 }, (_, i) => i >> 4).buffer) },
  ];
  await writeSafetensors(path.join(dir, 'model.safetensors'), edit(tensors));
  fs.writeFileSync(
    path.join(dir, 'config.json'),
    JSON.stringify({ model_type: 'llama', ...(quant ? { quantization_config: quant } : {}) }),
  );
  return dir;
}

const GPTQ = { quant_method: 'gptq', bits: 4, group_size: 16, desc_act: false, sym: true, checkpoint_format: 'gptq' };

/** Runs prepare; expects exit `code`, one stderr line matching `re`, and no output folder. */
async function refused(root: string, args: string[], code: number, re: RegExp): Promise<void> {
  const out = path.join(root, 'out');
  const r = await cliInProcess(['prepare', ...args, '--out', out]);
  expect(r.code, r.stderr).toBe(code);
  // progress lines aside, one error line
  expect(r.stderr.split('\n').filter((l) => l.startsWith('weight-spec:'))).toHaveLength(1);
  expect(r.stderr).toMatch(re);
  expect(fs.existsSync(out)).toBe(false);
}

describe('int4: refused with one line, nothing written', () => {
  it('a GPTQ v1 zero point stored as 15 (zero 16)', async () => {
    const root = tmp();
    const dir = await oneLinear(root, GPTQ, (t) =>
      t.map((x) => (x.key.endsWith('qzeros') ? { ...x, data: new Uint8Array(new Int32Array([0x777f7777, 0x77777777]).buffer) } : x)),
    );
    await refused(
      root,
      ['--checkpoint', dir, '--dtype', 'float32'],
      1,
      /qzeros" stores 15 at group 0, column 4: a GPTQ v1 zero point of 16 is not 4-bit/,
    );
  });

  it('a permuting g_idx under desc_act false: dequantized as it says, refused when kept', async () => {
    const root = tmp();
    const perm = Int32Array.from({ length: 32 }, (_, i) => (i % 2 === 0 ? 0 : 1));
    const dir = await oneLinear(root, GPTQ, (t) =>
      t.map((x) => (x.key.endsWith('g_idx') ? { ...x, data: new Uint8Array(perm.buffer) } : x)),
    );
    await refused(
      root,
      ['--checkpoint', dir, '--dtype', 'float32', '--keep-quantized'],
      1,
      /g_idx" permutes the groups \(row 1 is in group 1\), but quantization_config\.desc_act is false/,
    );
    const r = await cliInProcess(['prepare', '--checkpoint', dir, '--dtype', 'float32', '--out', path.join(root, 'float')]);
    expect(r.code, r.stderr).toBe(0);
  });

  it('a group size MatMulNBits cannot take (--keep-quantized only)', async () => {
    const root = tmp();
    const dir = await oneLinear(root, { ...GPTQ, group_size: 8 }, (t) =>
      t.map((x) =>
        x.key.endsWith('qzeros')
          ? { ...x, shape: [4, 1], data: new Uint8Array(new Int32Array(4).fill(0x77777777).buffer) }
          : x.key.endsWith('scales')
            ? { ...x, shape: [4, 8], data: new Uint8Array(new Uint16Array(32).fill(0x3c00).buffer) }
            : x.key.endsWith('g_idx')
              ? { ...x, data: new Uint8Array(Int32Array.from({ length: 32 }, (_, i) => i >> 3).buffer) }
              : x,
      ),
    );
    await refused(
      root,
      ['--checkpoint', dir, '--dtype', 'float32', '--keep-quantized'],
      2,
      /up_proj has group size 8; MatMulNBits needs a power of two ≥ 16/,
    );
  });

  it('a missing or misshapen companion tensor', async () => {
    const root = tmp();
    const dir = await oneLinear(root, GPTQ, (t) => t.filter((x) => !x.key.endsWith('qzeros')));
    await refused(
      root,
      ['--checkpoint', dir, '--dtype', 'float32'],
      1,
      /"model\.layers\.0\.mlp\.up_proj\.qweight" has no "model\.layers\.0\.mlp\.up_proj\.qzeros" beside it/,
    );
    const root2 = tmp();
    const dir2 = await oneLinear(root2, { ...GPTQ, group_size: 32 });
    await refused(
      root2,
      ['--checkpoint', dir2, '--dtype', 'float32'],
      1,
      /up_proj\.qzeros" is \[2,1\], but gptq zero points of "model\.layers\.0\.mlp\.up_proj\.qweight" \(group 32\) needs \[1,1\]/,
    );
  });

  it('packed weights without a quantization_config', async () => {
    const root = tmp();
    const dir = await oneLinear(root, undefined);
    await refused(
      root,
      ['--checkpoint', dir, '--dtype', 'float32'],
      1,
      /up_proj\.qweight" is a packed int4 weight, but config\.json declares no GPTQ\/AWQ quantization_config/,
    );
  });

  it('--keep-quantized with nothing to keep (prepare and export)', async () => {
    const root = tmp();
    const dir = path.join(root, 'plain');
    fs.mkdirSync(dir);
    await writeSafetensors(path.join(dir, 'model.safetensors'), [
      { key: 'a.weight', dtype: 'F32', shape: [2, 2], data: new Uint8Array(16) },
    ]);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'llama' }));
    await refused(
      root,
      ['--checkpoint', dir, '--dtype', 'float32', '--keep-quantized'],
      2,
      /--keep-quantized keeps GPTQ\/AWQ int4 weights packed, but .*config\.json declares no quantization_config/,
    );
    // export from config.json alone: the packed layout is planned from the checkpoint
    const ck = await int4Checkpoint(root, 'awq', { format: 'awq', group: 32, hidden: 64 });
    const cfgOnly = path.join(root, 'cfg');
    fs.mkdirSync(cfgOnly);
    fs.copyFileSync(path.join(ck.dir, 'config.json'), path.join(cfgOnly, 'config.json'));
    const r = await cliInProcess(['export', '--config', cfgOnly, '--out', path.join(root, 'e'), '--keep-quantized']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--keep-quantized needs the GPTQ\/AWQ checkpoint beside/);
    expect(fs.existsSync(path.join(root, 'e'))).toBe(false);
    // but a dequantized export of the config alone works (the float layout is derived from it)
    const e2 = await cliInProcess(['export', '--config', cfgOnly, '--out', path.join(root, 'e2')]);
    expect(e2.code, e2.stderr).toBe(0);
  });
});

describe('check: a spec bound to the packed source tensors', () => {
  it('reports quantized-weight for qweight / qzeros / scales of a GPTQ checkpoint, nothing for its plain tensors', async () => {
    const root = tmp();
    const ck = await int4Checkpoint(root, 'model', { format: 'gptq', group: 32, hidden: 64 });
    const m = 'model.layers.0.self_attn.q_proj';
    const keys = [`${m}.qweight`, `${m}.qzeros`, `${m}.scales`, 'model.norm.weight'];
    const spec = path.join(root, 'w.weight_spec.json');
    fs.writeFileSync(
      spec,
      JSON.stringify({
        files: [{ format: 'safetensors', path: 'model/model.safetensors' }],
        inputs: keys.map((key) => ({ location: { file: 0, key }, name: key })),
        model_id: ck.dir,
        model_name: 'LlamaForCausalLM',
        version: 5,
      }),
    );
    const r = await cliInProcess(['check', spec, '--no-onnx']);
    expect(r.code).toBe(1);
    const found = r.stdout.split('\n').filter((l) => l.includes('[quantized-weight]'));
    expect(found).toHaveLength(3);
    for (const k of keys.slice(0, 3)) expect(found.some((l) => l.includes(`key "${k}" is packed gptq int4, group 32 data`))).toBe(true);
    expect(r.stdout).not.toContain('model.norm.weight" is packed');
  });
});

describe('hover facts of a packed source tensor', () => {
  it('names the scheme, the module and what prepare makes of it; nothing for a plain tensor', async () => {
    const root = tmp();
    const ck = await int4Checkpoint(root, 'model', { format: 'awq', group: 32, hidden: 64 });
    const header = readSafetensorsHeaderSync(path.join(ck.dir, 'model.safetensors'));
    const m = 'model.layers.0.mlp.down_proj';
    expect(describeQuantizedKey(ck.dir, header, `${m}.qzeros`)).toEqual([
      `packed awq int4, group 32: the \`qzeros\` of \`${m}\` (\`I32\` [4, 8])`,
      `\`weight-spec prepare\` dequantizes the module into \`${m}.weight\`, or with --keep-quantized repacks it for MatMulNBits`,
    ]);
    expect(describeQuantizedKey(ck.dir, header, 'model.norm.weight')).toEqual([]);
  });
});
