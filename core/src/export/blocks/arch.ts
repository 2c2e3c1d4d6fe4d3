/**
 * The normalized architecture a family's config parses into. Every graph block reads only
 * this, never a raw config.json, so one decoder builder serves every family and each family
 * file is just "which HF fields and key names mean what".
 */

import type { StateDecl } from '../../artifacts/graph-interface';
import type { MoeWeights } from './moe-weights';

/** A linear layer: weight key, optional bias key, and how the weight is stored. */
export interface LinearSpec {
  weight: string;
  bias?: string;
  /** Output and input features. */
  out: number;
  in: number;
  /** The weight is stored `[in, out]` and y = x·W + b (HF Conv1D, GPT-2); absent: `[out, in]`, y = x·Wᵀ + b (nn.Linear). */
  conv1d?: boolean;
  /** Kept GPTQ/AWQ int4 (`export --keep-quantized`): the packed MatMulNBits inputs replace `weight` (matmul-nbits.ts). */
  nbits?: NBitsSpec;
}

/** The packed inputs of a kept int4 Linear (com.microsoft MatMulNBits, bits 4). */
export interface NBitsSpec {
  qweight: string;
  scales: string;
  qzeros: string;
  /** Act-order GPTQ: the group of each input row. */
  gIdx?: string;
  blockSize: number;
  blocks: number;
}

/** A linear layer spec; `bias` names `<weight minus 'weight'>bias`. */
export const lin = (weight: string, out: number, inp: number, bias?: boolean): LinearSpec => ({
  weight,
  out,
  in: inp,
  ...(bias ? { bias: weight.replace(/weight$/, 'bias') } : {}),
});

/** A normalization layer. */
export interface NormSpec {
  weight: string;
  bias?: string;
  size: number;
}

/** Norm math shared by all norms of a model. */
export interface NormKind {
  /**
   * `rms`: x / √(mean(x²) + eps) · w; `layer`: (x − mean) / √(var + eps) · w, + bias when the
   * {@link NormSpec} has one (without: a bias-free LayerNorm).
   */
  kind: 'rms' | 'layer';
  eps: number;
  /** The normalized x is multiplied by (1 + w) instead of w, computed in float32 (the weight is stored as an offset from 1). */
  plusOne: boolean;
  /** `(w · x).to(dtype)`: the weight multiplies in float32 before the cast back to the model dtype (absent: x is cast first, then × w). */
  weightInFloat32?: boolean;
}

/** Supported activations (HF ACT2FN names normalized). */
export type Act = 'silu' | 'gelu' | 'gelu_tanh' | 'relu' | 'quick_gelu';

/**
 * How a fused qkv projection's output features are laid out: `groups` repeats of the
 * `pieces` in order (sizes in features). Phi-3 / GPT-2: one group [q | k | v]; CodeGen: 4
 * groups (mp_num) of [q | v | k]; Falcon: per head [q | k | v] (7B), per kv group
 * [q × heads/kv | k | v] (new decoder architecture), or [q | k | v] with one kv head
 * (multi_query). Query, key and value heads come out in the order they appear.
 */
export interface FusedLayout {
  groups: number;
  pieces: { role: 'q' | 'k' | 'v'; size: number }[];
}

/** Attention projections of one layer. */
export type AttnProj =
  | { kind: 'separate'; q: LinearSpec; k: LinearSpec; v: LinearSpec }
  /** One projection producing q, k and v along the output features; `layout` absent = one group [q | k | v]. */
  | {
      kind: 'fused';
      qkv: LinearSpec;
      layout?: FusedLayout;
      /** MPT clip_qkv: clamp the fused output to ±clip before the split. */ clip?: number;
    }
  /** DeepSeek-V3 Multi-head Latent Attention (attention-mla.ts). */
  | MlaSpec
  /** Qwen3.5's Gated DeltaNet linear attention (`gated-deltanet.ts`): recurrent states, no KV cache; the layer's `o` is its out_proj. */
  | GatedDeltaNetSpec;

/**
 * DeepSeek-V3 MLA projections (HF `DeepseekV3Attention`): queries through `q` (q_lora_rank
 * null) or `qA → qANorm → qB`; `kvA` gives [latent (kvLoraRank) | k_pe (rope)], the latent is
 * normalized by `kvANorm` and expanded by `kvB` into per-head [k_nope | v]. Its norms use
 * RMSNorm's default eps 1e-6 (HF builds them without `rms_norm_eps`).
 */
export interface MlaSpec {
  kind: 'mla';
  q?: LinearSpec;
  qA?: LinearSpec;
  qANorm?: NormSpec;
  qB?: LinearSpec;
  kvA: LinearSpec;
  kvANorm: NormSpec;
  kvB: LinearSpec;
  kvLoraRank: number;
  nope: number;
  rope: number;
  v: number;
  /** HF `rope_interleave`: the rope dims are de-interleaved (pairs 2i, 2i+1 → i, i + d/2) before rotate_half. */
  interleave: boolean;
  /**
   * QEfficient's cache form: per head (`past_key` nope + rope, `past_value` v; its default) or
   * compressed (`compressed_kv` latent, `k_pe`); the layer's `states` declare the same.
   */
  cache: 'per-head' | 'compressed';
}

/** The feed-forward block of one layer. */
export type MlpSpec =
  | { kind: 'gated'; gate: LinearSpec; up: LinearSpec; down: LinearSpec }
  /** Phi-3: one projection producing [gate | up]. */
  | { kind: 'gated-fused'; gateUp: LinearSpec; down: LinearSpec }
  /** GPT-2: fc → act → proj. */
  | { kind: 'plain'; fc: LinearSpec; proj: LinearSpec }
  | MoeSpec;

/** Sparse MoE over experts stacked in the prepared `moe_weights` layout (see `moe.ts`). */
export interface MoeSpec {
  kind: 'moe';
  /** Router weight key, `[experts, hidden]`. */
  router: string;
  /** Prepared expert tensors in QEfficient's canonical layout: gate/up `[E, H, I]`, down `[E, I, H]`. */
  weights: MoeWeights;
  topK: number;
  /** Renormalize the top-k probabilities to sum 1 (Mixtral always; Qwen3-MoE per config). */
  normTopK: boolean;
  /**
   * How router logits become expert weights (default `softmax`: softmax over all experts,
   * top-k, optional renormalization — Mixtral, Qwen3-MoE). `topk-softmax`: top-k of the logits,
   * softmax over those k (GPT-OSS, GraniteMoE). `sigmoid-group`: GLM-4-MoE's grouped sigmoid
   * routing, see {@link MoeGroupRouting}.
   */
  routing?: 'softmax' | 'topk-softmax' | 'sigmoid-group' | 'topk-sigmoid';
  /**
   * Llama 4: each expert's routing weight scales its input (`routed_in = x · score`) instead of
   * its output; `topk-sigmoid` leaves σ(−∞) = 0 for the unchosen experts, whose zero input gives
   * a zero output.
   */
  routeScalesInput?: boolean;
  /** Router bias key `[experts]` (GPT-OSS). */
  routerBias?: string;
  /** Parameters of `sigmoid-group` routing. */
  group?: MoeGroupRouting;
  /** GPT-OSS's clamped SwiGLU `(clamp(up, ±limit) + 1) · g·σ(α·g)`, g = min(gate, limit); default `act(gate) · up`. */
  clampedSwiglu?: { limit: number; alpha: number };
  /** Shared experts run on every token and added to the routed output (GLM-4-MoE). */
  shared?: { gate: LinearSpec; up: LinearSpec; down: LinearSpec };
  /** Qwen3.5-MoE: the shared expert's output × sigmoid(x · gateᵀ), gate `[1, hidden]` (`shared_expert_gate`). */
  sharedGate?: string;
}

/**
 * GLM-4-MoE routing (HF `Glm4MoeMoE.route_tokens_to_experts`): sigmoid scores; the choice uses
 * scores + `e_score_correction_bias`, limited to the `topkGroup` best of `nGroup` expert groups
 * (a group's score is the sum of its top 2); the weights are the unbiased scores of the chosen
 * experts, renormalized when `normTopK`, times `scale` (routed_scaling_factor).
 */
export interface MoeGroupRouting {
  correctionBias: string;
  nGroup: number;
  topkGroup: number;
  scale: number;
}

/**
 * One decoder layer. Sequential (default): h += postAttnNorm(attn(norm1(h))); h +=
 * postMlpNorm(mlp(norm2(h))), each norm optional (absent: identity). Parallel: h = h +
 * attn(norm1(h)) + mlp(norm2(h)), with norm2 absent meaning norm1's output.
 */
export interface LayerSpec {
  norm1?: NormSpec;
  norm2?: NormSpec;
  /** A norm on the attention output, before the residual add (HF names it post_attention_layernorm in Gemma-2 and OLMo-2). */
  postAttnNorm?: NormSpec;
  /** A norm on the MLP output, before the residual add (HF post_feedforward_layernorm). */
  postMlpNorm?: NormSpec;
  /**
   * h = h + attn(norm1(h)) + mlp(norm2(h)): both branches read the layer's input and are added to
   * the residual at once. With `norm2` absent the MLP reads norm1's output (one shared norm).
   */
  parallel?: boolean;
  /** Each branch's output is multiplied by this before the residual add. */
  residualScale?: number;
  attn: AttnProj;
  o: LinearSpec;
  /**
   * q/k norms before RoPE, one weight shared by every head: over each head's head_dim
   * (`qkNormOver` absent or 'head') or over the whole projection before the head split
   * ('projection'). A distinct weight per head is not expressible.
   */
  qNorm?: NormSpec;
  kNorm?: NormSpec;
  qkNormOver?: 'head' | 'projection';
  /** q_proj gives [query | gate] per head (2·head_dim each head, query first); the attention output × sigmoid(gate) before o_proj. */
  attnOutputGate?: boolean;
  mlp: MlpSpec;
  /** Attention sinks: one learned logit per attention head joined into the softmax's denominator and dropped after (`[nHeads]`). */
  sinks?: string;
  /** Keys older than this many positions are masked on this layer (HF `layer_types` = sliding_attention); overrides {@link ArchSpec.slidingWindow}. */
  slidingWindow?: number;
  /**
   * `export --sliding-cache window` (QEfficient's Gemma 3 layout): this sliding layer's K/V cache
   * is a ring of `slidingWindow` slots instead of ctx_len (attention-window.ts).
   */
  windowCache?: boolean;
  /** This layer's rotary tables (e.g. another theta on sliding layers); overrides {@link ArchSpec.rope}. */
  rope?: RopeSpec;
  /** Chunked attention: a query sees the keys of its own `attnChunk`-sized chunk of positions, causally. */
  attnChunk?: number;
  /** No rotary embedding on this layer (NoPE). */
  noRope?: boolean;
  /** q and k divided per head by √(mean(x²) + eps) after rope, with no weight (an L2-style norm), eps this value. */
  qkL2NormEps?: number;
  /** Attention temperature: q · (log(⌊(pos + 1) / floorScale⌋ + 1) · attnScale + 1), per position. */
  attnTemperature?: { floorScale: number; attnScale: number };
  /**
   * The state tensors this layer's attention block carries between calls (graph-interface.ts);
   * absent: K and V `[batch, nKv, ctx, headDim]`. MLA and linear-attention blocks declare theirs.
   */
  states?: StateDecl[];
}

/** Rotary embedding tables (computed from the config, baked into the graph as constants). */
export interface RopeSpec {
  /** inverse frequencies, length rotaryDim/2 */
  invFreq: number[];
  rotaryDim: number;
  /** Multiplies cos and sin (1 for default, linear and llama3; the attention factor of longrope and yarn). */
  attentionScale: number;
  /**
   * Rotary over adjacent pairs: dims (2i, 2i+1) rotate together by frequency i (cos/sin
   * repeat-interleaved, HF `rotate_every_two` / `repeat_interleave`); absent: over halves, dims
   * (i, i + rotaryDim/2) rotate together (`rotate_half`).
   */
  interleaved?: boolean;
  /**
   * Two frequency tables: these while max(position_ids) + 1 exceeds `threshold`
   * (original_max_position_embeddings), `invFreq` above otherwise (HF longrope).
   */
  long?: { invFreq: number[]; threshold: number };
}

/** The dimension fields of an {@link ArchSpec}, stated once for every family (`heads`: query heads, KV heads, head size). */
export function archDims(
  modelType: string,
  vocab: number,
  hidden: number,
  heads: { nh: number; nKv: number; hd: number },
): Pick<ArchSpec, 'modelType' | 'vocab' | 'hidden' | 'nHeads' | 'nKv' | 'headDim'> {
  return { modelType, vocab, hidden, nHeads: heads.nh, nKv: heads.nKv, headDim: heads.hd };
}

/** Everything the decoder builder needs. */
export interface ArchSpec {
  modelType: string;
  vocab: number;
  hidden: number;
  nHeads: number;
  nKv: number;
  headDim: number;
  norm: NormKind;
  act: Act;
  /** q·kᵀ scaled before the softmax: multiplied (`mul`) or divided (`div`) by `value`; the two differ in rounding. Absent: unscaled. */
  scoreScale: { op: 'mul' | 'div'; value: number } | undefined;
  /** q·kᵀ and its scaling computed in float32 whatever the compute dtype. */
  scoresInFloat32?: boolean;
  /**
   * QEfficient's prefill-only GPT-OSS attention (`QEffPrefillOnlyGptOssAttention`): queries
   * attend the call's own keys only (the cache is written, never read; ctx_len = the prompt's
   * length) and a ring layer's cache takes the call's last `slidingWindow` keys in order.
   */
  chunkAttention?: boolean;
  /** `--replicate-kv-heads`: `nKv` is this many times the checkpoint's KV heads, each repeated in place (replicate-kv.ts). */
  kvRepeat?: number;
  /** Score soft-capping: scores = cap · tanh(scores / cap), after scaling, before the mask. */
  attnSoftcap?: number;
  rope?: RopeSpec;
  /** ALiBi: scores + slope · (key position − query position), one slope per attention head (see `alibi.ts`); no rotary. */
  alibi?: { slopes: number[] };
  /** Learned absolute positions: row position_id of this table is added to the embedding (key and table size). */
  positions?: { weight: string; max: number };
  /** The embedding rows × this, rounded to the model dtype (e.g. √hidden, or a config multiplier). */
  embedScale?: number;
  /** Every layer: a query attends only to the last `slidingWindow` positions (a layer's own value overrides it). */
  slidingWindow?: number;
  embed: string;
  finalNorm: NormSpec;
  /** The head's weight `[vocab, hidden]`; absent: the head is `embed` (tied embeddings). */
  lmHead?: string;
  /** The head's bias `[vocab]`. */
  lmHeadBias?: string;
  /** logits = head(h) × this, in the model dtype (a config's logit multiplier). */
  logitsScale?: number;
  /** logits = head(h) ÷ this (a config's logit divisor; not folded into a multiply, which rounds differently). */
  logitsDivide?: number;
  /** Logit soft-capping: logits = cap · tanh(logits / cap), after the head (and any scale). */
  finalSoftcap?: number;
  layers: LayerSpec[];
}

/* Qwen3.5 Gated DeltaNet: the layer's spec lives here with the other attention kinds (the block is gated-deltanet.ts). */

/** One Gated DeltaNet layer's weights and sizes. */
export interface GatedDeltaNetSpec {
  kind: 'gated-deltanet';
  /** in_proj_qkv `[2·nk·dk + nv·dv, hidden]`, in_proj_z `[nv·dv, hidden]`, in_proj_b / in_proj_a `[nv, hidden]`. */
  qkv: LinearSpec;
  z: LinearSpec;
  b: LinearSpec;
  a: LinearSpec;
  /** conv1d.weight `[conv_dim, 1, K]`, A_log `[nv]`, dt_bias `[nv]`, norm.weight `[dv]`. */
  conv: string;
  aLog: string;
  dtBias: string;
  norm: string;
  nk: number;
  nv: number;
  dk: number;
  dv: number;
  kernel: number;
  /** The gated RMSNorm's eps (rms_norm_eps). */
  eps: number;
}

/** conv_dim = 2·nk·dk + nv·dv (the q | k | v channels the conv runs over). */
export function convDim(s: GatedDeltaNetSpec): number {
  return 2 * s.nk * s.dk + s.nv * s.dv;
}
