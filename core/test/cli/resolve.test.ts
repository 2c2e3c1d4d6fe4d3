/**
 * The resolver's strategies, each on its own, on real files: checkpoint tensors in a
 * safetensors file (bf16, as HF checkpoints are) and "initializers" as f32 bytes in a plain
 * file (as a legacy fp32 export embeds them).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fromFloat32, toFloat32 } from '../../src/formats/float-convert';
import { Checkpoint, writeSafetensors } from '../../src/formats/safetensors';
import { proposeByName, resolveInitializers, type InitializerInput, type KeyTensor } from '../../src/resolve';
import { rng } from '../../src/foundation/rng';
import { tempDirs } from '../../../test/support/temp';

const tmpDir = tempDirs('ws-');

const dir = tmpDir('ws-resolve-');
const next = rng(7);

function randomBf16(n: number): Float32Array {
  // Values exactly representable in bf16, so the f32 "export" holds them bit for bit.
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = next() * 2 - 1;
  return toFloat32(fromFloat32(v, 'BF16'), 'BF16');
}

function transpose(v: Float32Array, r: number, c: number): Float32Array {
  const out = new Float32Array(v.length);
  for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) out[j * r + i] = v[i * c + j]!;
  return out;
}

/** Writes the checkpoint and returns its tensors as the resolver takes them. */
async function checkpoint(entries: [string, number[], Float32Array][]): Promise<KeyTensor[]> {
  const file = path.join(tmpDir('ws-resolve-ckpt-'), 'model.safetensors');
  await writeSafetensors(
    file,
    entries.map(([key, shape, v]) => ({ key, dtype: 'BF16', shape, data: fromFloat32(v, 'BF16') })),
  );
  const ck = await Checkpoint.open(file);
  return ck.keys().map((key) => {
    const t = ck.get(key)!;
    return { key, dtype: t.dtype, shape: t.shape, file: t.file, offset: t.dataOffset, byteLength: t.byteLength };
  });
}

let initCount = 0;
/** An f32 initializer whose bytes sit at an odd offset of a plain file. */
function initializer(name: string, shape: number[], v: Float32Array): InitializerInput {
  const file = path.join(dir, `init-${initCount++}.bin`);
  const bytes = new Uint8Array(3 + v.byteLength);
  bytes.set(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), 3);
  writeFileSync(file, bytes);
  return { name, dtype: 'F32', shape, file, offset: 3, byteLength: v.byteLength };
}

describe('name strategies (QEfficient order)', () => {
  const keys = new Set([
    'model.layers.0.mlp.up_proj.weight',
    'transformer.h.0.ln_1.weight',
    'wte.weight',
    'model.layers.0.block_sparse_moe.gate.weight',
    'model.layers.1.mlp.router.weight',
    'model.embed_tokens.weight',
  ]);
  const has = (k: string) => keys.has(k);
  it.each([
    ['model.layers.0.mlp.up_proj.weight', 'model.layers.0.mlp.up_proj.weight', 'exact', {}],
    ['base_model.model.layers.0.mlp.up_proj.weight', 'model.layers.0.mlp.up_proj.weight', 'strip-base-model', {}],
    ['h.0.ln_1.weight', 'transformer.h.0.ln_1.weight', 'add-prefix', { model_type: 'gpt2' }],
    ['transformer.wte.weight', 'wte.weight', 'strip-prefix', { model_type: 'gpt2' }],
    ['model.layers.0.mlp.gate.weight', 'model.layers.0.block_sparse_moe.gate.weight', 'mlp-to-block-sparse-moe', {}],
    ['model.layers.1.mlp.gate.weight', 'model.layers.1.mlp.router.weight', 'gate-router', {}],
    ['lm_head.weight', 'model.embed_tokens.weight', 'tied', { tie_word_embeddings: true }],
  ])('%s → %s (%s)', (name, key, strategy, config) => {
    expect(proposeByName(name, has, config)[0]).toEqual({ key, strategy });
  });

  it('proposes no tied key when the config says the head is not tied', () => {
    expect(proposeByName('lm_head.weight', has, { tie_word_embeddings: false })).toEqual([]);
  });
});

describe('resolveInitializers on files', () => {
  it('verifies name matches by content and finds transposed and renamed tensors by content', async () => {
    const emb = randomBf16(12 * 8);
    const q = randomBf16(8 * 8); // square: orientation only content can tell
    const up = randomBf16(16 * 8);
    const norm = randomBf16(8);
    const tensors = await checkpoint([
      ['model.embed_tokens.weight', [12, 8], emb],
      ['model.layers.0.self_attn.q_proj.weight', [8, 8], q],
      ['model.layers.0.mlp.up_proj.weight', [16, 8], up],
      ['model.layers.0.input_layernorm.weight', [8], norm],
    ]);
    const inits = [
      initializer('model.embed_tokens.weight', [12, 8], emb),
      initializer('onnx::MatMul_101', [8, 8], transpose(q, 8, 8)),
      initializer('onnx::MatMul_102', [8, 16], transpose(up, 16, 8)),
      initializer('onnx::Mul_7', [8], norm),
      // A tied head stored as the embedding's transpose, under a folded name.
      initializer('onnx::MatMul_200', [8, 12], transpose(emb, 12, 8)),
      initializer('cos_cached', [4, 2], randomBf16(8)),
    ];
    // A tiny chunk forces every streaming path (multi-chunk digests, row blocks).
    const res = await resolveInitializers(inits, tensors, { chunkBytes: 24 });
    const by = Object.fromEntries(res.map((r) => [r.name, r]));
    expect(by['model.embed_tokens.weight']).toMatchObject({ key: 'model.embed_tokens.weight', strategy: 'exact', transposed: false });
    expect(by['onnx::MatMul_101']).toMatchObject({
      key: 'model.layers.0.self_attn.q_proj.weight',
      strategy: 'content-transposed',
      transposed: true,
    });
    expect(by['onnx::MatMul_102']).toMatchObject({
      key: 'model.layers.0.mlp.up_proj.weight',
      strategy: 'content-transposed',
      transposed: true,
    });
    expect(by['onnx::Mul_7']).toMatchObject({ key: 'model.layers.0.input_layernorm.weight', strategy: 'content', transposed: false });
    expect(by['onnx::MatMul_200']).toMatchObject({ key: 'model.embed_tokens.weight', strategy: 'content-transposed' });
    expect(by['cos_cached']!.key).toBeUndefined();
    expect(by['cos_cached']!.note).toBe('allowed to stay embedded');
  });

  it('does not trust a name whose values differ, and finds the real tensor by content', async () => {
    const a = randomBf16(16);
    const b = randomBf16(16);
    const tensors = await checkpoint([
      ['model.layers.0.mlp.up_proj.weight', [4, 4], a],
      ['model.layers.0.mlp.down_proj.weight', [4, 4], b],
    ]);
    const res = await resolveInitializers([initializer('model.layers.0.mlp.up_proj.weight', [4, 4], b)], tensors);
    expect(res[0]).toMatchObject({ key: 'model.layers.0.mlp.down_proj.weight', strategy: 'content' });
  });

  it('leaves a weight that no tensor holds unresolved, saying so', async () => {
    const tensors = await checkpoint([['w', [4, 4], randomBf16(16)]]);
    const res = await resolveInitializers([initializer('onnx::MatMul_9', [4, 4], randomBf16(16))], tensors);
    expect(res[0]!.key).toBeUndefined();
    expect(res[0]!.note).toBe('no checkpoint tensor holds these values');
  });

  it('tells a transposed square matrix from a natural one', async () => {
    const w = randomBf16(36);
    const tensors = await checkpoint([['sq', [6, 6], w]]);
    const [nat] = await resolveInitializers([initializer('onnx::MatMul_1', [6, 6], w)], tensors);
    const [tr] = await resolveInitializers([initializer('onnx::MatMul_2', [6, 6], transpose(w, 6, 6))], tensors);
    expect(nat).toMatchObject({ key: 'sq', transposed: false });
    expect(tr).toMatchObject({ key: 'sq', transposed: true });
  });

  it('finds a norm folded with a constant (1 + w, as Gemma exports) and says which constant', async () => {
    const g = randomBf16(16);
    const other = randomBf16(16);
    const tensors = await checkpoint([
      ['model.layers.0.input_layernorm.weight', [16], other],
      ['model.layers.0.post_attention_layernorm.weight', [16], g],
    ]);
    const folded = g.map((v) => Math.fround(v + 1));
    const scaled = g.map((v) => Math.fround(v * 0.125));
    const res = await resolveInitializers([initializer('onnx::Mul_3', [16], folded), initializer('onnx::Mul_4', [16], scaled)], tensors);
    expect(res[0]).toMatchObject({ key: 'model.layers.0.post_attention_layernorm.weight', strategy: 'content-affine', affine: { add: 1 } });
    expect(res[1]).toMatchObject({
      key: 'model.layers.0.post_attention_layernorm.weight',
      strategy: 'content-affine',
      affine: { mul: 0.125 },
    });
  });
});
