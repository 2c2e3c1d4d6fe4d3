/**
 * Whisper configurations the fixture does not cover, on code-made checkpoints judged by a float64
 * forward written from Hugging Face's modeling_whisper.py (core/test/support/whisper-reference.ts):
 * 128 mel bins (large-v3's), an untied head (`proj_out.weight` of its own), encoder and decoder
 * with different head counts and depths, an audio shorter than n_samples (padded by the
 * extractor) and a six-token decoder prompt. `export --config → prepare → compile → run --audio`
 * gives the reference's greedy ids and the logits of prompt + generated[:-1] within 1e-4; ONNX's
 * checker passes on both graphs. A float16 export runs too (ids equal, logits within 2e-2).
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { Checkpoint } from '../../src/formats/safetensors';
import { toFloat32 } from '../../src/formats/float-convert';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { writeSafetensors } from '../../src/formats/safetensors';
import { logMelFeatures } from '../../src/run/audio/log-mel';
import { encodeWav } from '../../src/run/audio/wav';
import { rng } from '../../src/foundation/rng';
import {
  randomWhisperWeights,
  whisperDecoderLogits,
  whisperEncoder,
  whisperGreedy,
  type WhisperTestConfig,
} from '../support/whisper-reference';

const tmp = tempDirs('ws-whisper-synth-');

const CONFIG: WhisperTestConfig = {
  vocab_size: 50,
  num_mel_bins: 128,
  d_model: 32,
  encoder_layers: 2,
  encoder_attention_heads: 4,
  encoder_ffn_dim: 48,
  decoder_layers: 3,
  decoder_attention_heads: 2,
  decoder_ffn_dim: 40,
  max_source_positions: 10,
  max_target_positions: 24,
  tie_word_embeddings: false,
};
const FE = { featureSize: 128, samplingRate: 16000, nFft: 400, hopLength: 160, nSamples: 3200 };
const PROMPT = [45, 46, 3, 17, 48, 9];
const NEW = 4;

function maxDiff(a: number[][], b: number[][]): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  b.forEach((row, i) => row.forEach((v, j) => (d = Math.max(d, Math.abs(a[i]![j]! - v)))));
  return d;
}

describeFixtures('the float64 reference itself', () => {
  it("reproduces the fixture's HF logits and encoder output from its checkpoint (so it judges the code-made cases)", async () => {
    const dir = path.join(fixturesDir(), 'whisper');
    const ref = JSON.parse(fs.readFileSync(path.join(dir, 'reference.json'), 'utf8'));
    const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    const ck = await Checkpoint.open(dir);
    const weights = new Map<string, { shape: number[]; data: Float64Array }>();
    for (const key of ck.keys()) {
      const t = ck.get(key)!;
      weights.set(key, { shape: t.shape, data: Float64Array.from(toFloat32(await ck.read(key), t.dtype)) });
    }
    const c: WhisperTestConfig = { ...cfg, tie_word_embeddings: true };
    const enc = whisperEncoder(c, weights, ref.input_features);
    expect(
      maxDiff(
        enc.map((r) => Array.from(r)),
        ref.encoder_last_hidden_state,
      ),
    ).toBeLessThan(1e-4);
    const ids = [...ref.decoder_input_ids, ...ref.generated_ids.slice(0, -1)];
    expect(maxDiff(whisperDecoderLogits(c, weights, ids, enc), ref.logits)).toBeLessThan(1e-4);
    expect(whisperGreedy(c, weights, ref.decoder_input_ids, enc, ref.generated_ids.length)).toEqual(ref.generated_ids);
  });
});

describe('whisper: 128 mel bins, untied head, short audio, long prompt (float64 reference from HF modeling)', () => {
  let work: string;
  let expectIds: number[];
  let expectLogits: number[][];
  beforeAll(async () => {
    work = tmp();
    const model = path.join(work, 'model');
    fs.mkdirSync(model);
    const weights = randomWhisperWeights(CONFIG, 7);
    // 0.125 s of a chirp + noise: shorter than n_samples (0.2 s), so the extractor pads it
    const r = rng(3);
    const audio = Array.from({ length: 2000 }, (_, i) => Math.fround(0.4 * Math.sin(0.002 * i * i) + 0.05 * (r() - 0.5)));
    fs.writeFileSync(path.join(work, 'short.wav'), encodeWav(audio, 16000, 'f32'));
    const enc = whisperEncoder(CONFIG, weights, logMelFeatures(audio, FE));
    expectIds = whisperGreedy(CONFIG, weights, PROMPT, enc, NEW);
    expectLogits = whisperDecoderLogits(CONFIG, weights, [...PROMPT, ...expectIds.slice(0, -1)], enc);
    // an end token the greedy ids never reach, so run decodes all NEW tokens
    const eos = [...Array(CONFIG.vocab_size).keys()].find((t) => !expectIds.includes(t))!;
    fs.writeFileSync(
      path.join(model, 'config.json'),
      JSON.stringify({
        model_type: 'whisper',
        architectures: ['WhisperForConditionalGeneration'],
        ...CONFIG,
        decoder_start_token_id: 45,
        eos_token_id: eos,
      }),
    );
    fs.writeFileSync(
      path.join(model, 'preprocessor_config.json'),
      JSON.stringify({ feature_size: 128, sampling_rate: 16000, n_fft: 400, hop_length: 160, n_samples: 3200, chunk_length: 1 }),
    );
    await writeSafetensors(
      path.join(model, 'model.safetensors'),
      [...weights].map(([key, t]) => {
        const f = Float32Array.from(t.data);
        return { key, dtype: 'F32' as const, shape: t.shape, data: new Uint8Array(f.buffer) };
      }),
    );
    await cliStdout(work, 'export', '--config', 'model', '--out', 'wx');
    await cliStdout(work, 'prepare', '--checkpoint', 'model', '--dtype', 'float32');
    await cliStdout(work, 'compile', 'wx');
  }, 120_000);

  it('the untied head reads proj_out.weight; the encoder takes 128 mel bins', () => {
    const spec = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'decoder', 'weight_spec.json'), 'utf8'));
    expect(spec.inputs.map((i: { name: string }) => i.name)).toContain('proj_out.weight');
    const m = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'whisper.json'), 'utf8'));
    expect(m.num_mel_bins).toBe(128);
    expect(m.feature_extractor.n_samples).toBe(3200);
  });

  it('run --audio (padded by the extractor) with a six-token prompt: greedy ids and logits within 1e-4', async () => {
    const r = await cliInProcess(
      [
        'run',
        'wx',
        '--audio',
        'short.wav',
        '--decoder-input-ids',
        PROMPT.join(','),
        '--max-new-tokens',
        String(NEW),
        '--dump-logits',
        'l.json',
      ],
      { cwd: work },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(expectIds.join(','));
    const got = JSON.parse(fs.readFileSync(path.join(work, 'l.json'), 'utf8')).logits as number[][];
    expect(maxDiff(got, expectLogits)).toBeLessThan(1e-4);
  });

  it('a float16 export gives the same ids, logits within 2e-2', async () => {
    await cliStdout(work, 'export', '--config', 'model', '--out', 'wx16', '--dtype', 'float16');
    await cliStdout(work, 'prepare', '--checkpoint', 'model', '--dtype', 'float16');
    await cliStdout(work, 'compile', 'wx16');
    const r = await cliInProcess(
      [
        'run',
        'wx16',
        '--audio',
        'short.wav',
        '--decoder-input-ids',
        PROMPT.join(','),
        '--max-new-tokens',
        String(NEW),
        '--dump-logits',
        'l16.json',
      ],
      { cwd: work },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(expectIds.join(','));
    expect(maxDiff(JSON.parse(fs.readFileSync(path.join(work, 'l16.json'), 'utf8')).logits, expectLogits)).toBeLessThan(2e-2);
  });

  describeOnnxChecker('ONNX checker', () => {
    it('passes on the 128-mel encoder and the untied decoder', () => {
      expectOnnxValid(['encoder', 'decoder'].map((g) => path.join(work, 'wx', g, 'model.onnx')));
    });
  });
});
