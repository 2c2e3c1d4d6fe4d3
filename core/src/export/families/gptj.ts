/**
 * GPT-J (transformers `models/gptj/modeling_gptj.py`, read at cb6cd7e; config at c4c7dfb), with
 * QEfficient's graph interface (`QEfficient/transformers/models/gptj/modeling_gptj.py` at
 * fc7a71a: position_ids-driven KV cache, batch_index):
 *
 * - Rotary on the first `rotary_dim` dims of each head, θ = 10000, with `rotate_every_two`:
 *   pairs (2i, 2i+1) rotate together, sin/cos repeat-interleaved (create_sinusoidal_positions).
 * - One `ln_1` feeding attention and MLP in parallel: h + attn(ln_1(h)) + mlp(ln_1(h)).
 * - q/k/v/out_proj without bias; fc_in → act (`activation_function`, gelu_new) → fc_out with
 *   biases; `n_inner` null means 4 × n_embd.
 * - `_attn`: q·kᵀ in float32, ÷ √head_dim; LayerNorm with bias (`layer_norm_epsilon`), `ln_f`,
 *   `lm_head` with a bias, untied by default (GPTJConfig: tie_word_embeddings=False).
 * The dropout fields do nothing at inference; the legacy `rotary: true` field is not read by HF.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec, type NormSpec } from '../blocks/arch';
import { actOf, gptNamedFields, parseWith, refuse } from './config';
import type { FamilyRow } from './row';
import { ropeSpec } from '../blocks/rope';

const gptjConfig = z.looseObject({
  model_type: z.literal('gptj'),
  ...gptNamedFields,
  rotary_dim: z.number().int().positive().nullable().optional(),
  n_positions: z.number().int().positive().optional(),
});

/** GPT-J's architecture (GPTJConfig defaults where a field is absent). */
export function gptjArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(gptjConfig, raw, file);
  const H = c.n_embd;
  const nh = c.n_head;
  if (H % nh !== 0) refuse(file, 'n_embd', `(${H}) is not divisible by n_head (${nh})`);
  const hd = H / nh;
  // rotary_dim absent → GPTJConfig's 64; null → HF builds n_embd-wide tables that only fit one head
  const rd = c.rotary_dim === undefined ? 64 : c.rotary_dim;
  if (rd == null) refuse(file, 'rotary_dim', 'is null (HF GPT-J then builds rotary tables of n_embd dims; not supported)');
  if (rd > hd || rd % 2 !== 0) refuse(file, 'rotary_dim', `(${rd}) must be even and at most the head dim ${hd}`);
  const I = c.n_inner ?? 4 * H;
  const ln = (name: string): NormSpec => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.n_layer; i++) {
    const p = `transformer.h.${i}`;
    const a = `${p}.attn`;
    layers.push({
      norm1: ln(`${p}.ln_1`),
      parallel: true,
      attn: {
        kind: 'separate',
        q: { weight: `${a}.q_proj.weight`, out: H, in: H },
        k: { weight: `${a}.k_proj.weight`, out: H, in: H },
        v: { weight: `${a}.v_proj.weight`, out: H, in: H },
      },
      o: { weight: `${a}.out_proj.weight`, out: H, in: H },
      mlp: {
        kind: 'plain',
        fc: { weight: `${p}.mlp.fc_in.weight`, bias: `${p}.mlp.fc_in.bias`, out: I, in: H },
        proj: { weight: `${p}.mlp.fc_out.weight`, bias: `${p}.mlp.fc_out.bias`, out: H, in: I },
      },
    });
  }
  return {
    ...archDims('gptj', c.vocab_size, H, { nh, nKv: nh, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_epsilon ?? 1e-5, plusOne: false },
    act: actOf(c.activation_function ?? 'gelu_new', file, 'activation_function'),
    scoresInFloat32: true,
    scoreScale: { op: 'div', value: Math.sqrt(hd) },
    rope: { ...ropeSpec(10000, rd, null, file), interleaved: true },
    embed: 'transformer.wte.weight',
    finalNorm: ln('transformer.ln_f'),
    ...((c.tie_word_embeddings ?? false) ? {} : { lmHead: 'lm_head.weight' }),
    lmHeadBias: 'lm_head.bias',
    layers,
  };
}

/** The gptj row of the family registry. */
export const gptjFamily: FamilyRow = {
  modelType: 'gptj',
  hfClass: 'GPTJForCausalLM',
  keyPrefix: 'transformer',
  moe: 'none',
  build: gptjArch,
  test: {
    configs: {
      // gpt-j-6b's shape of config, small: rotary_dim 8 of head_dim 12, n_inner null (4×)
      gptj: {
        model_type: 'gptj',
        vocab_size: 96,
        n_embd: 48,
        n_layer: 2,
        n_head: 4,
        n_positions: 64,
        rotary_dim: 8,
        n_inner: null,
        activation_function: 'gelu_new',
        layer_norm_epsilon: 1e-5,
        rotary: true,
        tie_word_embeddings: false,
      },
      // another head count, rotary_dim 4 of 8, explicit n_inner
      'gptj-inner': {
        model_type: 'gptj',
        vocab_size: 80,
        n_embd: 64,
        n_layer: 3,
        n_head: 8,
        n_positions: 64,
        rotary_dim: 4,
        n_inner: 80,
        layer_norm_epsilon: 1e-5,
      },
    },
  },
};
