/**
 * The Gemma 3 VLM text side (HF `Gemma3ForConditionalGeneration`, models/gemma3/modeling_gemma3.py)
 * as one weight-free graph with QEfficient's language interface (QEffGemma3DecoderWrapper,
 * QEfficient/transformers/models/gemma3/modeling_gemma3.py):
 *   inputs  input_ids [batch, seq]; vision_embeds [vision_batch_size, vision_size, hidden] (dim 1
 *           dynamic, QEfficient main's `get_onnx_dynamic_axes`: `{0: "vision_batch_size", 1: "vision_size"}`,
 *           the symbol #1029 renamed from mm_tokens_per_image; main ebf55e8159c8b87bff6d8028541b824244b16c81);
 *           position_ids int64 [batch, seq]; image_idx int64 [1, 1]; [batch_index];
 *           past_key.i / past_value.i
 *   outputs logits [batch, 1, vocab] (last valid position), vision_embeds_RetainedState,
 *           image_idx_output [1, 1], past_*_RetainedState
 * The layers are the gemma3_text family's (families/gemma3.ts) under `language_model.model.*`.
 * Three things differ from the text model, as HF's multimodal class does them:
 *   - image rows replace the (√hidden-scaled) embeddings at image-token positions and are not scaled;
 *   - attention: a token of an image sees every token of the same image (a run of consecutive
 *     image tokens, HF's token_type_ids groups) in every layer, OR-ed with the causal or sliding
 *     rule; different images and text see each other causally. QEfficient lacks this term;
 *   - no final logit soft cap.
 */
import { type ArchSpec } from '../blocks/arch';
import { cacheContext } from '../blocks/attention';
import type { CacheContext } from '../blocks/attention-block';
import { groupMask, type WindowContext } from '../blocks/attention-window';
import { ctxSource } from '../blocks/layer-states';
import { reshape, unsqueeze, weight, type Ctx } from '../blocks/ops';
import { TensorDataType } from '../../formats/onnx/types';
import type { BuiltLanguage, LanguageOptions } from './language';
import { finishLlavaLanguage, llavaLanguageInputs } from './language-llava';
import { refuse } from '../families/config';
import { gemma3Arch } from '../families/gemma3';

/** What the Gemma 3 language graph needs besides the text architecture. */
export interface Gemma3LanguageArch {
  text: ArchSpec;
  imageTokenId: number;
  mmTokens: number;
}

/** Gemma3TextConfig's defaults for the fields the llama-like parser requires (configuration_gemma3.py). */
const GEMMA3_TEXT_DEFAULTS = {
  vocab_size: 262208,
  hidden_size: 2304,
  intermediate_size: 9216,
  num_hidden_layers: 26,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  rms_norm_eps: 1e-6,
  tie_word_embeddings: true,
};

/** Key strings of the gemma3_text architecture (`model.*`) moved under the multimodal checkpoint's `language_model.`. */
function rekey<T>(x: T): T {
  if (typeof x === 'string') return (x.startsWith('model.') ? `language_model.${x}` : x) as T;
  if (Array.isArray(x)) return x.map(rekey) as T;
  // rope specs are shared by identity (one cos/sin table per spec): keep them as they are
  if (x && typeof x === 'object' && !('invFreq' in x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, rekey(v)])) as T;
  return x;
}

/**
 * The text architecture of a Gemma 3 VLM config.json: gemma3_text over `text_config` (Gemma3Config
 * defaults for the multimodal fields), keys under `language_model.model.*`, no final soft cap
 * (Gemma3ForConditionalGeneration's forward never applies it).
 */
export function gemma3LanguageArch(raw: Record<string, unknown>, file: string): Gemma3LanguageArch {
  const tc = (raw.text_config ?? {}) as Record<string, unknown>;
  // Gemma3Config builds Gemma3TextConfig(**text_config): the published configs (gemma-3-27b) leave these to its defaults
  const { finalSoftcap: _cap, ...text } = gemma3Arch({ ...GEMMA3_TEXT_DEFAULTS, ...tc, model_type: 'gemma3_text' }, file);
  const mm = raw.mm_tokens_per_image ?? 256;
  const image = raw.image_token_index ?? raw.image_token_id ?? 262144;
  if (typeof mm !== 'number' || !Number.isInteger(mm) || mm <= 0) refuse(file, 'mm_tokens_per_image', 'must be a positive integer');
  if (typeof image !== 'number' || !Number.isInteger(image) || image < 0)
    refuse(file, 'image_token_index', 'must be a non-negative integer');
  return { text: rekey(text), imageTokenId: image as number, mmTokens: mm as number };
}

/** Builds the language graph. */
export function buildGemma3Language(arch: Gemma3LanguageArch, o: LanguageOptions): BuiltLanguage {
  const a = arch.text;
  const f = llavaLanguageInputs(a, o);
  const { g, c, H, inputIds, visionEmbeds, positionIds, imageIdx, batchIndex, states, declared, ccl } = f;

  const merged = g.within('embed', () => {
    let e = g.op('Gather', [weight(c, a.embed, [a.vocab, H]), inputIds], { axis: 0 }); // [B,S,H]
    if (a.embedScale !== undefined) e = g.op('Mul', [e, g.scalar(o.dtype, a.embedScale, 'embed_scale')]);
    const selected = g.op('Equal', [inputIds, g.int(arch.imageTokenId)]); // [B,S]
    const isImg = g.op('Cast', [selected], { to: TensorDataType.INT64 });
    const n = g.op('Sub', [g.op('CumSum', [isImg, g.int(1)]), g.int(1)]);
    const idx = g.op('Where', [selected, g.op('Add', [n, reshape(c, imageIdx, [])]), g.int(-1)]); // [B,S]
    const safe = g.op('Max', [idx, g.int(0)]);
    const rows = g.op('Gather', [reshape(c, visionEmbeds, [-1, H]), safe], { axis: 0 }); // [B,S,H]
    const withImage = g.op('Where', [unsqueeze(c, selected, [-1]), rows, e]);
    const seqIsOne = g.op('Equal', [g.op('Gather', [g.op('Shape', [inputIds]), g.int(1)], { axis: 0 }), g.int(1)]);
    const embeds = g.op('Where', [seqIsOne, e, withImage]);
    const [top] = g.opN('TopK', [reshape(c, idx, [-1]), g.ints([1], 'k')], { axis: 0, largest: 1, sorted: 1 }, 2);
    const imageIdxOut = reshape(c, g.op('Add', [top!, g.int(1)]), [1, 1]);
    // image groups: runs of consecutive image tokens (HF: new_image_start = is_image ∧ ¬previous is_image)
    const prev = g.op(
      'Concat',
      [
        g.op('Mul', [g.op('Slice', [isImg, g.ints([0]), g.ints([1]), g.ints([1])]), g.int(0)]),
        g.op('Slice', [isImg, g.ints([0]), g.ints([-1]), g.ints([1])]),
      ],
      { axis: 1 },
    );
    const start = g.op('Mul', [isImg, g.op('Sub', [g.int(1), prev])]);
    const group = g.op('Where', [selected, g.op('CumSum', [start, g.int(1)]), g.int(0)]); // [B,S]: 1-based image group, 0 for text
    return { embeds, imageIdxOut, group };
  });

  const h = reshape(c, merged.embeds, [-1, H]);
  const base = cacheContext(c, a, inputIds, positionIds, ctxSource(states, declared), batchIndex, ccl);
  const kv = g.within('image_mask', () => bidirectional(c, a, base, positionIds, merged.group, ctxSource(states, declared)));
  return finishLlavaLanguage(f, a, h, merged.imageIdxOut, kv, { 'weight_spec.model_type': 'gemma3' }, 'gemma3-language', o);
}

/**
 * The cache context with every layer's mask OR-ed with "same image": query s (image group
 * gs > 0) may read slot j when the token written there in this call has group gs. A slot's group
 * comes from the input token whose position is j (one per slot); slots written by earlier calls
 * get 0, which is right: images arrive whole in one prefill, and later tokens are text.
 */
function bidirectional(c: Ctx, a: ArchSpec, kv: CacheContext, positionIds: string, group: string, pastKey0: string): CacheContext {
  const g = c.g;
  // CCL: the layer masks span the R slots attention reads (attention.ts readLen), so this one does too
  const ctxLen = kv.readLen ? reshape(c, kv.readLen, []) : g.op('Gather', [g.op('Shape', [pastKey0]), g.int(2)], { axis: 0 });
  const slots = unsqueeze(c, g.op('Range', [g.int(0), ctxLen, g.int(1)]), [0, 1]); // [1,1,C]
  const at = g.op('Cast', [g.op('Equal', [unsqueeze(c, positionIds, [-1]), slots])], { to: TensorDataType.FLOAT }); // [B,S,C]
  const gf = unsqueeze(c, g.op('Cast', [group], { to: TensorDataType.FLOAT }), [1]); // [B,1,S]
  const slotGroup = g.op('MatMul', [gf, at]); // [B,1,C]: exact (one 1 per column, small integers)
  const qg = reshape(c, gf, [0, -1, 1]); // [B,S,1]
  const same = g.op('And', [g.op('Greater', [qg, g.scalar('float32', 0, 'zero_f')]), g.op('Equal', [qg, slotGroup])]); // [B,S,C]
  let extra = unsqueeze(c, same, [1]); // [B,1,S,C]
  const groups = a.nHeads / a.nKv;
  if (groups > 1) extra = g.op('Tile', [extra, g.ints([1, 1, groups, 1])]);
  const memo = new Map<number | undefined, string>();
  const maskFor = (w: number | undefined) => {
    const hit = memo.get(w);
    if (hit) return hit;
    const m = g.op('Or', [kv.maskFor(w), extra]);
    memo.set(w, m);
    return m;
  };
  // ring layers (--sliding-cache window) read [ring ‖ the call's keys]: ring slots hold earlier
  // calls' tokens (group 0), the call's keys carry their own token's group
  const rings = new Map<number, WindowContext>();
  const windowFor = (w: number): WindowContext => {
    const hit = rings.get(w);
    if (hit) return hit;
    const base = kv.windowFor(w);
    const sameCall = g.op('And', [g.op('Greater', [qg, g.scalar('float32', 0, 'zero_f')]), g.op('Equal', [qg, gf])]); // [B,S,S]
    const none = g.op('Expand', [g.constant('bool', [1, 1, 1], [0], 'no'), g.op('Concat', [kv.bs, g.ints([w])], { axis: 0 })]); // [B,S,W]
    const ring = { ...base, mask: g.op('Or', [base.mask, groupMask(c, a, g.op('Concat', [none, sameCall], { axis: 2 }))]) };
    rings.set(w, ring);
    return ring;
  };
  return { ...kv, mask: maskFor(a.slidingWindow), maskFor, windowFor };
}
