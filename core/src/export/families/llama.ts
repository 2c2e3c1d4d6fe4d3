/**
 * The Llama-like families' one builder (transformers `models/llama/modeling_llama.py` and the
 * families that copy it): what differs between Llama, Mistral, Qwen2/3, Phi-3, Gemma, Mixtral
 * and Qwen3-MoE is data — a {@link LlamaQuirks} in each family's row (`families/<name>.ts`) —
 * never a `type === '…'` branch here. Gemma-2, Granite and OLMo-2 start from this builder too.
 */
import { archDims, lin, type ArchSpec, type LayerSpec, type MlpSpec } from '../blocks/arch';
import { canonicalMoeKeys } from '../blocks/moe';
import { actOf, checkExpertParallel, llamaLike, parseWith, refuse, type LlamaLikeConfig, ropeSource } from './config';
import type { ArchOptions, FamilyRow } from './row';
import { ropeSpec } from '../blocks/rope';

/** A Llama-like family's differences from Llama, as data. */
export interface LlamaQuirks {
  /** head_dim when the config gives none (default hidden / heads): Gemma 256, Qwen3 128. */
  defaultHeadDim?: number;
  /** rms_norm_eps when the config gives none. */
  defaultEps: number;
  /** Phi-3: `partial_rotary_factor` and LongRoPE (`rope_scaling.type` longrope / su) are implemented. */
  phi3Rope?: boolean;
  /**
   * `sliding_window` handling: `read` (Mistral, Mixtral, Phi-3: keys beyond the window are
   * masked), `refuse-flag` (Qwen2/3: `use_sliding_window: true` is refused), `ignore` (Llama, Gemma).
   */
  slidingWindow: 'read' | 'refuse-flag' | 'ignore';
  /** Gemma: `hidden_activation` (default gelu_pytorch_tanh), (1 + w) RMSNorm, embeddings × √hidden, tied by default. */
  gemma?: boolean;
  /** Qwen2: q/k/v always have a bias, o never (attention_bias is not read). */
  qkvBiasOnly?: boolean;
  /** Llama: `mlp_bias` is read; elsewhere a true `mlp_bias` is refused. */
  mlpBias?: boolean;
  /** Phi-3: fused `qkv_proj` and `gate_up_proj`, and no projection bias (a true `attention_bias` is refused). */
  phi3Fused?: boolean;
  /** Qwen3: per-head q_norm / k_norm before RoPE. */
  qkNorm?: boolean;
  /** Sparse MoE layers over prepared `moe_weights`. */
  moe?: {
    /** Config field of the expert count (`num_local_experts` Mixtral, `num_experts` Qwen3-MoE). */
    expertsField: 'num_local_experts' | 'num_experts';
    /** Module holding router and experts: `block_sparse_moe` (Mixtral) or `mlp` (Qwen3-MoE). */
    block: string;
    /** Expert width: `intermediate_size` (Mixtral) or the required `moe_intermediate_size` (Qwen3-MoE). */
    intermediate: 'intermediate_size' | 'moe_intermediate_size';
    /** Which layers are sparse: all (Mixtral) or per `mlp_only_layers` / `decoder_sparse_step` (Qwen3-MoE). */
    layers: 'all' | 'step';
    /** Renormalize the top-k probabilities: always (Mixtral) or per `norm_topk_prob` (Qwen3-MoE). */
    normTopK: 'always' | 'config';
  };
}

/** A registry row for a Llama-like family built by {@link llamaLikeArch} with `quirks`. */
export function llamaLikeRow(row: Omit<FamilyRow, 'build'>, quirks: LlamaQuirks): FamilyRow & { quirks: LlamaQuirks } {
  return {
    ...row,
    quirks,
    build: (raw, file, opts) => llamaLikeArch(row.modelType, quirks, parseWith(llamaLike, raw, file), file, opts),
  };
}

/**
 * The Llama-like architecture of `c`, named `type`, with the family's `q` quirks. Also the base
 * the Gemma-2, Granite and OLMo-2 family files start from.
 */
export function llamaLikeArch(type: string, q: LlamaQuirks, c: LlamaLikeConfig, file: string, opts: ArchOptions = {}): ArchSpec {
  const H = c.hidden_size;
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? nh;
  if (H % nh !== 0 && c.head_dim == null)
    refuse(file, 'hidden_size', `(${H}) is not divisible by num_attention_heads (${nh}) and head_dim is not given`);
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  const hd = c.head_dim ?? q.defaultHeadDim ?? H / nh;
  const eps = c.rms_norm_eps ?? q.defaultEps;

  const { theta, scaling } = ropeSource(c, 10000);
  const partial = c.partial_rotary_factor ?? 1;
  if (partial !== 1 && !q.phi3Rope) refuse(file, 'partial_rotary_factor', `(${partial}) is not used by ${type}`);
  const rotaryDim = Math.floor(hd * partial);
  if (rotaryDim % 2 !== 0) refuse(file, 'partial_rotary_factor', `gives an odd rotary dim ${rotaryDim}`);
  const longrope = scaling && ['longrope', 'su'].includes(String(scaling.rope_type ?? scaling.type));
  if (longrope && !q.phi3Rope)
    refuse(file, 'rope_scaling', `type "${String(scaling!.rope_type ?? scaling!.type)}" is only implemented for phi3`);
  const rope = ropeSpec(theta, rotaryDim, scaling, file, {
    ...(c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {}),
    ...(typeof c.original_max_position_embeddings === 'number' ? { originalMax: c.original_max_position_embeddings } : {}),
  });

  const slidingWindow = q.slidingWindow === 'read' ? (c.sliding_window ?? undefined) : undefined;
  if (q.slidingWindow === 'refuse-flag' && c.use_sliding_window) {
    refuse(file, 'use_sliding_window', 'is true (per-layer sliding windows are not implemented)');
  }

  const actName = q.gemma ? (c.hidden_activation ?? 'gelu_pytorch_tanh') : (c.hidden_act ?? 'silu');
  const act = actOf(actName, file, q.gemma && c.hidden_activation ? 'hidden_activation' : 'hidden_act');
  const tied = c.tie_word_embeddings ?? !!q.gemma;
  const I = c.intermediate_size;
  const attnBias = q.qkvBiasOnly ? false : !!c.attention_bias;
  const qkvBias = q.qkvBiasOnly ? true : attnBias;
  const mlpBias = q.mlpBias ? !!c.mlp_bias : false;
  if (!q.mlpBias && c.mlp_bias) refuse(file, 'mlp_bias', `is true but ${type} has no MLP bias`);
  if (q.phi3Fused && c.attention_bias) refuse(file, 'attention_bias', 'is true but Phi-3 projections have no bias');

  const moe = q.moe;
  const moeExperts = moe ? c[moe.expertsField] : undefined;
  if (moe && (!moeExperts || !c.num_experts_per_tok)) refuse(file, moe.expertsField, 'and num_experts_per_tok are required');
  if (moeExperts && c.num_experts_per_tok! > moeExperts)
    refuse(file, 'num_experts_per_tok', `(${c.num_experts_per_tok}) exceeds the expert count (${moeExperts})`);
  if (opts.expertParallel) checkExpertParallel(file, moeExperts, opts.expertParallel.stages);
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    const attn: LayerSpec['attn'] = q.phi3Fused
      ? { kind: 'fused', qkv: lin(`${p}.self_attn.qkv_proj.weight`, (nh + 2 * nKv) * hd, H) }
      : {
          kind: 'separate',
          q: lin(`${p}.self_attn.q_proj.weight`, nh * hd, H, qkvBias),
          k: lin(`${p}.self_attn.k_proj.weight`, nKv * hd, H, qkvBias),
          v: lin(`${p}.self_attn.v_proj.weight`, nKv * hd, H, qkvBias),
        };
    let mlp: MlpSpec;
    const sparse =
      !!moe && (moe.layers === 'all' || (!(c.mlp_only_layers ?? []).includes(i) && (i + 1) % (c.decoder_sparse_step ?? 1) === 0));
    if (sparse) {
      const m = `${p}.${moe.block}`;
      const inter =
        moe.intermediate === 'intermediate_size'
          ? I
          : (c.moe_intermediate_size ?? refuse(file, 'moe_intermediate_size', `is required for ${type}`));
      mlp = {
        kind: 'moe',
        router: `${m}.gate.weight`,
        weights: {
          ...canonicalMoeKeys(m),
          experts: moeExperts!,
          hidden: H,
          intermediate: inter,
          ...(opts.expertParallel ? { stages: opts.expertParallel.stages } : {}),
        },
        topK: c.num_experts_per_tok!,
        normTopK: moe.normTopK === 'always' ? true : !!c.norm_topk_prob,
      };
    } else if (q.phi3Fused) {
      mlp = { kind: 'gated-fused', gateUp: lin(`${p}.mlp.gate_up_proj.weight`, 2 * I, H), down: lin(`${p}.mlp.down_proj.weight`, H, I) };
    } else {
      mlp = {
        kind: 'gated',
        gate: lin(`${p}.mlp.gate_proj.weight`, I, H, mlpBias),
        up: lin(`${p}.mlp.up_proj.weight`, I, H, mlpBias),
        down: lin(`${p}.mlp.down_proj.weight`, H, I, mlpBias),
      };
    }
    layers.push({
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn,
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd, attnBias),
      ...(q.qkNorm
        ? { qNorm: { weight: `${p}.self_attn.q_norm.weight`, size: hd }, kNorm: { weight: `${p}.self_attn.k_norm.weight`, size: hd } }
        : {}),
      mlp,
    });
  }
  return {
    ...archDims(type, c.vocab_size, H, { nh, nKv, hd }),
    norm: { kind: 'rms', eps, plusOne: !!q.gemma },
    act,
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    ...(q.gemma ? { embedScale: Math.sqrt(H) } : {}),
    ...(slidingWindow !== undefined ? { slidingWindow } : {}),
    embed: 'model.embed_tokens.weight',
    finalNorm: { weight: 'model.norm.weight', size: H },
    ...(tied ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

/** Llama's quirks (LlamaConfig: rms_norm_eps 1e-5, optional attention and MLP bias). */
export const LLAMA_QUIRKS: LlamaQuirks = { defaultEps: 1e-5, slidingWindow: 'ignore', mlpBias: true };

/** Llama (transformers `models/llama/modeling_llama.py`): the fixture, plus llama3 and linear rope scaling, biases. */
export const llamaFamily = llamaLikeRow(
  {
    modelType: 'llama',
    hfClass: 'LlamaForCausalLM',
    moe: 'none',
    test: {
      fixture: 'llama',
      configs: {
        'llama-rope-llama3': {
          model_type: 'llama',
          vocab_size: 96,
          hidden_size: 64,
          intermediate_size: 96,
          num_hidden_layers: 2,
          num_attention_heads: 4,
          num_key_value_heads: 2,
          rms_norm_eps: 1e-5,
          rope_theta: 500000.0,
          rope_scaling: {
            rope_type: 'llama3',
            factor: 8.0,
            low_freq_factor: 1.0,
            high_freq_factor: 4.0,
            original_max_position_embeddings: 64,
          },
          tie_word_embeddings: false,
          hidden_act: 'silu',
        },
        'llama-rope-linear': {
          model_type: 'llama',
          vocab_size: 96,
          hidden_size: 32,
          intermediate_size: 48,
          num_hidden_layers: 1,
          num_attention_heads: 2,
          num_key_value_heads: 1,
          rms_norm_eps: 1e-5,
          rope_theta: 10000.0,
          rope_scaling: { type: 'linear', factor: 4.0 },
          attention_bias: true,
          mlp_bias: true,
          tie_word_embeddings: false,
          hidden_act: 'silu',
        },
      },
    },
  },
  LLAMA_QUIRKS,
);
