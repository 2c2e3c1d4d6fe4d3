/**
 * QEfficient's serving features in a VLM's language graph, on the Qwen2.5-VL fixture through the
 * CLI (export --config → prepare → compile → run) against reference.json (HF transformers):
 * - CCL: `--comp-ctx-lengths-prefill 24 --comp-ctx-lengths-decode 24,48 --ctx-len 48` adds the
 *   `comp_ctx_lengths` input (QEffQwen_2_5_vl_DecoderWrapper.forward's `comp_ctx_lengths`,
 *   dynamic axis `comp_ctx_lengths`: QEfficient/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py,
 *   quic/efficient-transformers main ebf55e8159c8b87bff6d8028541b824244b16c81); run picks the
 *   bucket per call and reproduces generated_ids and the logits (≤ 1e-4), and attention really
 *   reads only the bucket (a bucket shorter than the prompt changes the logits);
 * - the on-device sampler: `--sampler` ends the graph in `next_tokens` (QEfficient's
 *   SamplerTransform takes QEffQwen_2_5_vl_DecoderWrapper; sampler_forward samples over
 *   position_ids[0]: QEfficient/transformers/sampler/sampler.py, same commit); run's greedy
 *   tokens equal generated_ids;
 * - the sampler on a decoder QEfficient's SamplerTransform does not take (Qwen3-VL) is refused;
 * - the other built VLMs (LLaVA, LLaVA-NeXT, Mistral 3 over language-llava.ts; Gemma 3 over
 *   language-gemma3.ts) with CCL, and the sampler where QEfficient's SamplerTransform takes the
 *   decoder (QEFFLlavaDecoderWrapper, QEffLlavaNextDecoderWrapper, QEffGemma3DecoderWrapper; not
 *   Mistral 3), give their reference's generated_ids through run.
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { beforeAll, expect, it } from 'vitest';
import { BUILT_VLMS, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { haveOnnxChecker } from '../../../test/support/onnx-checker';
import { tempDirs } from '../../../test/support/temp';
import {
  copyFixtureModel,
  dumpedLogits,
  expectGeneratedIds,
  expectGraphsAndArtifactsValid,
  maxDiff,
  vlmFixtureCli,
} from '../../../test/support/vlm-cli';

const tmp = tempDirs('ws-vlm-serving-');
const CCL = ['--ctx-len', '48', '--comp-ctx-lengths-prefill', '24', '--comp-ctx-lengths-decode', '24,48'];

describeFixtures('qwen2_5_vl with CCL and the on-device sampler', () => {
  const { fx, ref, h, begin } = vlmFixtureCli('qwen2_5_vl', tmp);
  const source = () => ['--pixel-values', path.join(fx, 'reference.json')];

  beforeAll(async () => {
    begin();
    await h.ok('export', '--config', 'model', '--out', 'out', ...CCL);
    await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
    await h.ok('compile', 'out');
    await h.ok('export', '--config', 'model', '--out', 'out-sampler', '--sampler');
    await h.ok('compile', 'out-sampler');
  }, 120_000);

  it('CCL: the language graph takes comp_ctx_lengths; run gives generated_ids and the logits within 1e-4', async () => {
    const report = JSON.parse(readFileSync(path.join(h.work(), 'out', 'language', 'export-report.json'), 'utf8'));
    expect(report.graph.inputs).toContain('comp_ctx_lengths');
    expect(report.options).toMatchObject({ comp_ctx_lengths_prefill: [24], comp_ctx_lengths_decode: [24, 48] });
    await expectGeneratedIds(h, 'out', source(), ref);
    // prefixes end at positions 0…20 (bucket 24), the last rows at 21…24 (decode: 24, then 48)
    const got = await dumpedLogits(h, source(), ref);
    expect(maxDiff(got.flat(), (ref.logits as number[][]).flat())).toBeLessThan(1e-4);
  });

  it('CCL: attention reads only the bucket — the prompt under bucket 24 gives the reference, under bucket 8 it does not', async () => {
    const s = await h.session('out/language');
    const ids: number[] = ref.input_ids;
    const n = ids.length;
    const pos: number[][] = ref.position_ids; // [3][n]: HF get_rope_index
    const cache = s.inputNames.filter((x) => x.startsWith('past_'));
    const lastLogits = async (bucket: number) => {
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.map(BigInt)), [1, n]),
        vision_embeds: new ort.Tensor('float32', Float32Array.from((ref.image_embeds as number[][]).flat()), [
          1,
          ref.image_embeds.length,
          64,
        ]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from([ids.map((_, k) => k), ...pos].flat().map(BigInt)), [4, 1, n]),
        image_idx: new ort.Tensor('int64', new BigInt64Array(1), [1, 1]),
        comp_ctx_lengths: new ort.Tensor('int64', new BigInt64Array(bucket), [bucket]),
      };
      // the fixture's text model (config.json, flat layout), ctx_len 48
      const cfg = JSON.parse(readFileSync(path.join(fx, 'config.json'), 'utf8'));
      const hd = cfg.hidden_size / cfg.num_attention_heads;
      for (const c of cache)
        feeds[c] = new ort.Tensor('float32', new Float32Array(cfg.num_key_value_heads * 48 * hd), [1, cfg.num_key_value_heads, 48, hd]);
      const out = await s.run(feeds);
      return out.logits!.data as Float32Array;
    };
    expect(maxDiff(await lastLogits(24), (ref.logits as number[][])[n - 1]!)).toBeLessThan(1e-4);
    expect(maxDiff(await lastLogits(8), (ref.logits as number[][])[n - 1]!)).toBeGreaterThan(1e-3);
  });

  it('the sampler: the graph ends in next_tokens; run gives generated_ids; --dump-logits is refused in one line', async () => {
    const report = JSON.parse(readFileSync(path.join(h.work(), 'out-sampler', 'language', 'export-report.json'), 'utf8'));
    expect(report.graph.outputs.slice(0, 3)).toEqual(['next_tokens', 'vision_embeds_RetainedState', 'image_idx_output']);
    expect(report.graph.outputs).not.toContain('logits');
    // --max-top-k's default: min(512, vocab) of the fixture's text model (config.json vocab_size)
    const vocab = JSON.parse(readFileSync(path.join(fx, 'config.json'), 'utf8')).vocab_size as number;
    expect(report.options.sampler).toEqual({ max_top_k_ids: Math.min(512, vocab), return_pdfs: false });
    expect(report.graph.outputs.slice(-2)).toEqual([
      'past_repetition_penalty_buffer_RetainedState',
      'past_presence_penalty_buffer_RetainedState',
    ]);
    await expectGeneratedIds(h, 'out-sampler', source(), ref);
    const r = await h.cliRun('run', 'out-sampler', ...source(), '--input-ids', ref.input_ids.join(','), '--dump-logits', 'x.json');
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/on-device sampler/);
  });

  it('the sampler on Qwen3-VL (not in QEfficient’s SamplerTransform) is refused with exit 2, writing nothing', async () => {
    mkdirSync(path.join(h.work(), 'q3'));
    copyFixtureModel(path.join(h.work(), 'q3'), path.join(fixturesDir(), 'qwen3_vl_moe'), ['config.json']);
    const r = await h.cliRun('export', '--config', 'q3/model', '--out', 'q3-out', '--sampler');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--sampler: QEfficient's on-device sampler does not take qwen3_vl_moe/);
    expect(existsSync(path.join(h.work(), 'q3-out'))).toBe(false);
  });

  it.runIf(haveOnnxChecker())("every graph and compiled artifact passes ONNX's checker", () => {
    expectGraphsAndArtifactsValid(h.work(), ['out/vision', 'out/language', 'out-sampler/language']);
  });
});

// prompts of 17–42 tokens: prefill and decode move through the buckets (and past them to ctx_len 64)
const CCL64 = ['--ctx-len', '64', '--comp-ctx-lengths-prefill', '16,32', '--comp-ctx-lengths-decode', '32,64'];
for (const fixture of BUILT_VLMS.filter((f) => f !== 'qwen2_5_vl' && f !== 'qwen3_vl_moe')) {
  const sampler = fixture !== 'mistral3';
  describeFixtures(`${fixture} with CCL${sampler ? ' and the on-device sampler' : ''}`, () => {
    const { fx, ref, h, begin } = vlmFixtureCli(fixture, tmp);
    it(`export ${sampler ? 'with both' : 'with CCL'} → prepare → compile → run --pixel-values gives generated_ids`, async () => {
      begin();
      await h.ok('export', '--config', 'model', '--out', 'out', ...CCL64, ...(sampler ? ['--sampler'] : []));
      await h.ok('prepare', '--checkpoint', 'model', '--dtype', 'float32');
      await h.ok('compile', 'out');
      const report = JSON.parse(readFileSync(path.join(h.work(), 'out', 'language', 'export-report.json'), 'utf8'));
      expect(report.graph.inputs).toContain('comp_ctx_lengths');
      expect(report.graph.outputs[0]).toBe(sampler ? 'next_tokens' : 'logits');
      await expectGeneratedIds(h, 'out', ['--pixel-values', path.join(fx, 'reference.json')], ref);
      if (!sampler) {
        const r = await h.cliRun('export', '--config', 'model', '--out', 'refused', '--sampler');
        expect(r.code).toBe(2);
        expect(r.stderr.split('\n')[0]).toMatch(/QEfficient's on-device sampler does not take mistral3/);
      }
    }, 120_000);
    // last: onnx's check_model(path, full_check=True) may write inferred shapes back into the file
    it.runIf(haveOnnxChecker())("both graphs and compiled artifacts pass ONNX's checker", () => {
      expectGraphsAndArtifactsValid(h.work(), ['out/vision', 'out/language']);
    });
  });
}
