/**
 * Grok-1 → {@link ArchSpec}, ported from QEfficient's
 * `QEfficient/transformers/models/grok_1/modeling_grok1.py` (quic/efficient-transformers
 * 05274da), which rewrites hpcai-tech/grok-1's remote code (xai-org/grok-1 `model.py` is the
 * original definition):
 *
 * - embeddings × `embedding_multiplier_scale`; logits × `output_multiplier_scale`;
 * - four RMSNorms per layer (`pre_attn_norm`, `post_attn_norm`, `pre_moe_norm`,
 *   `post_moe_norm`) whose parameter is `scale`, used as is and multiplied in float32;
 * - scores × `attn_output_multiplier` in float32 (no 1/√d), then the soft cap
 *   `max_attn_value · tanh(x / max_attn_value)`; rotate-half rope with base 10000;
 * - softmax over all experts in float32, then top-k with `num_experts_per_tok` (QEfficient's
 *   block hard-codes two experts; the remote code and this port take the config's k), no
 *   renormalization; experts `linear_1(gelu(linear(h)) · linear_v(h))` with exact GELU,
 *   stacked by prepare into `moe_block.moe_weights.{gate,up,down}`;
 * - the head is tied to the embeddings (`lm_head.weight` is usually absent from the checkpoint).
 *
 * Published configs may lack `model_type`; `architectures: ["Grok1ModelForCausalLM"]` names it
 * (config.ts).
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec } from '../blocks/arch';
import type { ArchOptions, FamilyRow } from './row';
import { checkExpertParallel, optionalDims, parseWith, refuse } from './config';
import { canonicalMoeKeys } from '../blocks/moe';
import { ropeSpec } from '../blocks/rope';

const int = z.number().int().positive();
const num = z.number().finite();

/** hpcai-tech `configuration_grok1.py` Grok1Config (its defaults). */
const grok1Config = z.looseObject({
  ...optionalDims,
  attn_output_multiplier: num.positive().optional(),
  max_attn_value: num.positive().optional(),
  embedding_multiplier_scale: num.optional(),
  output_multiplier_scale: num.optional(),
  rms_norm_eps: num.positive().optional(),
  rope_theta: num.positive().optional(),
  rope_scaling: z.record(z.string(), z.unknown()).nullable().optional(),
  tie_word_embeddings: z.boolean().optional(),
  num_experts_per_tok: int.optional(),
  num_experts: int.optional(),
  num_local_experts: int.optional(),
  hidden_act: z.string().optional(),
});

/** Grok-1 → {@link ArchSpec}. */
export function grok1Arch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const c = parseWith(grok1Config, raw, file);
  const H = c.hidden_size ?? 4096;
  const nh = c.num_attention_heads ?? 32;
  const nKv = c.num_key_value_heads ?? 32;
  const I = c.intermediate_size ?? 32768;
  const E = c.num_experts ?? c.num_local_experts ?? 8;
  const topK = c.num_experts_per_tok ?? 2;
  if (H % nh !== 0) refuse(file, 'hidden_size', `(${H}) is not divisible by num_attention_heads (${nh})`);
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  if (topK > E) refuse(file, 'num_experts_per_tok', `(${topK}) exceeds the expert count (${E})`);
  if (c.rope_scaling) refuse(file, 'rope_scaling', 'is set, but Grok-1 uses plain rotary embeddings');
  // the remote code's MoeMLP activation is nn.GELU() whatever hidden_act says
  if (c.hidden_act !== undefined && c.hidden_act !== 'gelu') refuse(file, 'hidden_act', `"${c.hidden_act}" is not Grok-1's exact GELU`);
  if (opts.expertParallel) checkExpertParallel(file, E, opts.expertParallel.stages);
  const tied = c.tie_word_embeddings ?? true;
  if (!tied && opts.keys && !opts.keys.has('lm_head.weight'))
    refuse(file, 'tie_word_embeddings', 'is false but the checkpoint has no lm_head.weight');
  const hd = H / nh;
  const layers: LayerSpec[] = [];
  for (let i = 0; i < (c.num_hidden_layers ?? 32); i++) {
    const p = `model.layers.${i}`;
    const norm = (name: string) => ({ weight: `${p}.${name}.scale`, size: H });
    const proj = (name: string, out: number, inp: number) => ({ weight: `${p}.attn.${name}.weight`, out, in: inp });
    const m = `${p}.moe_block`;
    layers.push({
      norm1: norm('pre_attn_norm'),
      postAttnNorm: norm('post_attn_norm'),
      norm2: norm('pre_moe_norm'),
      postMlpNorm: norm('post_moe_norm'),
      attn: { kind: 'separate', q: proj('q_proj', nh * hd, H), k: proj('k_proj', nKv * hd, H), v: proj('v_proj', nKv * hd, H) },
      o: proj('o_proj', H, nh * hd),
      mlp: {
        kind: 'moe',
        router: `${m}.gate.weight`,
        routing: 'softmax',
        weights: {
          ...canonicalMoeKeys(m),
          experts: E,
          hidden: H,
          intermediate: I,
          ...(opts.expertParallel ? { stages: opts.expertParallel.stages } : {}),
        },
        topK,
        normTopK: false,
      },
    });
  }
  return {
    ...archDims('grok-1', c.vocab_size ?? 32000, H, { nh, nKv, hd }),
    norm: { kind: 'rms', eps: c.rms_norm_eps ?? 1e-5, plusOne: false, weightInFloat32: true },
    act: 'gelu',
    scoreScale: { op: 'mul', value: c.attn_output_multiplier ?? 1 },
    scoresInFloat32: true,
    attnSoftcap: c.max_attn_value ?? 1,
    rope: ropeSpec(c.rope_theta ?? 10000, hd, null, file),
    embedScale: c.embedding_multiplier_scale ?? 1,
    embed: 'model.embed_tokens.weight',
    finalNorm: { weight: 'model.norm.scale', size: H },
    ...(tied ? {} : { lmHead: 'lm_head.weight' }),
    logitsScale: c.output_multiplier_scale ?? 1,
    layers,
  };
}

/** The grok-1 row of the family registry (hpcai-tech's remote code; configs may name only the architecture). */
export const grok1Family: FamilyRow = {
  modelType: 'grok-1',
  architectures: ['Grok1ModelForCausalLM'],
  hfClass: 'Grok1ModelForCausalLM',
  moe: 'softmax',
  build: grok1Arch,
  test: {
    fixture: 'grok1',
    configs: {
      // no model_type: the architecture names it; top-3 of 6 experts (QEfficient's block would take 2)
      'grok1-top3': {
        architectures: ['Grok1ModelForCausalLM'],
        vocab_size: 96,
        hidden_size: 32,
        intermediate_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        attn_output_multiplier: 0.3,
        embedding_multiplier_scale: 3.0,
        output_multiplier_scale: 0.7,
        max_attn_value: 4.0,
        rms_norm_eps: 1e-5,
        tie_word_embeddings: true,
        num_experts_per_tok: 3,
        num_experts: 6,
      },
    },
  },
};
