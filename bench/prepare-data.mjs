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

const SIZE = { BF16: 2, F32: 4, F8_E4M3: 1, I32: 4, F16: 2 };

/**
 * Creates `file` with the safetensors header of `tensors` ({key, dtype (default BF16), shape}):
 * the descriptor, positioned at the data, each tensor's byte size, and the file's total size.
 */
function openShard(file, tensors) {
  const header = { __metadata__: { format: 'pt' } };
  let off = 0;
  const sizes = tensors.map((t) => t.shape.reduce((a, b) => a * b, 1) * SIZE[t.dtype ?? 'BF16']);
  tensors.forEach((t, i) => {
    header[t.key] = { dtype: t.dtype ?? 'BF16', shape: t.shape, data_offsets: [off, off + sizes[i]] };
    off += sizes[i];
  });
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(file, 'w');
  writeSync(fd, len);
  writeSync(fd, json);
  return { fd, sizes, total: 8 + json.length + off };
}

/** Writes one shard of `tensors` ({key, shape}) in BF16, each filled from `noise` (varied by its first byte). */
function writeShard(file, tensors, noise) {
  const { fd, total } = openShard(file, tensors);
  try {
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
  return total;
}

/** Writes `shards` (lists of tensors) with `write(file, tensors)` (default: bf16 values), the index and config.json. */
function writeCheckpoint(dir, shards, config, write) {
  mkdirSync(dir, { recursive: true });
  if (!write) {
    const noise = values(32 * 2 ** 20);
    write = (file, tensors) => writeShard(file, tensors, noise);
  }
  const weightMap = {};
  const files = [];
  let bytes = 0;
  shards.forEach((tensors, s) => {
    const name = shardName(s, shards.length);
    bytes += write(path.join(dir, name), tensors);
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

// ---- FP8 checkpoints (issue 35): HF fine-grained FP8 as DeepSeek-V3 ships it — E4M3 weights in
// 128×128 blocks with F32 `weight_scale_inv` (amax / 448 per block). A trained matrix's block of
// normal(0, 0.02) values quantizes to codes of about normal(0, 448 / 4.1) (the block's amax is
// about 4.1 σ), so the codes are drawn that way, rounded to E4M3 (RNE) and clamped at ±448, and
// the scales near 4.1 · 0.02 / 448, varied per block.

/** The 127 non-negative finite E4M3 values, by code (monotonic). */
const E4M3 = Array.from({ length: 127 }, (_, b) => {
  const e = b >> 3;
  const m = b & 7;
  return e === 0 ? (m / 8) * 2 ** -6 : (1 + m / 8) * 2 ** (e - 7);
});

/** The E4M3 code of `x` (round to nearest, ties to even code; saturates at ±448). */
function e4m3Code(x) {
  const a = Math.min(Math.abs(x), 448);
  let lo = 0;
  let hi = 126;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (E4M3[mid] <= a) lo = mid;
    else hi = mid;
  }
  const d = a - E4M3[lo] - (E4M3[hi] - a);
  const code = d < 0 || (d === 0 && (lo & 1) === 0) ? lo : hi;
  return (x < 0 ? 0x80 : 0) | code;
}

/** `bytes` E4M3 codes of quantized trained-like weights. */
export function fp8Weights(bytes) {
  const out = Buffer.alloc(bytes);
  const sigma = 448 / 4.1;
  for (let i = 0; i < bytes; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - Math.random()));
    const a = 2 * Math.PI * Math.random();
    out[i] = e4m3Code(r * Math.cos(a) * sigma);
    if (i + 1 < bytes) out[i + 1] = e4m3Code(r * Math.sin(a) * sigma);
  }
  return out;
}

/** Writes one shard of `tensors` ({key, dtype: 'F8_E4M3' | 'F32', shape}); FP8 data from `codes`, F32 scales drawn. */
function writeFp8Shard(file, tensors, codes) {
  const { fd, sizes, total } = openShard(file, tensors);
  try {
    let at = 0;
    tensors.forEach((t, i) => {
      if (t.dtype === 'F32') {
        const s = Float32Array.from({ length: sizes[i] / 4 }, () => ((4.1 * 0.02) / 448) * (0.8 + 0.4 * Math.random()));
        writeSync(fd, Buffer.from(s.buffer));
        return;
      }
      for (let left = sizes[i]; left > 0;) {
        const n = Math.min(left, codes.length - at);
        writeSync(fd, codes, at, n);
        at = (at + n) % codes.length; // tensors start at different places of the code buffer
        left -= n;
      }
    });
  } finally {
    closeSync(fd);
  }
  return total;
}

const FP8_CONFIG = { quant_method: 'fp8', fmt: 'e4m3', activation_scheme: 'dynamic', weight_block_size: [128, 128] };

function writeFp8Checkpoint(dir, shards, config) {
  const codes = fp8Weights(16 * 2 ** 20 + 4099); // not a multiple of any tensor: tensors differ
  const write = (file, tensors) => writeFp8Shard(file, tensors, codes);
  return { ...writeCheckpoint(dir, shards, { ...config, quantization_config: FP8_CONFIG }, write), dtype: 'F8_E4M3' };
}

/** A weight and its 128×128-block scale. */
const fp8Pair = (key, shape) => [
  { key, dtype: 'F8_E4M3', shape },
  { key: `${key}_scale_inv`, dtype: 'F32', shape: shape.map((d) => Math.ceil(d / 128)) },
];

/** A dense FP8 checkpoint of about `gb` GB: [4096, 4096] E4M3 tensors (scales [32, 32]) in `shards` shards. */
export function fp8DenseCheckpoint(dir, gb, shards = 4) {
  const perShard = Math.max(1, Math.ceil((gb * 1e9) / shards / (4096 * 4096)));
  const list = Array.from({ length: shards }, (_, s) =>
    Array.from({ length: perShard }, (_, k) => fp8Pair(`model.layers.${s * perShard + k}.mlp.proj.weight`, [4096, 4096])).flat(),
  );
  return writeFp8Checkpoint(dir, list, { model_type: 'llama' });
}

/**
 * A DeepSeek-style FP8 MoE checkpoint of about `gb` GB: `experts` separate experts per layer,
 * each with gate/up_proj `[I, H]` and down_proj `[H, I]` E4M3 weights and their scales (H =
 * 2048, I = 1024: 2 MiB per matrix), one layer per shard. Prepare dequantizes, transposes and
 * stacks them into the canonical `[E, in, out]` layout.
 */
export function fp8MoeCheckpoint(dir, gb, experts = 64) {
  const H = 2048;
  const I = 1024;
  const layers = Math.max(1, Math.round((gb * 1e9) / (experts * 3 * H * I)));
  const list = Array.from({ length: layers }, (_, l) => {
    const ts = [];
    for (let e = 0; e < experts; e++) {
      const p = `model.layers.${l}.mlp.experts.${e}`;
      ts.push(
        ...fp8Pair(`${p}.gate_proj.weight`, [I, H]),
        ...fp8Pair(`${p}.up_proj.weight`, [I, H]),
        ...fp8Pair(`${p}.down_proj.weight`, [H, I]),
      );
    }
    return ts;
  });
  const config = { model_type: 'qwen2_moe', hidden_size: H, moe_intermediate_size: I, num_experts: experts, num_hidden_layers: layers };
  return { ...writeFp8Checkpoint(dir, list, config), layers, experts };
}

/**
 * A GPTQ v1 checkpoint (issue 46) of about `gb` GB of packed data: `[4096, 4096]` Linears, group
 * 128, sym (every stored zero 7: zero 8), `qweight` I32 `[512, 4096]` of random codes, `qzeros`
 * I32 `[32, 512]`, `scales` F16 `[32, 4096]` (normal fp16 values), `g_idx` I32 `[4096]` = i / 128,
 * in `shards` shards. Dequantized it writes 4× its bytes in f16, 8× in f32.
 */
export function gptqCheckpoint(dir, gb, shards = 4) {
  const N = 4096;
  const K = 4096;
  const G = 128;
  const perModule = (K / 8) * N * 4 + (K / G) * (N / 8) * 4 + (K / G) * N * 2 + K * 4;
  const perShard = Math.max(1, Math.round((gb * 1e9) / shards / perModule));
  const codes = randomBytes(16 * 2 ** 20 + 4099);
  const list = Array.from({ length: shards }, (_, s) =>
    Array.from({ length: perShard }, (_, k) => {
      const m = `model.layers.${s * perShard + k}.mlp.proj`;
      return [
        { key: `${m}.qweight`, dtype: 'I32', shape: [K / 8, N] },
        { key: `${m}.qzeros`, dtype: 'I32', shape: [K / G, N / 8] },
        { key: `${m}.scales`, dtype: 'F16', shape: [K / G, N] },
        { key: `${m}.g_idx`, dtype: 'I32', shape: [K] },
      ];
    }).flat(),
  );
  const write = (file, tensors) => {
    const { fd, sizes, total } = openShard(file, tensors);
    try {
      let at = 0;
      tensors.forEach((t, i) => {
        let buf;
        if (t.key.endsWith('qzeros')) buf = Buffer.alloc(sizes[i], 0x77);
        else if (t.key.endsWith('g_idx')) buf = Buffer.from(Int32Array.from({ length: K }, (_, j) => Math.floor(j / G)).buffer);
        else if (t.key.endsWith('scales'))
          buf = Buffer.from(Uint16Array.from({ length: sizes[i] / 2 }, () => 0x1c00 | Math.floor(Math.random() * 1024)).buffer);
        if (buf) return void writeSync(fd, buf);
        for (let left = sizes[i]; left > 0;) {
          const n = Math.min(left, codes.length - at);
          writeSync(fd, codes, at, n);
          at = (at + n) % codes.length;
          left -= n;
        }
      });
    } finally {
      closeSync(fd);
    }
    return total;
  };
  const quant = { quant_method: 'gptq', bits: 4, group_size: G, desc_act: false, sym: true, checkpoint_format: 'gptq' };
  return { ...writeCheckpoint(dir, list, { model_type: 'llama', quantization_config: quant }, write), dtype: 'GPTQ int4' };
}
