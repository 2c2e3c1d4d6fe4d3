/**
 * The qaic-compile command and both files it names against the same things written by
 * QEfficient's rules, in Python (json.dump does the JSON, not our writer; transcribed in
 * test/support/qeff-qaic-rules.ts, shared with qaic-recording-parity.test.ts): for a
 * prefill+decode export and a continuous-batching export of the llama fixture's config.
 * The Python transcribes quic/efficient-transformers:
 *  - `QEfficient/transformers/models/modeling_auto.py` (release/v1.22.8.0)
 *    `QEFFAutoModelForCausalLM.compile`: the specializations (prefill, decode; CB adds
 *    full_batch_size / full_batch_exec_size), the custom IO (each cache input beside its
 *    `_RetainedState` output, layer by layer) and the keyword order of `_compile`;
 *  - `QEfficient/base/modeling_qeff.py` `_compile`: COMPILER + -aic-hw-version + -m, the
 *    options loop (`-` + key.replace("_", "-"), bools bare), -network-specialization-config,
 *    -custom-IO-list-file, -aic-binary-dir; compile_only no longer passed (dropped upstream);
 *  - `QEfficient/utils/_utils.py` `create_json` (indent=4, separators=(",", ":"), sort_keys) and
 *    `to_named_specializations` / `_infer_specialization_name` (seq_len > 1 → Prefill, 1 → Decode).
 * The qpc directory's hash is each tool's own; the directory is passed to the Python side.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { compile } from '../../src/compile';
import { exportFromConfig } from '../../src/export/export-config';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { qeffQaicCompile } from '../../../test/support/qeff-qaic-rules';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-qeff-parity-');

/** QEfficient's command and the two files it names, for the options of one case (ai100, no CCL). */
function qeff(args: Record<string, unknown>): { command: string[]; files: { path: string; text: string }[] } {
  const w = qeffQaicCompile({ compiler: '/opt/qti-aic/exec/qaic-compile', hw: 'ai100', decode_only: false, ccl: null, ...args });
  const dir = String(args.compile_dir);
  return {
    command: w.command,
    files: [
      { path: `${dir}/specializations.json`, text: w.specializations },
      { path: `${dir}/custom_io.yaml`, text: w.custom_io },
    ],
  };
}

describeFixtures('qaic-compile parity with QEfficient (llama config, 2 layers)', () => {
  const hasPython = fs.existsSync('/usr/bin/python3');
  it.skipIf(!hasPython && process.env.CI !== 'true')(
    'prefill+decode and continuous batching: same command, same specializations.json and custom_io.yaml bytes',
    async () => {
      const root = tmp();
      const model = path.join(root, 'llama');
      fs.mkdirSync(model);
      fs.copyFileSync(path.join(fixturesDir(), 'llama', 'config.json'), path.join(model, 'config.json'));
      const env = { ...process.env, WEIGHT_SPEC_QAIC_COMPILE: '' };
      const cases = [
        {
          tag: 'pd',
          exp: { ctxLen: 64 },
          qaic: { numCores: 14, prefillSeqLen: 16, mxfp6Matmul: true },
          py: {
            batch_size: 1,
            full_batch_size: null,
            continuous_batching: false,
            mxint8_kv_cache: false,
            mxfp6_matmul: true,
            num_cores: 14,
            prefill_seq_len: 16,
          },
        },
        {
          tag: 'cb',
          exp: { ctxLen: 64, continuousBatching: true, batchSize: 4 },
          qaic: { prefillSeqLen: 32, mxint8KvCache: true },
          py: {
            batch_size: 1,
            full_batch_size: 4,
            continuous_batching: true,
            mxint8_kv_cache: true,
            mxfp6_matmul: false,
            num_cores: 16,
            prefill_seq_len: 32,
          },
        },
      ];
      for (const c of cases) {
        const exp = path.join(root, `export-${c.tag}`);
        await exportFromConfig({ config: model, out: exp, ...c.exp });
        const res = await compile(exp, { backend: 'qaic', dryRun: true, env, qaic: c.qaic });
        const compileDir = path.join(exp, `qpc-${res.record.fingerprint.slice(0, 16)}`);
        const want = qeff({ ...c.py, ctx_len: 64, num_layers: 2, onnx: path.join(exp, 'model.onnx'), compile_dir: compileDir });
        expect(res.command).toEqual(want.command);
        expect(res.files).toEqual(want.files);
        // the CLI's dry run prints that command and both files, and writes nothing
        const cli = spawnSync(
          process.execPath,
          [
            path.join(REPO_ROOT, 'dist', 'cli.js'),
            'compile',
            exp,
            '--backend',
            'qaic',
            '--dry-run',
            '--prefill-seq-len',
            String(c.py.prefill_seq_len),
            ...(c.tag === 'pd' ? ['--num-cores', '14', '--mxfp6-matmul'] : ['--mxint8-kv-cache']),
          ],
          { encoding: 'utf8', env },
        );
        expect(cli.status, cli.stderr).toBe(0);
        // (the CLI's option record differs from this call's, so its qpc directory hash may too)
        const cliDir = /-aic-binary-dir=(\S+)\/qpc$/m.exec(cli.stdout)![1]!;
        const wantCli = qeff({ ...c.py, ctx_len: 64, num_layers: 2, onnx: path.join(exp, 'model.onnx'), compile_dir: cliDir });
        const printed =
          [
            wantCli.command.join(' '),
            ...wantCli.files.flatMap((f) => [`--- ${f.path}`, f.text.endsWith('\n') ? f.text.slice(0, -1) : f.text]),
          ].join('\n') + '\n';
        expect(cli.stdout).toBe(printed);
        expect(fs.existsSync(compileDir) || fs.existsSync(cliDir)).toBe(false);
      }
    },
  );
});
