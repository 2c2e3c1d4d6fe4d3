/**
 * A WAV reader for `run --audio`: RIFF/WAVE with a `fmt ` chunk of PCM 16-bit (format 1) or IEEE
 * float 32-bit (format 3, or WAVE_FORMAT_EXTENSIBLE with one of those subformats), one channel,
 * at the rate the model's feature extractor wants. Anything else is one {@link FormatError}
 * naming the file and, where the fault sits in the bytes, the byte offset; a different rate is
 * refused with the rate (no resampling: the tool does not guess a filter). The file is read
 * through the project's input read policy (`paths/`: regular files only, never a FIFO or device).
 */
import { FormatError } from '../../errors';
import { readRegularFileSync } from '../../paths';

/** A decoded mono waveform in [-1, 1] (PCM 16 divided by 32768, as soundfile / librosa do). */
export interface Waveform {
  samples: Float32Array;
  sampleRate: number;
}

const PCM = 1;
const FLOAT = 3;
const EXTENSIBLE = 0xfffe;

/** Decodes WAV bytes (`file` names them in errors). `expectRate` refuses any other sample rate. */
export function decodeWav(bytes: Uint8Array, file: string, expectRate?: number): Waveform {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  if (bytes.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new FormatError(file, 'not a WAV file (no RIFF/WAVE header)', 0);
  let fmt: { format: number; channels: number; rate: number; bits: number; at: number } | undefined;
  let at = 12;
  while (at + 8 <= bytes.length) {
    const id = tag(at);
    const size = v.getUint32(at + 4, true);
    const body = at + 8;
    if (body + size > bytes.length) throw new FormatError(file, `chunk "${id}" of ${size} bytes runs past the end of the file`, at);
    if (id === 'fmt ') {
      if (size < 16) throw new FormatError(file, `fmt chunk of ${size} bytes (at least 16 expected)`, at);
      let format = v.getUint16(body, true);
      // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the subformat GUID
      if (format === EXTENSIBLE && size >= 40) format = v.getUint16(body + 24, true);
      fmt = { format, channels: v.getUint16(body + 2, true), rate: v.getUint32(body + 4, true), bits: v.getUint16(body + 14, true), at };
    } else if (id === 'data') {
      if (!fmt) throw new FormatError(file, 'data chunk before the fmt chunk', at);
      return decodeData(bytes.subarray(body, body + size), fmt, file, body, expectRate);
    }
    at = body + size + (size & 1); // chunks are padded to an even length
  }
  throw new FormatError(file, fmt ? 'no data chunk' : 'no fmt chunk', at);
}

function decodeData(
  data: Uint8Array,
  f: { format: number; channels: number; rate: number; bits: number; at: number },
  file: string,
  body: number,
  expectRate: number | undefined,
): Waveform {
  const kind = f.format === PCM && f.bits === 16 ? 'pcm16' : f.format === FLOAT && f.bits === 32 ? 'f32' : undefined;
  if (!kind)
    throw new FormatError(
      file,
      `unsupported sample format (format ${f.format}, ${f.bits} bits): 16-bit PCM or 32-bit float expected`,
      f.at + 8,
    );
  if (f.channels !== 1) throw new FormatError(file, `${f.channels} channels: mono audio expected`, f.at + 10);
  if (expectRate !== undefined && f.rate !== expectRate)
    throw new FormatError(
      file,
      `sample rate ${f.rate} Hz: the model's feature extractor wants ${expectRate} Hz (resample the file first)`,
      f.at + 12,
    );
  const width = kind === 'pcm16' ? 2 : 4;
  if (data.length % width !== 0) throw new FormatError(file, `data chunk of ${data.length} bytes is not whole ${width}-byte samples`, body);
  const n = data.length / width;
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = kind === 'pcm16' ? v.getInt16(2 * i, true) / 32768 : v.getFloat32(4 * i, true);
  return { samples, sampleRate: f.rate };
}

/** Reads and decodes a WAV file through the input read policy. */
export function readWav(file: string, expectRate?: number): Waveform {
  let bytes: Uint8Array;
  try {
    bytes = readRegularFileSync(file);
  } catch (e) {
    throw e instanceof FormatError ? e : new FormatError(file, `cannot read: ${(e as Error).message.split('\n')[0]}`);
  }
  return decodeWav(bytes, file, expectRate);
}

/** Encodes a mono waveform as a WAV file (`pcm16` or `f32`): what tests and tools feed `run --audio`. */
export function encodeWav(samples: ArrayLike<number>, sampleRate: number, kind: 'pcm16' | 'f32'): Uint8Array {
  const width = kind === 'pcm16' ? 2 : 4;
  const dataBytes = samples.length * width;
  const out = new Uint8Array(44 + dataBytes);
  const v = new DataView(out.buffer);
  const put = (at: number, s: string) => [...s].forEach((ch, k) => (out[at + k] = ch.charCodeAt(0)));
  put(0, 'RIFF');
  v.setUint32(4, 36 + dataBytes, true);
  put(8, 'WAVE');
  put(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, kind === 'pcm16' ? PCM : FLOAT, true);
  v.setUint16(22, 1, true);
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * width, true);
  v.setUint16(32, width, true);
  v.setUint16(34, width * 8, true);
  put(36, 'data');
  v.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) {
    const x = samples[i]!;
    if (kind === 'f32') v.setFloat32(44 + 4 * i, x, true);
    else v.setInt16(44 + 2 * i, Math.max(-32768, Math.min(32767, Math.round(x * 32768))), true);
  }
  return out;
}
