/**
 * config.json of an encoder-only embedding model (BERT, XLM-RoBERTa) → {@link EncoderArch}.
 * Field defaults are the HF config classes' (`BertConfig`, `XLMRobertaConfig`); parameter
 * paths are `BertModel`'s / `XLMRobertaModel`'s (`embeddings.word_embeddings.weight`,
 * `encoder.layer.{i}.attention.self.query.weight`, …), as `QEFFAutoModel` (an `AutoModel`)
 * names them. What the graph would compute differently (relative position embeddings, a
 * decoder configuration, cross-attention) is refused with one line naming the file and field.
 *
 * Sources: transformers `models/bert/modeling_bert.py`, `configuration_bert.py`,
 * `models/xlm_roberta/modeling_xlm_roberta.py` (commit 015bfeb8), QEfficient
 * `QEfficient/transformers/models/bert/modeling_bert.py` (ebf55e81: the encoder path keeps
 * HF's additive padding mask).
 */
import { z } from 'zod';
import { FormatError } from '../../errors';
import type { Act } from '../blocks/arch';
import { actOf, parseWith, refuse } from '../families/config';

/** model_type → the HF base class and how its positions are made. */
const ENCODERS = {
  bert: { hfClass: 'BertModel', defaultPad: 0, positions: 'arange' },
  'xlm-roberta': { hfClass: 'XLMRobertaModel', defaultPad: 1, positions: 'from-input-ids' },
  // XLM-RoBERTa's modeling is "Copied from transformers.models.roberta.modeling_roberta": the same math
  roberta: { hfClass: 'RobertaModel', defaultPad: 1, positions: 'from-input-ids' },
} as const;

/** The encoder model types `export --config` builds as embedding graphs. */
export const EMBEDDING_MODEL_TYPES = Object.keys(ENCODERS) as readonly EncoderType[];
/** The Hugging Face class of each (the docs' model table). */
export const EMBEDDING_HF_CLASSES: Readonly<Record<EncoderType, string>> = Object.fromEntries(
  EMBEDDING_MODEL_TYPES.map((t) => [t, ENCODERS[t].hfClass]),
) as Record<EncoderType, string>;
/** One of them. */
export type EncoderType = keyof typeof ENCODERS;

/** True when a config.json object names an embedding encoder model type. */
export function isEmbeddingConfig(raw: unknown): boolean {
  const t = (raw as { model_type?: unknown } | null)?.model_type;
  return typeof t === 'string' && t in ENCODERS;
}

const int = z.number().int().positive();
const encoderConfig = z.looseObject({
  model_type: z.string(),
  vocab_size: int.optional(),
  hidden_size: int.optional(),
  num_hidden_layers: int.optional(),
  num_attention_heads: int.optional(),
  intermediate_size: int.optional(),
  hidden_act: z.string().optional(),
  max_position_embeddings: int.optional(),
  type_vocab_size: z.number().int().nonnegative().optional(),
  layer_norm_eps: z.number().finite().positive().optional(),
  pad_token_id: z.number().int().nonnegative().nullable().optional(),
  position_embedding_type: z.string().nullable().optional(),
  is_decoder: z.boolean().optional(),
  add_cross_attention: z.boolean().optional(),
});

/** What the encoder graph is built from. */
export interface EncoderArch {
  modelType: EncoderType;
  /** The HF class QEfficient wraps (the spec's model_name when config.json names none). */
  hfClass: string;
  vocab: number;
  hidden: number;
  heads: number;
  headDim: number;
  layers: number;
  intermediate: number;
  act: Act;
  eps: number;
  maxPositions: number;
  /** `type_vocab_size` (≥ 1: the embeddings add a token type row for every token). */
  typeVocab: number;
  padId: number;
  /**
   * BERT: positions 0…S-1 (the `position_ids` buffer). XLM-RoBERTa: HF
   * `create_position_ids_from_input_ids`: cumsum(ids != pad) · (ids != pad) + pad, so real
   * tokens start at pad + 1 and padding sits at pad.
   */
  positions: 'arange' | 'from-input-ids';
}

/** Parses config.json into the encoder's architecture. */
export function encoderArchFromConfig(raw: unknown, file: string): EncoderArch {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new FormatError(file, 'not a JSON object');
  const c = parseWith(encoderConfig, raw, file);
  const row = ENCODERS[c.model_type as EncoderType];
  if (!row) throw new FormatError(file, `model_type "${c.model_type}" is not an embedding encoder (${EMBEDDING_MODEL_TYPES.join(', ')})`);
  const pet = c.position_embedding_type ?? 'absolute';
  if (pet !== 'absolute') refuse(file, 'position_embedding_type', `is "${pet}" (only absolute position embeddings are built)`);
  if (c.is_decoder) refuse(file, 'is_decoder', 'is true (an embedding graph is a bidirectional encoder)');
  if (c.add_cross_attention) refuse(file, 'add_cross_attention', 'is true (an embedding graph has no cross-attention)');
  const hidden = c.hidden_size ?? 768;
  const heads = c.num_attention_heads ?? 12;
  if (hidden % heads !== 0) refuse(file, 'hidden_size', `(${hidden}) is not divisible by num_attention_heads (${heads})`);
  const typeVocab = c.type_vocab_size ?? 2;
  if (typeVocab < 1) refuse(file, 'type_vocab_size', 'is 0 (the embeddings always add a token type row)');
  const maxPositions = c.max_position_embeddings ?? 512;
  const padId = c.pad_token_id ?? row.defaultPad;
  if (row.positions === 'from-input-ids' && padId + 1 >= maxPositions)
    refuse(file, 'pad_token_id', `(${padId}) leaves no position row after padding_idx (max_position_embeddings ${maxPositions})`);
  return {
    modelType: c.model_type as EncoderType,
    hfClass: row.hfClass,
    vocab: c.vocab_size ?? 30522,
    hidden,
    heads,
    headDim: hidden / heads,
    layers: c.num_hidden_layers ?? 12,
    intermediate: c.intermediate_size ?? 3072,
    act: actOf(c.hidden_act ?? 'gelu', file, 'hidden_act'),
    eps: c.layer_norm_eps ?? 1e-12,
    maxPositions,
    typeVocab,
    padId,
    positions: row.positions,
  };
}

/** Longest sequence the graph can embed: XLM-RoBERTa's positions start after padding_idx. */
export function maxSequence(a: EncoderArch): number {
  return a.positions === 'arange' ? a.maxPositions : a.maxPositions - a.padId - 1;
}
