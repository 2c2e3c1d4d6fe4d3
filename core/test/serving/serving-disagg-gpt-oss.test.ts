/**
 * Disaggregated prefill of GPT-OSS (issue 47): `export --phase prefill` builds QEfficient's
 * prefill-only graph, `PrefillOnlyTransform` → `QEffPrefillOnlyGptOssModel` /
 * `QEffPrefillOnlyGptOssAttention` (`QEfficient/transformers/models/gpt_oss/modeling_gpt_oss.py`,
 * `QEfficient/transformers/cache_utils.py` `QEffHybridCacheForGPTOSS.write_only`, main ebf55e81):
 * attention over the call's own keys under `_create_causal_mask` (causal, and the sliding window
 * on sliding layers), full layers scattered into a ctx_len cache (ctx_len = the prompt's length),
 * sliding layers' caches `sliding_window` long holding `key_states[read_idx]` with
 * `read_idx = arange(W) + max(pmax − W + 1, 0)`, 0 where it passes pmax.
 *
 * The logits are checked against reference.json for every prefix of the fixture's sequence and
 * against the plain graph; the caches against the plain graph's cache after the same prompt.
 * Compile follows `QEffGptOssForCausalLM.get_specializations` (ctx_len = prefill_seq_len without
 * chunking, `sliding_window: 128`), transcribed in test/support/qeff-qaic-rules.ts.
 */
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { describeFixtures } from '../../../test/support/fixtures';
import { QEFF_PREFILL_ONLY, qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { expectRecordedAsQeff, qpcOf, recordingFixture } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';
import { exportCompiled, f32, i64, ort, reference, session, ws } from '../support/serving-support';

const tmp = tempDirs('ws-disagg-oss-');
const W = 4; // the fixture's sliding_window
const HD = 32;
const KV = 2;

type Outs = ort.InferenceSession.OnnxValueMapType;

/** Runs `ids` from position 0 in one call with zero caches: full layers ctx_len long, rings `ring` long. */
async function prefill(s: ort.InferenceSession, ids: number[], ctxLen: number, ring: number): Promise<Outs> {
  const S = ids.length;
  return s.run({
    input_ids: i64(ids, [1, S]),
    position_ids: i64(
      ids.map((_, i) => i),
      [1, S],
    ),
    'past_key.0': f32(0, [1, KV, ring, HD]),
    'past_value.0': f32(0, [1, KV, ring, HD]),
    'past_key.1': f32(0, [1, KV, ctxLen, HD]),
    'past_value.1': f32(0, [1, KV, ctxLen, HD]),
  });
}

/** Cache slot `slot` of `[1, KV, n, HD]` as one row per kv head. */
function slotOf(t: ort.Tensor, slot: number): number[][] {
  const n = t.dims[2]!;
  const d = t.data as Float32Array;
  return Array.from({ length: KV }, (_, h) => [...d.subarray((h * n + slot) * HD, (h * n + slot + 1) * HD)]);
}

function maxDiff(a: number[][], b: number[][]): number {
  return Math.max(...a.flatMap((r, i) => r.map((x, j) => Math.abs(x - b[i]![j]!))));
}

describeFixtures('prefill-only export of the gpt_oss_full fixture', () => {
  let root = '';
  let pre: ort.InferenceSession;
  let plain: ort.InferenceSession;
  let preDir = '';
  const ref = () => reference('gpt_oss_full');
  const ids = () => [...ref().input_ids, ...ref().generated_ids.slice(0, -1)];
  beforeAll(async () => {
    root = tmp();
    const p = await exportCompiled(root, 'gpt_oss_full', 'oss-prefill', ['--phase', 'prefill']);
    const q = await exportCompiled(root, 'gpt_oss_full', 'oss-plain', ['--ctx-len', '16']);
    pre = (await session(p)).s;
    plain = (await session(q)).s;
    preDir = p;
  });

  it('run refuses the prefill graph with one line (feeding it in chunks would attend across calls)', async () => {
    const r = await ws(root, ['run', preDir, '--input-ids', '1,5,7', '--max-new-tokens', '2'], false);
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/a prefill-only gpt_oss graph .* run serves the plain export/);
  });

  it('the logits of every prefix equal reference.json (ctx_len = the prefix length, a 4-slot sliding cache)', async () => {
    const all = ids();
    let worst = 0;
    for (let S = 1; S <= all.length; S++) {
      const r = await prefill(pre, all.slice(0, S), S, W);
      expect(r.logits!.dims).toEqual([1, 1, 320]);
      worst = Math.max(worst, maxDiff([[...(r.logits!.data as Float32Array)]], [ref().logits[S - 1]!]));
    }
    expect(worst).toBeLessThanOrEqual(1e-4);
  });

  it('logits and caches equal the plain graph’s after the same prompt', async () => {
    const all = ids();
    const S = all.length; // 11: the ring takes positions 7…10
    const a = await prefill(pre, all, S, W);
    const b = await prefill(plain, all, 16, 16);
    expect(maxDiff([[...(a.logits!.data as Float32Array)]], [[...(b.logits!.data as Float32Array)]])).toBeLessThanOrEqual(1e-5);
    for (const kv of ['key', 'value']) {
      const full = a[`past_${kv}.1_RetainedState`]!;
      expect(full.dims).toEqual([1, KV, S, HD]);
      for (let p = 0; p < S; p++) expect(maxDiff(slotOf(full, p), slotOf(b[`past_${kv}.1_RetainedState`]!, p))).toBeLessThanOrEqual(1e-5);
      const ring = a[`past_${kv}.0_RetainedState`]!;
      expect(ring.dims).toEqual([1, KV, W, HD]);
      for (let j = 0; j < W; j++)
        expect(maxDiff(slotOf(ring, j), slotOf(b[`past_${kv}.0_RetainedState`]!, S - W + j))).toBeLessThanOrEqual(1e-5);
    }
    // a prompt shorter than the window: read_idx [0, 1, 2, 3] → [0, 1, 0, 0] (indices past pmax = 1 read 0)
    const c = await prefill(pre, all.slice(0, 2), 2, W);
    const d = await prefill(plain, all.slice(0, 2), 16, 16);
    const ring = c['past_key.0_RetainedState']!;
    for (const [j, p] of [0, 1, 0, 0].entries())
      expect(maxDiff(slotOf(ring, j), slotOf(d['past_key.0_RetainedState']!, p))).toBeLessThanOrEqual(1e-5);
  });
});

describeFixtures('prefill-only compile of the gpt_oss_full fixture through the recording compiler', () => {
  const rec = recordingFixture(tmp, 'gpt_oss_full');
  const { root, bin, record, compile } = rec;
  const exportTo = (out: string, flags: string[]) => rec.exportTo(out, ['--phase', 'prefill', ...flags]);

  it('--prefill-seq-len 256: one Prefill entry with ctx_len 256 and sliding_window 128, as QEfficient writes it', async () => {
    const out = path.join(root(), 'export-prefill');
    await exportTo(out, []);
    // 16 cores on 4 experts: the unchunked GPT-OSS MLP is not expert-blocked, so no divisibility check
    const r = await compile(out, ['--prefill-seq-len', '256']);
    expect(r.code, r.stderr).toBe(0);
    const qpc = qpcOf(r);
    const want = qeffQaicCompile({
      ...QEFF_PREFILL_ONLY,
      compiler: bin(),
      model_type: 'gpt_oss',
      enable_chunking: false,
      ctx_len: 128, // QEfficient's compile default: get_specializations overrides it with prefill_seq_len
      prefill_seq_len: 256,
      num_cores: 16,
      num_layers: 2,
      onnx: path.join(out, 'model.onnx'),
      compile_dir: qpc,
    });
    expectRecordedAsQeff(record(), qpc, want);
    // by hand
    expect(JSON.parse(want.specializations)).toEqual({
      specializations: [{ name: 'Prefill', symbols: { batch_size: '1', ctx_len: '256', seq_len: '256', sliding_window: '128' } }],
    });
  });

  it('refused with one line: a fixed --ctx-len other than the prefill length, a prefill_seq_len not a multiple of 256', async () => {
    const fixed = path.join(root(), 'export-fixed');
    await exportTo(fixed, ['--ctx-len', '512']);
    const a = await compile(fixed, ['--prefill-seq-len', '256']);
    expect(a.code).toBe(2);
    expect(a.stderr.split('\n')[0]).toMatch(/prefill-only gpt_oss graph's ctx_len is its prefill_seq_len \(256\).*--ctx-len 512/);
    const out = path.join(root(), 'export-prefill-bad');
    await exportTo(out, []);
    const b = await compile(out, ['--prefill-seq-len', '128']);
    expect(b.code).toBe(2);
    expect(b.stderr.split('\n')[0]).toMatch(/divisible by block_size=256 \(got 128/);
  });
});
