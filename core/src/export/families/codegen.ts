/**
 * CodeGen (transformers `models/codegen/modeling_codegen.py`, read at 00491ce), which QEfficient
 * patches for weight-free export:
 *
 * - `qkv_proj` output reshaped into mp_num = 4 chunks, each split as query, VALUE, key (in that
 *   order), each chunk holding heads / 4 heads.
 * - Partial rotary over the first `rotary_dim` dims of each head with GPT-J's interleaved
 *   `rotate_every_two` (sin/cos repeat-interleaved), θ = 10000.
 * - Scores ÷ √head_dim; attention and MLP run in parallel from one `ln_1` (GPT-J block):
 *   h + attn(ln_1(h)) + mlp(ln_1(h)).
 * - `gelu_new` (activation_function), LayerNorm with bias, `lm_head` with bias, untied by default.
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec } from '../blocks/arch';
import { actOf, gptNamedFields, parseWith, refuse } from './config';
import { ropeSpec } from '../blocks/rope';
import type { FamilyRow } from './row';

const codegenConfig = z.looseObject({
  model_type: z.literal('codegen'),
  ...gptNamedFields,
  rotary_dim: z.number().int().positive().nullable().optional(),
});

/** HF CodeGen's hard-coded model-parallel chunk count in the qkv split. */
const MP_NUM = 4;

/** CodeGen's architecture (CodeGenConfig defaults where a field is absent). */
export function codegenArch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(codegenConfig, raw, file);
  const H = c.n_embd;
  const nh = c.n_head;
  if (H % nh !== 0) refuse(file, 'n_embd', `(${H}) is not divisible by n_head (${nh})`);
  if (nh % MP_NUM !== 0) refuse(file, 'n_head', `(${nh}) is not divisible by CodeGen's mp_num = 4 (the fused qkv split)`);
  const hd = H / nh;
  if (c.rotary_dim == null) refuse(file, 'rotary_dim', 'is not set (HF CodeGen then builds rotary tables of n_embd dims; not supported)');
  if (c.rotary_dim > hd || c.rotary_dim % 2 !== 0)
    refuse(file, 'rotary_dim', `(${c.rotary_dim}) must be even and at most the head dim ${hd}`);
  const I = c.n_inner ?? 4 * H;
  const local = H / MP_NUM;
  const ln = (name: string) => ({ weight: `${name}.weight`, bias: `${name}.bias`, size: H });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.n_layer; i++) {
    const p = `transformer.h.${i}`;
    layers.push({
      norm1: ln(`${p}.ln_1`),
      parallel: true,
      attn: {
        kind: 'fused',
        qkv: { weight: `${p}.attn.qkv_proj.weight`, out: 3 * H, in: H },
        layout: {
          groups: MP_NUM,
          pieces: [
            { role: 'q', size: local },
            { role: 'v', size: local },
            { role: 'k', size: local },
          ],
        },
      },
      o: { weight: `${p}.attn.out_proj.weight`, out: H, in: H },
      mlp: {
        kind: 'plain',
        fc: { weight: `${p}.mlp.fc_in.weight`, bias: `${p}.mlp.fc_in.bias`, out: I, in: H },
        proj: { weight: `${p}.mlp.fc_out.weight`, bias: `${p}.mlp.fc_out.bias`, out: H, in: I },
      },
    });
  }
  return {
    ...archDims('codegen', c.vocab_size, H, { nh, nKv: nh, hd }),
    norm: { kind: 'layer', eps: c.layer_norm_epsilon ?? 1e-5, plusOne: false },
    act: actOf(c.activation_function ?? 'gelu_new', file, 'activation_function'),
    scoresInFloat32: true,
    scoreScale: { op: 'div', value: Math.sqrt(hd) },
    rope: { ...ropeSpec(10000, c.rotary_dim, null, file), interleaved: true },
    embed: 'transformer.wte.weight',
    finalNorm: ln('transformer.ln_f'),
    ...((c.tie_word_embeddings ?? false) ? {} : { lmHead: 'lm_head.weight' }),
    lmHeadBias: 'lm_head.bias',
    layers,
  };
}

/** The codegen row of the family registry. */
export const codegenFamily: FamilyRow = {
  modelType: 'codegen',
  hfClass: 'CodeGenForCausalLM',
  keyPrefix: 'transformer',
  moe: 'none',
  build: codegenArch,
  test: {
    fixture: 'codegen',
    configs: {
      codegen: {
        model_type: 'codegen',
        vocab_size: 96,
        n_embd: 64,
        n_layer: 2,
        n_head: 8,
        rotary_dim: 6,
        n_inner: null,
        activation_function: 'gelu_new',
        layer_norm_epsilon: 1e-5,
        n_positions: 128,
        tie_word_embeddings: false,
      },
    },
  },
};
