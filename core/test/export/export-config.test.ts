/**
 * `export --config` end to end in-process: the files written, the spec (v5 bytes, embedded
 * copy in the ONNX metadata, inputs = the graph's weight inputs), the derived prepared layout,
 * numerics through the written files (prepared shards made in code per the spec), re-export
 * and overwrite refusal, and one-line errors.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { exportFromConfig } from '../../src/export/export-config';
import { parseSpecText, specMetadataValue, SPEC_METADATA_KEY } from '../../src/spec';
import { referenceForward } from '../support/graph-reference';
import { randomCheckpoint, SYNTHETIC_CONFIGS } from '../support/graph-random';
import { loadCheckpoint, maxAbsDiff, stackExperts } from '../support/graph-support';
import { writeSafetensors } from '../../src/formats/safetensors';
import { decodeModel } from '../../src/formats/onnx';

const tmp = tempDirs('ws-export-config-')();

function modelDir(name: string, cfg: Record<string, unknown>): string {
  const d = path.join(tmp, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'config.json'), JSON.stringify(cfg));
  return d;
}

/** metadata_props of an ONNX model, via the project's onnx.proto codec. */
function onnxMetadata(bytes: Uint8Array): Map<string, string> {
  return new Map((decodeModel(bytes, 'model.onnx').metadataProps ?? []).map((p) => [p.key ?? '', p.value ?? '']));
}

describe('export --config writes a complete, consistent export directory', () => {
  for (const name of ['qwen3_moe', 'gpt2-prefixed', 'mistral']) {
    it(`${name}: files, spec, embedded spec, derived layout, and logits through the written files`, async () => {
      const cfg = SYNTHETIC_CONFIGS[name]!;
      const dir = modelDir(name, cfg);
      const out = path.join(tmp, `${name}-out`);
      const r = await exportFromConfig({ config: dir, out, ctxLen: 16 });
      for (const f of ['model.onnx', 'weight_spec.json', 'export-report.json']) expect(existsSync(path.join(out, f))).toBe(true);
      const prepared = `${dir}-qeff-prepared-float32`;
      const link = path.join(out, path.basename(prepared));
      // Issue 30.8: the prepared folder does not exist yet, so no link (a dangling one before
      // prepare); QEfficient's export.py (commit 0bd37957) links only `if prepared_out.exists()`.
      expect(() => lstatSync(link)).toThrow(/ENOENT/);
      expect(JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8')).links).toEqual([]);
      // Once the folder exists, a re-export links it.
      mkdirSync(prepared, { recursive: true });
      await exportFromConfig({ config: dir, out, ctxLen: 16 });
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(readlinkSync(link)).toBe(prepared);

      const text = readFileSync(path.join(out, 'weight_spec.json'), 'utf8');
      const parsed = parseSpecText(text, 'weight_spec.json');
      expect(parsed.problems.filter((p) => p.severity === 'error')).toEqual([]);
      const spec = parsed.spec!;
      expect(spec.version).toBe(5);
      expect(spec.model_id).toBe(prepared);
      // the architecture class, as QEfficient writes model_name (HF's class of the model_type when config.json has no architectures)
      expect(spec.model_name).toBe(
        { qwen3_moe: 'Qwen3MoeForCausalLM', 'gpt2-prefixed': 'GPT2LMHeadModel', mistral: 'MistralForCausalLM' }[name],
      );
      expect(text.endsWith('}')).toBe(true);
      const bytes = readFileSync(path.join(out, 'model.onnx'));
      expect(onnxMetadata(bytes).get(SPEC_METADATA_KEY)).toBe(specMetadataValue(spec));

      // the spec maps exactly the graph's weight inputs, each to its own key
      const session = await ort.InferenceSession.create(bytes);
      const nonWeights = new Set(['input_ids', 'position_ids', ...session.inputNames.filter((n) => n.startsWith('past_'))]);
      expect(spec.inputs.map((i) => i.name).sort()).toEqual(session.inputNames.filter((n) => !nonWeights.has(n)).sort());
      for (const i of spec.inputs) expect(i.location.key).toBe(i.name);
      for (const f of spec.files) expect(f.path.startsWith(`${path.basename(prepared)}/`)).toBe(true);
      if (name === 'qwen3_moe') {
        const experts = spec.inputs.filter((i) => i.name.includes('moe_weights'));
        expect(experts.length).toBe(6);
        for (const e of experts) expect(spec.files[e.location.file]!.path).toMatch(/experts-layer-0000[01]\.safetensors$/);
      }
      if (name === 'gpt2-prefixed') expect(spec.inputs[0]!.name.startsWith('transformer.')).toBe(true);

      // fill the planned prepared files per the spec, then bind every weight *through the spec*
      const weights = stackExperts(randomCheckpoint(cfg, 3));
      const byFile = new Map<number, [string, { shape: number[]; data: Float32Array }][]>();
      for (const i of spec.inputs)
        byFile.set(i.location.file, [...(byFile.get(i.location.file) ?? []), [i.location.key, weights.get(i.location.key)!]]);
      mkdirSync(prepared, { recursive: true });
      for (const [f, ts] of byFile) {
        await writeSafetensors(
          path.join(out, spec.files[f]!.path),
          ts.map(([key, t]) => ({
            key,
            dtype: 'F32' as const,
            shape: t.shape,
            data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
          })),
        );
      }
      const onDisk = await loadCheckpoint(prepared);
      const a = r.arch;
      const feeds: Record<string, ort.Tensor> = {};
      for (const i of spec.inputs) {
        const t = onDisk.get(i.location.key)!;
        feeds[i.name] = new ort.Tensor('float32', t.data, t.shape);
      }
      const ids = [3, 9, 27, 14, 5, 30, 11];
      const ref = referenceForward(cfg, randomCheckpoint(cfg, 3), ids);
      let cache: ort.Tensor[] = Array.from(
        { length: 2 * a.layers.length },
        () => new ort.Tensor('float32', new Float32Array(a.nKv * 16 * a.headDim), [1, a.nKv, 16, a.headDim]),
      );
      const rows: number[][] = [];
      for (let t = 0; t < ids.length; t++) {
        const res = await session.run({
          ...feeds,
          input_ids: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids[t]!)]), [1, 1]),
          position_ids: new ort.Tensor('int64', BigInt64Array.from([BigInt(t)]), [1, 1]),
          ...Object.fromEntries(cache.map((c, k) => [`past_${k % 2 ? 'value' : 'key'}.${k >> 1}`, c])),
        });
        rows.push(Array.from(res.logits!.data as Float32Array));
        cache = cache.map((_, k) => res[`past_${k % 2 ? 'value' : 'key'}.${k >> 1}_RetainedState`]!);
      }
      expect(maxAbsDiff(rows, ref)).toBeLessThanOrEqual(1e-4);

      const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
      expect(report.tool).toBe('weight-spec export');
      expect(report.prepared).toMatchObject({ dir: prepared, layout: 'config' });
      expect(report.graph.opset).toBe(17); // QEfficient's ONNX_EXPORT_OPSET
      expect(r.summary.length).toBeLessThanOrEqual(24);
      expect(r.summary.join('\n')).toContain('model.onnx');
    });
  }

  it('float16 export declares float16 weights and caches, float32 logits', async () => {
    const dir = modelDir('qwen3-f16', SYNTHETIC_CONFIGS.qwen3!);
    const out = path.join(tmp, 'qwen3-f16-out');
    await exportFromConfig({ config: dir, out, dtype: 'float16', continuousBatching: true, batchSize: 2, phase: 'decode' });
    const spec = parseSpecText(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), 's').spec!;
    expect(spec.model_id).toBe(`${dir}-qeff-prepared-float16`);
    const s = await ort.InferenceSession.create(readFileSync(path.join(out, 'model.onnx')));
    expect(s.inputNames).toContain('batch_index');
    const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
    expect(report.options).toMatchObject({ dtype: 'float16', continuous_batching: true, batch_size: 2, phase: 'decode' });
  });

  it('re-export replaces its own artifacts; a foreign model.onnx is refused', async () => {
    const dir = modelDir('again', SYNTHETIC_CONFIGS.qwen3!);
    const out = path.join(tmp, 'again-out');
    await exportFromConfig({ config: dir, out });
    await exportFromConfig({ config: dir, out, ctxLen: 8 });
    expect(JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8')).options.ctx_len).toBe(8);
    const foreign = path.join(tmp, 'foreign-out');
    mkdirSync(foreign);
    writeFileSync(path.join(foreign, 'model.onnx'), 'not ours');
    await expect(exportFromConfig({ config: dir, out: foreign })).rejects.toThrow(
      /model\.onnx exists and was not made by weight-spec export/,
    );
    expect(readFileSync(path.join(foreign, 'model.onnx'), 'utf8')).toBe('not ours');
    expect(existsSync(path.join(foreign, 'export-report.json'))).toBe(false);
  });

  it('--config may name the config.json file itself', async () => {
    const dir = modelDir('by-file', SYNTHETIC_CONFIGS.gemma!);
    const out = path.join(tmp, 'by-file-out');
    await exportFromConfig({ config: path.join(dir, 'config.json'), out });
    const spec = parseSpecText(readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), 's').spec!;
    expect(spec.model_name).toBe('GemmaForCausalLM');
    expect(spec.inputs.map((i) => i.name)).not.toContain('lm_head.weight'); // Gemma ties the head
  });

  it('bad inputs fail with one line naming the file', async () => {
    const bad = path.join(tmp, 'bad');
    mkdirSync(bad);
    writeFileSync(path.join(bad, 'config.json'), '{"model_type": "llama", ');
    await expect(exportFromConfig({ config: bad, out: path.join(tmp, 'bad-out') })).rejects.toThrow(/bad\/config\.json: not valid JSON/);
    await expect(exportFromConfig({ config: path.join(tmp, 'nope'), out: path.join(tmp, 'x') })).rejects.toThrow(
      /no such file or directory/,
    );
    const unk = modelDir('unk', { model_type: 'bloom' });
    await expect(exportFromConfig({ config: unk, out: path.join(tmp, 'unk-out') })).rejects.toThrow(
      /unk\/config\.json: model_type "bloom" is not supported/,
    );
    expect(existsSync(path.join(tmp, 'unk-out', 'model.onnx'))).toBe(false);
  });
});
