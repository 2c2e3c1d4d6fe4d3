/**
 * The bert fixture (all-MiniLM-L6-v2's layout: two shards, modules.json, 1_Pooling with mean
 * pooling, Normalize; reference.json from transformers' eager fp32 forward on the bf16 weights
 * and sentence-transformers' Pooling/Normalize) end to end, both ways:
 * - `export --config` (export/embedding/, ported from transformers `models/bert/modeling_bert.py`
 *   @ 015bfeb8, sentence-transformers `Pooling.py` @ 13b4da22 and `Normalize.py` @ 4edb4a94,
 *   QEfficient `QEfficient/transformers/embeddings/embedding_utils.py` `PooledModel` @ ebf55e81)
 *   → prepare → compile → `run --dump-embeddings`: every sentence unpadded, and the sentence pair
 *   with its token types, reproduce their rows of last_hidden_state and their sentence_embedding
 *   within 1e-4; the padded batch itself through the compiled graph reproduces every row;
 * - the legacy graph (`model.legacy.onnx`, a torch.onnx.export with weights embedded) through
 *   `export --onnx` → compile → `run --dump-embeddings`: the same rows of last_hidden_state (the
 *   legacy graph has no pooling).
 * A float16 export (prepared float16) stays within the float16 tolerance of test/support/fixtures.ts.
 * ONNX's checker passes on each graph (weight-free and compiled); `check` finds the spec clean
 * against its graph and prepared checkpoint, and names a wrong input name.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir, float16Tolerance } from '../../../test/support/fixtures';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-bert-fixture-');

interface BertRef {
  input_ids: number[][];
  attention_mask: number[][];
  token_type_ids: number[][];
  last_hidden_state: number[][][];
  sentence_embedding: number[][];
  pair_example: { input_ids: number[][]; token_type_ids: number[][]; last_hidden_state: number[][][]; sentence_embedding: number[][] };
}

const maxDiff = (a: number[], b: number[]) => {
  expect(a.length).toBe(b.length);
  return b.reduce((m, v, i) => Math.max(m, Math.abs(v - a[i]!)), 0);
};

describeFixtures('bert fixture: export --config and the legacy graph reproduce reference.json', () => {
  let root = '';
  let ref: BertRef;
  const ok = async (...args: string[]) => {
    const r = await cliInProcess(args, { cwd: root });
    expect(r.code, r.stderr).toBe(0);
    return r;
  };
  /** `run --dump-embeddings` of one unpadded input on `dir`. */
  const embed = async (dir: string, ids: number[], types: number[], tag: string) => {
    const file = `${dir}-${tag}.json`;
    await ok('run', dir, '--input-ids', ids.join(','), '--token-type-ids', types.join(','), '--dump-embeddings', file);
    return JSON.parse(fs.readFileSync(path.join(root, file), 'utf8')) as { last_hidden_state: number[][]; sentence_embedding?: number[] };
  };
  /** The inputs the reference holds, unpadded: the three sentences and the pair. */
  const cases = () => {
    const out = ref.input_ids.map((row, b) => {
      const n = ref.attention_mask[b]!.reduce((a, m) => a + m, 0);
      return {
        tag: `s${b}`,
        ids: row.slice(0, n),
        types: ref.token_type_ids[b]!.slice(0, n),
        hidden: ref.last_hidden_state[b]!.slice(0, n),
        pooled: ref.sentence_embedding[b]!,
      };
    });
    const p = ref.pair_example;
    out.push({
      tag: 'pair',
      ids: p.input_ids[0]!,
      types: p.token_type_ids[0]!,
      hidden: p.last_hidden_state[0]!,
      pooled: p.sentence_embedding[0]!,
    });
    return out;
  };

  beforeAll(async () => {
    root = tmp();
    fs.cpSync(path.join(fixturesDir(), 'bert'), path.join(root, 'model'), { recursive: true });
    ref = JSON.parse(fs.readFileSync(path.join(root, 'model', 'reference.json'), 'utf8')) as BertRef;
    await ok('export', '--config', 'model', '--out', 'cfg');
    await ok('export', '--onnx', path.join('model', 'model.legacy.onnx'), '--checkpoint', 'model', '--out', 'legacy');
    await ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
    await ok('compile', 'cfg');
    await ok('compile', 'legacy');
  });

  it('the three sentences have different lengths and the pair has token types 1 (the fixture covers what it should)', () => {
    const c = cases();
    expect(new Set(c.slice(0, 3).map((x) => x.ids.length)).size).toBe(3);
    expect(c[3]!.types).toContain(1);
  });

  it('export --config: each unpadded sentence and the pair give their rows and sentence_embedding within 1e-4', async () => {
    const report = JSON.parse(fs.readFileSync(path.join(root, 'cfg', 'export-report.json'), 'utf8'));
    expect(report.graph.inputs).toEqual(['input_ids', 'attention_mask', 'token_type_ids']);
    expect(report.graph.outputs).toEqual(['last_hidden_state', 'sentence_embedding']);
    expect(report.graph.pooling).toEqual({ modes: ['mean'], normalize: true });
    for (const c of cases()) {
      const e = await embed('cfg', c.ids, c.types, c.tag);
      expect(maxDiff(e.last_hidden_state.flat(), c.hidden.flat()), c.tag).toBeLessThan(1e-4);
      expect(maxDiff(e.sentence_embedding!, c.pooled), c.tag).toBeLessThan(1e-4);
    }
  });

  it('export --config: the padded batch through the compiled graph reproduces every row, padded rows included', async () => {
    const rec = JSON.parse(fs.readFileSync(path.join(root, 'cfg', 'compile.json'), 'utf8')) as { artifacts: { model: string } };
    const s = await ort.InferenceSession.create(rec.artifacts.model);
    const t = (a: number[][]) => new ort.Tensor('int64', BigInt64Array.from(a.flat().map(BigInt)), [a.length, a[0]!.length]);
    const r = await s.run({ input_ids: t(ref.input_ids), attention_mask: t(ref.attention_mask), token_type_ids: t(ref.token_type_ids) });
    expect(maxDiff(Array.from(r.last_hidden_state!.data as Float32Array), ref.last_hidden_state.flat(2))).toBeLessThan(1e-4);
    expect(maxDiff(Array.from(r.sentence_embedding!.data as Float32Array), ref.sentence_embedding.flat())).toBeLessThan(1e-4);
  });

  it('export --config --dtype float16 (prepared float16): every sentence within the float16 tolerance', async () => {
    await ok('export', '--config', 'model', '--out', 'cfg16', '--dtype', 'float16');
    await ok('prepare', '--checkpoint', 'model', '--dtype', 'float16');
    await ok('compile', 'cfg16');
    for (const c of cases()) {
      const e = await embed('cfg16', c.ids, c.types, c.tag);
      expect(maxDiff(e.last_hidden_state.flat(), c.hidden.flat()), c.tag).toBeLessThan(float16Tolerance('bert'));
      expect(maxDiff(e.sentence_embedding!, c.pooled), c.tag).toBeLessThan(float16Tolerance('bert'));
    }
  });

  it('legacy graph (export --onnx): each unpadded sentence and the pair give their last_hidden_state rows within 1e-4', async () => {
    for (const c of cases()) {
      const e = await embed('legacy', c.ids, c.types, c.tag);
      expect(maxDiff(e.last_hidden_state.flat(), c.hidden.flat()), c.tag).toBeLessThan(1e-4);
      expect(e.sentence_embedding).toBeUndefined();
    }
  });

  it('check: the spec is clean against its graph and prepared checkpoint; a wrong input name is named', async () => {
    const r = await ok('check', path.join('cfg', 'weight_spec.json'), '--json');
    expect(JSON.parse(r.stdout)).toEqual([]);
    const bad = path.join(root, 'cfg', 'bad.weight_spec.json');
    fs.writeFileSync(
      bad,
      fs
        .readFileSync(path.join(root, 'cfg', 'weight_spec.json'), 'utf8')
        .replace('"name": "encoder.layer.1.output.dense.bias"', '"name": "encoder.layer.1.output.dense.bais"'),
    );
    const problems = JSON.parse((await cliInProcess(['check', bad, '--json'], { cwd: root })).stdout) as {
      code: string;
      message: string;
    }[];
    fs.rmSync(bad);
    expect(problems.find((p) => p.code === 'name-not-in-onnx')?.message).toMatch(
      /"encoder\.layer\.1\.output\.dense\.bais" is not a graph input/,
    );
    // the runtime inputs (token_type_ids among them) are no weights to map
    expect(problems.map((p) => p.message).join('\n')).not.toMatch(/token_type_ids|attention_mask/);
  });

  it('run: refused with one line: an embedding graph without --dump-embeddings, more ids than the position table', async () => {
    const r = await cliInProcess(['run', 'cfg', '--input-ids', '101,102'], { cwd: root });
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/an embedding graph .* run it with --dump-embeddings/);
    // max_position_embeddings 64
    const long = await cliInProcess(['run', 'cfg', '--input-ids', Array(65).fill(7).join(','), '--dump-embeddings', 'long.json'], {
      cwd: root,
    });
    expect(long.code).toBe(2);
    expect(long.stderr.split('\n')[0]).toMatch(/65 input ids exceed the 64 positions/);
    expect(fs.existsSync(path.join(root, 'long.json'))).toBe(false);
  });

  describeOnnxChecker('ONNX checker', () => {
    it('passes on the config graph, the converted legacy graph and both compiled artifacts', () => {
      const compiled = (d: string) =>
        (JSON.parse(fs.readFileSync(path.join(root, d, 'compile.json'), 'utf8')) as { artifacts: { model: string } }).artifacts.model;
      expectOnnxValid([path.join(root, 'cfg', 'model.onnx'), path.join(root, 'legacy', 'model.onnx'), compiled('cfg'), compiled('legacy')]);
    });
  });
});
