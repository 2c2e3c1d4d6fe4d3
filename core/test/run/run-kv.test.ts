/**
 * The runner on QEfficient-style KV-cache graphs (input_ids, position_ids, past_key/value.i,
 * *_RetainedState outputs) built by the config exporter, bound by the ort backend to a
 * float32 copy of the fixture checkpoint made here (families whose keys prepare keeps as they are, so the
 * copy is what `prepare --dtype float32` writes for them). Logits fed one id at a time must
 * equal reference.json; greedy decode must reproduce generated_ids.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { compile, parseWireModel } from '../../src/compile';
import { exportFromConfig } from '../../src/export/export-config';
import { convertFloat } from '../../src/formats/float-convert';
import { Checkpoint, writeSafetensors } from '../../src/formats/safetensors';
import { readSpec } from '../../src/spec';
import { openRunner } from '../../src/run';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { markPrepared, maxAbsDiff, type Reference } from '../support/compile-support';

const tmp = tempDirs('ws-kv-');

/** Exports `fam` from its config into `<tmp>/export`, writes the f32 copy where the spec points. */
async function kvExport(
  fam: string,
  opts: { ctxLen?: number; phase?: 'both' | 'prefill' | 'decode'; continuousBatching?: boolean; batchSize?: number } = {},
): Promise<string> {
  const root = tmp();
  const modelDir = path.join(root, fam);
  fs.mkdirSync(modelDir);
  fs.copyFileSync(path.join(fixturesDir(), fam, 'config.json'), path.join(modelDir, 'config.json'));
  const out = path.join(root, 'export');
  await exportFromConfig({ config: modelDir, out, ...opts });
  const spec = await readSpec(path.join(out, 'weight_spec.json'));
  const ck = await Checkpoint.open(path.join(fixturesDir(), fam));
  fs.mkdirSync(spec.model_id!, { recursive: true });
  for (const [fi, f] of spec.files.entries()) {
    const tensors = [];
    for (const inp of spec.inputs.filter((i) => i.location.file === fi)) {
      const t = ck.get(inp.location.key);
      if (!t) throw new Error(`${fam}: ${inp.location.key} is not a checkpoint key (family needs prepare)`);
      tensors.push({
        key: inp.location.key,
        dtype: 'F32' as const,
        shape: t.shape,
        data: convertFloat(await ck.read(t.key), t.dtype, 'F32'),
      });
    }
    const uniq = [...new Map(tensors.map((t) => [t.key, t])).values()];
    await writeSafetensors(path.join(spec.model_id!, path.basename(f.path)), uniq);
  }
  markPrepared(spec.model_id!);
  return out;
}

const ref = (fam: string) => JSON.parse(fs.readFileSync(path.join(fixturesDir(), fam, 'reference.json'), 'utf8')) as Reference;

describeFixtures('runner on KV-cache graphs', () => {
  for (const fam of ['llama', 'qwen2', 'phi3']) {
    it(`${fam}: step-by-step logits equal reference.json; greedy decode reproduces generated_ids`, async () => {
      const exp = await kvExport(fam, { ctxLen: 32 });
      await compile(exp, { backend: 'ort' });
      const r = ref(fam);
      const runner = await openRunner(exp);
      try {
        expect(runner.kind).toBe('kv');
        const ids = [...r.input_ids, ...r.generated_ids.slice(0, -1)];
        const logits = await runner.logits(ids);
        expect(logits).toHaveLength(ids.length);
        expect(maxAbsDiff(logits, r.logits)).toBeLessThanOrEqual(1e-4);
        const s = await runner.generateWithStats(r.input_ids, r.generated_ids.length);
        expect(s.tokens).toEqual(r.generated_ids);
        expect(s.ttftMs).toBeGreaterThan(0);
        expect(s.tokensPerSecond).toBeGreaterThan(0);
      } finally {
        await runner.close();
      }
    });
  }

  it('a decode-phase graph (fixed seq_len) is fed one id per step, prefill included', async () => {
    const exp = await kvExport('llama', { ctxLen: 16, phase: 'decode' });
    const ids = parseWireModel(fs.readFileSync(path.join(exp, 'model.onnx')), 'model.onnx').inputs.find((i) => i.name === 'input_ids')!;
    expect(ids.dims[1]).toBe(1);
    await compile(exp, { backend: 'ort' });
    const r = ref('llama');
    const runner = await openRunner(exp);
    try {
      expect(runner.kind).toBe('kv');
      expect(await runner.generate(r.input_ids, 5)).toEqual(r.generated_ids);
    } finally {
      await runner.close();
    }
  });

  it('a continuous-batching graph (batch_index, full-batch cache) decodes through slot 0', async () => {
    const exp = await kvExport('qwen2', { ctxLen: 16, continuousBatching: true, batchSize: 3 });
    const names = parseWireModel(fs.readFileSync(path.join(exp, 'model.onnx')), 'model.onnx').inputs.map((i) => i.name);
    expect(names).toContain('batch_index');
    await compile(exp, { backend: 'ort' });
    const r = ref('qwen2');
    const runner = await openRunner(exp);
    try {
      const ids = [...r.input_ids, ...r.generated_ids.slice(0, -1)];
      expect(maxAbsDiff(await runner.logits(ids), r.logits)).toBeLessThanOrEqual(1e-4);
      expect(await runner.generate(r.input_ids, 5)).toEqual(r.generated_ids);
    } finally {
      await runner.close();
    }
  });

  it('a symbolic ctx_len is sized to the call; a fixed one too small is a clear error', async () => {
    const exp = await kvExport('llama');
    await compile(exp, { backend: 'ort' });
    const r = ref('llama');
    const runner = await openRunner(exp);
    try {
      expect(await runner.generate(r.input_ids, 5)).toEqual(r.generated_ids);
    } finally {
      await runner.close();
    }
    const small = await kvExport('llama', { ctxLen: 4 });
    await compile(small, { backend: 'ort' });
    const tiny = await openRunner(small);
    try {
      await expect(tiny.generate(r.input_ids, 5)).rejects.toThrow(/12 tokens do not fit the KV cache \(ctx_len 4\)/);
    } finally {
      await tiny.close();
    }
  });
});
