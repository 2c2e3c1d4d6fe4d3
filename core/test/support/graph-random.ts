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
import fs from 'node:fs';
import path from 'node:path';
import { fromFloat32 } from '../../src/formats/float-convert';
import { writeSafetensors } from '../../src/formats/safetensors';
import { familyOfConfig, familyTestConfigs } from '../../src/export/families/registry';
import { familyTestOf } from './family-tests';
import { randomTensors, type Put } from './random-tensors';

export { bf16, rng } from './random-tensors';

type Cfg = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Maker = (cfg: Cfg, seed: number) => Map<string, F32>;

/** A maker from one of the `put`-filling per-file functions (false: not its family, a table error). */
const viaPut =
  (fill: (cfg: Cfg, put: Put) => boolean): Maker =>
  (cfg, seed) =>
    randomTensors(seed, (put) => {
      if (!fill(cfg, put)) throw new Error(`random checkpoint: ${String(cfg.model_type)} is not in its maker's file`);
    });
const dense = viaPut(randomDenseTensors);
const classic = viaPut(randomClassicTensors);
const mptBigcodeGemma3 = viaPut(randomMptBigcodeGemma3);

/**
 * Random checkpoint makers by the registry row's model_type (a config's alias or `architectures`
 * finds its row). Families with a test file (`families/<name>.ts`, family-tests.ts) are found
 * there first; the Llama-like families share {@link randomLlamaLike}, the table's default.
 */
const MAKERS: Readonly<Record<string, Maker>> = {
  gemma2: dense,
  granite: dense,
  olmo2: dense,
  falcon: dense,
  codegen: dense,
  granitemoe: dense,
  phi: classic,
  starcoder2: classic,
  gptj: classic,
  mpt: mptBigcodeGemma3,
  gpt_bigcode: mptBigcodeGemma3,
  gemma3_text: mptBigcodeGemma3,
  qwen3_5_moe_text: randomQwen35,
  deepseek_v3: randomDeepseekCheckpoint,
  'grok-1': randomGrok1Checkpoint,
  llama4_text: randomLlama4Checkpoint,
  llama4: (cfg, seed) => new Map([...randomLlama4Checkpoint(cfg.text_config, seed)].map(([k, v]) => [`language_model.${k}`, v])),
  gpt2: (cfg, seed) => randomTensors(seed, (put) => putGpt2(cfg, put)),
};

/** HF-layout random weights for any family's config (see {@link MAKERS}). */
export function randomCheckpoint(cfg: Cfg, seed = 1): Map<string, F32> {
  const own = familyTestOf(cfg);
  if (own) return own.random(cfg, seed);
  const row = familyOfConfig(cfg);
  const make = (row && MAKERS[row.modelType]) ?? randomLlamaLike;
  return make(cfg, seed);
}

function putGpt2(cfg: Cfg, put: Put): void {
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
}

/** Llama, Mistral, Qwen2/3, Phi-3, Gemma, Mixtral, Qwen3-MoE: HF-layout random weights. */
function randomLlamaLike(cfg: Cfg, seed: number): Map<string, F32> {
  return randomTensors(seed, (put) => putLlamaLike(cfg, put));
}

function putLlamaLike(cfg: Cfg, put: Put): void {
  const t = cfg.model_type as string;
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
  return writeModel(dir, cfg, randomCheckpoint(cfg, seed));
}

/** A model folder of `cfg` with the weights `raw` stored as one BF16 `model.safetensors`; returns `raw`. */
export async function writeModel(dir: string, cfg: Record<string, unknown>, raw: Map<string, F32>): Promise<Map<string, F32>> {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
  await writeSafetensors(
    path.join(dir, 'model.safetensors'),
    [...raw].map(([key, t]) => ({ key, dtype: 'BF16' as const, shape: t.shape, data: fromFloat32(t.data, 'BF16') })),
  );
  return raw;
}
