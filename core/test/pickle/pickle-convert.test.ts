/**
 * `.bin` → safetensors conversion on checkpoints built here: tensor bytes in the output must
 * be identical to what the test encoded (checked by an independent safetensors parse and by
 * the project's own Checkpoint view); hostile and escaping inputs leave no output behind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import { convertBinCheckpoint } from '../../src/formats/pickle';
import { Checkpoint } from '../../src/formats/safetensors';
import { PathPolicyError } from '../../src/paths';
import { Pk, buildTorchBin, parseSafetensors, stateDictPickle, type TensorDesc } from '../support/pickle-build';

const makeTmp = tempDirs('ws-convert-');
let tmp: string;
beforeEach(() => {
  tmp = makeTmp();
});

function rand(len: number, seed: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = seed;
  for (let i = 0; i < len; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

/** A small llama-like state dict: bf16 weights, an f32 norm, a shared storage and a transposed view. */
function llamaLike() {
  const emb = rand(8 * 4 * 2, 1); // [8,4] bf16
  const qkv = rand(12 * 4 * 2, 2); // fused [12,4] bf16, split into three views
  const norm = rand(4 * 4, 3); // [4] f32
  const w = rand(3 * 5 * 4, 4); // [3,5] f32, stored transposed view [5,3]
  const descs: TensorDesc[] = [
    {
      key: 'model.embed_tokens.weight',
      storageKey: '0',
      storageType: 'BFloat16Storage',
      storageNumel: 32,
      offset: 0,
      shape: [8, 4],
      stride: [4, 1],
    },
    {
      key: 'model.layers.0.self_attn.q_proj.weight',
      storageKey: '1',
      storageType: 'BFloat16Storage',
      storageNumel: 48,
      offset: 0,
      shape: [4, 4],
      stride: [4, 1],
    },
    {
      key: 'model.layers.0.self_attn.k_proj.weight',
      storageKey: '1',
      storageType: 'BFloat16Storage',
      storageNumel: 48,
      offset: 16,
      shape: [4, 4],
      stride: [4, 1],
    },
    {
      key: 'model.layers.0.self_attn.v_proj.weight',
      storageKey: '1',
      storageType: 'BFloat16Storage',
      storageNumel: 48,
      offset: 32,
      shape: [4, 4],
      stride: [4, 1],
    },
    {
      key: 'model.norm.weight',
      storageKey: '2',
      storageType: 'FloatStorage',
      storageNumel: 4,
      offset: 0,
      shape: [4],
      stride: [1],
      parameter: true,
    },
    { key: 'lm_head.weight_t', storageKey: '3', storageType: 'FloatStorage', storageNumel: 15, offset: 0, shape: [5, 3], stride: [1, 5] },
  ];
  const wt = new Uint8Array(60);
  for (let i = 0; i < 5; i++) for (let j = 0; j < 3; j++) wt.set(w.subarray((j * 5 + i) * 4, (j * 5 + i) * 4 + 4), (i * 3 + j) * 4);
  const expected = new Map<string, { dtype: string; shape: number[]; data: Uint8Array }>([
    ['model.embed_tokens.weight', { dtype: 'BF16', shape: [8, 4], data: emb }],
    ['model.layers.0.self_attn.q_proj.weight', { dtype: 'BF16', shape: [4, 4], data: qkv.subarray(0, 32) }],
    ['model.layers.0.self_attn.k_proj.weight', { dtype: 'BF16', shape: [4, 4], data: qkv.subarray(32, 64) }],
    ['model.layers.0.self_attn.v_proj.weight', { dtype: 'BF16', shape: [4, 4], data: qkv.subarray(64, 96) }],
    ['model.norm.weight', { dtype: 'F32', shape: [4], data: norm }],
    ['lm_head.weight_t', { dtype: 'F32', shape: [5, 3], data: wt }],
  ]);
  return { descs, storages: { '0': emb, '1': qkv, '2': norm, '3': w }, expected };
}

function expectSame(file: string, expected: Map<string, { dtype: string; shape: number[]; data: Uint8Array }>) {
  const got = parseSafetensors(fs.readFileSync(file));
  expect([...got.keys()]).toEqual([...expected.keys()]);
  for (const [k, e] of expected) {
    const g = got.get(k)!;
    expect([g.dtype, g.shape]).toEqual([e.dtype, e.shape]);
    expect(Buffer.from(g.data).equals(Buffer.from(e.data))).toBe(true);
  }
}

describe('convertBinCheckpoint', () => {
  it('converts a single pytorch_model.bin with byte-identical tensor data', async () => {
    const { descs, storages, expected } = llamaLike();
    const src = path.join(tmp, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 'pytorch_model.bin'), buildTorchBin(stateDictPickle(descs, 2), storages));
    fs.writeFileSync(path.join(src, 'config.json'), '{"model_type":"llama"}');
    const out = path.join(tmp, 'out');
    const progress: number[] = [];
    const r = await convertBinCheckpoint(src, out, { onProgress: (d) => progress.push(d) });
    expect(r.files).toEqual([path.join(out, 'model.safetensors')]);
    expect(r.tensors).toBe(6);
    expect(progress).toEqual([1, 2, 3, 4, 5, 6]);
    expect(r.sidecars).toEqual(['config.json']);
    expect(fs.readdirSync(out).sort()).toEqual(['config.json', 'model.safetensors']);
    expectSame(r.files[0]!, expected);
    // The project's own reader agrees.
    const ck = await Checkpoint.open(out);
    expect(Buffer.from(await ck.read('lm_head.weight_t')).equals(Buffer.from(expected.get('lm_head.weight_t')!.data))).toBe(true);
    expect(fs.readdirSync(tmp).sort()).toEqual(['out', 'src']); // no temp sibling left
  });

  it('converts a sharded checkpoint with its index (protocol 4 shard) and writes a safetensors index', async () => {
    const { descs, storages, expected } = llamaLike();
    const src = path.join(tmp, 'src');
    fs.mkdirSync(src);
    const a = descs.slice(0, 3);
    const b = descs.slice(3);
    const pick = (ds: TensorDesc[]) => Object.fromEntries(ds.map((d) => [d.storageKey, storages[d.storageKey as keyof typeof storages]]));
    fs.writeFileSync(path.join(src, 'pytorch_model-00001-of-00002.bin'), buildTorchBin(stateDictPickle(a, 2), pick(a)));
    fs.writeFileSync(
      path.join(src, 'pytorch_model-00002-of-00002.bin'),
      buildTorchBin(stateDictPickle(b, 4), pick(b), { prefix: 'pytorch_model-00002-of-00002', zip64: true }),
    );
    const weightMap = Object.fromEntries(descs.map((d, i) => [d.key, `pytorch_model-0000${i < 3 ? 1 : 2}-of-00002.bin`]));
    fs.writeFileSync(path.join(src, 'pytorch_model.bin.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
    const out = path.join(tmp, 'out');
    const r = await convertBinCheckpoint(src, out);
    expect(r.files.map((f) => path.basename(f))).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    const index = JSON.parse(fs.readFileSync(r.index!, 'utf8'));
    expect(index.weight_map['model.norm.weight']).toBe('model-00002-of-00002.safetensors');
    expect(index.metadata.total_size).toBe([...expected.values()].reduce((s, e) => s + e.data.length, 0));
    const ck = await Checkpoint.open(out);
    expect(ck.keys().sort()).toEqual([...expected.keys()].sort());
    for (const [k, e] of expected) expect(Buffer.from(await ck.read(k)).equals(Buffer.from(e.data))).toBe(true);
  });

  it('writes into an existing directory without touching other files, and refuses to overwrite unless asked', async () => {
    const { descs, storages, expected } = llamaLike();
    const bin = path.join(tmp, 'model.bin');
    fs.writeFileSync(bin, buildTorchBin(stateDictPickle(descs, 2), storages));
    const out = path.join(tmp, 'out');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'notes.txt'), 'mine');
    await convertBinCheckpoint(bin, out);
    expectSame(path.join(out, 'model.safetensors'), expected);
    const again = await convertBinCheckpoint(bin, out).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(again).toBeInstanceOf(PathPolicyError);
    expect((again as PathPolicyError).code).toBe('overwrite-refused');
    await convertBinCheckpoint(bin, out, { overwrite: true });
    expect(fs.readdirSync(out).sort()).toEqual(['model.safetensors', 'notes.txt']);
  });

  it('refuses a hostile shard before writing anything', async () => {
    const { descs, storages } = llamaLike();
    const src = path.join(tmp, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(src, 'pytorch_model-00001-of-00002.bin'), buildTorchBin(stateDictPickle(descs, 2), storages));
    const evil = new Pk().proto(2).global('posix', 'system').str('echo pwned').raw(0x85, 0x52, 0x2e).bytes();
    fs.writeFileSync(path.join(src, 'pytorch_model-00002-of-00002.bin'), buildTorchBin(evil, {}));
    const out = path.join(tmp, 'out');
    const err = await convertBinCheckpoint(src, out).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toMatch(/pytorch_model-00002-of-00002\.bin: pickle: refusing global "posix\.system"/);
    expect(fs.readdirSync(tmp)).toEqual(['src']);
  });

  it('refuses an index whose shard path leaves the checkpoint directory', async () => {
    const src = path.join(tmp, 'src');
    fs.mkdirSync(src);
    fs.writeFileSync(path.join(tmp, 'outside.bin'), 'x');
    fs.writeFileSync(path.join(src, 'pytorch_model.bin.index.json'), JSON.stringify({ weight_map: { a: '../outside.bin' } }));
    const err = await convertBinCheckpoint(src, path.join(tmp, 'out')).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PathPolicyError);
    expect((err as PathPolicyError).code).toBe('path-outside-root');
    expect(fs.existsSync(path.join(tmp, 'out'))).toBe(false);
  });
});
