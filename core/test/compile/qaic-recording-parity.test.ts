/**
 * A recording `qaic-compile` (a shell script: saves its argv and copies the specialization and
 * custom-IO files it is handed, then writes programqpc.bin) stands in for the compiler; what it
 * received, and the `hashed_compile_params.json` left beside the QPC, are compared with what
 * QEfficient's rules produce, transcribed to Python in test/support/qeff-qaic-rules.ts (json.dumps
 * does the JSON) from
 * quic/efficient-transformers:
 *  - `QEfficient/transformers/models/modeling_auto.py` (release/v1.22.8.0, and commit
 *    a53a44dfd3efe0fe6fe11d8abccf184c4e6027fd for CCL) `QEFFAutoModelForCausalLM.compile`:
 *    prefill `{batch_size, seq_len, ctx_len}` (CB: batch_size 1, full_batch_size and
 *    full_batch_exec_size = full_batch_size), decode when prefill_seq_len != 1 or CB, one entry per
 *    CCL bucket with `comp_ctx_lengths`; custom IO `past_{key,value}.{i}` beside `_RetainedState`.
 *    Issue 30.4 says CB prefill's full_batch_exec_size is 1 ("exec_batch_size"); the source says
 *    otherwise, and is followed: a53a44df `build_prefill_specialization` ends
 *    `if full_batch_size: spec["full_batch_exec_size"] = full_batch_size`, as do the older stored
 *    versions (the `prefill_specialization.update({"full_batch_exec_size": full_batch_size})` form)
 *    and the VLM language specs; no stored QEfficient file names `exec_batch_size`;
 *  - `QEfficient/utils/check_ccl_specializations.py` `validate_ccl_lists` (main ebf55e81, the same
 *    text at the weight-free PR head 277283b5): values below CCL_MIN_CTX_LEN = 1024 raised, ctx_len
 *    appended to a list whose last value is below it, capped, deduplicated, sorted, a prefill value
 *    colliding with a decode value lowered to a multiple of CCL_UNIQNE_STEP = 32 below it
 *    (`val = (val - 1) // CCL_UNIQNE_STEP * CCL_UNIQNE_STEP`);
 *  - `QEfficient/base/modeling_qeff.py` (release/v1.22.8.0) `_compile`: the command, and
 *    `create_json(compile_dir / "hashed_compile_params.json", compile_hash_params)` with
 *    command / specializations / custom_io / mdp_ts_num_devices / mdp_ts_json / num_speculative_tokens;
 *  - `QEfficient/utils/constants.py` (main ebf55e81) `get_default_aic_hw_version`: `qaic-util -q`,
 *    the first `FW IMAGE_VARIANT` AIC200 → ai200, else ai100 (the `NSP IMAGE_VARIANT` form of
 *    commit 43fbde7c, `QEfficient/utils/hw_detection.py`, is an unmerged PR's);
 *  - `_infer_specialization_name` (tests/transformers/test_causal_lm.py `TestInferSpecializationName`):
 *    seq_len > 1 → Prefill, 1 → Decode; a name used more than once gets `_0`, `_1`, … (the
 *    Prefill_0 form `to_named_specializations` writes; see the report: the function's text is not
 *    in the searchable index, so the suffix rule is from the issue, not read from the source).
 * TLM (`--num-speculative-tokens`, main ebf55e81 `modeling_auto.py` `compile`,
 * `build_prefill_specialization` / `build_decode_specialization`): prefill `num_logits_to_keep: 1`
 * tagged "Prefill", one decode entry per K in `sorted(set(num_speculative_tokens))` with seq_len =
 * num_logits_to_keep = K + 1 tagged "Decode" (None when K + 1 = prefill_seq_len without CB);
 * `num_speculative_tokens` as given in the hashed parameters. The `_graph_name` tag names the
 * entry and is not hashed here (the rest of this file's hashed form predates it; see issue 47's report).
 * bf16 (main ebf55e81 `_resolve_torch_dtype`, `compile`'s `convert_to_fp16=(CUSTOM_IO_DTYPE_MAP[target_dtype]
 * == "float16")` and KV dtype `CUSTOM_IO_DTYPE_MAP[target_dtype]`, `_compile`'s custom-IO file not
 * passed when model and past KV are both bfloat16): a `--dtype bfloat16` export keeps bf16 on ai200
 * and is compiled as a float32 model on ai100.
 * An export made with `--phase decode` is compiled as QEfficient compiles prefill_seq_len 1 (its
 * one specialization, seq_len 1): QEfficient itself refuses decode_only for a causal LM.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { recordingCompiler } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-qaic-rec-');

describeFixtures('qaic-compile parity through a recording compiler (llama fixture, 2 layers)', () => {
  let root = '';
  let model = '';
  let bin = '';
  let record = '';
  let util = '';
  const ok = async (args: string[], env: Record<string, string> = {}) => {
    const r = await cliInProcess(args, {
      cwd: root,
      env: { WEIGHT_SPEC_QAIC_COMPILE: bin, WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none'), ...env },
    });
    expect(r.code, r.stderr).toBe(0);
    return r;
  };

  beforeAll(async () => {
    root = tmp();
    model = path.join(root, 'llama');
    fs.cpSync(path.join(fixturesDir(), 'llama'), model, { recursive: true });
    record = path.join(root, 'record');
    bin = recordingCompiler(root, record);
    util = path.join(root, 'qaic-util');
    // qaic-util -q names both variants; main reads the FW one
    fs.writeFileSync(util, '#!/bin/sh\necho "QID 0"\necho "\tFW IMAGE_VARIANT:AIC200_STD"\necho "\tNSP IMAGE_VARIANT:AIC100_STD"\n', {
      mode: 0o755,
    });
    await ok(['prepare', '--checkpoint', model, '--dtype', 'float32']);
    await ok(['prepare', '--checkpoint', model, '--dtype', 'bfloat16']);
  });

  const base = { batch_size: 1, full_batch_size: null, continuous_batching: false, decode_only: false, ccl: null };
  const cases: { tag: string; exp: string[]; comp: string[]; py: Record<string, unknown>; env?: Record<string, string> }[] = [
    {
      tag: 'plain',
      exp: ['--ctx-len', '64'],
      comp: ['--prefill-seq-len', '16', '--num-cores', '14', '--mxfp6-matmul'],
      py: { ctx_len: 64, prefill_seq_len: 16, num_cores: 14, mxfp6_matmul: true, mxint8_kv_cache: false },
    },
    {
      tag: 'cb',
      exp: ['--ctx-len', '64', '--continuous-batching', '--batch-size', '4'],
      comp: ['--mxint8-kv-cache'],
      py: { ctx_len: 64, prefill_seq_len: 32, full_batch_size: 4, continuous_batching: true, mxint8_kv_cache: true },
    },
    {
      tag: 'cb-psl1',
      exp: ['--ctx-len', '64', '--continuous-batching', '--batch-size', '2'],
      comp: ['--prefill-seq-len', '1'],
      py: { ctx_len: 64, prefill_seq_len: 1, full_batch_size: 2, continuous_batching: true },
    },
    { tag: 'decode-only', exp: ['--ctx-len', '64', '--phase', 'decode'], comp: [], py: { ctx_len: 64, decode_only: true } },
    {
      tag: 'ccl-example',
      exp: ['--ctx-len', '4096', '--comp-ctx-lengths-prefill', '1024,2048', '--comp-ctx-lengths-decode', '2048,4096'],
      comp: ['--prefill-seq-len', '128'],
      py: {
        ctx_len: 4096,
        prefill_seq_len: 128,
        ccl: [
          [1024, 2048],
          [2048, 4096],
        ],
      },
    },
    {
      tag: 'ccl-below-1024',
      exp: ['--ctx-len', '4096', '--comp-ctx-lengths-prefill', '256,2048', '--comp-ctx-lengths-decode', '512,3072'],
      comp: ['--prefill-seq-len', '128'],
      py: {
        ctx_len: 4096,
        prefill_seq_len: 128,
        ccl: [
          [256, 2048],
          [512, 3072],
        ],
      },
    },
    { tag: 'sampler', exp: ['--ctx-len', '64', '--sampler'], comp: [], py: { ctx_len: 64 } },
    // TLM (issue 47): one Decode entry of seq_len K + 1 per K, the prefill entry num_logits_to_keep 1
    { tag: 'tlm-k3', exp: ['--ctx-len', '64', '--num-speculative-tokens', '3'], comp: [], py: { ctx_len: 64, num_speculative_tokens: 3 } },
    {
      tag: 'tlm-ks',
      exp: ['--ctx-len', '64', '--num-speculative-tokens', '3,0'],
      comp: ['--prefill-seq-len', '4'],
      py: { ctx_len: 64, prefill_seq_len: 4, num_speculative_tokens: [0, 3] },
    },
    {
      tag: 'tlm-cb',
      exp: ['--ctx-len', '64', '--continuous-batching', '--batch-size', '2', '--num-speculative-tokens', '3'],
      comp: [],
      py: { ctx_len: 64, full_batch_size: 2, continuous_batching: true, num_speculative_tokens: 3 },
    },
    // bf16 (issue 47): kept on ai200 (no -convert-to-fp16, bfloat16 custom IO, the file not passed), converted on ai100
    {
      tag: 'bf16-ai200',
      exp: ['--ctx-len', '64', '--dtype', 'bfloat16'],
      comp: ['--aic-hw-version', 'ai200'],
      py: { ctx_len: 64, dtype: 'bfloat16', hw: 'ai200' },
    },
    {
      tag: 'bf16-ai200-mxint8',
      exp: ['--ctx-len', '64', '--dtype', 'bfloat16'],
      comp: ['--aic-hw-version', 'ai200', '--mxint8-kv-cache'],
      py: { ctx_len: 64, dtype: 'bfloat16', hw: 'ai200', mxint8_kv_cache: true },
    },
    { tag: 'bf16-ai100', exp: ['--ctx-len', '64', '--dtype', 'bfloat16'], comp: [], py: { ctx_len: 64, dtype: 'bfloat16' } },
    {
      tag: 'hw-from-qaic-util',
      exp: ['--ctx-len', '64'],
      comp: ['--prefill-seq-len', '8'],
      py: { ctx_len: 64, prefill_seq_len: 8, hw: 'ai200' },
      env: { WEIGHT_SPEC_QAIC_UTIL: 'UTIL' },
    },
  ];

  for (const c of cases) {
    it(`${c.tag}: argv, specializations.json, custom_io.yaml and hashed_compile_params.json as QEfficient writes them`, async () => {
      const out = path.join(root, `export-${c.tag}`);
      await ok(['export', '--config', model, '--out', out, ...c.exp]);
      const env = c.env ? Object.fromEntries(Object.entries(c.env).map(([k, v]) => [k, v === 'UTIL' ? util : v])) : {};
      const r = await ok(['compile', out, '--backend', 'qaic', ...c.comp], env);
      const qpc = /-aic-binary-dir=(\S+)\/qpc$/m.exec(r.stderr + r.stdout)![1]!;
      const want = qeffQaicCompile({
        ...base,
        num_cores: 16,
        mxfp6_matmul: false,
        mxint8_kv_cache: false,
        hw: 'ai100',
        prefill_seq_len: 32,
        ...c.py,
        compiler: bin,
        num_layers: 2,
        onnx: path.join(out, 'model.onnx'),
        compile_dir: qpc,
      });
      expect(fs.readFileSync(path.join(record, 'argv'), 'utf8').trim().split('\n')).toEqual(want.argv);
      expect(fs.readFileSync(path.join(record, 'specializations.json'), 'utf8')).toBe(want.specializations);
      // _compile writes custom_io.yaml beside the QPC even when it does not pass it (bf16 model and KV)
      expect(fs.readFileSync(path.join(qpc, 'custom_io.yaml'), 'utf8')).toBe(want.custom_io);
      expect(fs.existsSync(path.join(record, 'custom_io.yaml'))).toBe(want.argv.some((a) => a.startsWith('-custom-IO-list-file=')));
      expect(fs.readFileSync(path.join(qpc, 'hashed_compile_params.json'), 'utf8')).toBe(want.hashed);
      if (c.tag === 'bf16-ai200') {
        // by hand: no -convert-to-fp16, no -custom-IO-list-file, the KV custom IO bfloat16
        expect(want.argv).not.toContain('-convert-to-fp16');
        expect(want.argv.some((a) => a.startsWith('-custom-IO-list-file='))).toBe(false);
        expect(want.custom_io).toContain('Precision: bfloat16');
      }
      if (c.tag === 'bf16-ai100') expect(want.argv).toContain('-convert-to-fp16');
      if (c.tag === 'tlm-k3') {
        // the check, by hand: the Decode specialization has seq_len 4
        const named = (JSON.parse(want.specializations) as { specializations: { name: string; symbols: Record<string, string> }[] })
          .specializations;
        expect(named.map((s) => `${s.name}:${s.symbols.seq_len}:${s.symbols.num_logits_to_keep}`)).toEqual(['Prefill:32:1', 'Decode:4:4']);
      }
      if (c.tag === 'tlm-ks') {
        // K = 3 at prefill_seq_len 4: build_decode_specialization returns None for seq_len 4 == prefill_seq_len
        const named = (JSON.parse(want.specializations) as { specializations: { name: string; symbols: Record<string, string> }[] })
          .specializations;
        expect(named.map((s) => `${s.name}:${s.symbols.seq_len}`)).toEqual(['Prefill:4', 'Decode:1']);
      }
      if (c.tag === 'ccl-example') {
        // the example: a colliding prefill value lowered to the multiple of 32 below it
        const named = (JSON.parse(want.specializations) as { specializations: { name: string; symbols: Record<string, string> }[] })
          .specializations;
        expect(named.map((s) => `${s.name}:${s.symbols.comp_ctx_lengths}`)).toEqual([
          'Prefill_0:1024',
          'Prefill_1:2016',
          'Prefill_2:4064',
          'Decode_0:2048',
          'Decode_1:4096',
        ]);
      }
    });
  }

  it('--aic-hw-version overrides qaic-util; a fixed ctx_len compiled with another --ctx-len is refused with one line', async () => {
    const out = path.join(root, 'export-hw');
    await ok(['export', '--config', model, '--out', out, '--ctx-len', '64']);
    await ok(['compile', out, '--backend', 'qaic', '--aic-hw-version', 'ai100'], { WEIGHT_SPEC_QAIC_UTIL: util });
    expect(fs.readFileSync(path.join(record, 'argv'), 'utf8').split('\n')).toContain('-aic-hw-version=ai100');
    fs.rmSync(record, { recursive: true });
    const r = await cliInProcess(['compile', out, '--backend', 'qaic', '--ctx-len', '128'], {
      cwd: root,
      env: { WEIGHT_SPEC_QAIC_COMPILE: bin },
    });
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toMatch(/--ctx-len 128 does not match the graph, whose cache holds 64 positions/);
    expect(fs.existsSync(record)).toBe(false);
  });
});
