/**
 * GPT-OSS (`modeling_gpt_oss.py`, huggingface/transformers `src/transformers/models/gpt_oss/`):
 * q/k/v/o biases, per-head attention sinks, `layer_types` alternating sliding/full attention,
 * yarn rope, router with bias and softmax over the top-k logits, experts with biases and the
 * clamped SwiGLU. The checkpoint's MXFP4 experts are dequantized by prepare into
 * `mlp.moe_weights.{gate,up,down}` (+ `_bias`).
 */
import { z } from 'zod';
import { lin, type ArchSpec, type LayerSpec, type MlpSpec } from '../blocks/arch';
import type { ArchOptions, FamilyRow } from './row';
import { llamaLike, parseWith, refuse } from './config';
import { canonicalMoeKeys } from '../blocks/moe';
import { windowCacheArch } from '../blocks/attention-window';
import { attnProj, checkTopK, expertStages, heads, rmsDecoder, ropeOf } from './moe-common';

const int = z.number().int().positive();
const num = z.number().finite();

/** GptOssConfig's fields (defaults as in `configuration_gpt_oss.py`). */
const gptOssConfig = llamaLike.extend({
  model_type: z.literal('gpt_oss'),
  num_local_experts: int,
  experts_per_token: int.optional(),
  sliding_window: int.nullable().optional(),
  layer_types: z.array(z.string()).optional(),
  swiglu_limit: num.positive().optional(),
  swiglu_alpha: num.positive().optional(),
});

const GPT_OSS_DEFAULT_ROPE = {
  rope_type: 'yarn',
  factor: 32.0,
  beta_fast: 32.0,
  beta_slow: 1.0,
  truncate: false,
  original_max_position_embeddings: 4096,
};

/** GPT-OSS → {@link ArchSpec}. */
export function gptOssArch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const c = parseWith(gptOssConfig, raw, file);
  const H = c.hidden_size;
  const { nh, nKv, hd } = heads(c, file, 64);
  const E = c.num_local_experts;
  const topK = checkTopK(file, c.num_experts_per_tok ?? c.experts_per_token, E);
  const I = c.intermediate_size;
  if (c.sliding_window === null && (c.layer_types ?? ['sliding_attention']).includes('sliding_attention')) {
    refuse(file, 'sliding_window', 'is null but layer_types has sliding_attention layers');
  }
  const window = c.sliding_window ?? 128;
  const stages = expertStages(file, E, opts);
  // HF GptOssConfig: layer_types defaults to sliding on even layers, full on odd ones
  const types =
    c.layer_types ?? Array.from({ length: c.num_hidden_layers }, (_, i) => ((i + 1) % 2 ? 'sliding_attention' : 'full_attention'));
  if (types.length !== c.num_hidden_layers) refuse(file, 'layer_types', `has ${types.length} entries for ${c.num_hidden_layers} layers`);
  const bad = types.find((t) => t !== 'sliding_attention' && t !== 'full_attention');
  if (bad !== undefined) refuse(file, 'layer_types', `entry "${bad}" is not implemented (sliding_attention, full_attention)`);
  const bias = c.attention_bias ?? true;
  const layers: LayerSpec[] = types.map((type, i) => {
    const p = `model.layers.${i}`;
    const m = `${p}.mlp`;
    const mlp: MlpSpec = {
      kind: 'moe',
      router: `${m}.router.weight`,
      routerBias: `${m}.router.bias`,
      routing: 'topk-softmax',
      weights: { ...canonicalMoeKeys(m, true), experts: E, hidden: H, intermediate: I, ...stages },
      topK,
      normTopK: false,
      clampedSwiglu: { limit: c.swiglu_limit ?? 7, alpha: c.swiglu_alpha ?? 1.702 },
    };
    return {
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn: attnProj(p, H, nh, nKv, hd, bias),
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd, bias),
      sinks: `${p}.self_attn.sinks`,
      ...(type === 'sliding_attention' ? { slidingWindow: window } : {}),
      mlp,
    };
  });
  // GptOssConfig's default rope_scaling (absent from config.json ≠ null): yarn ×32 over 4096 positions
  const rope = ropeOf(
    c.rope_scaling === undefined && c.rope_parameters === undefined ? { ...c, rope_scaling: GPT_OSS_DEFAULT_ROPE } : c,
    hd,
    file,
    150000,
  );
  return rmsDecoder('gpt_oss', c, file, { nh, nKv, hd }, rope, layers);
}

/**
 * `export --phase prefill` of GPT-OSS: QEfficient's `PrefillOnlyTransform` graph
 * (`QEffPrefillOnlyGptOssModel` / `QEffPrefillOnlyGptOssAttention`,
 * `QEfficient/transformers/models/gpt_oss/modeling_gpt_oss.py`, main ebf55e81). Attention reads
 * the call's own keys (ctx_len is the prompt's length: compile sets it to prefill_seq_len),
 * full layers scatter into a ctx_len cache, and sliding layers' caches are `sliding_window`
 * long (`get_pkv_dynamic_axes`: axis 2 "sliding_window" unless `retain_full_kv`), filled with
 * the call's last W keys (`chunkTail`).
 */
export function gptOssPrefillOnly(a: ArchSpec, file: string): ArchSpec {
  return { ...windowCacheArch(a, file), chunkAttention: true };
}

/** The gpt_oss row of the family registry. */
export const gptOssFamily: FamilyRow = {
  modelType: 'gpt_oss',
  hfClass: 'GptOssForCausalLM',
  moe: 'topk-softmax',
  build: gptOssArch,
  test: { fixture: 'gpt_oss_full' },
};
