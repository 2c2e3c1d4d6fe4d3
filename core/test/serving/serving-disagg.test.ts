/**
 * Disaggregated prefill (issue 47): `export --phase prefill` of an arch in QEfficient's
 * `SPECIALIZED_DISAGG_SERVING_MODEL_ARCH` (`QEfficient/transformers/modeling_utils.py`, main
 * ebf55e81). For glm4_moe, `PrefillOnlyTransform` / `PrefillOnlyChunkedTransform`
 * (`QEfficient/transformers/models/pytorch_transforms.py`) swap only the MoE block
 * (`QEffPrefillChunkedGlm4MoeMoE`: the same routed sum, expert-blocked), so the prefill graph's
 * logits equal the plain graph's; compile (`QEFFAutoModelForCausalLM.compile(prefill_only=True)`)
 * gives the Prefill specialization only and hashes `prefill_only: true`, after the export's
 * checks (`get_seq_len_and_handle_specialized_prefill_model`: prefill_seq_len a multiple of 256
 * without chunking; `_forward_expert_blocked`: num_experts divisible by num_cores), transcribed in
 * test/support/qeff-qaic-rules.ts and written out by hand below.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { QEFF_PREFILL_ONLY, qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { expectRecordedAsQeff, qpcOf, recordingFixture } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';
import { maxAbsDiff } from '../support/compile-support';
import { dumpLogits, exportCompiled, reference, ws } from '../support/serving-support';

const tmp = tempDirs('ws-disagg-');

describeFixtures('prefill-only export of the glm4_moe fixture', () => {
  it('run --dump-logits of the prefill graph equals the plain graph’s and reference.json', async () => {
    const root = tmp();
    const ref = reference('glm4_moe');
    const pre = await exportCompiled(root, 'glm4_moe', 'glm-prefill', ['--ctx-len', '32', '--phase', 'prefill']);
    const plain = await exportCompiled(root, 'glm4_moe', 'glm-plain', ['--ctx-len', '32']);
    const meta = JSON.parse(fs.readFileSync(path.join(pre, 'export-report.json'), 'utf8')) as { options: Record<string, unknown> };
    expect(meta.options.disagg_prefill).toEqual({ enable_chunking: false, num_experts: 8 });
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    const rows = await dumpLogits(root, pre, ids);
    expect(maxAbsDiff(rows, await dumpLogits(root, plain, ids))).toBeLessThanOrEqual(1e-6);
    expect(maxAbsDiff(rows, ref.logits)).toBeLessThanOrEqual(1e-4);
  });

  it('refused with one line: chunked gpt_oss (its chunked attention is not built), --enable-chunking without --phase prefill, CB without chunking', async () => {
    const root = tmp();
    const bad = async (fam: string, flags: string[], msg: RegExp) => {
      const r = await ws(root, ['export', '--config', path.join(fixturesDir(), fam), '--out', path.join(root, 'bad'), ...flags], false);
      expect(r.status).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(msg);
    };
    await bad('gpt_oss_full', ['--phase', 'prefill', '--enable-chunking'], /QEffPrefillOnlyChunkedGptOssAttention\) is not built yet/);
    await bad('glm4_moe', ['--enable-chunking'], /--enable-chunking goes with --phase prefill/);
    await bad(
      'llama',
      ['--phase', 'prefill', '--enable-chunking'],
      /--enable-chunking goes with --phase prefill of a disaggregated-serving model/,
    );
    await bad('glm4_moe', ['--phase', 'prefill', '--continuous-batching', '--batch-size', '2'], /prefix-caching without chunking/);
  });
});

describeFixtures('prefill-only compile through the recording compiler (glm4_moe fixture)', () => {
  const { root, bin, record, exportTo, compile } = recordingFixture(tmp, 'glm4_moe');

  it('--prefill-seq-len 256 --num-cores 8: one Prefill entry, prefill_only true, as QEfficient writes them', async () => {
    const out = path.join(root(), 'export-prefill');
    await exportTo(out, ['--ctx-len', '512', '--phase', 'prefill']);
    const r = await compile(out, ['--prefill-seq-len', '256', '--num-cores', '8']);
    expect(r.code, r.stderr).toBe(0);
    const qpc = qpcOf(r);
    const want = qeffQaicCompile({
      ...QEFF_PREFILL_ONLY,
      compiler: bin(),
      ctx_len: 512,
      prefill_seq_len: 256,
      num_cores: 8,
      num_layers: 3,
      onnx: path.join(out, 'model.onnx'),
      compile_dir: qpc,
    });
    const hashed = expectRecordedAsQeff(record(), qpc, want);
    // by hand: the one entry and the flag
    expect(JSON.parse(want.specializations)).toEqual({
      specializations: [{ name: 'Prefill', symbols: { batch_size: '1', ctx_len: '512', seq_len: '256' } }],
    });
    expect(JSON.parse(hashed)).toMatchObject({ prefill_only: true });
  });

  it('refused as QEfficient refuses: prefill_seq_len not a multiple of 256 (unless chunked), experts not divisible by the cores', async () => {
    const out = path.join(root(), 'export-prefill-bad');
    await exportTo(out, ['--ctx-len', '512', '--phase', 'prefill']);
    const a = await compile(out, ['--prefill-seq-len', '128', '--num-cores', '8']);
    expect(a.code).toBe(2);
    expect(a.stderr.split('\n')[0]).toMatch(/divisible by block_size=256 \(got 128/);
    const b = await compile(out, ['--prefill-seq-len', '256']); // 16 cores, 8 experts
    expect(b.code).toBe(2);
    expect(b.stderr.split('\n')[0]).toMatch(/num_experts \(8\) must be divisible by expert_blocking_num_nsp \(16\)/);
    // chunked: any prefill_seq_len
    const chunked = path.join(root(), 'export-chunked');
    await exportTo(chunked, ['--ctx-len', '512', '--phase', 'prefill', '--enable-chunking']);
    const c = await compile(chunked, ['--prefill-seq-len', '128', '--num-cores', '4']);
    expect(c.code, c.stderr).toBe(0);
  });
});
