/**
 * Whisper end to end on each BUILT_SPEECH fixture (whisper: the whisper-tiny layout, tied head, bf16 weights):
 * `export --config` writes `encoder/` + `decoder/` + whisper.json, `prepare` one checkpoint,
 * `compile` both graphs, and `run --audio` on a WAV file written from reference.json's raw
 * waveform reproduces `generated_ids` (stdout's first line) and the logits of prompt +
 * generated[:-1] within 1e-4 (`--dump-logits`); `--input-features reference.json` does too.
 * ONNX's checker passes on both graphs and both compiled artifacts; `check` and `inspect` take the
 * export directory as one export of two graphs; bad audio is one line naming the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess, cliStdout } from '../../../test/support/cli';
import { BUILT_SPEECH, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { encodeWav } from '../../src/run/audio/wav';
import { wordLevelTokenizer } from '../../../test/support/tokenizers';

const tmp = tempDirs('ws-whisper-cli-');

interface WhisperRef {
  audio: number[];
  decoder_input_ids: number[];
  generated_ids: number[];
  logits: number[][];
}

function maxDiff(a: number[][], b: number[][]): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  b.forEach((row, i) => row.forEach((v, j) => (d = Math.max(d, Math.abs(a[i]![j]! - v)))));
  return d;
}

for (const family of BUILT_SPEECH)
  describeFixtures(`${family}: export --config → prepare → compile → run --audio`, () => {
    let work: string;
    let ref: WhisperRef;
    beforeAll(async () => {
      work = tmp();
      fs.cpSync(path.join(fixturesDir(), family), path.join(work, 'model'), { recursive: true });
      for (const f of fs.readdirSync(path.join(work, 'model'))) fs.chmodSync(path.join(work, 'model', f), 0o644);
      ref = JSON.parse(fs.readFileSync(path.join(work, 'model', 'reference.json'), 'utf8')) as WhisperRef;
      await cliStdout(work, 'export', '--config', 'model', '--out', 'wx');
      await cliStdout(work, 'prepare', '--checkpoint', 'model', '--dtype', 'float32');
      await cliStdout(work, 'compile', 'wx');
      fs.writeFileSync(path.join(work, 'speech.wav'), encodeWav(ref.audio, 16000, 'f32'));
    }, 120_000);

    it('writes two graph folders and whisper.json (QEfficient names: input_features, past_key_self.i, past_value_cross.i, logits)', async () => {
      const m = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'whisper.json'), 'utf8'));
      expect(m.graphs).toEqual({ encoder: 'encoder', decoder: 'decoder' });
      expect(m.feature_extractor).toEqual({ feature_size: 80, sampling_rate: 16000, n_fft: 400, hop_length: 160, n_samples: 16000 });
      const enc = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'encoder', 'export-report.json'), 'utf8'));
      expect(enc.graph.inputs).toEqual(['input_features']);
      expect(enc.graph.outputs).toEqual(['encoder_hidden_states']);
      const dec = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'decoder', 'export-report.json'), 'utf8'));
      const states = [0, 1].flatMap((i) =>
        ['past_key_self', 'past_value_self', 'past_key_cross', 'past_value_cross'].map((k) => `${k}.${i}`),
      );
      expect(dec.graph.inputs).toEqual(['input_ids', 'position_ids', 'encoder_hidden_states', ...states]);
      expect(dec.graph.outputs).toEqual(['logits', ...states.map((s) => `${s}_RetainedState`)]);
      // tied head: the decoder reads embed_tokens for the logits, and no proj_out.weight
      const spec = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'decoder', 'weight_spec.json'), 'utf8'));
      const names = spec.inputs.map((i: { name: string }) => i.name);
      expect(names).toContain('model.decoder.embed_tokens.weight');
      expect(names).not.toContain('proj_out.weight');
      const encSpec = JSON.parse(fs.readFileSync(path.join(work, 'wx', 'encoder', 'weight_spec.json'), 'utf8'));
      expect(encSpec.model_id).toBe(spec.model_id);
    });

    it('run --audio speech.wav: generated_ids on the first line, logits of prompt + generated[:-1] within 1e-4', async () => {
      const r = await cliInProcess(
        [
          'run',
          'wx',
          '--audio',
          'speech.wav',
          '--decoder-input-ids',
          ref.decoder_input_ids.join(','),
          '--max-new-tokens',
          String(ref.generated_ids.length),
          '--dump-logits',
          'logits.json',
        ],
        { cwd: work },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split('\n')[0]).toBe(ref.generated_ids.join(','));
      const got = JSON.parse(fs.readFileSync(path.join(work, 'logits.json'), 'utf8')).logits as number[][];
      expect(got.length).toBe(ref.decoder_input_ids.length + ref.generated_ids.length - 1);
      expect(maxDiff(got, ref.logits)).toBeLessThan(1e-4);
    });

    it("run --audio prints the transcription as text (second line) with the model's tokenizer.json (#51), ids only without one", async () => {
      const ids = ref.decoder_input_ids.join(',');
      const n = String(ref.generated_ids.length);
      const args = ['run', 'wx', '--audio', 'speech.wav', '--decoder-input-ids', ids, '--max-new-tokens', n];
      // no tokenizer.json in the model folder: the ids, and one line saying why there is no text
      const bare = await cliInProcess(args, { cwd: work });
      expect(bare.code, bare.stderr).toBe(0);
      expect(bare.stdout.trim().split('\n')).toEqual([ref.generated_ids.join(',')]);
      expect(bare.stderr).toMatch(/no tokenizer\.json .*ids only/);
      // a word-level tokenizer over the fixture's 127 ids, Whisper's special tokens at its own ids
      const special = { 64: '<|endoftext|>', 65: '<|startoftranscript|>', 66: '<|en|>', 71: '<|transcribe|>', 75: '<|notimestamps|>' };
      const tokDir = path.join(work, 'tok');
      fs.mkdirSync(tokDir, { recursive: true });
      fs.writeFileSync(path.join(tokDir, 'tokenizer.json'), JSON.stringify(wordLevelTokenizer(127, special)));
      const r = await cliInProcess([...args, '--tokenizer', 'tok'], { cwd: work });
      expect(r.code, r.stderr).toBe(0);
      // WordLevel without a decoder joins its words with spaces; the expected text is built here from the ids
      expect(r.stdout.split('\n').slice(0, 2)).toEqual([ref.generated_ids.join(','), ref.generated_ids.map((i) => `w${i}`).join(' ')]);
    });

    it('run --audio with a 16-bit PCM WAV and --input-features reference.json give the same ids', async () => {
      fs.writeFileSync(path.join(work, 'speech16.wav'), encodeWav(ref.audio, 16000, 'pcm16'));
      const ids = ref.decoder_input_ids.join(',');
      const n = String(ref.generated_ids.length);
      const a = await cliStdout(work, 'run', 'wx', '--audio', 'speech16.wav', '--decoder-input-ids', ids, '--max-new-tokens', n);
      expect(a.split('\n')[0]).toBe(ref.generated_ids.join(','));
      const r = await cliInProcess(
        [
          'run',
          'wx',
          '--input-features',
          'model/reference.json',
          '--decoder-input-ids',
          ids,
          '--max-new-tokens',
          n,
          '--dump-logits',
          'f.json',
        ],
        { cwd: work },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split('\n')[0]).toBe(ref.generated_ids.join(','));
      expect(maxDiff(JSON.parse(fs.readFileSync(path.join(work, 'f.json'), 'utf8')).logits, ref.logits)).toBeLessThan(1e-4);
    });

    it('check and inspect take the export directory as one export of two graphs', async () => {
      const c = await cliInProcess(['check', 'wx'], { cwd: work });
      expect(c.code, c.stdout + c.stderr).toBe(0);
      expect(c.stdout.trim().split('\n')).toEqual([
        path.join('wx', 'encoder', 'weight_spec.json') + ': ok',
        path.join('wx', 'decoder', 'weight_spec.json') + ': ok',
      ]);
      const i = await cliStdout(work, 'inspect', 'wx');
      expect(i).toContain(path.join('wx', 'encoder', 'model.onnx'));
      expect(i).toContain(path.join('wx', 'decoder', 'model.onnx'));
      expect(i).toContain('past_value_cross.1');
    });

    it('bad audio and wrong flags: one line, never a stack trace', async () => {
      fs.writeFileSync(path.join(work, 'cd.wav'), encodeWav([0, 0.1, 0.2], 44100, 'pcm16'));
      fs.writeFileSync(path.join(work, 'junk.wav'), 'RIFF\x10\x00\x00\x00WAVEjunk');
      const run = (...extra: string[]) =>
        cliInProcess(['run', 'wx', '--decoder-input-ids', '65', '--max-new-tokens', '1', ...extra], { cwd: work });
      const rate = await run('--audio', 'cd.wav');
      expect(rate.code).toBe(1);
      expect(rate.stderr).toMatch(/cd\.wav: sample rate 44100 Hz: the model's feature extractor wants 16000 Hz/);
      expect(rate.stderr.trim().split('\n')).toHaveLength(1);
      const junk = await run('--audio', 'junk.wav');
      expect(junk.code).toBe(1);
      expect(junk.stderr).toMatch(/junk\.wav: .*\(at byte \d+\)/);
      expect(junk.stderr.trim().split('\n')).toHaveLength(1);
      const ids = await cliInProcess(['run', 'wx', '--input-ids', '1,2', '--audio', 'speech.wav'], { cwd: work });
      expect(ids.code).toBe(2);
      expect(ids.stderr).toContain('a Whisper export takes --decoder-input-ids, not --input-ids');
      const none = await cliInProcess(['run', 'wx', '--decoder-input-ids', '65'], { cwd: work });
      expect(none.code).toBe(2);
      expect(none.stderr).toContain('needs --audio <file.wav> or --input-features <file.json>');
      const text = await cliInProcess(['run', 'wx/decoder', '--audio', 'speech.wav', '--input-ids', '1'], { cwd: work });
      expect(text.code).toBe(2);
      expect(text.stderr).toContain('need a Whisper export directory (with whisper.json)');
      const phase = await cliInProcess(['export', '--config', 'model', '--out', 'p', '--phase', 'decode'], { cwd: work });
      expect(phase.code).toBe(2);
      expect(phase.stderr).toContain('--phase decode is not supported for Whisper');
    });

    describeOnnxChecker('ONNX checker', () => {
      it('passes on both exported graphs and both compiled artifacts', () => {
        const compiled = ['encoder', 'decoder'].map(
          (g) => JSON.parse(fs.readFileSync(path.join(work, 'wx', g, 'compile.json'), 'utf8')).artifacts.model as string,
        );
        const res = expectOnnxValid([
          path.join(work, 'wx', 'encoder', 'model.onnx'),
          path.join(work, 'wx', 'decoder', 'model.onnx'),
          ...compiled,
        ]);
        for (const r of res) expect(r.opset).toEqual([17]);
      });
    });
  });
