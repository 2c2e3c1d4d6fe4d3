/**
 * `<out>/whisper.json`: what ties a Whisper export's two graph folders (`encoder/`, `decoder/`)
 * together — export writes it last; `compile`, `run`, `check` and the editor read it. It carries
 * the feature extractor's settings (preprocessor_config.json's, so `run --audio` needs no model
 * folder) and the decoder's token ids. The one reader and writer, through the zod schema.
 */
import path from 'node:path';
import { z } from 'zod';
import { FormatError } from '../errors';
import { EXPORT_DTYPES } from '../formats/dtype';
import { readRegularFileSync } from '../paths';
import { WHISPER_MANIFEST_FILE } from '../spec/file-names';

const int = z.number().int();
const pos = int.positive();

const whisperSchema = z.object({
  tool: z.literal('weight-spec export'),
  kind: z.literal('whisper'),
  model_type: z.literal('whisper'),
  config: z.string(),
  graphs: z.object({ encoder: z.string(), decoder: z.string() }),
  feature_extractor: z.object({
    feature_size: pos,
    sampling_rate: pos,
    n_fft: pos,
    hop_length: pos,
    n_samples: pos,
  }),
  num_mel_bins: pos,
  max_source_positions: pos,
  max_target_positions: pos,
  d_model: pos,
  decoder_layers: pos,
  decoder_attention_heads: pos,
  vocab_size: pos,
  decoder_start_token_id: int,
  eos_token_id: int,
  dtype: z.enum(EXPORT_DTYPES),
  /** config.json's `torch_dtype` (or `dtype`): QEfficient's qaic custom-IO dtype comes from it (absent: float32). */
  torch_dtype: z.string().optional(),
});

/** What `<out>/whisper.json` holds. */
export type WhisperManifest = z.infer<typeof whisperSchema>;

/** Reads and checks `<dir>/whisper.json` (one FormatError naming the file). */
export function readWhisperManifest(dir: string): WhisperManifest {
  const file = path.join(dir, WHISPER_MANIFEST_FILE);
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularFileSync(file, 'utf8'));
  } catch (e) {
    throw new FormatError(file, `cannot read: ${(e as Error).message.split('\n')[0]}`);
  }
  const r = whisperSchema.safeParse(raw);
  if (!r.success) throw new FormatError(file, 'not a weight-spec Whisper export manifest (kind "whisper", graphs, feature extractor)');
  const m = r.data;
  for (const g of [m.graphs.encoder, m.graphs.decoder])
    if (g.includes('/') || g.includes('\\') || g === '..' || g === '.' || g === '')
      throw new FormatError(file, `graph directory "${g}" must be a plain name`);
  return m;
}

/** The text export writes as whisper.json. */
export function whisperManifestText(m: WhisperManifest): string {
  return JSON.stringify(m, null, 2) + '\n';
}
