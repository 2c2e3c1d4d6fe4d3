/**
 * Embedding encoders from config.json (export/embedding/), judged by an independent float64
 * forward (core/test/support/encoder-reference.ts, written from transformers
 * `models/xlm_roberta/modeling_xlm_roberta.py` @ 015bfeb86891c5f5e450f48942260ac3e2cd2bf2 and
 * sentence-transformers `Pooling.py` @ 13b4da22 / `Normalize.py` @ 4edb4a94) on tiny random
 * checkpoints made here:
 * - XLM-RoBERTa (bge-m3's layout: type_vocab_size 1, pad_token_id 1) with CLS pooling and
 *   Normalize, keys under `roberta.` (a task head's checkpoint): positions start at
 *   padding_idx + 1 and come from `input_ids != pad` — a padded batch in ONNX Runtime, and one
 *   unpadded input through prepare → compile → `run --dump-embeddings`.
 * - BERT with token types and mean + max + mean/√len pooling, no Normalize.
 * ONNX's checker on each graph; the refusals (relative positions, a Dense module, weighted-mean
 * pooling, decoder flags) are one line naming the file.
 */
import fs from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeOnnxChecker, expectOnnxValid } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import { exportFromConfig } from '../../src/export/export-config';
import { planLayout } from '../../src/export/exporter/plan-layout';
import { fromFloat32 } from '../../src/formats/float-convert';
import { writeSafetensors } from '../../src/formats/safetensors';
import { parseSpecText } from '../../src/spec';
import { randomEncoderCheckpoint, xlmRobertaReference } from '../support/encoder-reference';
import type { F32 } from '../support/graph-support';

const tmp = tempDirs('ws-encoder-config-');

const XLMR = {
  architectures: ['XLMRobertaModel'],
  model_type: 'xlm-roberta',
  vocab_size: 60,
  hidden_size: 32,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  intermediate_size: 48,
  hidden_act: 'gelu',
  max_position_embeddings: 40,
  type_vocab_size: 1,
  layer_norm_eps: 1e-5,
  pad_token_id: 1,
  bos_token_id: 0,
  eos_token_id: 2,
  position_embedding_type: 'absolute',
};
const BERT = { ...XLMR, architectures: ['BertModel'], model_type: 'bert', type_vocab_size: 2, pad_token_id: 0, layer_norm_eps: 1e-12 };

type Mode = 'cls' | 'max' | 'mean' | 'mean_sqrt_len';

/** A model folder: config.json, a BF16 model.safetensors, and the sentence-transformers modules. */
async function modelFolder(
  cfg: Record<string, unknown>,
  modes: Mode[],
  normalize: boolean,
  prefix: string,
): Promise<{ dir: string; raw: Map<string, F32> }> {
  const dir = path.join(tmp(), String(cfg.model_type));
  fs.mkdirSync(path.join(dir, '1_Pooling'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg));
  const raw = randomEncoderCheckpoint(cfg, 7, prefix);
  await writeSafetensors(
    path.join(dir, 'model.safetensors'),
    [...raw].map(([key, t]) => ({ key, dtype: 'BF16' as const, shape: t.shape, data: fromFloat32(t.data, 'BF16') })),
  );
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    ...(normalize ? [{ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' }] : []),
  ];
  fs.writeFileSync(path.join(dir, 'modules.json'), JSON.stringify(modules));
  fs.writeFileSync(
    path.join(dir, '1_Pooling', 'config.json'),
    JSON.stringify({
      word_embedding_dimension: cfg.hidden_size,
      pooling_mode_cls_token: modes.includes('cls'),
      pooling_mode_mean_tokens: modes.includes('mean'),
      pooling_mode_max_tokens: modes.includes('max'),
      pooling_mode_mean_sqrt_len_tokens: modes.includes('mean_sqrt_len'),
    }),
  );
  return { dir, raw };
}

const i64 = (rows: number[][]) => new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [rows.length, rows[0]!.length]);
const maxDiff = (a: ArrayLike<number>, b: number[]) => b.reduce((m, v, i) => Math.max(m, Math.abs(v - a[i]!)), 0);

/** Exports `dir` and runs model.onnx on a padded batch, each weight input fed from the checkpoint key the spec names. */
async function exportAndRun(dir: string, raw: Map<string, F32>, feeds: Record<string, number[][]>) {
  const out = path.join(path.dirname(dir), 'out');
  await exportFromConfig({ config: dir, out, planner: planLayout });
  const { spec } = parseSpecText(fs.readFileSync(path.join(out, 'weight_spec.json'), 'utf8'), 'weight_spec.json');
  const session = await ort.InferenceSession.create(path.join(out, 'model.onnx'));
  const inputs: Record<string, ort.Tensor> = {};
  for (const i of spec!.inputs) {
    const t = raw.get(i.location.key)!;
    inputs[i.name] = new ort.Tensor('float32', t.data, t.shape);
  }
  for (const [k, v] of Object.entries(feeds)) inputs[k] = i64(v);
  return { out, session, result: await session.run(inputs), spec: spec! };
}

describe('embedding encoders from config.json against a float64 reference', () => {
  it('XLM-RoBERTa: positions from padding_idx + 1 (ids != pad), CLS pooling + Normalize, roberta.-prefixed keys', async () => {
    const { dir, raw } = await modelFolder(XLMR, ['cls'], true, 'roberta.');
    // right-padded with pad_token_id 1; row 1 holds a real token equal to… nothing special: ids 0 and 2 are <s>, </s>
    const ids = [
      [0, 5, 17, 33, 41, 2],
      [0, 9, 23, 2, 1, 1],
    ];
    const mask = [
      [1, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 0, 0],
    ];
    const { session, result, spec } = await exportAndRun(dir, raw, {
      input_ids: ids,
      attention_mask: mask,
      token_type_ids: ids.map((r) => r.map(() => 0)),
    });
    // type_vocab_size 1: token_type_ids is still an input (HF adds a type row to every token), fed zeros
    expect(session.inputNames.filter((n) => !n.includes('.'))).toEqual(['input_ids', 'attention_mask', 'token_type_ids']);
    expect(spec.inputs.every((i) => i.location.key === `roberta.${i.name}`)).toBe(true);
    const ref = xlmRobertaReference(raw, XLMR, ids, mask, { modes: ['cls'], normalize: true }, 'roberta.');
    expect(ref.positions[1]).toEqual([2, 3, 4, 5, 1, 1]);
    expect(result.last_hidden_state!.dims).toEqual([2, 6, 32]);
    expect(maxDiff(result.last_hidden_state!.data as Float32Array, ref.hidden.flat(2))).toBeLessThan(1e-4);
    expect(maxDiff(result.sentence_embedding!.data as Float32Array, ref.pooled.flat())).toBeLessThan(1e-4);
    // the offset matters: positions 0… (BERT's) give other rows
    const bertLike = xlmRobertaReference(raw, { ...XLMR, model_type: 'bert' }, ids, mask, { modes: ['cls'], normalize: true }, 'roberta.');
    expect(maxDiff(result.last_hidden_state!.data as Float32Array, bertLike.hidden.flat(2))).toBeGreaterThan(1e-2);
  });

  it('XLM-RoBERTa through prepare → compile → run --dump-embeddings: one unpadded input', async () => {
    const { dir, raw } = await modelFolder(XLMR, ['cls'], true, '');
    const root = path.dirname(dir);
    const ok = async (...args: string[]) => {
      const r = await cliInProcess(args, { cwd: root });
      expect(r.code, r.stderr).toBe(0);
      return r;
    };
    await ok('export', '--config', dir, '--out', 'out');
    await ok('prepare', '--checkpoint', dir, '--dtype', 'float32');
    await ok('compile', 'out');
    await ok('run', 'out', '--input-ids', '0,9,23,2', '--dump-embeddings', 'e.json');
    const e = JSON.parse(fs.readFileSync(path.join(root, 'e.json'), 'utf8')) as {
      last_hidden_state: number[][];
      sentence_embedding: number[];
    };
    const ref = xlmRobertaReference(raw, XLMR, [[0, 9, 23, 2]], [[1, 1, 1, 1]], { modes: ['cls'], normalize: true });
    expect(e.last_hidden_state.length).toBe(4);
    expect(maxDiff(e.last_hidden_state.flat(), ref.hidden[0]!.flat())).toBeLessThan(1e-4);
    expect(maxDiff(e.sentence_embedding, ref.pooled[0]!)).toBeLessThan(1e-4);
    // the defaults are an all-ones mask and token type 0: given explicitly, the same file
    await ok(
      'run',
      'out',
      '--input-ids',
      '0,9,23,2',
      '--attention-mask',
      '1,1,1,1',
      '--token-type-ids',
      '0,0,0,0',
      '--dump-embeddings',
      'g.json',
    );
    expect(fs.readFileSync(path.join(root, 'g.json'), 'utf8')).toBe(fs.readFileSync(path.join(root, 'e.json'), 'utf8'));
    // a token type outside the one-row type vocabulary is refused with one line, before any output
    const r = await cliInProcess(['run', 'out', '--input-ids', '0,9', '--token-type-ids', '0,1', '--dump-embeddings', 'f.json'], {
      cwd: root,
    });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(/--token-type-ids: 1 is out of range .*its table has 1 rows/);
    expect(fs.existsSync(path.join(root, 'f.json'))).toBe(false);
  });

  it('RoBERTa (the modeling XLM-RoBERTa copies): the same positions and pooling', async () => {
    const cfg = { ...XLMR, architectures: ['RobertaModel'], model_type: 'roberta' };
    const { dir, raw } = await modelFolder(cfg, ['mean'], true, '');
    const ids = [
      [0, 5, 17, 2],
      [0, 9, 2, 1],
    ];
    const mask = [
      [1, 1, 1, 1],
      [1, 1, 1, 0],
    ];
    const zeros = ids.map((r) => r.map(() => 0));
    const { result, spec } = await exportAndRun(dir, raw, { input_ids: ids, attention_mask: mask, token_type_ids: zeros });
    expect(spec.model_name).toBe('RobertaModel');
    const ref = xlmRobertaReference(raw, cfg, ids, mask, { modes: ['mean'], normalize: true });
    expect(maxDiff(result.last_hidden_state!.data as Float32Array, ref.hidden.flat(2))).toBeLessThan(1e-4);
    expect(maxDiff(result.sentence_embedding!.data as Float32Array, ref.pooled.flat())).toBeLessThan(1e-4);
  });

  it('BERT: token types, mean + max + mean/√len pooling concatenated, no Normalize', async () => {
    const { dir, raw } = await modelFolder(BERT, ['mean', 'max', 'mean_sqrt_len'], false, '');
    const ids = [
      [3, 5, 17, 33, 41, 4],
      [3, 9, 23, 4, 0, 0],
    ];
    const mask = [
      [1, 1, 1, 1, 1, 1],
      [1, 1, 1, 1, 0, 0],
    ];
    const types = [
      [0, 0, 0, 1, 1, 1],
      [0, 0, 1, 1, 0, 0],
    ];
    const { result } = await exportAndRun(dir, raw, { input_ids: ids, attention_mask: mask, token_type_ids: types });
    const ref = xlmRobertaReference(raw, BERT, ids, mask, { modes: ['max', 'mean', 'mean_sqrt_len'], normalize: false }, '', types);
    expect(result.sentence_embedding!.dims).toEqual([2, 96]);
    expect(maxDiff(result.last_hidden_state!.data as Float32Array, ref.hidden.flat(2))).toBeLessThan(1e-4);
    expect(maxDiff(result.sentence_embedding!.data as Float32Array, ref.pooled.flat())).toBeLessThan(1e-4);
  });

  it('refusals are one line naming the file: relative positions, a Dense module, weighted-mean pooling, decoder flags', async () => {
    const run = async (dir: string, extra: string[] = []) => {
      const r = await cliInProcess(['export', '--config', dir, '--out', path.join(path.dirname(dir), 'out'), ...extra]);
      expect(r.code).not.toBe(0);
      return r.stderr.split('\n')[0]!;
    };
    const a = await modelFolder({ ...XLMR, position_embedding_type: 'relative_key' }, ['cls'], true, '');
    expect(await run(a.dir)).toMatch(/config\.json: "position_embedding_type" is "relative_key"/);
    const b = await modelFolder(XLMR, ['cls'], true, '');
    const list = JSON.parse(fs.readFileSync(path.join(b.dir, 'modules.json'), 'utf8')) as unknown[];
    fs.writeFileSync(
      path.join(b.dir, 'modules.json'),
      JSON.stringify([...list, { idx: 3, name: '3', path: '3_Dense', type: 'sentence_transformers.models.Dense' }]),
    );
    expect(await run(b.dir)).toMatch(/modules\.json: module "Dense" is not built/);
    fs.writeFileSync(path.join(b.dir, 'modules.json'), JSON.stringify(list));
    fs.writeFileSync(path.join(b.dir, '1_Pooling', 'config.json'), JSON.stringify({ pooling_mode_weightedmean_tokens: true }));
    expect(await run(b.dir)).toMatch(/1_Pooling\/config\.json: weighted-mean pooling is not built/);
    expect(await run(b.dir, ['--ctx-len', '64'])).toMatch(/--ctx-len goes with a causal LM/);
  });
});

describeOnnxChecker('ONNX checker on the encoder graphs', () => {
  it('XLM-RoBERTa (CLS + Normalize) and BERT (three poolings), float32 and float16', async () => {
    const files: string[] = [];
    for (const [cfg, modes, norm] of [
      [XLMR, ['cls'], true],
      [BERT, ['mean', 'max', 'mean_sqrt_len'], false],
    ] as const) {
      const { dir } = await modelFolder(cfg, [...modes], norm, '');
      for (const dtype of ['float32', 'float16'] as const) {
        const out = path.join(path.dirname(dir), `out-${dtype}`);
        await exportFromConfig({ config: dir, out, dtype, planner: planLayout });
        files.push(path.join(out, 'model.onnx'));
      }
    }
    expectOnnxValid(files);
  });
});
