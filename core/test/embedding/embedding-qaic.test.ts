/**
 * qaic compile of an embedding export (the bert fixture through `export --config`): a recording
 * `qaic-compile` (test/support/recording-compiler.ts) stands in for the compiler, and what it
 * receives — argv, specializations.json — and the hashed_compile_params.json left beside the QPC
 * are compared with QEfficient's rules, transcribed to Python below (json.dumps writes the JSON)
 * from quic/efficient-transformers release/v1.22.8.0 (the same text on main @ ebf55e81):
 * - `QEfficient/transformers/models/modeling_auto.py` `QEFFAutoModel.compile`: `_seq_lens = seq_len
 *   if list else [seq_len]` (default 32), one `{"_graph_name": "Embedding" | f"Embedding_{i}",
 *   "batch_size", "seq_len"}` per length, `_compile(…, convert_to_fp16=(CUSTOM_IO_DTYPE_MAP[dtype]
 *   == "float16"), mxfp6_matmul, mdp_ts_num_devices, aic_num_cores, …)`, no custom IO;
 *   `CUSTOM_IO_DTYPE_MAP`: float32 → "float16";
 * - `QEfficient/utils/_utils.py` `to_named_specializations` / `_infer_specialization_name`: the name
 *   is `_graph_name`, which is left out of the symbols;
 * - `QEfficient/base/modeling_qeff.py` `_compile`: the command, the specialization file, the
 *   binary folder, and `compile_hash_params` (the raw dicts, `_graph_name` included).
 * `--dry-run` prints the same command and file; flags of other graphs are refused with one line.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { recordingCompiler } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-embedding-qaic-');

const QEFF_EMBEDDING_COMPILE = `
import json, sys
a = json.loads(sys.argv[1])
dump = lambda o: json.dumps(o, indent=4, separators=(",", ":"), sort_keys=True)
seq_len = a["seq_len"]
_seq_lens = seq_len if isinstance(seq_len, list) else [seq_len]
specializations = [
    {"_graph_name": "Embedding" if len(_seq_lens) == 1 else f"Embedding_{i}", "batch_size": a["batch_size"], "seq_len": sl}
    for i, sl in enumerate(_seq_lens)
]
CUSTOM_IO_DTYPE_MAP = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float16"}
compiler_options = dict(convert_to_fp16=(CUSTOM_IO_DTYPE_MAP[a["dtype"]] == "float16"), mxfp6_matmul=a["mxfp6_matmul"], aic_num_cores=a["num_cores"])
command = [a["compiler"], "-aic-hw", f"-aic-hw-version={a['hw']}", f"-m={a['onnx']}"]
for key, value in compiler_options.items():
    option = "-" + key.replace("_", "-")
    if isinstance(value, bool):
        if value:
            command.append(option)
        continue
    command.append(f"{option}={value}")
# QEfficient main (ebf55e81) base/modeling_qeff.py _compile also hashes mdp_num_partitions, mdp_strategy and prefill_only
compile_hash_params = {"command": command, "specializations": specializations, "custom_io": None,
                       "mdp_ts_num_devices": 1, "mdp_num_partitions": 1, "mdp_strategy": "onnx", "mdp_ts_json": None,
                       "num_speculative_tokens": None, "prefill_only": None}
named = []
for index, spec in enumerate(specializations):
    name = spec["_graph_name"] if "_graph_name" in spec else f"Graph_{index}"
    named.append({"name": name, "symbols": {k: str(v) for k, v in spec.items() if k != "_graph_name"}})
command.append(f"-network-specialization-config={a['compile_dir']}/specializations.json")
command.append(f"-aic-binary-dir={a['compile_dir']}/qpc")
print(json.dumps({"argv": command[1:], "command": command, "specializations": dump({"specializations": named}), "hashed": dump(compile_hash_params)}))
`;

function qeff(args: Record<string, unknown>): { argv: string[]; command: string[]; specializations: string; hashed: string } {
  const r = spawnSync('/usr/bin/python3', ['-c', QEFF_EMBEDDING_COMPILE, JSON.stringify(args)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python: ${r.stderr}`);
  return JSON.parse(r.stdout) as { argv: string[]; command: string[]; specializations: string; hashed: string };
}

describeFixtures('qaic compile of an embedding export through a recording compiler (bert fixture)', () => {
  let root = '';
  let bin = '';
  let record = '';
  const env = () => ({ WEIGHT_SPEC_QAIC_COMPILE: bin, WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') });

  beforeAll(async () => {
    root = tmp();
    fs.cpSync(path.join(fixturesDir(), 'bert'), path.join(root, 'model'), { recursive: true });
    record = path.join(root, 'record');
    bin = recordingCompiler(root, record);
    for (const args of [
      ['prepare', '--checkpoint', 'model', '--dtype', 'float32'],
      ['export', '--config', 'model', '--out', 'out'],
    ]) {
      const r = await cliInProcess(args, { cwd: root });
      expect(r.code, r.stderr).toBe(0);
    }
  });

  const cases: { tag: string; comp: string[]; py: Record<string, unknown> }[] = [
    { tag: 'default (seq_len 32)', comp: [], py: {} },
    {
      tag: 'three lengths',
      comp: ['--seq-len', '16,32,64', '--num-cores', '14', '--mxfp6-matmul'],
      py: { seq_len: [16, 32, 64], num_cores: 14, mxfp6_matmul: true },
    },
    { tag: 'one length as a list, batch 4', comp: ['--seq-len', '16', '--batch-size', '4'], py: { seq_len: [16], batch_size: 4 } },
  ];
  for (const c of cases) {
    it(`${c.tag}: argv, specializations.json and hashed_compile_params.json as QEfficient writes them`, async () => {
      const r = await cliInProcess(['compile', 'out', '--backend', 'qaic', '--force', ...c.comp], { cwd: root, env: env() });
      expect(r.code, r.stderr).toBe(0);
      const qpc = /-aic-binary-dir=(\S+)\/qpc$/m.exec(r.stderr + r.stdout)![1]!;
      const want = qeff({
        seq_len: 32,
        batch_size: 1,
        dtype: 'float32',
        mxfp6_matmul: false,
        num_cores: 16,
        hw: 'ai100',
        ...c.py,
        compiler: bin,
        onnx: path.join(root, 'out', 'model.onnx'),
        compile_dir: qpc,
      });
      expect(fs.readFileSync(path.join(record, 'argv'), 'utf8').trim().split('\n')).toEqual(want.argv);
      expect(fs.readFileSync(path.join(record, 'specializations.json'), 'utf8')).toBe(want.specializations);
      expect(fs.existsSync(path.join(record, 'custom_io.yaml'))).toBe(false);
      expect(fs.readFileSync(path.join(qpc, 'hashed_compile_params.json'), 'utf8')).toBe(want.hashed);
      const names = (JSON.parse(want.specializations) as { specializations: { name: string }[] }).specializations.map((s) => s.name);
      expect(names).toEqual(c.tag === 'three lengths' ? ['Embedding_0', 'Embedding_1', 'Embedding_2'] : ['Embedding']);
    });
  }

  it('--dry-run prints the command and specializations.json, runs nothing and writes nothing', async () => {
    fs.rmSync(record, { recursive: true, force: true });
    const r = await cliInProcess(['compile', 'out', '--backend', 'qaic', '--dry-run', '--seq-len', '16,48'], { cwd: root, env: env() });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split('\n');
    const qpc = /-aic-binary-dir=(\S+)\/qpc$/m.exec(lines[0]!)![1]!;
    const want = qeff({
      seq_len: [16, 48],
      batch_size: 1,
      dtype: 'float32',
      mxfp6_matmul: false,
      num_cores: 16,
      hw: 'ai100',
      compiler: bin,
      onnx: path.join(root, 'out', 'model.onnx'),
      compile_dir: qpc,
    });
    expect(lines[0]).toBe(want.command.join(' '));
    expect(lines[1]).toBe(`--- ${qpc}/specializations.json`);
    expect(r.stdout).toContain(want.specializations);
    expect(fs.existsSync(record)).toBe(false);
    expect(fs.existsSync(qpc)).toBe(false);
  });

  it('refused with one line: flags of other graphs (--ctx-len, --prefill-seq-len, --seq-len with ort), a length past the position table', async () => {
    for (const [args, msg] of [
      [['--backend', 'qaic', '--ctx-len', '128'], /--ctx-len do not apply to .*an embedding graph/],
      [['--backend', 'qaic', '--prefill-seq-len', '64'], /--prefill-seq-len \(use --seq-len\) do not apply/],
      [['--seq-len', '64'], /--seq-len lists the qaic specializations of an embedding export; it needs --backend qaic/],
      [['--backend', 'qaic', '--seq-len', '64,x'], /--seq-len: "x" is not a positive integer/],
      // the fixture's max_position_embeddings is 64
      [['--backend', 'qaic', '--seq-len', '32,128'], /--seq-len 128 exceeds the 64 positions of .*position table/],
    ] as const) {
      const r = await cliInProcess(['compile', 'out', '--dry-run', ...args], { cwd: root, env: env() });
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(msg);
    }
  });
});
