/**
 * MPT (transformers `models/mpt/modeling_mpt.py` read at 4352620, `configuration_mpt.py` at
 * 79f1fc7; QEfficient `QEfficient/transformers/models/mpt/modeling_mpt.py` at 87a463e for the
 * graph interface):
 *
 * - no position embeddings: ALiBi biases (`alibi.ts`) on the scaled scores, any head count;
 * - one fused `Wqkv` `[3H, H]` chunked [q | k | v], no biases anywhere (`no_bias`);
 * - `clip_qkv` clamps Wqkv's output before the split (HF does; QEfficient's port drops it);
 * - scores × `softmax_scale` (default 1/√head_dim);
 * - LayerNorm without bias (`norm_1`, `norm_2`, `norm_f`), erf GELU MLP `up_proj` 4H → `down_proj`;
 * - head tied to `wte` (PretrainedConfig's tie_word_embeddings default).
 *
 * Fields sit in the nested `attn_config`. Real checkpoints name the class `MPTForCausalLM` with an
 * `auto_map` to MosaicML's remote code; both spellings export (the spec's model_name keeps the
 * config's). `alibi_bias_max` is honoured as MosaicML's code and the field's documentation say;
 * HF's `MptModel.forward` builds its table with the default 8, which every published config uses.
 * Anything that would make HF and MosaicML's code compute different things, or that neither
 * graph here implements, is refused by name.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec, type LinearSpec } from '../blocks/arch';
import { alibiSlopes } from '../blocks/alibi';
import { parseWith, refuse } from './config';
import type { FamilyRow } from './row';

const int = z.number().int().positive();
const attnConfig = z.looseObject({
  attn_type: z.string().optional(),
  clip_qkv: z.number().finite().positive().nullable().optional(),
  softmax_scale: z.number().finite().positive().nullable().optional(),
  prefix_lm: z.boolean().nullable().optional(),
  qk_ln: z.boolean().optional(),
  alibi: z.boolean().optional(),
  alibi_bias_max: z.number().finite().positive().optional(),
  rope: z.boolean().optional(),
  sliding_window_size: z.number().int().optional(),
});
const mptConfig = z.looseObject({
  model_type: z.literal('mpt'),
  d_model: int.optional(),
  n_heads: int.optional(),
  n_layers: int.optional(),
  expansion_ratio: z.number().positive().optional(),
  vocab_size: int.optional(),
  layer_norm_epsilon: z.number().finite().positive().optional(),
  attn_config: attnConfig.nullable().optional(),
  logit_scale: z.union([z.number(), z.string()]).nullable().optional(),
  no_bias: z.boolean().optional(),
  norm_type: z.string().optional(),
  ffn_config: z.looseObject({ ffn_type: z.string().optional() }).nullable().optional(),
  tie_word_embeddings: z.boolean().optional(),
});

/** MPT's architecture (MptConfig / MptAttentionConfig defaults where a field is absent). */
export function mptArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(mptConfig, raw, file);
  const ac = c.attn_config ?? {};
  const H = c.d_model ?? 2048;
  const nh = c.n_heads ?? 16;
  const L = c.n_layers ?? 24;
  const V = c.vocab_size ?? 50368;
  if (H % nh !== 0) refuse(file, 'd_model', `(${H}) is not divisible by n_heads (${nh})`);
  const hd = H / nh;
  if ((ac.attn_type ?? 'multihead_attention') !== 'multihead_attention')
    refuse(file, 'attn_config.attn_type', `is "${ac.attn_type}" (HF MptAttention is multi-head only)`);
  if (ac.alibi === false)
    refuse(file, 'attn_config.alibi', 'is false (HF MPT always applies ALiBi; learned positions are not implemented)');
  if (ac.qk_ln) refuse(file, 'attn_config.qk_ln', 'is true (q/k LayerNorm is not in HF MptAttention)');
  if (ac.prefix_lm) refuse(file, 'attn_config.prefix_lm', 'is true (prefix-LM attention is not causal)');
  if (ac.rope) refuse(file, 'attn_config.rope', 'is true (rotary MPT is not in HF MptAttention)');
  if (ac.sliding_window_size !== undefined && ac.sliding_window_size !== -1)
    refuse(file, 'attn_config.sliding_window_size', `(${ac.sliding_window_size}) is set (HF MPT has no sliding window)`);
  if ((c.expansion_ratio ?? 4) !== 4) refuse(file, 'expansion_ratio', `(${c.expansion_ratio}) is not 4 (HF MptMLP is 4 × d_model)`);
  if (c.no_bias === false) refuse(file, 'no_bias', 'is false (HF MPT builds no biases)');
  if (c.logit_scale != null) refuse(file, 'logit_scale', `(${c.logit_scale}) is set (HF MptForCausalLM does not scale logits)`);
  const normType = c.norm_type ?? 'low_precision_layernorm';
  if (normType !== 'low_precision_layernorm' && normType !== 'layernorm')
    refuse(file, 'norm_type', `"${normType}" is not a LayerNorm (HF MPT uses LayerNorm)`);
  if (c.ffn_config?.ffn_type !== undefined && c.ffn_config.ffn_type !== 'mptmlp')
    refuse(file, 'ffn_config.ffn_type', `"${c.ffn_config.ffn_type}" is not HF MptMLP`);
  const clip = ac.clip_qkv ?? undefined;
  const I = 4 * H;
  const lin = (weight: string, out: number, inp: number): LinearSpec => ({ weight, out, in: inp });
  const ln = (name: string) => ({ weight: `${name}.weight`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < L; i++) {
    const p = `transformer.blocks.${i}`;
    layers.push({
      norm1: ln(`${p}.norm_1`),
      norm2: ln(`${p}.norm_2`),
      attn: { kind: 'fused', qkv: lin(`${p}.attn.Wqkv.weight`, 3 * H, H), ...(clip !== undefined ? { clip } : {}) },
      o: lin(`${p}.attn.out_proj.weight`, H, H),
      mlp: { kind: 'plain', fc: lin(`${p}.ffn.up_proj.weight`, I, H), proj: lin(`${p}.ffn.down_proj.weight`, H, I) },
    });
  }
  return {
    ...archDims('mpt', V, H, { nh, nKv: nh, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_epsilon ?? 1e-5, plusOne: false },
    act: 'gelu',
    scoreScale: { op: 'mul', value: ac.softmax_scale ?? 1 / Math.sqrt(hd) },
    alibi: { slopes: alibiSlopes(nh, ac.alibi_bias_max ?? 8) },
    embed: 'transformer.wte.weight',
    finalNorm: ln('transformer.norm_f'),
    ...((c.tie_word_embeddings ?? true) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The mpt row of the family registry: MosaicML's spelling and HF's identify it. */
export const mptFamily: FamilyRow = {
  modelType: 'mpt',
  architectures: ['MPTForCausalLM', 'MptForCausalLM'],
  hfClass: 'MptForCausalLM',
  keyPrefix: 'transformer',
  moe: 'none',
  build: mptArch,
  test: {
    fixture: 'mpt',
    configs: {
      // 6 heads: slopes over 8 reordered [1::2] + [::2]; clip 0.6 clamps a good share of Wqkv's outputs
      'mpt-6h-clip': {
        architectures: ['MPTForCausalLM'],
        auto_map: { AutoConfig: 'configuration_mpt.MPTConfig', AutoModelForCausalLM: 'modeling_mpt.MPTForCausalLM' },
        model_type: 'mpt',
        d_model: 48,
        n_heads: 6,
        n_layers: 2,
        expansion_ratio: 4,
        max_seq_len: 8,
        vocab_size: 96,
        no_bias: true,
        learned_pos_emb: true,
        norm_type: 'low_precision_layernorm',
        layer_norm_epsilon: 1e-5,
        attn_config: {
          alibi: true,
          alibi_bias_max: 8,
          attn_impl: 'torch',
          attn_pdrop: 0,
          attn_type: 'multihead_attention',
          attn_uses_sequence_id: false,
          clip_qkv: 0.6,
          prefix_lm: false,
          qk_ln: false,
          softmax_scale: null,
        },
      },
    },
  },
};
