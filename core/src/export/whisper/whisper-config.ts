/**
 * Whisper's config.json → the sizes its two graphs are built from. Field names and defaults
 * follow Hugging Face `models/whisper/configuration_whisper.py` (WhisperConfig); the math they
 * drive is `modeling_whisper.py` (see whisper-graphs.ts). Anything the graphs do not implement
 * is refused by name, never approximated.
 */
import { z } from 'zod';
import type { Act } from '../blocks/arch';
import { actOf, parseWith, refuse } from '../families/config';

/** The model type `export --config` builds as an encoder graph and a decoder graph. */
export const WHISPER_MODEL_TYPE = 'whisper';

const pos = z.number().int().positive();
const whisperSchema = z.looseObject({
  model_type: z.literal(WHISPER_MODEL_TYPE),
  vocab_size: pos.default(51865),
  num_mel_bins: pos.default(80),
  d_model: pos.default(384),
  encoder_layers: pos.default(4),
  encoder_attention_heads: pos.default(6),
  encoder_ffn_dim: pos.default(1536),
  decoder_layers: pos.default(4),
  decoder_attention_heads: pos.default(6),
  decoder_ffn_dim: pos.default(1536),
  activation_function: z.string().default('gelu'),
  max_source_positions: pos.default(1500),
  max_target_positions: pos.default(448),
  decoder_start_token_id: z.number().int().default(50257),
  eos_token_id: z.number().int().default(50256),
  tie_word_embeddings: z.boolean().default(true),
  use_weighted_layer_sum: z.boolean().default(false),
});

/** What the Whisper graphs need to know. */
export interface WhisperArch {
  vocab: number;
  numMel: number;
  dModel: number;
  encoder: { layers: number; heads: number; ffn: number };
  decoder: { layers: number; heads: number; ffn: number };
  act: Act;
  /** Encoder frames after the stride-2 convolution (= the encoder output length and cross-cache length). */
  maxSource: number;
  /** Rows of the decoder's position table (the most tokens a decode can hold). */
  maxTarget: number;
  decoderStart: number;
  eos: number;
  /** `proj_out.weight` is `model.decoder.embed_tokens.weight` (HF ties them unless tie_word_embeddings is false). */
  tied: boolean;
}

/** True when `raw` is a Whisper config. */
export function isWhisperConfig(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && (raw as { model_type?: unknown }).model_type === WHISPER_MODEL_TYPE;
}

/**
 * Parses a Whisper config. `keys` (the checkpoint's tensor keys, when there is one) decide the
 * head: a checkpoint without `proj_out.weight` is tied whatever the flag says (HF loads it so).
 */
export function whisperArchFromConfig(raw: unknown, file: string, keys?: ReadonlySet<string>): WhisperArch {
  const c = parseWith(whisperSchema, raw, file);
  for (const [heads, field] of [
    [c.encoder_attention_heads, 'encoder_attention_heads'],
    [c.decoder_attention_heads, 'decoder_attention_heads'],
  ] as const)
    if (c.d_model % heads !== 0) refuse(file, field, `(${heads}) does not divide d_model (${c.d_model})`);
  if (c.use_weighted_layer_sum) refuse(file, 'use_weighted_layer_sum', 'is true (the audio-classification head)');
  const tied = keys && !keys.has('proj_out.weight') ? true : c.tie_word_embeddings;
  return {
    vocab: c.vocab_size,
    numMel: c.num_mel_bins,
    dModel: c.d_model,
    encoder: { layers: c.encoder_layers, heads: c.encoder_attention_heads, ffn: c.encoder_ffn_dim },
    decoder: { layers: c.decoder_layers, heads: c.decoder_attention_heads, ffn: c.decoder_ffn_dim },
    act: actOf(c.activation_function, file, 'activation_function'),
    maxSource: c.max_source_positions,
    maxTarget: c.max_target_positions,
    decoderStart: c.decoder_start_token_id,
    eos: c.eos_token_id,
    tied,
  };
}
