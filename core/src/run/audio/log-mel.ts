/**
 * Whisper's log-mel features in TypeScript, ported from Hugging Face transformers
 * `models/whisper/feature_extraction_whisper.py` (`WhisperFeatureExtractor._np_extract_fbank_features`)
 * and `audio_utils.py` (`mel_filter_bank`, `hertz_to_mel` / `mel_to_hertz` with the Slaney scale,
 * `window_function(…, "hann")`, `spectrogram`), transformers v4.57:
 *   waveform (float32) right-padded with 0 or truncated to `n_samples`;
 *   STFT: centered frames (reflect padding of n_fft/2), periodic Hann window of n_fft, hop
 *   `hop_length`, one-sided |rfft|² (power 2);
 *   mel = max(1e-10, filters · power); log10; the last frame dropped;
 *   x = max(x, max(x) − 8); (x + 4) / 4.
 * Computed in float64 (numpy's default), returned as float32 `[num_mel_bins, frames]`.
 */

/** The extractor's settings (preprocessor_config.json's names). */
export interface FeatureExtractorConfig {
  featureSize: number;
  samplingRate: number;
  nFft: number;
  hopLength: number;
  nSamples: number;
}

/** HF `hertz_to_mel(freq, mel_scale="slaney")`: linear below 1 kHz, logarithmic above. */
export function hertzToMelSlaney(freq: number): number {
  const minLogHertz = 1000;
  const minLogMel = 15;
  const logstep = 27 / Math.log(6.4);
  return freq >= minLogHertz ? minLogMel + Math.log(freq / minLogHertz) * logstep : (3 * freq) / 200;
}

/** HF `mel_to_hertz(mels, mel_scale="slaney")`. */
export function melToHertzSlaney(mels: number): number {
  const minLogHertz = 1000;
  const minLogMel = 15;
  const logstep = Math.log(6.4) / 27;
  return mels >= minLogMel ? minLogHertz * Math.exp(logstep * (mels - minLogMel)) : (200 * mels) / 3;
}

/** numpy `linspace(a, b, n)` (endpoint included; the last value exactly b). */
function linspace(a: number, b: number, n: number): number[] {
  const step = (b - a) / (n - 1);
  return Array.from({ length: n }, (_, i) => (i === n - 1 ? b : a + i * step));
}

/**
 * HF `mel_filter_bank(num_frequency_bins, num_mel_filters, min_frequency=0, max_frequency,
 * sampling_rate, norm="slaney", mel_scale="slaney")`: `[num_frequency_bins][num_mel_filters]`,
 * triangles between neighbouring mel points over linear FFT frequencies, each scaled by
 * 2 / (its band's width in Hz).
 */
export function melFilterBank(
  numFrequencyBins: number,
  numMel: number,
  minFrequency: number,
  maxFrequency: number,
  samplingRate: number,
): Float64Array[] {
  const mels = linspace(hertzToMelSlaney(minFrequency), hertzToMelSlaney(maxFrequency), numMel + 2);
  const filterFreqs = mels.map(melToHertzSlaney);
  const fftFreqs = linspace(0, Math.floor(samplingRate / 2), numFrequencyBins);
  const diff = filterFreqs.slice(1).map((f, i) => f - filterFreqs[i]!);
  return fftFreqs.map((f) => {
    const row = new Float64Array(numMel);
    for (let m = 0; m < numMel; m++) {
      const down = -(filterFreqs[m]! - f) / diff[m]!;
      const up = (filterFreqs[m + 2]! - f) / diff[m + 1]!;
      const enorm = 2 / (filterFreqs[m + 2]! - filterFreqs[m]!);
      row[m] = Math.max(0, Math.min(down, up)) * enorm;
    }
    return row;
  });
}

/** HF `window_function(n, "hann")` (periodic): `np.hanning(n + 1)[:-1]`. */
export function periodicHann(n: number): Float64Array {
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) w[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n);
  return w;
}

/** Right-pads with 0 or truncates to `n` samples (the extractor's `padding="max_length"`, truncation on). */
export function padOrTruncate(x: ArrayLike<number>, n: number): Float64Array {
  const out = new Float64Array(n);
  const m = Math.min(n, x.length);
  // float32 first: the extractor takes np.asarray(raw_speech, dtype=np.float32)
  for (let i = 0; i < m; i++) out[i] = Math.fround(x[i]!);
  return out;
}

/**
 * A mixed-radix (2, 3, 5, then any prime) decimation-in-time FFT of a real input of length `n`
 * (n_fft = 400 = 2⁴·5² is not a power of two): `(x, re, im)` writes X[k] = Σ x[j]·e^(−2πi·jk/n).
 * Exact to float64 rounding, as numpy's rfft; O(n·Σ factors) instead of the DFT's O(n²).
 */
export function mixedRadixFft(n: number): (x: Float64Array, re: Float64Array, im: Float64Array) => void {
  const cos = Float64Array.from({ length: n }, (_, j) => Math.cos((2 * Math.PI * j) / n));
  const sin = Float64Array.from({ length: n }, (_, j) => Math.sin((2 * Math.PI * j) / n));
  const factorOf = (m: number) => [2, 3, 5].find((p) => m % p === 0) ?? smallestFactor(m);
  const tr = new Float64Array(n);
  const ti = new Float64Array(n);
  const rec = (x: Float64Array, off: number, stride: number, m: number, re: Float64Array, im: Float64Array, out: number): void => {
    if (m === 1) {
      re[out] = x[off]!;
      im[out] = 0;
      return;
    }
    const p = factorOf(m);
    const q = m / p;
    for (let r = 0; r < p; r++) rec(x, off + r * stride, stride * p, q, re, im, out + r * q);
    // X[k + q·s] = Σ_r Y_r[k]·W_m^(r·(k + q·s)), W_m^j = e^(−2πi·j/m) = table[j·(n/m) mod n]
    const step = n / m;
    for (let k = 0; k < q; k++) {
      for (let r = 0; r < p; r++) {
        tr[r] = re[out + r * q + k]!;
        ti[r] = im[out + r * q + k]!;
      }
      for (let s = 0; s < p; s++) {
        const kk = k + q * s;
        let sr = 0;
        let si = 0;
        // j = r·kk·step mod n, stepped without a division
        const inc = (kk * step) % n;
        for (let r = 0, j = 0; r < p; r++) {
          const c = cos[j]!;
          const sn = sin[j]!;
          // (a + ib)(c − i·sn)
          sr += tr[r]! * c + ti[r]! * sn;
          si += ti[r]! * c - tr[r]! * sn;
          j += inc;
          if (j >= n) j -= n;
        }
        re[out + kk] = sr;
        im[out + kk] = si;
      }
    }
  };
  return (x, re, im) => rec(x, 0, 1, n, re, im, 0);
}

function smallestFactor(m: number): number {
  for (let p = 7; p * p <= m; p += 2) if (m % p === 0) return p;
  return m;
}

/** The log-mel features `[featureSize][frames]` (frames = n_samples / hop) of one waveform. */
export function logMelFeatures(waveform: ArrayLike<number>, cfg: FeatureExtractorConfig): Float32Array[] {
  const { nFft, hopLength: hop, featureSize: nMel } = cfg;
  const x = padOrTruncate(waveform, cfg.nSamples);
  const half = Math.floor(nFft / 2);
  // np.pad(x, half, mode="reflect"): the edge sample is not repeated
  const padded = new Float64Array(x.length + 2 * half);
  padded.set(x, half);
  for (let i = 0; i < half; i++) {
    padded[half - 1 - i] = x[i + 1]!;
    padded[half + x.length + i] = x[x.length - 2 - i]!;
  }
  const frames = 1 + Math.floor((padded.length - nFft) / hop);
  const bins = half + 1;
  const window = periodicHann(nFft);
  const filters = melFilterBank(bins, nMel, 0, cfg.samplingRate / 2, cfg.samplingRate);
  const fft = mixedRadixFft(nFft);
  // each filter as its band [lo, hi) of bins and their weights, in bin order (the sum's order in the dense product)
  const lo = new Int32Array(nMel);
  const hi = new Int32Array(nMel);
  const weights: Float64Array[] = [];
  for (let m = 0; m < nMel; m++) {
    let a = 0;
    while (a < bins && filters[a]![m] === 0) a++;
    let b = bins;
    while (b > a && filters[b - 1]![m] === 0) b--;
    lo[m] = a;
    hi[m] = b;
    weights.push(Float64Array.from({ length: b - a }, (_, i) => filters[a + i]![m]!));
  }
  const kept = frames - 1; // log_spec[:, :-1]
  const logSpec = Array.from({ length: nMel }, () => new Float64Array(kept));
  const buf = new Float64Array(nFft);
  const re = new Float64Array(nFft);
  const im = new Float64Array(nFft);
  const power = new Float64Array(bins);
  let max = -Infinity;
  for (let t = 0; t < kept; t++) {
    for (let n = 0; n < nFft; n++) buf[n] = padded[t * hop + n]! * window[n]!;
    fft(buf, re, im);
    for (let k = 0; k < bins; k++) power[k] = re[k]! * re[k]! + im[k]! * im[k]!;
    for (let m = 0; m < nMel; m++) {
      let s = 0;
      // the triangle's nonzero bins only (the zeros add nothing)
      const w = weights[m]!;
      for (let k = lo[m]!, i = 0; k < hi[m]!; k++, i++) s += w[i]! * power[k]!;
      const v = Math.log10(Math.max(1e-10, s));
      logSpec[m]![t] = v;
      if (v > max) max = v;
    }
  }
  return logSpec.map((row) => Float32Array.from(row, (v) => (Math.max(v, max - 8) + 4) / 4));
}
