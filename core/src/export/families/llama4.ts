/**
 * Llama 4 text model → {@link ArchSpec}, ported from Hugging Face
 * `src/transformers/models/llama4/modeling_llama4.py` (huggingface/transformers 63210d0) and
 * `configuration_llama4.py` (its `Llama4TextConfig.__post_init__` derivations):
 *
 * - `no_rope_layers[i] == 1`: layer i uses rope (an empty or absent list is derived as
 *   `int((i + 1) % no_rope_layer_interval != 0)`); rope layers attend in chunks of
 *   `attention_chunk_size` (`layer_types` "chunked_attention", derived from no_rope_layers
 *   when absent) and, with `use_qk_norm`, L2-normalize q and k after rope; NoPE layers get
 *   attention temperature tuning when `attn_temperature_tuning`;
 * - rope: llama3 scaling whenever `rope_scaling` is set (the rotary class forces that type),
 *   applied to interleaved pairs (2i, 2i+1), as the complex product does;
 * - MoE on `moe_layers` (default every `interleave_moe_layer_step`-th layer): router top-k of
 *   the logits, sigmoid of those scaling each expert's input, plus a shared expert; the fused
 *   `experts.gate_up_proj [E, H, 2I]` / `down_proj [E, I, H]` are split by prepare into
 *   `feed_forward.moe_weights.{gate,up,down}`; dense layers use `intermediate_size_mlp`.
 *
 * `model_type: llama4` (`Llama4ForConditionalGeneration`, every published checkpoint): the
 * text model of `text_config`, with keys under `language_model.`; with a `vision_config`,
 * `export --config` builds it as a VLM (vlm/config-llama4.ts: this ArchSpec unchanged under the
 * language wrapper, plus the vision graph).
 */
import { z } from 'zod';
import { archDims, type ArchSpec, type LayerSpec, type MlpSpec } from '../blocks/arch';
import type { ArchOptions, FamilyRow } from './row';
import { actOf, checkExpertParallel, llamaLike, parseWith, refuse, ropeSource } from './config';
import { canonicalMoeKeys } from '../blocks/moe';
import { ropeSpec } from '../blocks/rope';

const int = z.number().int().positive();
const num = z.number().finite();
const bit = z.union([z.literal(0), z.literal(1)]);

/** Llama4TextConfig's fields (defaults as in `configuration_llama4.py`). */
const llama4TextConfig = llamaLike.extend({
  model_type: z.literal('llama4_text').optional(),
  intermediate_size_mlp: int.optional(),
  num_local_experts: int.optional(),
  moe_layers: z.array(z.number().int().nonnegative()).nullable().optional(),
  interleave_moe_layer_step: int.optional(),
  use_qk_norm: z.boolean().optional(),
  no_rope_layers: z.array(bit).nullable().optional(),
  no_rope_layer_interval: int.optional(),
  attention_chunk_size: int.nullable().optional(),
  layer_types: z.array(z.string()).nullable().optional(),
  // the Scout config ships the integer 4: Python's truthiness decides
  attn_temperature_tuning: z.union([z.boolean(), num]).optional(),
  floor_scale: num.positive().optional(),
  attn_scale: num.optional(),
});

/** The text config: `text_config` of a `llama4` (multimodal) config, else the config itself. */
function textOf(raw: unknown, file: string): { text: unknown; prefix: string; at: string } {
  const r = raw as Record<string, unknown>;
  if (r.model_type !== 'llama4') return { text: raw, prefix: '', at: '' };
  const t = r.text_config;
  if (typeof t !== 'object' || t === null || Array.isArray(t)) refuse(file, 'text_config', 'is missing (model_type llama4)');
  return { text: { model_type: 'llama4_text', ...(t as Record<string, unknown>) }, prefix: 'language_model.', at: 'text_config.' };
}

/** Llama 4 (`llama4_text`, or the text model of `llama4`) → {@link ArchSpec}. */
export function llama4Arch(raw: unknown, file: string, opts: ArchOptions = {}): ArchSpec {
  const { text, prefix, at } = textOf(raw, file);
  const c = parseWith(llama4TextConfig, text, file);
  const L = c.num_hidden_layers;
  const H = c.hidden_size;
  const nh = c.num_attention_heads;
  const nKv = c.num_key_value_heads ?? nh;
  if (nh % nKv !== 0) refuse(file, `${at}num_key_value_heads`, `(${nKv}) does not divide num_attention_heads (${nh})`);
  // Llama4TextConfig: head_dim defaults to 128; an explicit null means hidden_size / heads
  const hd = c.head_dim === undefined ? 128 : (c.head_dim ?? Math.floor(H / nh));
  const E = c.num_local_experts ?? 16;
  const topK = c.num_experts_per_tok ?? 1;
  if (topK > E) refuse(file, `${at}num_experts_per_tok`, `(${topK}) exceeds num_local_experts (${E})`);
  const interval = c.no_rope_layer_interval ?? 4;
  const useRope =
    c.no_rope_layers && c.no_rope_layers.length > 0
      ? c.no_rope_layers
      : Array.from({ length: L }, (_, i) => ((i + 1) % interval !== 0 ? 1 : 0));
  if (useRope.length < L) refuse(file, `${at}no_rope_layers`, `has ${useRope.length} entries for ${L} layers`);
  const step = c.interleave_moe_layer_step ?? 1;
  // list(range(step - 1, num_hidden_layers, step))
  const moeLayers = new Set(
    c.moe_layers ?? Array.from({ length: L }, (_, i) => i).filter((i) => i >= step - 1 && (i - (step - 1)) % step === 0),
  );
  const types = c.layer_types ?? useRope.slice(0, L).map((r) => (r ? 'chunked_attention' : 'full_attention'));
  if (types.length < L) refuse(file, `${at}layer_types`, `has ${types.length} entries for ${L} layers`);
  const bad = types.find((t) => t !== 'chunked_attention' && t !== 'full_attention');
  if (bad !== undefined) refuse(file, `${at}layer_types`, `entry "${bad}" is not implemented (chunked_attention, full_attention)`);
  const chunk = c.attention_chunk_size === undefined ? 8192 : c.attention_chunk_size;
  if (chunk === null && types.includes('chunked_attention'))
    refuse(file, `${at}attention_chunk_size`, 'is null but layers use chunked attention');
  if (opts.expertParallel) checkExpertParallel(file, moeLayers.size > 0 ? E : undefined, opts.expertParallel.stages);
  const temperature = !!(c.attn_temperature_tuning ?? true);
  const qkNorm = c.use_qk_norm ?? true;
  const eps = c.rms_norm_eps ?? 1e-5;
  const act = actOf(c.hidden_act ?? 'silu', file, `${at}hidden_act`);
  const bias = !!c.attention_bias;
  const lin = (weight: string, out: number, inp: number, b = false) => ({
    weight,
    out,
    in: inp,
    ...(b ? { bias: weight.replace(/weight$/, 'bias') } : {}),
  });
  const gated = (p: string, inter: number) => ({
    gate: lin(`${p}.gate_proj.weight`, inter, H),
    up: lin(`${p}.up_proj.weight`, inter, H),
    down: lin(`${p}.down_proj.weight`, H, inter),
  });
  const layers: LayerSpec[] = [];
  for (let i = 0; i < L; i++) {
    const p = `${prefix}model.layers.${i}`;
    const f = `${p}.feed_forward`;
    const rope = useRope[i] === 1;
    const mlp: MlpSpec = moeLayers.has(i)
      ? {
          kind: 'moe',
          router: `${f}.router.weight`,
          routing: 'topk-sigmoid',
          routeScalesInput: true,
          weights: {
            ...canonicalMoeKeys(f),
            experts: E,
            hidden: H,
            intermediate: c.intermediate_size,
            ...(opts.expertParallel ? { stages: opts.expertParallel.stages } : {}),
          },
          topK,
          normTopK: false,
          shared: gated(`${f}.shared_expert`, c.intermediate_size),
        }
      : { kind: 'gated', ...gated(f, c.intermediate_size_mlp ?? 16384) };
    layers.push({
      norm1: { weight: `${p}.input_layernorm.weight`, size: H },
      norm2: { weight: `${p}.post_attention_layernorm.weight`, size: H },
      attn: {
        kind: 'separate',
        q: lin(`${p}.self_attn.q_proj.weight`, nh * hd, H, bias),
        k: lin(`${p}.self_attn.k_proj.weight`, nKv * hd, H, bias),
        v: lin(`${p}.self_attn.v_proj.weight`, nKv * hd, H, bias),
      },
      o: lin(`${p}.self_attn.o_proj.weight`, H, nh * hd, bias),
      ...(rope ? {} : { noRope: true }),
      ...(rope && qkNorm ? { qkL2NormEps: eps } : {}),
      ...(!rope && temperature ? { attnTemperature: { floorScale: c.floor_scale ?? 8192, attnScale: c.attn_scale ?? 0.1 } } : {}),
      ...(types[i] === 'chunked_attention' ? { attnChunk: chunk! } : {}),
      mlp,
    });
  }
  const { theta, scaling } = ropeSource(c, 500000);
  // Llama4TextRotaryEmbedding: rope_type = "llama3" if config.rope_scaling is not None else "default"
  // (newer configs carry rope_parameters with their own rope_type)
  const rope = ropeSpec(theta, hd, c.rope_scaling ? { ...scaling, rope_type: 'llama3' } : scaling, file);
  const tied = c.tie_word_embeddings ?? false;
  return {
    ...archDims(prefix ? 'llama4' : 'llama4_text', c.vocab_size, H, { nh, nKv, hd }),
    norm: { kind: 'rms', eps, plusOne: false },
    act,
    scoreScale: { op: 'mul', value: Math.pow(hd, -0.5) },
    rope: { ...rope, interleaved: true },
    embed: `${prefix}model.embed_tokens.weight`,
    finalNorm: { weight: `${prefix}model.norm.weight`, size: H },
    ...(tied ? {} : { lmHead: `${prefix}lm_head.weight` }),
    layers,
  };
}

/** The fields the code-made Llama 4 test configs share. */
const llama4Text = {
  model_type: 'llama4_text',
  vocab_size: 96,
  hidden_size: 32,
  head_dim: 8,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  intermediate_size: 24,
  intermediate_size_mlp: 40,
  num_local_experts: 4,
  rms_norm_eps: 1e-5,
  rope_theta: 10000.0,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  max_position_embeddings: 64,
};

/** The llama4_text row of the family registry. */
export const llama4TextFamily: FamilyRow = {
  modelType: 'llama4_text',
  hfClass: 'Llama4ForCausalLM',
  moe: 'topk-sigmoid',
  build: llama4Arch,
  test: {
    fixture: 'llama4',
    configs: {
      // NoPE on layers 1 and 4, MoE every third layer (2 and 5), chunks of 3, top-2 sigmoid routing
      'llama4-nope-step3': {
        ...llama4Text,
        num_hidden_layers: 6,
        no_rope_layers: [1, 0, 1, 1, 0, 1],
        interleave_moe_layer_step: 3,
        num_experts_per_tok: 2,
        attention_chunk_size: 3,
        attn_temperature_tuning: true,
        floor_scale: 2,
        attn_scale: 0.3,
        use_qk_norm: true,
        rope_scaling: {
          rope_type: 'llama3',
          factor: 8.0,
          low_freq_factor: 1.0,
          high_freq_factor: 4.0,
          original_max_position_embeddings: 16,
        },
      },
      // no_rope_layers [] (derived: NoPE every 4th layer), every layer MoE, no q/k norm, no tuning, plain rope
      'llama4-derived': {
        ...llama4Text,
        num_hidden_layers: 5,
        no_rope_layers: [],
        num_experts_per_tok: 1,
        attention_chunk_size: 5,
        attn_temperature_tuning: false,
        use_qk_norm: false,
      },
    },
  },
};

/** The llama4 row: the text model of Llama4ForConditionalGeneration (every published checkpoint). */
export const llama4Family: FamilyRow = {
  // the same builder and routing (llama4Arch reads text_config); its own class, key prefix and tests
  ...llama4TextFamily,
  modelType: 'llama4',
  hfClass: 'Llama4ForConditionalGeneration',
  keyPrefix: 'language_model',
  test: {
    configs: {
      // Llama4ForConditionalGeneration: text_config, keys under language_model. (without a
      // vision_config: with one, export --config writes the vision graph too, vlm/config-llama4.ts)
      'llama4-multimodal': {
        model_type: 'llama4',
        architectures: ['Llama4ForConditionalGeneration'],
        text_config: {
          ...llama4Text,
          num_hidden_layers: 4,
          interleave_moe_layer_step: 2,
          num_experts_per_tok: 1,
          attention_chunk_size: 4,
          floor_scale: 3,
          attn_scale: 0.5,
        },
      },
    },
  },
};
