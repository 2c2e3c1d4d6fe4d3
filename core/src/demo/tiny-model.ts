/**
 * A tiny Llama-architecture checkpoint made on the spot, for `weight-spec demo` and for
 * tests that need a model of a given family without shipping files: a real HF config and
 * real HF key names, bf16 weights drawn from a seeded generator (the same seed gives the
 * same bytes on every machine).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fromFloat32 } from '../formats/float-convert';
import { writeSafetensors } from '../formats/safetensors';
import { rng } from '../foundation/rng';

/** The demo model's config.json (a Llama with GQA). */
export const TINY_LLAMA_CONFIG = {
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  vocab_size: 128,
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  max_position_embeddings: 128,
  rms_norm_eps: 1e-5,
  rope_theta: 10000.0,
  tie_word_embeddings: false,
  hidden_act: 'silu',
  attention_bias: false,
  torch_dtype: 'bfloat16',
  bos_token_id: 1,
  eos_token_id: 2,
} as const;

/** Key → shape of a Llama checkpoint for `cfg`, in HF's key order. */
export function llamaShapes(cfg: typeof TINY_LLAMA_CONFIG): [string, number[]][] {
  const h = cfg.hidden_size;
  const d = cfg.head_dim;
  const out: [string, number[]][] = [['model.embed_tokens.weight', [cfg.vocab_size, h]]];
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      [`${p}.input_layernorm.weight`, [h]],
      [`${p}.post_attention_layernorm.weight`, [h]],
      [`${p}.self_attn.q_proj.weight`, [cfg.num_attention_heads * d, h]],
      [`${p}.self_attn.k_proj.weight`, [cfg.num_key_value_heads * d, h]],
      [`${p}.self_attn.v_proj.weight`, [cfg.num_key_value_heads * d, h]],
      [`${p}.self_attn.o_proj.weight`, [h, cfg.num_attention_heads * d]],
      [`${p}.mlp.gate_proj.weight`, [cfg.intermediate_size, h]],
      [`${p}.mlp.up_proj.weight`, [cfg.intermediate_size, h]],
      [`${p}.mlp.down_proj.weight`, [h, cfg.intermediate_size]],
    );
  }
  out.push(['model.norm.weight', [h]], ['lm_head.weight', [cfg.vocab_size, h]]);
  return out;
}

/**
 * Writes `config.json` and `model.safetensors` (bf16) of the tiny Llama into `dir`.
 * Norm weights are near 1 and matrices scaled by 1/√fan-in, as a trained model's roughly are,
 * so the logits are well-conditioned.
 */
export async function writeTinyLlama(dir: string, seed = 1234): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const next = rng(seed);
  const tensors = llamaShapes(TINY_LLAMA_CONFIG).map(([key, shape]) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(n);
    const isNorm = shape.length === 1;
    const scale = isNorm ? 0.1 : 1 / Math.sqrt(shape[shape.length - 1]!);
    for (let i = 0; i < n; i++) values[i] = (isNorm ? 1 : 0) + (next() * 2 - 1) * scale;
    return { key, dtype: 'BF16' as const, shape, data: fromFloat32(values, 'BF16') };
  });
  writeFileSync(path.join(dir, 'config.json'), JSON.stringify(TINY_LLAMA_CONFIG, null, 2) + '\n');
  await writeSafetensors(path.join(dir, 'model.safetensors'), tensors, { format: 'pt' });
}
