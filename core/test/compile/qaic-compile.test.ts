/**
 * qaic backend on a made export: --dry-run prints QEfficient's command and writes nothing;
 * without the SDK the error is one line naming the binary and the command; with a stand-in
 * compiler (WEIGHT_SPEC_QAIC_COMPILE → a shell script that records its arguments and writes
 * programqpc.bin) the specialization and custom-IO files are written beside the binary
 * directory, the ONNX handed over embeds the spec, and a second compile is up to date.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compile } from '../../src/compile';
import { parseWireModel } from '../../src/formats/onnx/wire-model';
import { SPEC_METADATA_KEY } from '../../src/spec';
import { exportFromConfig } from '../../src/export/export-config';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { makeSyntheticExport } from '../support/compile-support';

const tmp = tempDirs('ws-qaic-');

describe('qaic backend', () => {
  it('--dry-run: the command QEfficient would run, nothing written', async () => {
    const made = makeSyntheticExport(tmp(), 32, 64, 2);
    const before = fs.readdirSync(made.exportDir).sort();
    const env = { ...process.env, WEIGHT_SPEC_QAIC_COMPILE: '' };
    const res = await compile(made.exportDir, { backend: 'qaic', dryRun: true, env, qaic: { numCores: 8 } });
    const fp = res.record.fingerprint.slice(0, 16);
    const dir = path.join(made.exportDir, `qpc-${fp}`);
    expect(res.command).toEqual([
      '/opt/qti-aic/exec/qaic-compile',
      '-aic-hw',
      '-aic-hw-version=ai100',
      `-m=${path.join(made.exportDir, 'model.qaic.onnx')}`,
      '-convert-to-fp16',
      '-aic-num-cores=8',
      `-network-specialization-config=${dir}/specializations.json`,
      `-aic-binary-dir=${dir}/qpc`,
    ]);
    expect(fs.readdirSync(made.exportDir).sort()).toEqual(before);
  });

  it('without the SDK: one line naming the missing binary and the command, nothing recorded', async () => {
    const made = makeSyntheticExport(tmp(), 32, 64, 2);
    const missing = path.join(made.exportDir, 'no-sdk', 'qaic-compile');
    const env = { ...process.env, WEIGHT_SPEC_QAIC_COMPILE: missing };
    const err = await compile(made.exportDir, { backend: 'qaic', env }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const msg = (err as Error).message;
    expect(msg.split('\n')).toHaveLength(1);
    expect(msg).toMatch(
      new RegExp(`^qaic-compile not found at ${missing.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(QAIC SDK not installed\\); would run: `),
    );
    expect(msg).toContain(`${missing} -aic-hw -aic-hw-version=ai100 -m=`);
    expect(fs.existsSync(path.join(made.exportDir, 'compile.json'))).toBe(false);
  });

  it('with a compiler: files beside the qpc dir, spec embedded, record written, second run up to date', async () => {
    const made = makeSyntheticExport(tmp(), 32, 64, 2);
    const bin = path.join(made.exportDir, '..', 'fake-qaic-compile');
    const argsLog = path.join(made.exportDir, '..', 'args.txt');
    fs.writeFileSync(
      bin,
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${argsLog}'\nfor a in "$@"; do case "$a" in -aic-binary-dir=*) d="\${a#-aic-binary-dir=}"; mkdir -p "$d"; echo qpc > "$d/programqpc.bin";; esac; done\necho compiling >&2\n`,
      { mode: 0o755 },
    );
    const env = { ...process.env, WEIGHT_SPEC_QAIC_COMPILE: bin };
    const sink = { write: () => true } as unknown as NodeJS.WritableStream;
    const res = await compile(made.exportDir, { backend: 'qaic', env, stderr: sink, qaic: { prefillSeqLen: 16 } });
    const args = fs.readFileSync(argsLog, 'utf8').trim().split('\n');
    expect(args).toEqual(res.command!.slice(1));
    const rec = res.record;
    expect(fs.existsSync(path.join(rec.artifacts.qpc!, 'programqpc.bin'))).toBe(true);
    expect(JSON.parse(fs.readFileSync(path.join(rec.artifacts.compileDir!, 'specializations.json'), 'utf8'))).toEqual({
      specializations: [{ name: 'Prefill', symbols: { batch_size: '1', seq_len: '16' } }],
    });
    // The ONNX handed over carries the spec under com.qti.aisw.extdata, files relative to it.
    const onnx = rec.artifacts.onnx!;
    const meta = parseWireModel(fs.readFileSync(onnx), onnx).metadata.find((e) => e.key === SPEC_METADATA_KEY);
    const embedded = JSON.parse(meta!.value);
    expect(embedded.files).toEqual([{ format: 'safetensors', path: 'prepared/base-0000.safetensors' }]);
    expect(embedded.inputs).toHaveLength(made.weights.size);
    expect(JSON.parse(fs.readFileSync(path.join(made.exportDir, 'compile.json'), 'utf8')).backend).toBe('qaic');
    fs.rmSync(argsLog);
    const again = await compile(made.exportDir, { backend: 'qaic', env, stderr: sink, qaic: { prefillSeqLen: 16 } });
    expect(again.upToDate).toBe(true);
    expect(fs.existsSync(argsLog)).toBe(false);
    // A different option is a different fingerprint → a different qpc directory.
    const other = await compile(made.exportDir, { backend: 'qaic', env, stderr: sink, qaic: { prefillSeqLen: 8 } });
    expect(other.upToDate).toBe(false);
    expect(other.changed).toEqual(['options']);
    expect(other.record.artifacts.compileDir).not.toBe(rec.artifacts.compileDir);
  });

  it('reports a failing compiler with its exit code', async () => {
    const made = makeSyntheticExport(tmp(), 32, 64, 2);
    const bin = path.join(made.exportDir, '..', 'failing-qaic');
    fs.writeFileSync(bin, '#!/bin/sh\necho boom >&2\nexit 3\n', { mode: 0o755 });
    const sink = { write: () => true } as unknown as NodeJS.WritableStream;
    await expect(
      compile(made.exportDir, { backend: 'qaic', env: { ...process.env, WEIGHT_SPEC_QAIC_COMPILE: bin }, stderr: sink }),
    ).rejects.toThrow(/^qaic-compile exited with code 3; command: /);
  });
});

describeFixtures('qaic --dry-run on a fixture export (llama, config exporter)', () => {
  it('equals the command QEfficient builds for a 2-layer causal LM with ctx_len 64', async () => {
    const root = tmp();
    const model = path.join(root, 'llama');
    fs.mkdirSync(model);
    fs.copyFileSync(path.join(fixturesDir(), 'llama', 'config.json'), path.join(model, 'config.json'));
    const exp = path.join(root, 'export');
    await exportFromConfig({ config: model, out: exp, ctxLen: 64 });
    const env = { ...process.env, WEIGHT_SPEC_QAIC_COMPILE: '' };
    const res = await compile(exp, { backend: 'qaic', dryRun: true, env, qaic: { numCores: 16, mxfp6Matmul: true, mxint8KvCache: true } });
    const dir = path.join(exp, `qpc-${res.record.fingerprint.slice(0, 16)}`);
    // The exporter already embeds the spec, so model.onnx itself is handed over.
    expect(res.command).toEqual([
      '/opt/qti-aic/exec/qaic-compile',
      '-aic-hw',
      '-aic-hw-version=ai100',
      `-m=${exp}/model.onnx`,
      '-retained-state',
      '-convert-to-fp16',
      '-mxfp6-matmul',
      '-aic-num-cores=16',
      `-network-specialization-config=${dir}/specializations.json`,
      `-custom-IO-list-file=${dir}/custom_io.yaml`,
      `-aic-binary-dir=${dir}/qpc`,
    ]);
    expect(fs.existsSync(dir)).toBe(false);
  });
});
