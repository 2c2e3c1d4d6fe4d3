/**
 * Gemma-3 text (`model_type: gemma3_text`; transformers `models/gemma3/modeling_gemma3.py` read at
 * f14d0cb, `configuration_gemma3.py` at d98ac17 and the `layer_types` derivation of later versions;
 * QEfficient `QEfficient/transformers/models/gemma3/modeling_gemma3.py` at af8f197 for the graph
 * interface). Gemma-2's layer (four (1 + w) RMSNorms, gelu-tanh gated MLP, √hidden embedding
 * scale, tied head, scores × `query_pre_attn_scalar`^-0.5) plus:
 *
 * - `layer_types`, or when absent HF's derivation `sliding_attention if (i + 1) % sliding_window_pattern
 *   else full_attention` (pattern default 6);
 * - sliding layers use rope θ = `rope_local_base_freq` without scaling (HF `rotary_emb_local`
 *   forces `rope_type: default`); full layers use `rope_theta` with `rope_scaling`. The
 *   transformers-5 form `rope_parameters: {sliding_attention: …, full_attention: …}` is read too;
 * - q_norm / k_norm: (1 + w) RMSNorm per head over head_dim, before rope;
 * - `final_logit_softcapping` after the head when set. `attn_logit_softcapping` is never applied:
 *   Gemma3Attention does not pass it to the attention function, so it is ignored here too;
 * - the sliding window (a token sees itself and the window − 1 before it) is a mask on key
 *   positions, so the KV-cache graph keeps it for any ctx_len.
 */
import { z } from 'zod';
import type { ArchSpec, RopeSpec } from '../blocks/arch';
import { llamaLike, parseWith, refuse, ropeSource } from './config';
import { GEMMA_QUIRKS } from './gemma';
import { llamaLikeArch } from './llama';
import type { FamilyRow } from './row';
import { ropeSpec, type RopeScaling } from '../blocks/rope';

const rope = z.record(z.string(), z.unknown()).nullable().optional();
const gemma3Config = llamaLike.extend({
  model_type: z.literal('gemma3_text'),
  query_pre_attn_scalar: z.number().finite().positive().optional(),
  final_logit_softcapping: z.number().finite().positive().nullable().optional(),
  attn_logit_softcapping: z.number().finite().positive().nullable().optional(),
  layer_types: z.array(z.string()).nullable().optional(),
  sliding_window_pattern: z.number().int().positive().optional(),
  rope_local_base_freq: z.number().finite().positive().optional(),
  rope_parameters: rope,
  use_bidirectional_attention: z.boolean().nullable().optional(),
});

const LAYER_TYPES = ['sliding_attention', 'full_attention'];

/** Gemma-3's text architecture (Gemma3TextConfig defaults where a field is absent). */
export function gemma3Arch(raw: unknown, file: string): ArchSpec {
  const c = parseWith(gemma3Config, raw, file);
  if (c.use_bidirectional_attention) refuse(file, 'use_bidirectional_attention', 'is true (the graph is causal)');
  const L = c.num_hidden_layers;
  const types =
    c.layer_types ?? Array.from({ length: L }, (_, i) => ((i + 1) % (c.sliding_window_pattern ?? 6) ? LAYER_TYPES[0]! : LAYER_TYPES[1]!));
  if (types.length !== L) refuse(file, 'layer_types', `has ${types.length} entries for ${L} layers`);
  const bad = types.find((t) => !LAYER_TYPES.includes(t));
  if (bad !== undefined) refuse(file, 'layer_types', `entry "${bad}" is not one of ${LAYER_TYPES.join(', ')}`);
  const window = c.sliding_window === undefined ? 4096 : c.sliding_window;
  if (window === null && types.includes('sliding_attention'))
    refuse(file, 'sliding_window', 'is null but layer_types has sliding_attention layers');

  const hd = c.head_dim ?? 256;
  const params = c.rope_parameters as Record<string, RopeScaling | undefined> | null | undefined;
  const perType = !!params && ('full_attention' in params || 'sliding_attention' in params);
  if (params && !perType)
    refuse(file, 'rope_parameters', 'has no full_attention / sliding_attention entries (Gemma-3 ropes per layer type)');
  // transformers 5 ropes per layer type (each entry read as a rope_parameters); 4 has rope_theta + rope_scaling and rope_local_base_freq
  const { theta: globalTheta, scaling: globalScaling } = ropeSource(
    perType ? { rope_parameters: params!.full_attention ?? null } : { rope_theta: c.rope_theta, rope_scaling: c.rope_scaling },
    1_000_000,
  );
  const { theta: localTheta, scaling: localScaling } = ropeSource(
    perType ? { rope_parameters: params!.sliding_attention ?? null } : { rope_theta: c.rope_local_base_freq },
    10_000,
  );
  const positions = c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {};
  const globalRope: RopeSpec = ropeSpec(globalTheta, hd, globalScaling, file, positions);
  const localRope: RopeSpec = ropeSpec(localTheta, hd, localScaling, file, positions);
  for (const [r, field] of [
    [globalRope, 'rope_scaling'],
    [localRope, 'rope_parameters.sliding_attention'],
  ] as const)
    if (r.long) refuse(file, field, 'type longrope is only implemented for phi3');

  // the llama-like base with rope fields cleared: the two rope specs above replace its one
  const base = llamaLikeArch('gemma', GEMMA_QUIRKS, { ...c, rope_scaling: null, rope_parameters: null, rope_theta: globalTheta }, file);
  const H = c.hidden_size;
  const finalSoftcap = c.final_logit_softcapping ?? undefined;
  return {
    ...base,
    modelType: 'gemma3_text',
    scoreScale: { op: 'mul', value: Math.pow(c.query_pre_attn_scalar ?? 256, -0.5) },
    rope: globalRope,
    ...(finalSoftcap !== undefined ? { finalSoftcap } : {}),
    layers: base.layers.map((l, i) => {
      const p = `model.layers.${i}`;
      const sliding = types[i] === 'sliding_attention';
      return {
        ...l,
        qNorm: { weight: `${p}.self_attn.q_norm.weight`, size: hd },
        kNorm: { weight: `${p}.self_attn.k_norm.weight`, size: hd },
        postAttnNorm: { weight: `${p}.post_attention_layernorm.weight`, size: H },
        norm2: { weight: `${p}.pre_feedforward_layernorm.weight`, size: H },
        postMlpNorm: { weight: `${p}.post_feedforward_layernorm.weight`, size: H },
        ...(sliding ? { slidingWindow: window!, rope: localRope } : {}),
      };
    }),
  };
}

/** The gemma3_text row of the family registry (`gemma3` is the multimodal wrapper, a VLM). */
export const gemma3Family: FamilyRow = {
  modelType: 'gemma3_text',
  hfClass: 'Gemma3ForCausalLM',
  moe: 'none',
  slidingCache: true,
  build: gemma3Arch,
  test: {
    fixture: 'gemma3',
    configs: {
      // pattern 3 → layers 0, 1 slide, 2 is global, 3 slides; window 3; rope bases 1e6 (linear ×2) / 100
      gemma3_text: {
        architectures: ['Gemma3ForCausalLM'],
        model_type: 'gemma3_text',
        vocab_size: 96,
        hidden_size: 48,
        intermediate_size: 64,
        num_hidden_layers: 4,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 16,
        query_pre_attn_scalar: 24,
        rms_norm_eps: 1e-6,
        rope_theta: 1000000.0,
        rope_scaling: { rope_type: 'linear', factor: 2.0 },
        rope_local_base_freq: 100.0,
        sliding_window: 3,
        sliding_window_pattern: 3,
        final_logit_softcapping: 5.0,
        // HF never applies it (Gemma3Attention does not pass it on): a cap this low would show if it were
        attn_logit_softcapping: 1.0,
        hidden_activation: 'gelu_pytorch_tanh',
        max_position_embeddings: 512,
      },
    },
  },
};
