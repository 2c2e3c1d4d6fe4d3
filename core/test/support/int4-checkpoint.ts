/**
 * Tiny GPTQ and AutoAWQ-GEMM llama checkpoints made in code, packed here from the formats'
 * definitions (independently of core/src/prepare/int4-kernel.ts, which unpacks them), with the
 * float64 dequantized weight of every Linear:
 * - GPTQ (AutoGPTQ `QuantLinear.pack`): `qweight[i/8, o] |= q[i, o] << 4·(i mod 8)`;
 *   `qzeros[g, o/8] |= (zero − 1) << 4·(o mod 8)` in v1 (`checkpoint_format: "gptq"`), the zero
 *   itself in v2; `g_idx[i]` the group of input row i; W[o, i] = s[g_idx[i], o] · (q[i, o] − zero[g_idx[i], o]).
 * - AWQ GEMM (AutoAWQ `WQLinear_GEMM.from_linear`): `order_map = [0, 2, 4, 6, 1, 3, 5, 7]`,
 *   word c of row i holds column `8c + order_map[j]` in bits 4j, for qweight `[in, out/8]` and
 *   qzeros `[groups, out/8]` alike; zeros stored as they are; W[o, i] = s[i/group, o] · (q[i, o] − zero[i/group, o]).
 * Scales are exact fp16 values, so every product is exact in f32 as in f64.
 */
import fs from 'node:fs';
import path from 'node:path';
import { writeSafetensors } from '../../src/formats/safetensors';

/** What varies between the code-made checkpoints. */
export interface Int4Case {
  format: 'gptq' | 'gptq_v2' | 'awq';
  group: number;
  hidden: number;
  /** GPTQ act-order: a permuting g_idx (desc_act true). */
  descAct?: boolean;
  /** tie_word_embeddings: no lm_head.weight. */
  tied?: boolean;
  /** Random zero points (AWQ, GPTQ v2); else 8 (GPTQ sym). */
  asym?: boolean;
  /** GPTQ `lm_head: true`: the head is packed too (its float64 weight under `lm_head.weight`). */
  quantHead?: boolean;
}

/** The checkpoint and each Linear's float64 weight `[out, in]` (row-major). */
export interface Int4Checkpoint {
  dir: string;
  dequant: Map<string, { out: number; in: number; w: Float64Array }>;
  config: Record<string, unknown>;
}

/** Deterministic generator (LCG) so a failure reproduces. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** fp16 bits of (1 + m/1024)·2^e (exact), and its value. */
function half(m: number, e: number, neg = false): { bits: number; v: number } {
  return { bits: (neg ? 0x8000 : 0) | ((e + 15) << 10) | m, v: (neg ? -1 : 1) * (1 + m / 1024) * 2 ** e };
}

const AWQ_ORDER_MAP = [0, 2, 4, 6, 1, 3, 5, 7];

function bytesOf(a: Int32Array | Uint16Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

type Tensor = Parameters<typeof writeSafetensors>[1][number];

/** Packs one Linear `[out, in]`; returns its tensors and float64 weight. */
function packLinear(c: Int4Case, m: string, out: number, inF: number, r: () => number): { tensors: Tensor[]; w: Float64Array } {
  const groups = inF / c.group;
  const q = Array.from({ length: inF }, () => Array.from({ length: out }, () => Math.floor(r() * 16)));
  const zero = Array.from({ length: groups }, () =>
    Array.from({ length: out }, () => (c.asym ? 1 + Math.floor(r() * 14) : c.format === 'awq' ? Math.floor(r() * 16) : 8)),
  );
  const scale = Array.from({ length: groups }, () =>
    Array.from({ length: out }, () => half(Math.floor(r() * 1024), -9 + Math.floor(r() * 3))),
  );
  // act-order: group g holds `group` rows scattered over the input (a random permutation)
  const perm = Array.from({ length: inF }, (_, i) => i);
  if (c.descAct)
    for (let i = inF - 1; i > 0; i--) {
      const j = Math.floor(r() * (i + 1));
      [perm[i], perm[j]] = [perm[j]!, perm[i]!];
    }
  const gIdx = Int32Array.from({ length: inF }, (_, i) => Math.floor(perm[i]! / c.group));
  const w = new Float64Array(out * inF);
  for (let o = 0; o < out; o++)
    for (let i = 0; i < inF; i++) {
      const g = c.format === 'awq' ? Math.floor(i / c.group) : gIdx[i]!;
      w[o * inF + i] = scale[g]![o]!.v * (q[i]![o]! - zero[g]![o]!);
    }
  const scales = new Uint16Array(groups * out);
  for (let g = 0; g < groups; g++) for (let o = 0; o < out; o++) scales[g * out + o] = scale[g]![o]!.bits;
  const words = out / 8;
  const qzeros = new Int32Array(groups * words);
  let qweight: Int32Array;
  if (c.format === 'awq') {
    qweight = new Int32Array(inF * words);
    for (let i = 0; i < inF; i++)
      for (let col = 0; col < words; col++)
        for (let j = 0; j < 8; j++) qweight[i * words + col]! |= q[i]![col * 8 + AWQ_ORDER_MAP[j]!]! << (4 * j);
    for (let g = 0; g < groups; g++)
      for (let col = 0; col < words; col++)
        for (let j = 0; j < 8; j++) qzeros[g * words + col]! |= zero[g]![col * 8 + AWQ_ORDER_MAP[j]!]! << (4 * j);
  } else {
    qweight = new Int32Array((inF / 8) * out);
    for (let i = 0; i < inF; i++) for (let o = 0; o < out; o++) qweight[(i >> 3) * out + o]! |= q[i]![o]! << (4 * (i % 8));
    const stored = (z: number) => (c.format === 'gptq' ? z - 1 : z);
    for (let g = 0; g < groups; g++) for (let o = 0; o < out; o++) qzeros[g * words + (o >> 3)]! |= stored(zero[g]![o]!) << (4 * (o % 8));
  }
  const tensors: Tensor[] = [
    { key: `${m}.qweight`, dtype: 'I32', shape: c.format === 'awq' ? [inF, words] : [inF / 8, out], data: bytesOf(qweight) },
    { key: `${m}.qzeros`, dtype: 'I32', shape: [groups, words], data: bytesOf(qzeros) },
    { key: `${m}.scales`, dtype: 'F16', shape: [groups, out], data: bytesOf(scales) },
    ...(c.format !== 'awq' ? [{ key: `${m}.g_idx`, dtype: 'I32' as const, shape: [inF], data: bytesOf(gIdx) }] : []),
  ];
  return { tensors, w };
}

/** A float16 tensor of small random values (embeddings, head) or ones with jitter (norms). */
function f16Tensor(key: string, shape: number[], r: () => number, norm = false): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const bits = Uint16Array.from({ length: n }, () =>
    norm ? half(Math.floor(r() * 64), 0).bits : half(Math.floor(r() * 1024), -4 - Math.floor(r() * 2), r() < 0.5).bits,
  );
  return { key, dtype: 'F16', shape, data: bytesOf(bits) };
}

/** Writes a one-layer llama of case `c` into `<root>/<name>`. */
export async function int4Checkpoint(root: string, name: string, c: Int4Case, seed = 7): Promise<Int4Checkpoint> {
  const r = rng(seed);
  const H = c.hidden;
  const I = 2 * H;
  const heads = 4;
  const kv = 2;
  const hd = H / heads;
  const vocab = 96;
  const config: Record<string, unknown> = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: vocab,
    hidden_size: H,
    intermediate_size: I,
    num_hidden_layers: 1,
    num_attention_heads: heads,
    num_key_value_heads: kv,
    head_dim: hd,
    max_position_embeddings: 128,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    tie_word_embeddings: !!c.tied,
    hidden_act: 'silu',
    torch_dtype: 'float16',
    quantization_config:
      c.format === 'awq'
        ? { quant_method: 'awq', bits: 4, group_size: c.group, zero_point: true, version: 'gemm' }
        : {
            quant_method: 'gptq',
            bits: 4,
            group_size: c.group,
            desc_act: !!c.descAct,
            sym: !c.asym,
            checkpoint_format: c.format,
            pack_dtype: 'int32',
            lm_head: !!c.quantHead,
          },
  };
  const tensors: Tensor[] = [f16Tensor('model.embed_tokens.weight', [vocab, H], r)];
  const dequant = new Map<string, { out: number; in: number; w: Float64Array }>();
  const p = 'model.layers.0';
  tensors.push(f16Tensor(`${p}.input_layernorm.weight`, [H], r, true), f16Tensor(`${p}.post_attention_layernorm.weight`, [H], r, true));
  const linears: [string, number, number][] = [
    [`${p}.self_attn.q_proj`, heads * hd, H],
    [`${p}.self_attn.k_proj`, kv * hd, H],
    [`${p}.self_attn.v_proj`, kv * hd, H],
    [`${p}.self_attn.o_proj`, H, heads * hd],
    [`${p}.mlp.gate_proj`, I, H],
    [`${p}.mlp.up_proj`, I, H],
    [`${p}.mlp.down_proj`, H, I],
  ];
  for (const [m, out, inF] of linears) {
    const l = packLinear(c, m, out, inF, r);
    tensors.push(...l.tensors);
    dequant.set(`${m}.weight`, { out, in: inF, w: l.w });
  }
  tensors.push(f16Tensor('model.norm.weight', [H], r, true));
  if (c.quantHead) {
    const l = packLinear(c, 'lm_head', vocab, H, r);
    tensors.push(...l.tensors);
    dequant.set('lm_head.weight', { out: vocab, in: H, w: l.w });
  } else if (!c.tied) tensors.push(f16Tensor('lm_head.weight', [vocab, H], r));
  const dir = path.join(root, name);
  fs.mkdirSync(dir, { recursive: true });
  await writeSafetensors(path.join(dir, 'model.safetensors'), tensors, { format: 'pt' });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  return { dir, dequant, config };
}

/**
 * MatMulNBits' dequantization, from onnxruntime's contrib op definition (ContribOperators.md
 * `com.microsoft.MatMulNBits`): B `[N, blocks, block/2]` with input row k in nibble k mod 2
 * (low first) of byte k/2 of its block, scales `[N · blocks]`, zero points `[N · ⌈blocks/2⌉]` two
 * blocks per byte (low first), block of row k = g_idx[k] when given, else k / block.
 */
export function matMulNBitsWeight(
  parts: { qweight: Uint8Array; scales: Float32Array; qzeros: Uint8Array; gIdx?: Int32Array },
  N: number,
  K: number,
  block: number,
): Float64Array {
  const blocks = Math.ceil(K / block);
  const zb = Math.ceil(blocks / 2);
  const w = new Float64Array(N * K);
  for (let n = 0; n < N; n++)
    for (let k = 0; k < K; k++) {
      const byte = parts.qweight[n * blocks * (block / 2) + Math.floor(k / block) * (block / 2) + Math.floor((k % block) / 2)]!;
      const q = k % 2 === 0 ? byte & 15 : byte >> 4;
      const b = parts.gIdx ? parts.gIdx[k]! : Math.floor(k / block);
      const zbyte = parts.qzeros[n * zb + Math.floor(b / 2)]!;
      const z = b % 2 === 0 ? zbyte & 15 : zbyte >> 4;
      w[n * K + k] = parts.scales[n * blocks + b]! * (q - z);
    }
  return w;
}
