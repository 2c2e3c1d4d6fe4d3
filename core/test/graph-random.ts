/**
 * Small random checkpoints made in code, with the key names and shapes the HF modeling files
 * give each family (original per-expert MoE keys), values rounded to bf16 like the fixtures.
 * Key naming is written out here independently of the graph builder's family table.
 */
import { DENSE_SYNTHETIC_CONFIGS, putGatedMlp, putNormAndHead, randomDenseTensors } from './graph-random-dense';
import { multimodalConfig, QWEN35_OTHER } from './graph-configs-qwen35';
import { randomQwen35 } from './graph-reference-qwen35';
import type { F32 } from './graph-support';
import fs from 'node:fs';
import path from 'node:path';
import { fromFloat32 } from '../src/formats/dtype';
import { writeSafetensors } from '../src/formats/safetensors';

/** Deterministic PRNG (mulberry32) with a normal sampler. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  const uni = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uni() + 1e-12)) * Math.cos(2 * Math.PI * uni());
}

function bf16(x: number): number {
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer);
  u[0] = ((u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) >>> 16) << 16;
  return f[0]!;
}

/** HF-layout random weights for a Llama-like or GPT-2 config. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function randomCheckpoint(cfg: Record<string, any>, seed = 1): Map<string, F32> {
  const r = rng(seed);
  const w = new Map<string, F32>();
  const put = (k: string, shape: number[], scale: number, center = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    w.set(k, { shape, data: Float32Array.from({ length: n }, () => bf16(center + scale * r())) });
  };
  if (randomDenseTensors(cfg, put)) return w;
  if (String(cfg.model_type).startsWith('qwen3_5_moe')) return randomQwen35(cfg, seed);
  const t = cfg.model_type as string;
  if (t === 'gpt2') {
    const H = cfg.n_embd,
      I = cfg.n_inner ?? 4 * H;
    put('transformer.wte.weight', [cfg.vocab_size, H], 0.5);
    put('transformer.wpe.weight', [cfg.n_positions, H], 0.1);
    for (let l = 0; l < cfg.n_layer; l++) {
      const p = `transformer.h.${l}`;
      for (const n of ['ln_1', 'ln_2']) {
        put(`${p}.${n}.weight`, [H], 0.1, 1);
        put(`${p}.${n}.bias`, [H], 0.1);
      }
      put(`${p}.attn.c_attn.weight`, [H, 3 * H], 1 / Math.sqrt(H));
      put(`${p}.attn.c_attn.bias`, [3 * H], 0.1);
      put(`${p}.attn.c_proj.weight`, [H, H], 1 / Math.sqrt(H));
      put(`${p}.attn.c_proj.bias`, [H], 0.1);
      put(`${p}.mlp.c_fc.weight`, [H, I], 1 / Math.sqrt(H));
      put(`${p}.mlp.c_fc.bias`, [I], 0.1);
      put(`${p}.mlp.c_proj.weight`, [I, H], 1 / Math.sqrt(I));
      put(`${p}.mlp.c_proj.bias`, [H], 0.1);
    }
    put('transformer.ln_f.weight', [H], 0.1, 1);
    put('transformer.ln_f.bias', [H], 0.1);
    return w;
  }
  const H = cfg.hidden_size,
    nh = cfg.num_attention_heads,
    nkv = cfg.num_key_value_heads ?? nh;
  const hd = cfg.head_dim ?? H / nh,
    I = cfg.intermediate_size;
  const gemma = t === 'gemma';
  const normW = (k: string, n: number) => put(k, [n], 0.1, gemma ? 0 : 1);
  put('model.embed_tokens.weight', [cfg.vocab_size, H], gemma ? 0.1 : 0.5);
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    normW(`${p}.input_layernorm.weight`, H);
    normW(`${p}.post_attention_layernorm.weight`, H);
    const a = `${p}.self_attn`;
    if (t === 'phi3') {
      put(`${a}.qkv_proj.weight`, [(nh + 2 * nkv) * hd, H], 1 / Math.sqrt(H));
      put(`${a}.o_proj.weight`, [H, nh * hd], 1 / Math.sqrt(nh * hd));
      put(`${p}.mlp.gate_up_proj.weight`, [2 * I, H], 1 / Math.sqrt(H));
      put(`${p}.mlp.down_proj.weight`, [H, I], 1 / Math.sqrt(I));
      continue;
    }
    const qkvBias = t === 'qwen2' || !!cfg.attention_bias;
    put(`${a}.q_proj.weight`, [nh * hd, H], 1 / Math.sqrt(H));
    put(`${a}.k_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    put(`${a}.v_proj.weight`, [nkv * hd, H], 1 / Math.sqrt(H));
    if (qkvBias) for (const n of ['q', 'k', 'v']) put(`${a}.${n}_proj.bias`, [(n === 'q' ? nh : nkv) * hd], 0.1);
    put(`${a}.o_proj.weight`, [H, nh * hd], 1 / Math.sqrt(nh * hd));
    if (cfg.attention_bias && t !== 'qwen2') put(`${a}.o_proj.bias`, [H], 0.1);
    if (t.startsWith('qwen3')) {
      normW(`${a}.q_norm.weight`, hd);
      normW(`${a}.k_norm.weight`, hd);
    }
    const sparse =
      t === 'mixtral' || (t === 'qwen3_moe' && !(cfg.mlp_only_layers ?? []).includes(l) && (l + 1) % (cfg.decoder_sparse_step ?? 1) === 0);
    if (sparse) {
      const E = cfg.num_local_experts ?? cfg.num_experts,
        mi = cfg.moe_intermediate_size ?? I;
      const mp = t === 'mixtral' ? `${p}.block_sparse_moe` : `${p}.mlp`;
      const [g, u, d] = t === 'mixtral' ? ['w1', 'w3', 'w2'] : ['gate_proj', 'up_proj', 'down_proj'];
      put(`${mp}.gate.weight`, [E, H], 1);
      for (let e = 0; e < E; e++) {
        put(`${mp}.experts.${e}.${g}.weight`, [mi, H], 1 / Math.sqrt(H));
        put(`${mp}.experts.${e}.${u}.weight`, [mi, H], 1 / Math.sqrt(H));
        put(`${mp}.experts.${e}.${d}.weight`, [H, mi], 1 / Math.sqrt(mi));
      }
    } else {
      putGatedMlp(put, `${p}.mlp`, H, I, !!cfg.mlp_bias);
    }
  }
  putNormAndHead(put, normW, cfg, H, gemma);
  return w;
}

/** Small configs (real HF field names) for the families without shipped fixtures. */
export const SYNTHETIC_CONFIGS: Record<string, Record<string, unknown>> = {
  mistral: {
    model_type: 'mistral',
    vocab_size: 96,
    hidden_size: 48,
    intermediate_size: 80,
    num_hidden_layers: 2,
    num_attention_heads: 6,
    num_key_value_heads: 2,
    head_dim: null,
    rms_norm_eps: 1e-5,
    rope_theta: 10000.0,
    sliding_window: 5,
    tie_word_embeddings: false,
    hidden_act: 'silu',
  },
  qwen3: {
    model_type: 'qwen3',
    vocab_size: 96,
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    head_dim: 16,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000.0,
    attention_bias: false,
    tie_word_embeddings: true,
    hidden_act: 'silu',
  },
  gemma: {
    model_type: 'gemma',
    vocab_size: 96,
    hidden_size: 48,
    intermediate_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 32,
    rms_norm_eps: 1e-6,
    rope_theta: 10000.0,
    hidden_act: 'gelu',
    hidden_activation: 'gelu_pytorch_tanh',
  },
  qwen3_moe: {
    model_type: 'qwen3_moe',
    vocab_size: 96,
    hidden_size: 32,
    intermediate_size: 64,
    moe_intermediate_size: 24,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 8,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000.0,
    num_experts: 6,
    num_experts_per_tok: 2,
    norm_topk_prob: true,
    decoder_sparse_step: 1,
    mlp_only_layers: [],
    tie_word_embeddings: false,
    hidden_act: 'silu',
  },
  // dense layer 0 (mlp_only_layers), norm_topk_prob off, MQA
  'qwen3_moe-mixed': {
    model_type: 'qwen3_moe',
    vocab_size: 64,
    hidden_size: 32,
    intermediate_size: 40,
    moe_intermediate_size: 16,
    num_hidden_layers: 3,
    num_attention_heads: 4,
    num_key_value_heads: 1,
    head_dim: 8,
    rms_norm_eps: 1e-6,
    rope_theta: 10000.0,
    num_experts: 5,
    num_experts_per_tok: 3,
    norm_topk_prob: false,
    decoder_sparse_step: 1,
    mlp_only_layers: [0],
    tie_word_embeddings: true,
    hidden_act: 'silu',
  },
  'llama-rope-llama3': {
    model_type: 'llama',
    vocab_size: 96,
    hidden_size: 64,
    intermediate_size: 96,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-5,
    rope_theta: 500000.0,
    rope_scaling: { rope_type: 'llama3', factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_max_position_embeddings: 64 },
    tie_word_embeddings: false,
    hidden_act: 'silu',
  },
  'llama-rope-linear': {
    model_type: 'llama',
    vocab_size: 96,
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    rms_norm_eps: 1e-5,
    rope_theta: 10000.0,
    rope_scaling: { type: 'linear', factor: 4.0 },
    attention_bias: true,
    mlp_bias: true,
    tie_word_embeddings: false,
    hidden_act: 'silu',
  },
  // Phi-3 with LongRoPE and partial rotary dims: 11 tokens > original_max 8 → the long factors
  'phi3-longrope': {
    model_type: 'phi3',
    vocab_size: 96,
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    rms_norm_eps: 1e-5,
    rope_theta: 10000.0,
    partial_rotary_factor: 0.5,
    max_position_embeddings: 64,
    original_max_position_embeddings: 8,
    rope_scaling: { type: 'longrope', short_factor: [1.0, 1.3, 1.9, 2.5], long_factor: [1.5, 2.0, 4.0, 9.0] },
    tie_word_embeddings: false,
    hidden_act: 'silu',
  },
  'gpt2-prefixed': {
    model_type: 'gpt2',
    vocab_size: 80,
    n_embd: 32,
    n_layer: 2,
    n_head: 2,
    n_positions: 64,
    n_inner: null,
    activation_function: 'gelu_new',
    layer_norm_epsilon: 1e-5,
    tie_word_embeddings: true,
  },
  ...DENSE_SYNTHETIC_CONFIGS,
  // Qwen3.5-MoE's published multimodal layout (text_config, model.language_model.* keys); the text layout has a fixture
  'qwen3_5_moe-multimodal': multimodalConfig(QWEN35_OTHER),
};

/**
 * A model folder made in code: `config.json` and {@link randomCheckpoint} stored as one BF16
 * `model.safetensors` (as HF checkpoints are). Returns the float32 weights, for the reference.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function writeRandomModel(dir: string, cfg: Record<string, any>, seed: number): Promise<Map<string, F32>> {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
  const raw = randomCheckpoint(cfg, seed);
  await writeSafetensors(
    path.join(dir, 'model.safetensors'),
    [...raw].map(([key, t]) => ({ key, dtype: 'BF16' as const, shape: t.shape, data: fromFloat32(t.data, 'BF16') })),
  );
  return raw;
}
