/**
 * config.json validation per `model_type` (zod), field defaults as in the HF config classes.
 * Unknown model types and fields whose values change the math in ways the builder does not
 * implement are refused with one line naming the file and the field.
 */
import { z } from 'zod';
import { FormatError, UsageError } from '../../errors';
import { parseOrThrow } from '../../zod-issue';
import type { RopeSpec } from '../blocks/arch';
import { ropeSpec, type RopeScaling } from '../blocks/rope';

const int = z.number().int().positive();
const num = z.number().finite();
const ropeScaling = z.record(z.string(), z.unknown()).nullable().optional();

/** Fields shared by the Llama-like families (Llama, Mistral, Qwen2/3, Phi-3, Gemma, MoE). */
export const llamaLike = z.looseObject({
  model_type: z.string(),
  vocab_size: int,
  hidden_size: int,
  intermediate_size: int,
  num_hidden_layers: int,
  num_attention_heads: int,
  num_key_value_heads: int.nullable().optional(),
  head_dim: int.nullable().optional(),
  rms_norm_eps: num.positive().optional(),
  rope_theta: num.positive().optional(),
  rope_scaling: ropeScaling,
  rope_parameters: ropeScaling,
  partial_rotary_factor: num.positive().max(1).optional(),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().optional(),
  hidden_act: z.string().optional(),
  hidden_activation: z.string().nullable().optional(),
  tie_word_embeddings: z.boolean().optional(),
  max_position_embeddings: int.optional(),
  original_max_position_embeddings: int.optional(),
  sliding_window: int.nullable().optional(),
  use_sliding_window: z.boolean().optional(),
  // MoE
  num_local_experts: int.optional(),
  num_experts: int.optional(),
  num_experts_per_tok: int.optional(),
  moe_intermediate_size: int.optional(),
  norm_topk_prob: z.boolean().optional(),
  decoder_sparse_step: int.optional(),
  mlp_only_layers: z.array(z.number().int().nonnegative()).optional(),
});
/** A parsed Llama-like config. */
export type LlamaLikeConfig = z.infer<typeof llamaLike>;

/** The fields GPT-2's config names its own way, shared by GPT-2 and CodeGen (GPT-J lineage). */
export const gptNamedFields = {
  vocab_size: int,
  n_embd: int,
  n_layer: int,
  n_head: int,
  n_inner: int.nullable().optional(),
  activation_function: z.string().optional(),
  layer_norm_epsilon: num.positive().optional(),
  tie_word_embeddings: z.boolean().optional(),
};

/** The Llama-named model dims, each optional (the config class supplies the defaults: Phi, StarCoder2, Grok-1). */
export const optionalDims = {
  vocab_size: int.optional(),
  hidden_size: int.optional(),
  intermediate_size: int.optional(),
  num_hidden_layers: int.optional(),
  num_attention_heads: int.optional(),
  num_key_value_heads: int.nullable().optional(),
};

/**
 * The Llama-named decoder fields, each optional: for families whose HF config class supplies
 * the defaults (Phi, StarCoder2), which their family file fills in.
 */
export const optionalDecoderFields = {
  ...optionalDims,
  head_dim: int.nullable().optional(),
  hidden_act: z.string().optional(),
  rope_theta: num.positive().optional(),
  rope_scaling: ropeScaling,
  rope_parameters: ropeScaling,
  max_position_embeddings: int.optional(),
  tie_word_embeddings: z.boolean().optional(),
};

/** GPT-2's fields (GPT2Config defaults). */
export const gpt2Config = z.looseObject({
  model_type: z.literal('gpt2'),
  ...gptNamedFields,
  n_positions: int,
  scale_attn_weights: z.boolean().optional(),
  scale_attn_by_inverse_layer_idx: z.boolean().optional(),
  add_cross_attention: z.boolean().optional(),
});
/** A parsed GPT-2 config. */
export type Gpt2Config = z.infer<typeof gpt2Config>;

/** Parses with `schema`, turning the first zod issue into a one-line FormatError naming the file. */
export function parseWith<T>(schema: z.ZodType<T>, raw: unknown, file: string): T {
  return parseOrThrow(schema, raw, file);
}

/** HF activation names → the builder's. */
export function actOf(name: string, file: string, field: string): 'silu' | 'gelu' | 'gelu_tanh' | 'relu' {
  switch (name) {
    case 'silu':
    case 'swish':
      return 'silu';
    case 'gelu':
      return 'gelu';
    case 'gelu_new':
    case 'gelu_pytorch_tanh':
      return 'gelu_tanh';
    case 'relu':
      return 'relu';
    default:
      return fail();
  }
  function fail(): never {
    throw new FormatError(file, `"${field}" = "${name}" is not a supported activation (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)`);
  }
}

/** Throws a one-line refusal for a field whose value the builder does not implement. */
export function refuse(file: string, field: string, why: string): never {
  throw new FormatError(file, `"${field}" ${why}; refusing to build a graph with different math`);
}

/**
 * head_dim for a family that always takes hidden_size / num_attention_heads (Phi, StableLM):
 * both divisions checked, and a config `head_dim` other than that refused (`why` ends its message).
 */
export function headDimOf(file: string, H: number, nh: number, nKv: number, headDim: number | null | undefined, why = ''): number {
  if (H % nh !== 0) refuse(file, 'hidden_size', `(${H}) is not divisible by num_attention_heads (${nh})`);
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  const hd = H / nh;
  if (headDim != null && headDim !== hd)
    refuse(file, 'head_dim', `(${headDim}) differs from hidden_size / num_attention_heads (${hd})${why}`);
  return hd;
}

/** The rope fields of a config.json, as any family's schema reads them. */
export interface RopeFields {
  rope_theta?: number | undefined;
  rope_scaling?: Record<string, unknown> | null | undefined;
  rope_parameters?: Record<string, unknown> | null | undefined;
}

/**
 * The one reading of `rope_theta`, `rope_parameters` and `rope_scaling` (every family's rope goes
 * through it). Fields: as transformers v5's `PreTrainedConfig.convert_rope_params_to_dict`
 * (`configuration_utils.py` @ bdf52342d8e725ea54973b3e3593be4717e9c1b0) reads them, which reads
 * a v4 config as v4 did: the scaling dict is v4's `rope_scaling` when set, else v5's
 * `rope_parameters`; theta is that dict's `rope_theta`, else the top-level `rope_theta` (v4).
 * Defaults: transformers v4's. `defaultTheta` is the family's v4 config class default (the
 * release the family files cite); where v5 changed one, the v4 value counts (CohereConfig:
 * 10000 in v4, `default_theta` 500000 in v5). Published config.json files state theta, so the
 * default only decides hand-written configs.
 */
export function ropeSource(c: RopeFields, defaultTheta: number): { theta: number; scaling: RopeScaling | null } {
  // Python truthiness: an empty dict counts as absent
  const set = (d: Record<string, unknown> | null | undefined) => (d && Object.keys(d).length > 0 ? (d as RopeScaling) : null);
  const scaling = set(c.rope_scaling) ?? set(c.rope_parameters);
  const theta = typeof scaling?.rope_theta === 'number' ? scaling.rope_theta : (c.rope_theta ?? defaultTheta);
  return { theta, scaling };
}

/**
 * Partial rotary as Phi and StableLM have it: rotate_half on the first
 * int(head_dim · `factor`) dims, which must be even and > 0; longrope refused (phi3 only).
 */
export function partialRope(
  file: string,
  hd: number,
  factor: number,
  theta: number,
  scaling: RopeScaling | null,
  maxPositions: number | undefined,
): RopeSpec {
  const rotaryDim = Math.floor(hd * factor);
  if (rotaryDim % 2 !== 0 || rotaryDim === 0)
    refuse(file, 'partial_rotary_factor', `gives a rotary dim of ${rotaryDim} (must be even and > 0)`);
  const rope = ropeSpec(theta, rotaryDim, scaling, file, { ...(maxPositions !== undefined ? { max: maxPositions } : {}) });
  if (rope.long) refuse(file, 'rope_scaling', 'type longrope is only implemented for phi3');
  return rope;
}

/**
 * `--moe-flavour expert_parallel --pipeline-stages P` needs experts that split into P stages
 * (QEfficient `modeling_auto.py`: N = E / P, E % P == 0).
 */
export function checkExpertParallel(file: string, experts: number | undefined, stages: number): void {
  if (!experts) throw new UsageError(`${file}: --moe-flavour expert_parallel, but this model has no MoE experts`);
  if (!Number.isInteger(stages) || stages < 1) throw new UsageError(`--pipeline-stages must be a positive integer (got ${stages})`);
  if (experts % stages !== 0)
    throw new UsageError(`${file}: ${experts} experts (E) do not split into ${stages} pipeline stages (P): E % P must be 0`);
}
