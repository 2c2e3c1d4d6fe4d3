/**
 * GPTBigCode — StarCoder, SantaCoder (transformers `models/gpt_bigcode/modeling_gpt_bigcode.py`
 * read at e3f47e5, `configuration_gpt_bigcode.py` at d0d5bbf; QEfficient
 * `QEfficient/transformers/models/gpt_bigcode/modeling_gpt_bigcode.py` at 0498a5a):
 *
 * - `multi_query` (default true): one kv head; `c_attn` is an `nn.Linear` `[H + 2·head_dim, H]`
 *   split [q (H) | k (head_dim) | v (head_dim)], and the cache is `[batch, 1, ctx_len, head_dim]`
 *   as QEfficient shapes it. Without it the fused rows are per head [q | k | v]
 *   (`view(…, heads, 3·head_dim)` then split), one kv head per query head.
 * - learned `wpe` added to `wte`; scores ÷ √head_dim when `scale_attn_weights` (the
 *   `scale_attention_softmax_in_fp32` unscale/rescale by layer_idx + 1 cancels out);
 * - GPT-2 block: LayerNorm with bias (`ln_1`, `ln_2`, `ln_f`), `c_fc` → act → `c_proj` with
 *   biases (`n_inner`, default 4H; `activation_function`, default gelu_pytorch_tanh);
 * - head tied to `wte` unless `tie_word_embeddings` is false.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type FusedLayout, type LayerSpec, type LinearSpec } from '../blocks/arch';
import { actOf, parseWith, refuse } from './config';
import type { FamilyRow } from './row';

const int = z.number().int().positive();
const bigcodeConfig = z.looseObject({
  model_type: z.literal('gpt_bigcode'),
  vocab_size: int.optional(),
  n_positions: int.optional(),
  n_embd: int.optional(),
  n_layer: int.optional(),
  n_head: int.optional(),
  n_inner: int.nullable().optional(),
  activation_function: z.string().optional(),
  layer_norm_epsilon: z.number().finite().positive().optional(),
  scale_attn_weights: z.boolean().optional(),
  multi_query: z.boolean().optional(),
  add_cross_attention: z.boolean().optional(),
  tie_word_embeddings: z.boolean().optional(),
});

/** GPTBigCode's architecture (GPTBigCodeConfig defaults where a field is absent). */
export function gptBigcodeArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(bigcodeConfig, raw, file);
  if (c.add_cross_attention) refuse(file, 'add_cross_attention', 'is true (decoder-only graphs have no cross-attention)');
  const H = c.n_embd ?? 768;
  const nh = c.n_head ?? 12;
  if (H % nh !== 0) refuse(file, 'n_embd', `(${H}) is not divisible by n_head (${nh})`);
  const hd = H / nh;
  const mq = c.multi_query ?? true;
  const nKv = mq ? 1 : nh;
  const layout: FusedLayout = {
    groups: mq ? 1 : nh,
    pieces: [
      { role: 'q', size: mq ? H : hd },
      { role: 'k', size: hd },
      { role: 'v', size: hd },
    ],
  };
  const I = c.n_inner ?? 4 * H;
  const lin = (name: string, out: number, inp: number): LinearSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, out, in: inp });
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < (c.n_layer ?? 12); i++) {
    const p = `transformer.h.${i}`;
    layers.push({
      norm1: ln(`${p}.ln_1`),
      norm2: ln(`${p}.ln_2`),
      attn: { kind: 'fused', qkv: lin(`${p}.attn.c_attn`, H + 2 * nKv * hd, H), layout },
      o: lin(`${p}.attn.c_proj`, H, H),
      mlp: { kind: 'plain', fc: lin(`${p}.mlp.c_fc`, I, H), proj: lin(`${p}.mlp.c_proj`, H, I) },
    });
  }
  return {
    ...archDims('gpt_bigcode', c.vocab_size ?? 50257, H, { nh, nKv, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_epsilon ?? 1e-5, plusOne: false },
    act: actOf(c.activation_function ?? 'gelu_pytorch_tanh', file, 'activation_function'),
    // HF: baddbmm(alpha = 1 / head_dim**0.5)
    scoreScale: (c.scale_attn_weights ?? true) ? { op: 'mul', value: Math.pow(hd, -0.5) } : undefined,
    positions: { weight: 'transformer.wpe.weight', max: c.n_positions ?? 1024 },
    embed: 'transformer.wte.weight',
    finalNorm: ln('transformer.ln_f'),
    ...((c.tie_word_embeddings ?? true) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The gpt_bigcode row of the family registry (no fixture: judged from source by code-made checkpoints). */
export const gptBigcodeFamily: FamilyRow = {
  modelType: 'gpt_bigcode',
  architectures: ['GPTBigCodeForCausalLM'],
  hfClass: 'GPTBigCodeForCausalLM',
  keyPrefix: 'transformer',
  moe: 'none',
  build: gptBigcodeArch,
  test: {
    configs: {
      'gpt_bigcode-mq': {
        architectures: ['GPTBigCodeForCausalLM'],
        model_type: 'gpt_bigcode',
        vocab_size: 96,
        n_embd: 48,
        n_head: 6,
        n_layer: 2,
        n_inner: 80,
        n_positions: 64,
        multi_query: true,
        activation_function: 'gelu_pytorch_tanh',
        layer_norm_epsilon: 1e-5,
        scale_attn_weights: true,
        attention_softmax_in_fp32: true,
        scale_attention_softmax_in_fp32: true,
      },
      // multi-head: c_attn rows per head [q | k | v]; unscaled scores; n_inner null → 4H
      'gpt_bigcode-mha': {
        model_type: 'gpt_bigcode',
        vocab_size: 80,
        n_embd: 32,
        n_head: 4,
        n_layer: 2,
        n_inner: null,
        n_positions: 48,
        multi_query: false,
        activation_function: 'gelu_pytorch_tanh',
        layer_norm_epsilon: 1e-5,
        scale_attn_weights: false,
      },
    },
  },
};
