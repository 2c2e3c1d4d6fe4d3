/**
 * The qaic-compile command and both files it names against the same things written by
 * QEfficient's rules, in Python (json.dump does the JSON, not our writer): for a
 * prefill+decode export and a continuous-batching export of the llama fixture's config.
 * The Python below transcribes quic/efficient-transformers:
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
import { compile } from '../src/compile';
import { exportFromConfig } from '../src/export/graph/export-config';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';

const tmp = tempDirs('ws-qeff-parity-');

const QEFF_RULES = `
import json, sys
a = json.loads(sys.argv[1])
COMPILER = ["/opt/qti-aic/exec/qaic-compile", "-aic-hw"]
batch_size, prefill_seq_len, ctx_len, full_batch_size = a["batch_size"], a["prefill_seq_len"], a["ctx_len"], a["full_batch_size"]
cb = a["continuous_batching"]
kv_cache_batch_size = full_batch_size if full_batch_size else batch_size
prefill = {"batch_size": 1 if cb else batch_size, "seq_len": prefill_seq_len, "ctx_len": ctx_len}
if cb:
    prefill.update({"full_batch_size": kv_cache_batch_size})
else:
    prefill.update({"batch_size": kv_cache_batch_size})
if full_batch_size:
    prefill.update({"full_batch_exec_size": full_batch_size})
specializations = [prefill]
if prefill_seq_len != 1 or cb:
    decode = {"batch_size": full_batch_size if cb else batch_size, "seq_len": 1, "ctx_len": ctx_len}
    if cb:
        decode.update({"full_batch_size": kv_cache_batch_size})
    else:
        decode.update({"batch_size": kv_cache_batch_size})
    specializations.append(decode)
custom_io = {}
kv_dtype = "mxint8" if a["mxint8_kv_cache"] else "float16"
for i in range(a["num_layers"]):
    for kv in ["key", "value"]:
        custom_io[f"past_{kv}.{i}"] = kv_dtype
        custom_io[f"past_{kv}.{i}_RetainedState"] = kv_dtype
compiler_options = dict(retained_state=True, convert_to_fp16=True, mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=a["num_cores"])
command = COMPILER + [f"-aic-hw-version={compiler_options.pop('aic_hw_version', 'ai100')}"] + [f"-m={a['onnx']}"]
for key, value in compiler_options.items():
    option = "-" + key.replace("_", "-")
    if isinstance(value, bool):
        if value:
            command.append(option)
        continue
    command.append(f"{option}={value}")
def name_of(spec, i):
    if "seq_len" in spec:
        return "Prefill" if int(spec["seq_len"]) > 1 else "Decode"
    return f"Graph_{i}"
named = [{"name": name_of(s, i), "symbols": {k: str(v) for k, v in s.items()}} for i, s in enumerate(specializations)]
compile_dir = a["compile_dir"]
spec_file = compile_dir + "/specializations.json"
spec_text = json.dumps({"specializations": named}, indent=4, separators=(",", ":"), sort_keys=True)
command.append(f"-network-specialization-config={spec_file}")
io_file = compile_dir + "/custom_io.yaml"
io_text = "".join(f" - IOName: {n}\\n   Precision: {d}\\n\\n" for n, d in custom_io.items())
command.append(f"-custom-IO-list-file={io_file}")
command.append(f"-aic-binary-dir={compile_dir}/qpc")
print(json.dumps({"command": command, "files": [{"path": spec_file, "text": spec_text}, {"path": io_file, "text": io_text}]}))
`;

function qeff(args: Record<string, unknown>): { command: string[]; files: { path: string; text: string }[] } {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_RULES, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as { command: string[]; files: { path: string; text: string }[] };
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
