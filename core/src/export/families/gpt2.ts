/**
 * GPT-2 (transformers `models/gpt2/modeling_gpt2.py`): Conv1D projections (weights stored
 * `[in, out]`), learned absolute positions, LayerNorm with bias, fused c_attn [q | k | v],
 * scores ÷ √head_dim, tied head by default.
 */
import { archDims, type ArchSpec, type LayerSpec, type LinearSpec } from '../blocks/arch';
import { actOf, gpt2Config, parseWith, refuse } from './config';
import type { FamilyRow } from './row';

/** GPT-2 → {@link ArchSpec}. */
export function gpt2Arch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(gpt2Config, raw, file);
  if (c.scale_attn_by_inverse_layer_idx) refuse(file, 'scale_attn_by_inverse_layer_idx', 'is true');
  if (c.add_cross_attention) refuse(file, 'add_cross_attention', 'is true (decoder-only graphs have no cross-attention)');
  const H = c.n_embd;
  const nh = c.n_head;
  if (H % nh !== 0) refuse(file, 'n_embd', `(${H}) is not divisible by n_head (${nh})`);
  const hd = H / nh;
  const I = c.n_inner ?? 4 * H;
  // Inputs are named by GPT2LMHeadModel's parameter paths (`transformer.…`), as QEfficient
  // names them; checkpoints saved from GPT2Model (the original openai-community/gpt2) have
  // keys without the prefix — the spec maps name → key (export-config.ts, keyForInput).
  const prefix = 'transformer.';
  const conv = (name: string, inp: number, out: number): LinearSpec => ({
    weight: `${name}.weight`,
    bias: `${name}.bias`,
    in: inp,
    out,
    conv1d: true,
  });
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.n_layer; i++) {
    const p = `${prefix}h.${i}`;
    layers.push({
      norm1: ln(`${p}.ln_1`),
      norm2: ln(`${p}.ln_2`),
      attn: { kind: 'fused', qkv: conv(`${p}.attn.c_attn`, H, 3 * H) },
      o: conv(`${p}.attn.c_proj`, H, H),
      mlp: { kind: 'plain', fc: conv(`${p}.mlp.c_fc`, H, I), proj: conv(`${p}.mlp.c_proj`, I, H) },
    });
  }
  const tied = c.tie_word_embeddings ?? true;
  return {
    ...archDims('gpt2', c.vocab_size, H, { nh, nKv: nh, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_epsilon ?? 1e-5, plusOne: false },
    act: actOf(c.activation_function ?? 'gelu_new', file, 'activation_function'),
    scoreScale: (c.scale_attn_weights ?? true) ? { op: 'div', value: Math.sqrt(hd) } : undefined,
    positions: { weight: `${prefix}wpe.weight`, max: c.n_positions },
    embed: `${prefix}wte.weight`,
    finalNorm: ln(`${prefix}ln_f`),
    ...(tied ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The gpt2 row of the family registry. */
export const gpt2Family: FamilyRow = {
  modelType: 'gpt2',
  hfClass: 'GPT2LMHeadModel',
  keyPrefix: 'transformer',
  moe: 'none',
  build: gpt2Arch,
  test: {
    fixture: 'gpt2',
    configs: {
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
    },
  },
};
