/**
 * Whisper's legacy graphs (the fixture's encoder.legacy.onnx and decoder.legacy.onnx, real
 * torch.onnx.export of HF WhisperForConditionalGeneration with weights embedded, opset 17, the
 * decoder without a cache: decoder_input_ids + encoder_hidden_states → logits for every
 * position) through `export --onnx` each, one `prepare`, `compile` each: weight-free over one
 * prepared checkpoint, the bound graphs run in ONNX Runtime reproduce reference.json — the
 * encoder output from the reference input_features, and the logits of prompt + generated[:-1]
 * within 1e-4 — and ONNX's checker passes on both converted graphs.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { expect, it } from 'vitest';
import { cliStdout } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-whisper-legacy-');

function maxDiff(a: ArrayLike<number>, b: number[]): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < b.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

describeFixtures('whisper legacy graphs through export --onnx', () => {
  it('encoder + decoder: weight-free over one prepared checkpoint, reproduce the reference in ORT', async () => {
    const fx = path.join(fixturesDir(), 'whisper');
    const ref = JSON.parse(fs.readFileSync(path.join(fx, 'reference.json'), 'utf8'));
    const work = tmp();
    fs.mkdirSync(path.join(work, 'model'));
    for (const f of fs.readdirSync(fx).filter((n) => n.endsWith('.json') || n.endsWith('.safetensors')))
      fs.copyFileSync(path.join(fx, f), path.join(work, 'model', f));
    for (const g of ['encoder', 'decoder'])
      await cliStdout(work, 'export', '--onnx', path.join(fx, `${g}.legacy.onnx`), '--checkpoint', 'model', '--out', g);
    await cliStdout(work, 'prepare', '--checkpoint', 'model', '--dtype', 'float32');
    const spec = (g: string) => JSON.parse(fs.readFileSync(path.join(work, g, 'weight_spec.json'), 'utf8'));
    expect(spec('encoder').model_id).toBe(spec('decoder').model_id);
    // no weight bytes left in either graph
    for (const g of ['encoder', 'decoder']) expect(fs.statSync(path.join(work, g, 'model.onnx')).size).toBeLessThan(64 * 1024);
    const session = async (g: string) => {
      await cliStdout(work, 'compile', g);
      return ort.InferenceSession.create(JSON.parse(fs.readFileSync(path.join(work, g, 'compile.json'), 'utf8')).artifacts.model);
    };

    const feats = ref.input_features as number[][];
    const enc = await (
      await session('encoder')
    ).run({ input_features: new ort.Tensor('float32', Float32Array.from(feats.flat()), [1, feats.length, feats[0]!.length]) });
    const hidden = enc.encoder_hidden_states!;
    expect(maxDiff(hidden.data as Float32Array, (ref.encoder_last_hidden_state as number[][]).flat())).toBeLessThan(1e-4);

    const ids: number[] = [...ref.decoder_input_ids, ...ref.generated_ids.slice(0, -1)];
    const dec = await (
      await session('decoder')
    ).run({
      decoder_input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      encoder_hidden_states: hidden,
    });
    expect(dec.logits!.dims).toEqual([1, ids.length, 127]);
    expect(maxDiff(dec.logits!.data as Float32Array, (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
    // greedy ids from those rows are the reference's
    const rows = ref.logits.length as number;
    const data = dec.logits!.data as Float32Array;
    const argmax = (t: number) => {
      let best = 0;
      for (let v = 1; v < 127; v++) if (data[t * 127 + v]! > data[t * 127 + best]!) best = v;
      return best;
    };
    const p = ref.decoder_input_ids.length as number;
    expect(Array.from({ length: rows - p + 1 }, (_, k) => argmax(p - 1 + k))).toEqual(ref.generated_ids);
  }, 120_000);

  describeOnnxChecker('ONNX checker', () => {
    it('passes on both converted graphs', async () => {
      const work = tmp();
      const fx = path.join(fixturesDir(), 'whisper');
      const files = [];
      for (const g of ['encoder', 'decoder']) {
        await cliStdout(work, 'export', '--onnx', path.join(fx, `${g}.legacy.onnx`), '--checkpoint', fx, '--out', g);
        files.push(path.join(work, g, 'model.onnx'));
      }
      expectOnnxValid(files);
    });
  });
});
