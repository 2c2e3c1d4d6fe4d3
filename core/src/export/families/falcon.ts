/**
 * Falcon (transformers `models/falcon/modeling_falcon.py`, read at 00dcc6d; config at 0558553):
 * the 7B/40B layouts and the new decoder architecture, rotary only.
 *
 * - `query_key_value` splits as `_split_heads` does: new architecture → per kv group
 *   [q × heads/kv | k | v]; `multi_query` (old architecture) → [q heads | k | v] with ONE kv head
 *   whatever `num_kv_heads` says; otherwise per head [q | k | v].
 * - Blocks: `parallel_attn` → h + attn(ln(h)) + mlp(ln'(h)) with one norm (`input_layernorm`)
 *   or, in the new architecture, two (`ln_attn`, `ln_mlp`; `num_ln_in_parallel_attn` defaults
 *   to 2 there); otherwise sequential with `post_attention_layernorm`.
 * - LayerNorm with bias, erf GELU (`activation`), scores ÷ √head_dim, `transformer.` keys, head
 *   tied per `tie_word_embeddings` (PretrainedConfig's default: tied).
 * ALiBi (`alibi: true`) is refused: Falcon's is BLOOM's, which the MPT block (`alibi.ts`) does not compute.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type FusedLayout, type LayerSpec, type LinearSpec } from '../blocks/arch';
import { actOf, parseWith, refuse, ropeSource } from './config';
import { ropeSpec } from '../blocks/rope';
import type { FamilyRow } from './row';

const int = z.number().int().positive();
const falconConfig = z.looseObject({
  model_type: z.literal('falcon'),
  vocab_size: int.optional(),
  hidden_size: int.optional(),
  n_embed: int.optional(),
  num_hidden_layers: int.optional(),
  n_layer: int.optional(),
  num_attention_heads: int.optional(),
  n_head: int.optional(),
  num_kv_heads: int.nullable().optional(),
  n_head_kv: int.nullable().optional(),
  layer_norm_epsilon: z.number().finite().positive().optional(),
  alibi: z.boolean().optional(),
  new_decoder_architecture: z.boolean().optional(),
  multi_query: z.boolean().optional(),
  parallel_attn: z.boolean().optional(),
  bias: z.boolean().optional(),
  num_ln_in_parallel_attn: z.number().int().nullable().optional(),
  ffn_hidden_size: int.nullable().optional(),
  activation: z.string().optional(),
  rope_theta: z.number().finite().positive().optional(),
  rope_scaling: z.record(z.string(), z.unknown()).nullable().optional(),
  max_position_embeddings: int.optional(),
  tie_word_embeddings: z.boolean().optional(),
});

/** Falcon's architecture (FalconConfig defaults where a field is absent). */
export function falconArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(falconConfig, raw, file);
  // Falcon's ALiBi is BLOOM's, not MPT's (alibi.ts): other slopes, rounded to bfloat16 and multiplied by the
  // absolute key position in bfloat16, added before the 1/√head_dim scaling (HF modeling_falcon.py build_alibi_tensor)
  if (c.alibi)
    refuse(
      file,
      'alibi',
      "is true (ALiBi as Falcon applies it, BLOOM's bfloat16 slopes × key position, is not implemented; only rotary Falcon models export)",
    );
  const H = c.hidden_size ?? c.n_embed ?? 4544;
  const nh = c.num_attention_heads ?? c.n_head ?? 71;
  const L = c.num_hidden_layers ?? c.n_layer ?? 32;
  const V = c.vocab_size ?? 65024;
  if (H % nh !== 0) refuse(file, 'hidden_size', `(${H}) is not divisible by num_attention_heads (${nh})`);
  const hd = H / nh;
  const newArch = !!c.new_decoder_architecture;
  const multiQuery = c.multi_query ?? true;
  const parallel = c.parallel_attn ?? true;
  const cfgKv = c.num_kv_heads ?? c.n_head_kv ?? nh;
  let nKv: number;
  let layout: FusedLayout;
  if (newArch) {
    if (nh % cfgKv !== 0) refuse(file, 'num_kv_heads', `(${cfgKv}) does not divide num_attention_heads (${nh})`);
    if (!parallel) refuse(file, 'parallel_attn', 'is false with new_decoder_architecture (HF Falcon has no such block)');
    nKv = cfgKv;
    layout = {
      groups: nKv,
      pieces: [
        { role: 'q', size: (nh / nKv) * hd },
        { role: 'k', size: hd },
        { role: 'v', size: hd },
      ],
    };
  } else if (multiQuery) {
    nKv = 1; // HF: num_kv_heads is 1 for multi_query in the old architecture, whatever the config says
    layout = {
      groups: 1,
      pieces: [
        { role: 'q', size: H },
        { role: 'k', size: hd },
        { role: 'v', size: hd },
      ],
    };
  } else {
    if (cfgKv !== nh)
      refuse(file, 'num_kv_heads', `(${cfgKv}) must equal num_attention_heads (${nh}) without multi_query or new_decoder_architecture`);
    nKv = nh;
    layout = {
      groups: nh,
      pieces: [
        { role: 'q', size: hd },
        { role: 'k', size: hd },
        { role: 'v', size: hd },
      ],
    };
  }
  const nLn = c.num_ln_in_parallel_attn ?? (newArch ? 2 : 1);
  if (nLn !== 1 && nLn !== 2) refuse(file, 'num_ln_in_parallel_attn', `(${nLn}) must be 1 or 2`);
  if (!newArch && parallel && nLn === 2)
    refuse(file, 'num_ln_in_parallel_attn', 'is 2 without new_decoder_architecture (HF Falcon then uses a norm it never built)');
  const bias = !!c.bias;
  const I = c.ffn_hidden_size ?? 4 * H;
  const qkvOut = layout.groups * layout.pieces.reduce((s, p) => s + p.size, 0);
  const lin = (name: string, out: number, inp: number): LinearSpec => ({
    weight: `${name}.weight`,
    out,
    in: inp,
    ...(bias ? { bias: `${name}.bias` } : {}),
  });
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < L; i++) {
    const p = `transformer.h.${i}`;
    const norms: Pick<LayerSpec, 'norm1' | 'norm2' | 'parallel'> =
      newArch && nLn === 2
        ? { norm1: ln(`${p}.ln_attn`), norm2: ln(`${p}.ln_mlp`), parallel: true }
        : parallel
          ? { norm1: ln(`${p}.input_layernorm`), parallel: true }
          : { norm1: ln(`${p}.input_layernorm`), norm2: ln(`${p}.post_attention_layernorm`) };
    layers.push({
      ...norms,
      attn: { kind: 'fused', qkv: lin(`${p}.self_attention.query_key_value`, qkvOut, H), layout },
      o: lin(`${p}.self_attention.dense`, H, H),
      mlp: { kind: 'plain', fc: lin(`${p}.mlp.dense_h_to_4h`, I, H), proj: lin(`${p}.mlp.dense_4h_to_h`, H, I) },
    });
  }
  const { theta, scaling } = ropeSource(c, 10000);
  const rope = ropeSpec(theta, hd, scaling, file, {
    ...(c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {}),
  });
  if (rope.long) refuse(file, 'rope_scaling', 'type longrope is only implemented for phi3');
  return {
    ...archDims('falcon', V, H, { nh, nKv, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_epsilon ?? 1e-5, plusOne: false },
    act: actOf(c.activation ?? 'gelu', file, 'activation'),
    scoreScale: { op: 'div', value: Math.sqrt(hd) },
    rope,
    embed: 'transformer.word_embeddings.weight',
    finalNorm: ln('transformer.ln_f'),
    ...((c.tie_word_embeddings ?? true) ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** The falcon row of the family registry. */
export const falconFamily: FamilyRow = {
  modelType: 'falcon',
  hfClass: 'FalconForCausalLM',
  keyPrefix: 'transformer',
  moe: 'none',
  build: falconArch,
  test: {
    configs: {
      // Falcon-7B layout: old architecture, multi_query (one kv head whatever num_kv_heads says), parallel, one norm
      'falcon-7b': {
        model_type: 'falcon',
        vocab_size: 96,
        hidden_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 6,
        num_kv_heads: 6,
        multi_query: true,
        new_decoder_architecture: false,
        parallel_attn: true,
        bias: false,
        alibi: false,
        layer_norm_epsilon: 1e-5,
        rope_theta: 10000.0,
        tie_word_embeddings: true,
      },
      // Falcon-40B layout: new decoder architecture, grouped kv, ln_attn + ln_mlp
      'falcon-40b': {
        model_type: 'falcon',
        vocab_size: 96,
        hidden_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 8,
        num_kv_heads: 2,
        new_decoder_architecture: true,
        multi_query: true,
        parallel_attn: true,
        bias: false,
        alibi: false,
        layer_norm_epsilon: 1e-5,
        rope_theta: 10000.0,
        tie_word_embeddings: false,
      },
      'falcon-new-1ln': {
        model_type: 'falcon',
        vocab_size: 80,
        hidden_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_kv_heads: 1,
        new_decoder_architecture: true,
        parallel_attn: true,
        num_ln_in_parallel_attn: 1,
        ffn_hidden_size: 72,
        bias: true,
        alibi: false,
        layer_norm_epsilon: 1e-5,
        rope_theta: 10000.0,
      },
      // old architecture without multi_query: per-head [q|k|v], sequential block, biases, untied
      'falcon-seq': {
        model_type: 'falcon',
        vocab_size: 80,
        hidden_size: 32,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        multi_query: false,
        new_decoder_architecture: false,
        parallel_attn: false,
        bias: true,
        alibi: false,
        layer_norm_epsilon: 1e-5,
        rope_theta: 10000.0,
        tie_word_embeddings: false,
      },
    },
  },
};
