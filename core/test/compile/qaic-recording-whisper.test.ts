/**
 * qaic-compile parity for the two graphs of a Whisper export (issue 45): a recording
 * `qaic-compile` (a shell script saving its argv and the files it is handed, one folder per
 * graph) stands in for the compiler; what it received, and the `hashed_compile_params.json`
 * beside each QPC, are compared with QEfficient's Whisper rules transcribed to Python in
 * test/support/qeff-qaic-whisper.ts (sources and the encoder/decoder split cited there), reading
 * the model's sizes and torch_dtype from its config.json: the bfloat16 fixture (custom_io.yaml
 * written but left off the decoder's command, as `_compile` does) and a float16 copy with
 * --ctx-len, --mxfp6-matmul and --num-cores (convert_to_fp16, the custom-IO file passed).
 * `--dry-run` prints the same command and files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { qeffWhisperQaicCompile, type WhisperGraphArgs } from '../../../test/support/qeff-qaic-whisper';
import { recordingCompiler } from '../../../test/support/recording-compiler';
import { tempDirs } from '../../../test/support/temp';
import { parseWireModel } from '../../src/formats/onnx/wire-model';

const tmp = tempDirs('ws-qaic-whisper-');

describeFixtures('qaic-compile parity of a Whisper export through a recording compiler', () => {
  let root = '';
  let bin = '';
  let record = '';
  const run = (args: string[]) =>
    cliInProcess(args, { cwd: root, env: { WEIGHT_SPEC_QAIC_COMPILE: bin, WEIGHT_SPEC_QAIC_UTIL: path.join(root, 'none') } });
  const ok = async (args: string[]) => {
    const r = await run(args);
    expect(r.code, r.stderr).toBe(0);
    return r;
  };

  beforeAll(async () => {
    root = tmp();
    record = path.join(root, 'record');
    bin = recordingCompiler(root, record, true);
    for (const [name, dtype] of [
      ['bf16', undefined],
      ['f16', 'float16'],
    ] as const) {
      const model = path.join(root, name);
      fs.cpSync(path.join(fixturesDir(), 'whisper'), model, { recursive: true });
      for (const f of fs.readdirSync(model)) fs.chmodSync(path.join(model, f), 0o644);
      if (dtype) {
        const cfg = JSON.parse(fs.readFileSync(path.join(model, 'config.json'), 'utf8'));
        fs.writeFileSync(path.join(model, 'config.json'), JSON.stringify({ ...cfg, torch_dtype: dtype }, null, 2));
      }
      await ok(['export', '--config', model, '--out', path.join(root, `export-${name}`)]);
      await ok(['prepare', '--checkpoint', model, '--dtype', 'float32']);
    }
  }, 120_000);

  const graphArgs = (out: string, role: 'encoder' | 'decoder', onnx: string, compileDir: string): WhisperGraphArgs => {
    const m = parseWireModel(fs.readFileSync(path.join(out, role, 'model.onnx')), 'model.onnx');
    const values = [...m.inputs, ...m.outputs];
    return {
      role,
      dims: [...new Set(values.flatMap((v) => v.dims.filter((d): d is string => typeof d === 'string')))],
      names: values.map((v) => v.name),
      has_states: m.outputs.some((o) => o.name.endsWith('_RetainedState')),
      onnx,
      compile_dir: compileDir,
    };
  };

  const cases = [
    { tag: 'bfloat16 fixture, QEfficient defaults (ctx_len 150)', name: 'bf16', comp: [] as string[], py: {} },
    {
      tag: 'float16 config, --ctx-len 24 --mxfp6-matmul --num-cores 8',
      name: 'f16',
      comp: ['--ctx-len', '24', '--mxfp6-matmul', '--num-cores', '8'],
      py: { ctx_len: 24, mxfp6_matmul: true, num_cores: 8 },
    },
  ];
  for (const c of cases) {
    it(`${c.tag}: argv, specializations.json, custom_io.yaml and hashed_compile_params.json of both graphs`, async () => {
      const out = path.join(root, `export-${c.name}`);
      const r = await ok(['compile', out, '--backend', 'qaic', ...c.comp]);
      const dirs = [...(r.stderr + r.stdout).matchAll(/-aic-binary-dir=(\S+)\/qpc$/gm)].map((x) => x[1]!);
      const dirOf = (g: string) => dirs.find((d) => path.basename(path.dirname(d)) === g)!;
      const argvOf = (g: string) =>
        fs
          .readFileSync(path.join(record, g, 'argv'), 'utf8')
          .trim()
          .split('\n');
      const onnxOf = (g: string) =>
        argvOf(g)
          .find((a) => a.startsWith('-m='))!
          .slice(3);
      for (const g of ['encoder', 'decoder']) expect(path.dirname(onnxOf(g))).toBe(path.join(out, g));
      const want = qeffWhisperQaicCompile({
        config: path.join(root, c.name, 'config.json'),
        batch_size: 1,
        ctx_len: null,
        encoder_ctx_len: null,
        mxfp6_matmul: false,
        num_cores: 16,
        ...c.py,
        compiler: bin,
        graphs: (['encoder', 'decoder'] as const).map((g) => graphArgs(out, g, onnxOf(g), dirOf(g))),
      });
      for (const g of ['encoder', 'decoder'] as const) {
        expect(argvOf(g), g).toEqual(want[g].argv);
        expect(fs.readFileSync(path.join(record, g, 'specializations.json'), 'utf8'), g).toBe(want[g].specializations);
        // the file is written either way; the compiler is handed it unless the bfloat16 rule applies
        expect(fs.readFileSync(path.join(dirOf(g), 'custom_io.yaml'), 'utf8'), g).toBe(want[g].custom_io);
        expect(fs.existsSync(path.join(record, g, 'custom_io.yaml')), g).toBe(want[g].custom_io_passed);
        expect(fs.readFileSync(path.join(dirOf(g), 'hashed_compile_params.json'), 'utf8'), g).toBe(want[g].hashed);
      }
      const names = (g: 'encoder' | 'decoder') =>
        (JSON.parse(want[g].specializations).specializations as { name: string }[]).map((s) => s.name);
      expect(names('encoder')).toEqual(['Encoder']);
      expect(names('decoder')).toEqual(['Encoder', 'Decode']);
      if (c.name === 'bf16') {
        expect(want.decoder.custom_io_passed).toBe(false);
        expect(r.stderr).toContain('Model and Past KV types are both bfloat16');
      } else expect(argvOf('decoder')).toContain('-convert-to-fp16');
    });
  }

  it("--dry-run prints both graphs' commands and files, and refuses image flags (a usage error)", async () => {
    const out = path.join(root, 'export-f16');
    const r = await ok(['compile', out, '--backend', 'qaic', '--dry-run', '--ctx-len', '24']);
    expect(r.stdout).toContain(path.join(out, 'encoder', 'model.onnx'));
    expect(r.stdout).toContain(path.join(out, 'decoder', 'model.onnx'));
    expect(r.stdout).toContain('"encoder_seq_len":"50"');
    expect(r.stdout).toContain(' - IOName: past_value_cross.1_RetainedState');
    const img = await run(['compile', out, '--backend', 'qaic', '--img-size', '224']);
    expect(img.code).toBe(2);
    expect(img.stderr.split('\n')[0]).toBe('weight-spec: compile: --img-size sizes a vision-language export; this is a Whisper graph');
  });
});
