/**
 * Legacy exports of fused experts (issue 31): a `torch.onnx.export` that unrolls the expert
 * loop folds one expert's slice of a fused tensor into each initializer — GraniteMoE
 * (`modeling_granitemoe.py` `GraniteMoeParallelExperts`: `input_linear [E, 2I, H]`, each
 * expert's gate and up halves transposed for MatMul, `output_linear [E, H, I]` transposed),
 * Llama 4 (`modeling_llama4.py` `Llama4TextExperts`: `gate_up_proj [E, H, 2I]`, `down_proj
 * [E, I, H]`, one `bmm` operand per expert) and a fused qkv (Phi-3 `qkv_proj [(nh + 2·nkv)·hd, H]`
 * cut into q, k, v), GPT-OSS (`modeling_gpt_oss.py` `GptOssExperts`: the dequantized MXFP4
 * `gate_up_proj [E, H, 2I]`, gate and up interleaved, one expert per matmul). No fixture ships such a graph, so each is made here with the project's
 * ONNX builders: Identity nodes return the slices, and after export --onnx → prepare → compile
 * the compiled graph must return them bit for bit from the prepared (canonical) tensors.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir, haveFixtures } from '../../../test/support/fixtures';
import { Checkpoint } from '../../src/formats/safetensors';
import { dequantMxfp4Reference } from '../support/graph-reference-gpt-oss';
import * as ort from 'onnxruntime-node';
import { cliStdout } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { SYNTHETIC_CONFIGS, writeRandomModel } from '../support/graph-random';
import { identityGraph, type F32 } from '../support/graph-support';
import { expectOnnxValid, describeOnnxChecker } from '../../../test/support/onnx-checker';

const tmp = tempDirs('ws-fused-slices-')();

const ws = (...args: string[]): Promise<string> => cliStdout(tmp, ...args);

/** Rows [r0, r0 + rows) of expert `e` of `t` ([E, R, C], or [R, C] without e), transposed when asked. */
function slice(t: F32, e: number | undefined, r0: number, rows: number, transposed: boolean): F32 {
  const [R, C] = t.shape.slice(-2) as [number, number];
  const base = (e ?? 0) * R * C + r0 * C;
  const data = new Float32Array(rows * C);
  for (let r = 0; r < rows; r++) for (let c = 0; c < C; c++) data[transposed ? c * rows + r : r * C + c] = t.data[base + r * C + c]!;
  return { shape: transposed ? [C, rows] : [rows, C], data };
}

/** A legacy graph returning `inits` through Identity nodes; export → prepare → compile; the outputs must be the initializers. */
async function roundTrip(name: string, src: string, inits: [string, F32][]): Promise<{ inputs: string[]; onnx: string }> {
  const onnx = path.join(tmp, `${name}.onnx`);
  writeFileSync(onnx, identityGraph(inits));
  const out = path.join(tmp, `${name}-export`);
  await ws('export', '--onnx', onnx, '--checkpoint', src, '--out', out);
  const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
  expect(report.unresolved).toEqual([]);
  const prepared = path.join(tmp, `${name}-prepared`);
  await ws('prepare', '--checkpoint', src, '--dtype', 'float32', '--out', prepared);
  await ws('compile', out, '--prepared', prepared);
  const rec = JSON.parse(readFileSync(path.join(out, 'compile.json'), 'utf8')) as { artifacts: { model: string } };
  const session = await ort.InferenceSession.create(path.resolve(out, rec.artifacts.model));
  const res = await session.run({});
  inits.forEach(([n, t], i) => {
    const got = res[`out${i}`]!;
    expect(got.dims, n).toEqual(t.shape);
    expect(Array.from(got.data as Float32Array), n).toEqual(Array.from(t.data));
  });
  await session.release();
  const used = (i: { input: string; concatenated_with?: string; interleaved_with?: string }) => [
    i.input,
    ...(i.concatenated_with ? [i.concatenated_with] : []),
    ...(i.interleaved_with ? [i.interleaved_with] : []),
  ];
  return { inputs: report.inputs.flatMap(used), onnx: path.join(out, 'model.onnx') };
}

describe('legacy graphs holding per-expert slices of fused experts bind to the prepared layout', () => {
  const made: string[] = [];

  it('GraniteMoE: each expert’s gate and up halves of input_linear and its output_linear, transposed', async () => {
    const cfg = SYNTHETIC_CONFIGS.granitemoe!;
    const src = path.join(tmp, 'granitemoe');
    const raw = await writeRandomModel(src, cfg, 31);
    const I = cfg.intermediate_size as number;
    const inits: [string, F32][] = [];
    let n = 0;
    for (let l = 0; l < (cfg.num_hidden_layers as number); l++) {
      const m = `model.layers.${l}.block_sparse_moe`;
      const input = raw.get(`${m}.input_linear.weight`)!;
      const output = raw.get(`${m}.output_linear.weight`)!;
      for (let e = 0; e < input.shape[0]!; e++) {
        inits.push([`onnx::MatMul_${n++}`, slice(input, e, 0, I, true)]);
        inits.push([`onnx::MatMul_${n++}`, slice(input, e, I, I, true)]);
        inits.push([`onnx::MatMul_${n++}`, slice(output, e, 0, output.shape[1]!, true)]);
      }
    }
    const { inputs, onnx } = await roundTrip('granitemoe-slices', src, inits);
    // gate/up come from the split halves themselves (no Concat rebuilt), down from the stacked down
    expect(new Set(inputs)).toEqual(
      new Set(
        Array.from({ length: cfg.num_hidden_layers as number }, (_, l) =>
          ['gate', 'up', 'down'].map((r) => `model.layers.${l}.block_sparse_moe.moe_weights.${r}`),
        ).flat(),
      ),
    );
    made.push(onnx);
  });

  it('Llama 4: each expert’s gate_up_proj [H, 2I] and down_proj [I, H], as bmm operands and transposed', async () => {
    const cfg = SYNTHETIC_CONFIGS['llama4-nope-step3']!;
    const src = path.join(tmp, 'llama4');
    const raw = await writeRandomModel(src, cfg, 37);
    const inits: [string, F32][] = [];
    const f = 'model.layers.2.feed_forward.experts';
    const gu = raw.get(`${f}.gate_up_proj`)!;
    const down = raw.get(`${f}.down_proj`)!;
    for (let e = 0; e < gu.shape[0]!; e++) {
      inits.push([`onnx::MatMul_gu${e}`, slice(gu, e, 0, gu.shape[1]!, e % 2 === 1)]);
      inits.push([`onnx::MatMul_d${e}`, slice(down, e, 0, down.shape[1]!, e % 2 === 0)]);
    }
    const { inputs, onnx } = await roundTrip('llama4-slices', src, inits);
    expect(new Set(inputs)).toEqual(new Set(['gate', 'up', 'down'].map((r) => `model.layers.2.feed_forward.moe_weights.${r}`)));
    made.push(onnx);
  });

  it('a fused qkv_proj cut into q, k and v (transposed), read through a Slice of the prepared tensor', async () => {
    const cfg = SYNTHETIC_CONFIGS['phi3-longrope']!;
    const src = path.join(tmp, 'phi3');
    const raw = await writeRandomModel(src, cfg, 41);
    const hd = (cfg.hidden_size as number) / (cfg.num_attention_heads as number);
    const [q, kv] = [(cfg.num_attention_heads as number) * hd, (cfg.num_key_value_heads as number) * hd];
    const qkv = raw.get('model.layers.1.self_attn.qkv_proj.weight')!;
    const inits: [string, F32][] = [
      ['onnx::MatMul_q', slice(qkv, undefined, 0, q, true)],
      ['onnx::MatMul_k', slice(qkv, undefined, q, kv, true)],
      ['onnx::MatMul_v', slice(qkv, undefined, q + kv, kv, false)],
    ];
    const { inputs, onnx } = await roundTrip('phi3-qkv-slices', src, inits);
    expect(new Set(inputs)).toEqual(new Set(['model.layers.1.self_attn.qkv_proj.weight']));
    made.push(onnx);
  });

  describeFixtures('on the gpt_oss_full fixture (MXFP4 experts)', () => {
    it('GPT-OSS: each expert’s dequantized gate_up_proj [H, 2I] and down_proj [I, H] (its own dequantization of the checkpoint)', async () => {
      const src = path.join(fixturesDir(), 'gpt_oss_full');
      const ck = await Checkpoint.open(src);
      const m = 'model.layers.1.mlp.experts';
      const deq = async (proj: string) => {
        const b = ck.get(`${m}.${proj}_blocks`)!;
        const [E, R, G] = b.shape as [number, number, number];
        return dequantMxfp4Reference(await ck.read(b.key), await ck.read(`${m}.${proj}_scales`), E, R, G);
      };
      const [gu, down] = [await deq('gate_up_proj'), await deq('down_proj')];
      const inits: [string, F32][] = [];
      for (let e = 0; e < gu.shape[0]!; e++) {
        inits.push([`onnx::MatMul_gu${e}`, slice(gu, e, 0, gu.shape[1]!, false)]);
        inits.push([`onnx::MatMul_d${e}`, slice(down, e, 0, down.shape[1]!, true)]);
      }
      const { inputs, onnx } = await roundTrip('gpt-oss-slices', src, inits);
      expect(new Set(inputs)).toEqual(new Set(['gate', 'up', 'down'].map((r) => `model.layers.1.mlp.moe_weights.${r}`)));
      made.push(onnx);
    });
  });

  describeOnnxChecker('the rewritten legacy graphs', () => {
    it('pass ONNX’s checker', () => {
      expect(made.length).toBe(haveFixtures() ? 4 : 3);
      expectOnnxValid(made);
    });
  });
});
