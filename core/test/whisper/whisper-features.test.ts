/**
 * Whisper's feature extractor in TypeScript (run/audio/log-mel.ts, a port of Hugging Face
 * transformers v4.57 `feature_extraction_whisper.py` `_np_extract_fbank_features` and
 * `audio_utils.py` `mel_filter_bank` / `spectrogram`) against the fixture's reference.json, which
 * holds HF's own `mel_filters` and `input_features` of the raw waveform; and the WAV reader
 * (run/audio/wav.ts): 16-bit PCM and 32-bit float mono, other rates and malformed files refused
 * with one line naming the file (and the byte), FIFOs refused by the input read policy.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import {
  hertzToMelSlaney,
  logMelFeatures,
  melFilterBank,
  melToHertzSlaney,
  mixedRadixFft,
  periodicHann,
} from '../../src/run/audio/log-mel';
import { decodeWav, encodeWav, readWav } from '../../src/run/audio/wav';
import { FormatError } from '../../src/errors';

const tmp = tempDirs('ws-whisper-audio-');

interface AudioRef {
  audio: number[];
  sampling_rate: number;
  n_samples: number;
  input_features: number[][];
  mel_filters: number[][];
}
const ref = (): AudioRef => JSON.parse(fs.readFileSync(path.join(fixturesDir(), 'whisper', 'reference.json'), 'utf8')) as AudioRef;
const FE = { featureSize: 80, samplingRate: 16000, nFft: 400, hopLength: 160, nSamples: 16000 };

function maxDiff(a: ArrayLike<number>[], b: number[][]): number {
  let d = 0;
  b.forEach((row, i) => row.forEach((v, j) => (d = Math.max(d, Math.abs(a[i]![j]! - v)))));
  return d;
}

describeFixtures('Whisper log-mel features against Hugging Face (reference.json)', () => {
  it('the Slaney mel bank equals audio_utils.mel_filter_bank(norm="slaney", mel_scale="slaney")', () => {
    const r = ref();
    const bank = melFilterBank(201, 80, 0, 8000, 16000);
    expect(bank.length).toBe(r.mel_filters.length);
    expect(maxDiff(bank, r.mel_filters)).toBeLessThan(1e-9);
  });

  it('input_features of the raw waveform within 1e-4 (STFT, mel, log10, max−8 clamp, (x+4)/4)', () => {
    const r = ref();
    const f = logMelFeatures(r.audio, FE);
    expect([f.length, f[0]!.length]).toEqual([80, 100]);
    expect(maxDiff(f, r.input_features)).toBeLessThan(1e-4);
  });

  it('the same features from the WAV file (32-bit float exactly, 16-bit PCM within its quantization)', () => {
    const r = ref();
    const dir = tmp();
    const f32 = path.join(dir, 'a.wav');
    fs.writeFileSync(f32, encodeWav(r.audio, 16000, 'f32'));
    const w = readWav(f32, 16000);
    expect(w.samples.length).toBe(r.audio.length);
    expect(maxDiff(logMelFeatures(w.samples, FE), r.input_features)).toBeLessThan(1e-4);
    const p16 = path.join(dir, 'a16.wav');
    fs.writeFileSync(p16, encodeWav(r.audio, 16000, 'pcm16'));
    const w16 = readWav(p16, 16000);
    // 16-bit samples are k/32768: each within half a step of the waveform
    expect(Math.max(...Array.from(w16.samples, (x, i) => Math.abs(x - r.audio[i]!)))).toBeLessThanOrEqual(0.5 / 32768 + 1e-9);
  });

  it('a shorter audio is right-padded with zeros to n_samples before the STFT, a longer one truncated', () => {
    const r = ref();
    const short = r.audio.slice(0, 9000);
    const padded = [...short, ...new Array(16000 - 9000).fill(0)];
    expect(
      maxDiff(
        logMelFeatures(short, FE),
        logMelFeatures(padded, FE).map((x) => Array.from(x)),
      ),
    ).toBe(0);
    const long = [...r.audio, ...new Array(5000).fill(0.25)];
    expect(maxDiff(logMelFeatures(long, FE), r.input_features)).toBeLessThan(1e-4);
  });
});

describe('Whisper feature extractor pieces (numpy definitions)', () => {
  it('hann is periodic (np.hanning(n + 1)[:-1]) and the Slaney scale inverts', () => {
    const w = periodicHann(400);
    expect(w[0]).toBe(0);
    expect(w[200]).toBeCloseTo(1, 15);
    // periodic: w[k] = w[n - k]
    expect(w[1]).toBeCloseTo(w[399]!, 15);
    for (const hz of [0, 500, 1000, 4000, 8000]) expect(melToHertzSlaney(hertzToMelSlaney(hz))).toBeCloseTo(hz, 9);
    expect(hertzToMelSlaney(1000)).toBe(15);
  });

  it('the mixed-radix FFT equals the DFT sum Σ x[j]·e^(−2πi·jk/n) (n = 400, 512, 63, 98, a prime 13)', () => {
    for (const n of [400, 512, 63, 98, 13]) {
      const x = Float64Array.from({ length: n }, (_, j) => Math.sin(0.37 * j * j) + 0.1 * j);
      const re = new Float64Array(n);
      const im = new Float64Array(n);
      mixedRadixFft(n)(x, re, im);
      let d = 0;
      for (let k = 0; k < n; k++) {
        let r = 0;
        let i = 0;
        for (let j = 0; j < n; j++) {
          r += x[j]! * Math.cos((2 * Math.PI * j * k) / n);
          i -= x[j]! * Math.sin((2 * Math.PI * j * k) / n);
        }
        d = Math.max(d, Math.abs(r - re[k]!), Math.abs(i - im[k]!));
      }
      expect(d, `n = ${n}`).toBeLessThan(1e-9);
    }
  });

  it('128 mel bins: the bank has 128 triangles over 201 bins, each area-normalized (slaney)', () => {
    const bank = melFilterBank(201, 128, 0, 8000, 16000);
    expect(bank.length).toBe(201);
    expect(bank[0]!.length).toBe(128);
    // no empty filter at 16 kHz / n_fft 400 beyond the lowest few (HF warns for those)
    const nonEmpty = Array.from({ length: 128 }, (_, m) => bank.some((row) => row[m]! > 0)).filter(Boolean).length;
    expect(nonEmpty).toBeGreaterThan(100);
  });
});

describe('WAV reader', () => {
  const samples = [0, 0.5, -0.5, 0.25];
  it('reads 16-bit PCM and 32-bit float mono, and WAVE_FORMAT_EXTENSIBLE with either', () => {
    const pcm = decodeWav(encodeWav(samples, 16000, 'pcm16'), 'x.wav', 16000);
    expect(Array.from(pcm.samples)).toEqual(samples);
    const f = decodeWav(encodeWav(samples, 16000, 'f32'), 'x.wav');
    expect(Array.from(f.samples)).toEqual(samples);
    // extensible: fmt of 40 bytes, format 0xFFFE, subformat GUID starting with 3 (float)
    const plain = encodeWav(samples, 16000, 'f32');
    const ext = new Uint8Array(plain.length + 24);
    ext.set(plain.subarray(0, 20));
    const v = new DataView(ext.buffer);
    v.setUint32(16, 40, true);
    v.setUint16(20, 0xfffe, true);
    ext.set(plain.subarray(22, 36), 22);
    v.setUint16(36, 22, true); // cbSize
    v.setUint16(44, 3, true); // subformat
    ext.set(plain.subarray(36), 60);
    v.setUint32(4, ext.length - 8, true);
    expect(Array.from(decodeWav(ext, 'ext.wav').samples)).toEqual(samples);
  });

  it('another sample rate is refused with one line naming the file and the rate', () => {
    const bytes = encodeWav(samples, 44100, 'pcm16');
    expect(() => decodeWav(bytes, 'song.wav', 16000)).toThrow(FormatError);
    expect(() => decodeWav(bytes, 'song.wav', 16000)).toThrow(
      "song.wav: sample rate 44100 Hz: the model's feature extractor wants 16000 Hz (resample the file first) (at byte 24)",
    );
  });

  it('malformed files: one line naming the file and the byte', () => {
    const good = encodeWav(samples, 16000, 'pcm16');
    const cases: [Uint8Array, RegExp][] = [
      [new TextEncoder().encode('not a wav at all'), /^bad\.wav: not a WAV file \(no RIFF\/WAVE header\) \(at byte 0\)$/],
      [good.subarray(0, 46), /^bad\.wav: chunk "data" of 8 bytes runs past the end of the file \(at byte 36\)$/],
      [good.subarray(0, 36), /^bad\.wav: no data chunk \(at byte 36\)$/],
    ];
    const stereo = good.slice();
    new DataView(stereo.buffer).setUint16(22, 2, true);
    cases.push([stereo, /^bad\.wav: 2 channels: mono audio expected \(at byte 22\)$/]);
    const pcm24 = good.slice();
    new DataView(pcm24.buffer).setUint16(34, 24, true);
    cases.push([pcm24, /^bad\.wav: unsupported sample format \(format 1, 24 bits\): 16-bit PCM or 32-bit float expected \(at byte 20\)$/]);
    for (const [bytes, msg] of cases) {
      let err: unknown;
      try {
        decodeWav(bytes, 'bad.wav', 16000);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(FormatError);
      expect((err as Error).message).toMatch(msg);
      expect((err as Error).message).not.toContain('\n');
    }
  });

  it('a FIFO is refused by the input read policy before it is opened', () => {
    const fifo = path.join(tmp(), 'audio.wav');
    execFileSync('mkfifo', [fifo]);
    expect(() => readWav(fifo, 16000)).toThrow(/audio\.wav/);
  });
});
