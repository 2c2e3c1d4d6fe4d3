/**
 * Family definitions: HF config fields and key names → {@link ArchSpec}. Each family follows
 * its published modeling file (transformers `models/<family>/modeling_<family>.py`):
 * Llama/Mistral (optional attention/MLP bias), Qwen2 (q/k/v bias, o without), Qwen3 (q_norm /
 * k_norm per head, explicit head_dim), Phi-3 (fused qkv_proj and gate_up_proj), Gemma ((1 + w)
 * RMSNorm, embeddings × √hidden, gelu-tanh, tied head), GPT-2 (Conv1D, learned positions,
 * LayerNorm), Mixtral and Qwen3-MoE (router + prepared `moe_weights`). Gemma-2, Granite,
 * OLMo-2, Falcon and CodeGen live in `family-<name>.ts`.
 */
import { archDims, type ArchSpec, type LayerSpec, type LinearSpec, type MlpSpec } from './arch';
import { canonicalMoeKeys } from './moe';
import {
  actOf,
  checkExpertParallel,
  gpt2Config,
  llamaLike,
  modelTypeOf,
  parseWith,
  refuse,
  type LlamaLikeConfig,
  type ModelType,
} from './config';
import { codegenArch } from './family-codegen';
import { falconArch } from './family-falcon';
import { gemma2Arch } from './family-gemma2';
import { graniteArch } from './family-granite';
import { olmo2Arch } from './family-olmo2';
import { ropeSpec, type RopeScaling } from './rope';
import { glm4MoeArch, gptOssArch, graniteMoeArch } from './families-moe';
import { qwen35MoeArch } from './family-qwen3-5-moe';

/** Options that depend on the checkpoint rather than the config. */
export interface ArchOptions {
  /** Keys the (prepared) checkpoint has; used where HF checkpoints differ (GPT-2's prefix). */
  keys?: ReadonlySet<string>;
  /** Expert-parallel packed MoE layout (QEfficient's `moe_prefill_flavour=expert_parallel`): P pipeline stages. */
  expertParallel?: { stages: number };
}

/** The families in `family-<name>.ts`: dense only. */
const DENSE_FAMILIES: ReadonlySet<string> = new Set(['gemma2', 'granite', 'olmo2', 'falcon', 'codegen']);

/** Parses a config.json object into the architecture the graph builder consumes. */
export function archFromConfig(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const type = modelTypeOf(raw, file);
  if (opts.expertParallel && DENSE_FAMILIES.has(type)) checkExpertParallel(file, undefined, opts.expertParallel.stages);
  switch (type) {
    case 'gpt2':
      return gpt2Arch(raw, file, opts);
    case 'gpt_oss':
      return gptOssArch(raw, file, opts);
    case 'glm4_moe':
      return glm4MoeArch(raw, file, opts);
    case 'granitemoe':
      return graniteMoeArch(raw, file, opts);
    case 'qwen3_5_moe_text':
    case 'qwen3_5_moe':
      return qwen35MoeArch(raw, file, opts);
    case 'gemma2':
      return gemma2Arch(raw, file);
    case 'granite':
      return graniteArch(raw, file);
    case 'olmo2':
      return olmo2Arch(raw, file);
    case 'falcon':
      return falconArch(raw, file);
    case 'codegen':
      return codegenArch(raw, file);
    default:
      return llamaLikeArch(type, parseWith(llamaLike, raw, file), file, opts);
  }
}

/** A linear layer spec; `bias` names `<weight minus 'weight'>bias`. */
export const lin = (weight: string, out: number, inp: number, bias?: boolean): LinearSpec => ({
  weight,
  out,
  in: inp,
  ...(bias ? { bias: weight.replace(/weight$/, 'bias') } : {}),
});

/**
 * The Llama-like families' common architecture; `type` picks the defaults and quirks. Also the
 * base the Gemma-2, Granite and OLMo-2 family files start from.
 */
export function llamaLikeArch(type: ModelType, c: LlamaLikeConfig, file: string, opts: ArchOptions = {}): ArchSpec {
  const H = c.hidden_size;
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? nh;
  if (H % nh !== 0 && c.head_dim == null)
    refuse(file, 'hidden_size', `(${H}) is not divisible by num_attention_heads (${nh}) and head_dim is not given`);
  if (nh % nKv !== 0) refuse(file, 'num_key_value_heads', `(${nKv}) does not divide num_attention_heads (${nh})`);
  const defaultHeadDim = type === 'gemma' ? 256 : type === 'qwen3' || type === 'qwen3_moe' ? 128 : H / nh;
  const hd = c.head_dim ?? defaultHeadDim;
  const eps = c.rms_norm_eps ?? (type === 'llama' || type === 'phi3' || type === 'mistral' || type === 'mixtral' ? 1e-5 : 1e-6);

  // rope: newer HF configs carry rope_parameters (incl. rope_theta); older ones rope_theta + rope_scaling
  const params = (c.rope_parameters ?? null) as RopeScaling | null;
  const scaling = (c.rope_scaling ?? params) as RopeScaling | null;
  const theta = c.rope_theta ?? (typeof params?.rope_theta === 'number' ? params.rope_theta : 10000);
  const partial = c.partial_rotary_factor ?? 1;
  if (partial !== 1 && type !== 'phi3') refuse(file, 'partial_rotary_factor', `(${partial}) is not used by ${type}`);
  const rotaryDim = Math.floor(hd * partial);
  if (rotaryDim % 2 !== 0) refuse(file, 'partial_rotary_factor', `gives an odd rotary dim ${rotaryDim}`);
  const longrope = scaling && ['longrope', 'su'].includes(String(scaling.rope_type ?? scaling.type));
  if (longrope && type !== 'phi3')
    refuse(file, 'rope_scaling', `type "${String(scaling!.rope_type ?? scaling!.type)}" is only implemented for phi3`);
  const rope = ropeSpec(theta, rotaryDim, scaling, file, {
    ...(c.max_position_embeddings !== undefined ? { max: c.max_position_embeddings } : {}),
    ...(typeof c.original_max_position_embeddings === 'number' ? { originalMax: c.original_max_position_embeddings } : {}),
  });

  let slidingWindow: number | undefined;
  if (type === 'mistral' || type === 'mixtral' || type === 'phi3') slidingWindow = c.sliding_window ?? undefined;
  if ((type === 'qwen2' || type === 'qwen3' || type === 'qwen3_moe') && c.use_sliding_window) {
    refuse(file, 'use_sliding_window', 'is true (per-layer sliding windows are not implemented)');
  }

  const actName = type === 'gemma' ? (c.hidden_activation ?? 'gelu_pytorch_tanh') : (c.hidden_act ?? 'silu');
  const act = actOf(actName, file, type === 'gemma' && c.hidden_activation ? 'hidden_activation' : 'hidden_act');
  const tied = c.tie_word_embeddings ?? type === 'gemma';
  const I = c.intermediate_size;
  const attnBias = type === 'qwen2' ? false : !!c.attention_bias;
  const qkvBias = type === 'qwen2' ? true : attnBias;
  const mlpBias = type === 'llama' ? !!c.mlp_bias : false;
  if (type !== 'llama' && c.mlp_bias) refuse(file, 'mlp_bias', `is true but ${type} has no MLP bias`);
  if (type === 'phi3' && c.attention_bias) refuse(file, 'attention_bias', 'is true but Phi-3 projections have no bias');

  const moeExperts = type === 'mixtral' ? c.num_local_experts : type === 'qwen3_moe' ? c.num_experts : undefined;
  if ((type === 'mixtral' || type === 'qwen3_moe') && (!moeExperts || !c.num_experts_per_tok)) {
    refuse(file, type === 'mixtral' ? 'num_local_experts' : 'num_experts', 'and num_experts_per_tok are required');
  }
  if (moeExperts && c.num_experts_per_tok! > moeExperts)
    refuse(file, 'num_experts_per_tok', `(${c.num_experts_per_tok}) exceeds the expert count (${moeExperts})`);
  if (opts.expertParallel) checkExpertParallel(file, moeExperts, opts.expertParallel.stages);
  const layers: LayerSpec[] = [];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = `model.layers.${i}`;
    const attn: LayerSpec['attn'] =
      type === 'phi3'
        ? { kind: 'fused', qkv: lin(`${p}.self_attn.qkv_proj.weight`, (nh + 2 * nKv) * hd, H) }
        : {
            kind: 'separate',
            q: lin(`${p}.self_attn.q_proj.weight`, nh * hd, H, qkvBias),
            k: lin(`${p}.self_attn.k_proj.weight`, nKv * hd, H, qkvBias),
            v: lin(`${p}.self_attn.v_proj.weight`, nKv * hd, H, qkvBias),
          };
    let mlp: MlpSpec;
    const sparse =
      type === 'mixtral' ||
      (type === 'qwen3_moe' && !(c.mlp_only_layers ?? []).includes(i) && (i + 1) % (c.decoder_sparse_step ?? 1) === 0);
    if (sparse) {
      const m = type === 'mixtral' ? `${p}.block_sparse_moe` : `${p}.mlp`;
      const inter =
        type === 'mixtral' ? I : (c.moe_intermediate_size ?? refuse(file, 'moe_intermediate_size', 'is required for qwen3_moe'));
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
        normTopK: type === 'mixtral' ? true : !!c.norm_topk_prob,
      };
    } else if (type === 'phi3') {
      mlp = { kind: 'gated-fused', gateUp: lin(`${p}.mlp.gate_up_proj.weight`, 2 * I, H), down: lin(`${p}.mlp.down_proj.weight`, H, I) };
    } else {
      mlp = {
        kind: 'gated',
        gate: lin(`${p}.mlp.gate_proj.weight`, I, H, mlpBias),
        up: lin(`${p}.mlp.up_proj.weight`, I, H, mlpBias),
        down: lin(`${p}.mlp.down_proj.weight`, H, I, mlpBias),
      };
    }
    const qk = type === 'qwen3' || type === 'qwen3_moe';
    layers.push({
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn,
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd, attnBias && type !== 'qwen2'),
      ...(qk
        ? { qNorm: { weight: `${p}.self_attn.q_norm.weight`, size: hd }, kNorm: { weight: `${p}.self_attn.k_norm.weight`, size: hd } }
        : {}),
      mlp,
    });
  }
  return {
    ...archDims(type, c.vocab_size, H, { nh, nKv, hd }),
    norm: { kind: 'rms', eps, plusOne: type === 'gemma' },
    act,
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope,
    ...(type === 'gemma' ? { embedScale: Math.sqrt(H) } : {}),
    ...(slidingWindow !== undefined ? { slidingWindow } : {}),
    embed: 'model.embed_tokens.weight',
    finalNorm: { weight: 'model.norm.weight', size: H },
    ...(tied ? {} : { lmHead: 'lm_head.weight' }),
    layers,
  };
}

function gpt2Arch(raw: unknown, file: string, _opts: ArchOptions): ArchSpec {
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
