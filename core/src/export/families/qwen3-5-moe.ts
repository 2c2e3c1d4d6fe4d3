/**
 * Qwen3.5-MoE (huggingface/transformers `src/transformers/models/qwen3_5_moe/`
 * `modeling_qwen3_5_moe.py` and `configuration_qwen3_5_moe.py`): a hybrid of Gated DeltaNet
 * linear-attention layers (`gated-deltanet.ts`) and gated full-attention layers, every layer
 * with a sparse MoE plus a sigmoid-gated shared expert.
 *
 * - `layer_types` (default: every `full_attention_interval`-th layer full, the rest linear).
 * - Full attention: q_proj gives [query | gate] per head, q/k RMSNorm per head, partial rotary
 *   (`partial_rotary_factor`, default 0.25), output × sigmoid(gate) before o_proj. The rotary is
 *   HF's interleaved MRoPE, but a text-only sequence has equal t/h/w positions, for which every
 *   `mrope_section` gives the plain 1-D rotary (QEfficient's docstring says the same), so only the
 *   rope type and theta matter here.
 * - Every RMSNorm but the DeltaNet's gated one is (1 + w) in float32 (`Qwen3_5MoeRMSNorm`).
 * - MoE: softmax router, top-k always renormalised (`Qwen3_5MoeTopKRouter`), fused experts
 *   `mlp.experts.gate_up_proj [E, 2I, H]` / `down_proj [E, H, I]` that prepare splits into the
 *   canonical `mlp.moe_weights.{gate,up,down}` (prepare/transforms/fused-split.ts, told apart
 *   from Qwen3-VL-MoE's transposed layout by the config's sizes), and
 *   sigmoid(shared_expert_gate(x)) · shared_expert(x).
 *
 * Two config layouts: `Qwen3_5MoeForCausalLM` (`model_type: qwen3_5_moe_text`, keys `model.…`)
 * and the published multimodal `Qwen3_5MoeForConditionalGeneration` (`model_type: qwen3_5_moe`,
 * the text fields under `text_config`, keys `model.language_model.…`), whose text model is
 * exported on its own: `model.visual.*` and the `mtp.*` tensors are never referenced.
 */
import { z } from 'zod';
import { archDims, lin, type ArchSpec, type LayerSpec } from '../blocks/arch';
import { actOf, checkExpertParallel, llamaLike, parseWith, refuse, ropeSource } from './config';
import type { ArchOptions, FamilyRow, TestConfig } from './row';
import { convDim, type GatedDeltaNetSpec } from '../blocks/arch';
import { deltaNetStateDecls } from '../blocks/gated-deltanet';
import { canonicalMoeKeys } from '../blocks/moe';
import { ropeSpec, type RopeScaling } from '../blocks/rope';

const int = z.number().int().positive();

/** Qwen3_5MoeTextConfig's fields (defaults as in `configuration_qwen3_5_moe.py`). */
const textConfig = llamaLike.extend({
  intermediate_size: int.optional(),
  layer_types: z.array(z.string()).optional(),
  full_attention_interval: int.optional(),
  linear_conv_kernel_dim: int.optional(),
  linear_key_head_dim: int.optional(),
  linear_value_head_dim: int.optional(),
  linear_num_key_heads: int.optional(),
  linear_num_value_heads: int.optional(),
  shared_expert_intermediate_size: int.optional(),
});

/** The text config and key prefix of either layout; refusals of a nested field name `text_config.<field>`. */
function textOf(raw: unknown, file: string): { text: Record<string, unknown>; prefix: string; field: (f: string) => string } {
  const top = raw as Record<string, unknown>;
  if (top.model_type !== 'qwen3_5_moe') return { text: top, prefix: 'model.', field: (f) => f };
  const t = top.text_config;
  if (typeof t !== 'object' || t === null || Array.isArray(t))
    return refuse(file, 'text_config', 'must be an object (the text model of qwen3_5_moe)');
  const text = t as Record<string, unknown>;
  return {
    // Qwen3_5MoeConfig keeps tie_word_embeddings at the top level
    text: { ...text, tie_word_embeddings: text.tie_word_embeddings ?? top.tie_word_embeddings ?? false },
    prefix: 'model.language_model.',
    field: (f) => `text_config.${f}`,
  };
}

/** Qwen3.5-MoE → {@link ArchSpec}. */
export function qwen35MoeArch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const { text, prefix, field } = textOf(raw, file);
  const c = parseWith(textConfig, { ...text, model_type: String(text.model_type ?? 'qwen3_5_moe_text') }, file);
  const H = c.hidden_size;
  const L = c.num_hidden_layers;
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? 2;
  if (nh % nKv !== 0) refuse(file, field('num_key_value_heads'), `(${nKv}) does not divide num_attention_heads (${nh})`);
  const hd = c.head_dim ?? 256;
  const eps = c.rms_norm_eps ?? 1e-6;

  const interval = c.full_attention_interval ?? 4;
  const types = c.layer_types ?? Array.from({ length: L }, (_, i) => ((i + 1) % interval ? 'linear_attention' : 'full_attention'));
  if (types.length !== L) refuse(file, field('layer_types'), `has ${types.length} entries for ${L} layers`);
  const bad = types.find((t) => t !== 'linear_attention' && t !== 'full_attention');
  if (bad !== undefined) refuse(file, field('layer_types'), `entry "${bad}" is not implemented (linear_attention, full_attention)`);
  if (!types.includes('full_attention'))
    refuse(file, field('layer_types'), 'has no full_attention layer (the graph builds its position masks there)');

  const nk = c.linear_num_key_heads ?? 16;
  const nv = c.linear_num_value_heads ?? 32;
  if (nv % nk !== 0) refuse(file, field('linear_num_value_heads'), `(${nv}) is not a multiple of linear_num_key_heads (${nk})`);
  const dk = c.linear_key_head_dim ?? 128;
  const dv = c.linear_value_head_dim ?? 128;
  const kernel = c.linear_conv_kernel_dim ?? 4;

  const params = (c.rope_parameters ?? null) as RopeScaling | null;
  const partial =
    (typeof params?.partial_rotary_factor === 'number' ? params.partial_rotary_factor : undefined) ?? c.partial_rotary_factor ?? 0.25;
  const rotaryDim = Math.floor(hd * partial);
  if (rotaryDim % 2 !== 0 || rotaryDim === 0)
    refuse(file, field('partial_rotary_factor'), `gives rotary dim ${rotaryDim} (must be even and positive)`);
  const { theta, scaling } = ropeSource(c, 10000);
  const rope = ropeSpec(theta, rotaryDim, scaling, file, c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {});

  const E = c.num_experts ?? 256;
  const topK = c.num_experts_per_tok ?? 8;
  if (topK > E) refuse(file, field('num_experts_per_tok'), `(${topK}) exceeds num_experts (${E})`);
  if (opts.expertParallel) checkExpertParallel(file, E, opts.expertParallel.stages);
  const mi = c.moe_intermediate_size ?? 512;
  const si = c.shared_expert_intermediate_size ?? 512;
  const bias = !!c.attention_bias;

  const layers: LayerSpec[] = types.map((type, i) => {
    const p = `${prefix}layers.${i}`;
    const m = `${p}.mlp`;
    const base = {
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      mlp: {
        kind: 'moe' as const,
        router: `${m}.gate.weight`,
        weights: {
          ...canonicalMoeKeys(m),
          experts: E,
          hidden: H,
          intermediate: mi,
          ...(opts.expertParallel ? { stages: opts.expertParallel.stages } : {}),
        },
        topK,
        normTopK: true,
        shared: {
          gate: lin(`${m}.shared_expert.gate_proj.weight`, si, H),
          up: lin(`${m}.shared_expert.up_proj.weight`, si, H),
          down: lin(`${m}.shared_expert.down_proj.weight`, H, si),
        },
        sharedGate: `${m}.shared_expert_gate.weight`,
      },
    };
    if (type === 'linear_attention') {
      const la = `${p}.linear_attn`;
      const attn: GatedDeltaNetSpec = {
        kind: 'gated-deltanet',
        qkv: lin(`${la}.in_proj_qkv.weight`, 2 * nk * dk + nv * dv, H),
        z: lin(`${la}.in_proj_z.weight`, nv * dv, H),
        b: lin(`${la}.in_proj_b.weight`, nv, H),
        a: lin(`${la}.in_proj_a.weight`, nv, H),
        conv: `${la}.conv1d.weight`,
        aLog: `${la}.A_log`,
        dtBias: `${la}.dt_bias`,
        norm: `${la}.norm.weight`,
        nk,
        nv,
        dk,
        dv,
        kernel,
        eps,
      };
      if (convDim(attn) % nk !== 0) refuse(file, field('linear_num_key_heads'), `does not divide the conv channels (${convDim(attn)})`);
      return { ...base, attn, o: lin(`${la}.out_proj.weight`, H, nv * dv), states: deltaNetStateDecls(attn) };
    }
    const sa = `${p}.self_attn`;
    return {
      ...base,
      attn: {
        kind: 'separate',
        q: lin(`${sa}.q_proj.weight`, nh * hd * 2, H, bias),
        k: lin(`${sa}.k_proj.weight`, nKv * hd, H, bias),
        v: lin(`${sa}.v_proj.weight`, nKv * hd, H, bias),
      },
      attnOutputGate: true,
      o: lin(`${sa}.o_proj.weight`, H, nh * hd, bias),
      qNorm: { weight: `${sa}.q_norm.weight`, size: hd },
      kNorm: { weight: `${sa}.k_norm.weight`, size: hd },
    };
  });

  return {
    ...archDims(String((raw as Record<string, unknown>).model_type), c.vocab_size, H, { nh, nKv, hd }),
    norm: { kind: 'rms', eps, plusOne: true },
    act: actOf(c.hidden_act ?? 'silu', file, field('hidden_act')),
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    embed: `${prefix}embed_tokens.weight`,
    finalNorm: { weight: `${prefix}norm.weight`, size: H },
    ...(c.tie_word_embeddings ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/**
 * The published multimodal layout (`Qwen3_5MoeForConditionalGeneration`) of a text config: the
 * text fields under `text_config`, tie_word_embeddings at the top (tests build their checkpoints
 * from it too).
 */
export function qwen35MultimodalConfig(text: TestConfig): TestConfig {
  const { architectures: _a, tie_word_embeddings: tied, ...rest } = text;
  return {
    architectures: ['Qwen3_5MoeForConditionalGeneration'],
    model_type: 'qwen3_5_moe',
    tie_word_embeddings: tied ?? false,
    text_config: { ...rest, model_type: 'qwen3_5_moe_text' },
    vision_config: { depth: 2, hidden_size: 16, model_type: 'qwen3_5_moe' },
  };
}

/** Another configuration than the fixture's: ends on a linear layer; nv/nk = 3, dk 8 ≠ dv 12, conv kernel 3, 6 experts top-3, GQA 3. */
const OTHER: TestConfig = {
  architectures: ['Qwen3_5MoeForCausalLM'],
  model_type: 'qwen3_5_moe_text',
  vocab_size: 96,
  hidden_size: 48,
  num_hidden_layers: 5,
  layer_types: ['linear_attention', 'full_attention', 'linear_attention', 'linear_attention', 'linear_attention'],
  num_attention_heads: 6,
  num_key_value_heads: 2,
  head_dim: 16,
  linear_num_key_heads: 1,
  linear_num_value_heads: 3,
  linear_key_head_dim: 8,
  linear_value_head_dim: 12,
  linear_conv_kernel_dim: 3,
  num_experts: 6,
  num_experts_per_tok: 3,
  moe_intermediate_size: 20,
  shared_expert_intermediate_size: 28,
  rms_norm_eps: 1e-6,
  hidden_act: 'silu',
  max_position_embeddings: 512,
  rope_parameters: {
    rope_type: 'default',
    rope_theta: 10000,
    partial_rotary_factor: 0.5,
    mrope_section: [2, 1, 1],
    mrope_interleaved: true,
  },
  tie_word_embeddings: false,
};

/** The qwen3_5_moe row of the family registry (the multimodal `qwen3_5_moe` type exports its text model). */
export const qwen35MoeFamily: FamilyRow = {
  modelType: 'qwen3_5_moe_text',
  aliases: ['qwen3_5_moe'],
  hfClass: 'Qwen3_5MoeForCausalLM',
  moe: 'softmax',
  build: qwen35MoeArch,
  test: { fixture: 'qwen3_5_moe', configs: { 'qwen3_5_moe-other': OTHER, 'qwen3_5_moe-multimodal': qwen35MultimodalConfig(OTHER) } },
};
