/**
 * The encoder's input for `run <whisper export>`: log-mel features from a WAV file (audio/wav.ts
 * → audio/log-mel.ts with the export's feature-extractor settings) or read from a JSON file
 * holding `input_features` (`[num_mel_bins][frames]`, or `[1][num_mel_bins][frames]` as the
 * processor returns it) — e.g. a reference.json.
 */
import { FormatError } from '../../errors';
import { readRegularFileSync } from '../../paths';
import type { WhisperManifest } from '../../artifacts/whisper-manifest';
import { logMelFeatures } from '../audio/log-mel';
import { readWav } from '../audio/wav';
import type { MelFeatures } from './whisper-runner';

/** Features of a WAV file (its rate must be the extractor's `sampling_rate`). */
export function featuresFromWav(file: string, m: WhisperManifest): { features: MelFeatures; seconds: number } {
  const fe = m.feature_extractor;
  const wav = readWav(file, fe.sampling_rate);
  const features = logMelFeatures(wav.samples, {
    featureSize: fe.feature_size,
    samplingRate: fe.sampling_rate,
    nFft: fe.n_fft,
    hopLength: fe.hop_length,
    nSamples: fe.n_samples,
  });
  return { features, seconds: wav.samples.length / wav.sampleRate };
}

const isRow = (r: unknown): r is number[] => Array.isArray(r) && r.every((x) => typeof x === 'number' && Number.isFinite(x));

/** `input_features` of a JSON file. */
export function featuresFromJson(file: string): MelFeatures {
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularFileSync(file, 'utf8'));
  } catch (e) {
    throw e instanceof FormatError ? e : new FormatError(file, `cannot read: ${(e as Error).message.split('\n')[0]}`);
  }
  let f = (raw as { input_features?: unknown } | null)?.input_features;
  if (Array.isArray(f) && f.length === 1 && Array.isArray(f[0]) && Array.isArray(f[0][0])) f = f[0];
  if (!Array.isArray(f) || f.length === 0 || !f.every(isRow))
    throw new FormatError(file, '"input_features" must be a [num_mel_bins][frames] array of numbers');
  return f;
}
