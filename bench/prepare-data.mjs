// Generated checkpoints for the prepare bench (prepare.bench.mjs): safetensors files written
// from the format's definition (8-byte header length, JSON header padded with spaces, data),
// plus model.safetensors.index.json and config.json. Values are drawn as a trained model's
// weights are distributed — normal, σ = 0.02 (transformers' `initializer_range`), rounded to
// bf16 — so the kernels see the value mix of a real checkpoint: nearly every value in f16's
// normal range. WS_PREPARE_BENCH_VALUES=bits instead draws uniform bit patterns with the top
// exponent bit cleared: finite, but 7 in 8 of them below f16's normal range, the slow case of
// the bf16 → f16 kernel, which no trained model stores.
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Random bf16 bytes with the exponent's top bit cleared, so every value is finite and varied. */
export function bf16Noise(bytes) {
  const b = randomBytes(bytes);
  for (let i = 1; i < b.length; i += 2) b[i] &= 0xbf;
  return b;
}

/** bf16 bytes of normal(0, sigma) values (RNE from f32). */
export function bf16Weights(bytes, sigma = 0.02) {
  const out = new Uint16Array(bytes >> 1);
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  const next = () => 1 - Math.random(); // in (0, 1]: log() stays finite
  for (let i = 0; i < out.length; i += 2) {
    const r = Math.sqrt(-2 * Math.log(next()));
    const a = 2 * Math.PI * next();
    for (const [k, v] of [
      [i, r * Math.cos(a)],
      [i + 1, r * Math.sin(a)],
    ]) {
      if (k >= out.length) break;
      f[0] = v * sigma;
      out[k] = (u[0] + 0x7fff + ((u[0] >>> 16) & 1)) >>> 16;
    }
  }
  return Buffer.from(out.buffer, 0, bytes & ~1);
}

/** The value buffer the generated tensors are filled from (see the file's comment). */
function values(bytes) {
  return process.env.WS_PREPARE_BENCH_VALUES === 'bits' ? bf16Noise(bytes) : bf16Weights(bytes);
}

const shardName = (s, n) => `model-${String(s + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;

/** Writes one shard of `tensors` ({key, shape}) in BF16, each filled from `noise` (varied by its first byte). */
function writeShard(file, tensors, noise) {
  const header = { __metadata__: { format: 'pt' } };
  let off = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1) * 2;
    header[t.key] = { dtype: 'BF16', shape: t.shape, data_offsets: [off, off + n] };
    off += n;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(file, 'w');
  try {
    writeSync(fd, len);
    writeSync(fd, json);
    let k = 0;
    for (const t of tensors) {
      let left = t.shape.reduce((a, b) => a * b, 1) * 2;
      noise[0] = k++ & 0xff; // tensors differ
      while (left > 0) {
        const n = Math.min(left, noise.length);
        writeSync(fd, noise, 0, n);
        left -= n;
      }
    }
  } finally {
    closeSync(fd);
  }
  return 8 + json.length + off;
}

function writeCheckpoint(dir, shards, config) {
  mkdirSync(dir, { recursive: true });
  const noise = values(32 * 2 ** 20);
  const weightMap = {};
  const files = [];
  let bytes = 0;
  shards.forEach((tensors, s) => {
    const name = shardName(s, shards.length);
    bytes += writeShard(path.join(dir, name), tensors, noise);
    for (const t of tensors) weightMap[t.key] = name;
    files.push(name);
  });
  writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  return { dir, files, bytes, tensors: Object.keys(weightMap).length };
}

/** A dense llama-style checkpoint of about `gb` GB: 5 shards of [4096, 4096] bf16 tensors (32 MiB each). */
export function denseCheckpoint(dir, gb, shards = 5) {
  const tensorBytes = 4096 * 4096 * 2;
  const perShard = Math.max(1, Math.round((gb * 1e9) / shards / tensorBytes));
  const list = Array.from({ length: shards }, (_, s) =>
    Array.from({ length: perShard }, (_, k) => ({ key: `model.layers.${s * perShard + k}.mlp.proj.weight`, shape: [4096, 4096] })),
  );
  return writeCheckpoint(dir, list, { model_type: 'llama' });
}

/**
 * A Mixtral-style MoE checkpoint of about `gb` GB: `experts` experts per layer, each with
 * w1/w3 `[I, H]` and w2 `[H, I]` (H = 1024, I = 512: 1 MiB per matrix, so stacking is many
 * small reads into one large write), one layer per shard, plus a dense attention weight per layer.
 */
export function moeCheckpoint(dir, gb, experts = 64) {
  const H = 1024;
  const I = 512;
  const perLayer = experts * 3 * H * I * 2 + H * H * 2;
  const layers = Math.max(1, Math.round((gb * 1e9) / perLayer));
  const list = Array.from({ length: layers }, (_, l) => {
    const ts = [{ key: `model.layers.${l}.self_attn.o_proj.weight`, shape: [H, H] }];
    for (let e = 0; e < experts; e++) {
      const p = `model.layers.${l}.block_sparse_moe.experts.${e}`;
      ts.push({ key: `${p}.w1.weight`, shape: [I, H] }, { key: `${p}.w2.weight`, shape: [H, I] }, { key: `${p}.w3.weight`, shape: [I, H] });
    }
    return ts;
  });
  const config = { model_type: 'mixtral', hidden_size: H, intermediate_size: I, num_local_experts: experts, num_hidden_layers: layers };
  return { ...writeCheckpoint(dir, list, config), layers, experts };
}
