/**
 * Small random checkpoints made in code, with the key names and shapes the HF modeling files
 * give each family (original per-expert MoE keys), values rounded to bf16 like the fixtures.
 * Key naming is written out here independently of the graph builder's family table.
 */
import { randomClassicTensors } from './graph-random-classic';
import { randomDeepseekCheckpoint } from './graph-reference-deepseek';
import { putGatedMlp, putNormAndHead, randomDenseTensors } from './graph-random-dense';
import { randomMptBigcodeGemma3 } from './graph-random-mpt-bigcode-gemma3';
import { randomQwen35 } from './graph-reference-qwen35';
import type { F32 } from './graph-support';
import { randomGrok1Checkpoint } from './graph-reference-grok1';
import { randomLlama4Checkpoint } from './graph-reference-llama4';
import { randomStablelmTensors } from './graph-reference-stablelm';
import fs from 'node:fs';
import path from 'node:path';
import { fromFloat32 } from '../../src/formats/dtype';
import { writeSafetensors } from '../../src/formats/safetensors';
import { familyTestConfigs } from '../../src/export/families/registry';

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

/** Rounds to bfloat16 (nearest even), as the fixtures store weights. */
export function bf16(x: number): number {
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
  if (String(cfg.model_type).startsWith('qwen3_5_moe')) return randomQwen35(cfg, seed);
  if (randomDenseTensors(cfg, put) || randomClassicTensors(cfg, put) || randomMptBigcodeGemma3(cfg, put) || randomStablelmTensors(cfg, put))
    return w;
  const t = cfg.model_type as string;
  if (t === 'deepseek_v3' || t === 'kimi_k2') return randomDeepseekCheckpoint(cfg, seed);
  if (t === 'grok-1' || cfg.architectures?.[0] === 'Grok1ModelForCausalLM') return randomGrok1Checkpoint(cfg, seed);
  if (t === 'llama4_text') return randomLlama4Checkpoint(cfg, seed);
  if (t === 'llama4') return new Map([...randomLlama4Checkpoint(cfg.text_config, seed)].map(([k, v]) => [`language_model.${k}`, v]));
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

/**
 * Small configs (real HF field names) of every family, named: the family registry's test
 * configs (`row.test.configs` in each `families/<name>.ts`).
 */
export const SYNTHETIC_CONFIGS: Record<string, Record<string, unknown>> = familyTestConfigs();

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
