/**
 * `export --replicate-kv-heads N` (issue 47): QEfficient's `ReplicateKVHeadTransform`
 * (`QEfficient/transformers/models/pytorch_transforms.py`, applied by
 * `QEFFBaseModel.maybe_apply_replicate_kv_transform` in `QEfficient/base/modeling_qeff.py`, main
 * ebf55e81) repeats each kv head's k_proj / v_proj rows N times in place (`repeat_interleave`,
 * `QEfficient/transformers/models/repeat_kv_projection_dispatch.py`) and sets
 * num_key_value_heads to N × the original. The logits equal the plain graph's and reference.json;
 * the cache has N × the heads; the weights the graph reads keep the checkpoint's shapes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/compile-support';
import { dumpLogits, exportCompiled, reference, ws } from '../support/serving-support';

const tmp = tempDirs('ws-repkv-');

/** The safetensors header's shape of `key` in the fixture's checkpoint (the one file). */
function checkpointShape(fam: string, key: string): number[] {
  const file = fs.readdirSync(path.join(fixturesDir(), fam)).find((n) => n.endsWith('.safetensors'))!;
  const buf = fs.readFileSync(path.join(fixturesDir(), fam, file));
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<string, { shape: number[] }>;
  return header[key]!.shape;
}

describeFixtures('--replicate-kv-heads on GQA fixtures', () => {
  let root = '';
  beforeAll(() => {
    root = tmp();
  });

  for (const fam of ['llama', 'gpt_oss_full']) {
    it(`${fam}: N = 2 doubles the cache heads, keeps the checkpoint's k/v shapes and the logits`, async () => {
      const ref = reference(fam);
      const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
      const rep = await exportCompiled(root, fam, `${fam}-rep`, ['--ctx-len', '32', '--replicate-kv-heads', '2']);
      const plain = await exportCompiled(root, fam, `${fam}-plain`, ['--ctx-len', '32']);
      const rows = await dumpLogits(root, rep, ids);
      expect(maxAbsDiff(rows, await dumpLogits(root, plain, ids))).toBeLessThanOrEqual(1e-5);
      expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
      expectOnnxValid([path.join(rep, 'model.onnx')]);
      const m = parseWireModel(fs.readFileSync(path.join(rep, 'model.onnx')), 'model.onnx');
      const dims = new Map(m.inputs.map((i) => [i.name, i.dims]));
      const cfg = JSON.parse(fs.readFileSync(path.join(fixturesDir(), fam, 'config.json'), 'utf8')) as {
        num_key_value_heads: number;
        head_dim?: number;
      };
      expect(dims.get('past_key.0')![1]).toBe(2 * cfg.num_key_value_heads);
      expect(dims.get('past_value.0')![1]).toBe(2 * cfg.num_key_value_heads);
      for (const w of ['k_proj', 'v_proj']) {
        const key = `model.layers.0.self_attn.${w}.weight`;
        expect(dims.get(key)).toEqual(checkpointShape(fam, key));
      }
      const meta = m.metadata.find((e) => e.key === 'weight_spec.replicate_kv_heads')?.value;
      expect(JSON.parse(meta!)).toEqual({ orig_kv_heads: cfg.num_key_value_heads, num_replicate_kv_heads: 2 });
    });
  }

  it('refused with one line as ReplicateKVHeadTransform refuses: too many heads, an MHA model, a non-positive N', async () => {
    const bad = async (fam: string, n: string, msg: RegExp) => {
      const r = await ws(
        root,
        ['export', '--config', path.join(fixturesDir(), fam), '--out', path.join(root, 'bad'), '--replicate-kv-heads', n],
        false,
      );
      expect(r.status).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(msg);
    };
    await bad('llama', '3', /new_kv_heads=6 \(expected new_kv_heads <= num_attention_heads and divisibility\)/);
    await bad('gpt2', '2', /RepeatKV is supported only for GQA\/MQA models/);
    await bad('llama', '0', /--replicate-kv-heads must be a positive integer/);
    expect(fs.existsSync(path.join(root, 'bad'))).toBe(false);
  });
});
