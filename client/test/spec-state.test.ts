import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeTinyLlama } from '../../core/src/demo/tiny-model';
import { cliInProcess } from '../../test/support/cli';
import { tempDirs } from '../../test/support/temp';
import {
  compileBlocker,
  isSpecFile,
  preparedDirOfSpec,
  specInfo,
  specOfActiveFile,
  stateAction,
  statusLabel,
} from '../../core/src/editor/spec-state';

const tmp = tempDirs('ws-state-');

async function cli(args: string[]): Promise<void> {
  const r = await cliInProcess(args);
  expect(r.code, r.stderr).toBe(0);
}

describe('specInfo', () => {
  it('walks not prepared → prepared → compiled → stale on a real export (core compileStatus decides compiled/stale)', async () => {
    const root = tmp();
    const model = path.join(root, 'tiny');
    const exp = path.join(root, 'tiny-export');
    await writeTinyLlama(model);
    await cli(['export', '--config', model, '--out', exp, '--ctx-len', '32']);
    const spec = path.join(exp, 'weight_spec.json');
    let info = specInfo(spec);
    expect(info).toMatchObject({
      state: 'not-prepared',
      isExportDir: true,
      sourceCheckpoint: model,
      dtype: 'float32',
      compile: { state: 'never-compiled' },
    });

    // Compile is blocked before it looks for ONNX Runtime (issue 19.6), and by the same lookup the compile does.
    expect(compileBlocker(exp)).toBe(
      `weight_spec.json: the checkpoint ${info.preparedDir} is not prepared (no .checkpoint_prepared); run Prepare first`,
    );
    const r = await cli(['compile', exp, '--no-verify']).then(
      () => 0,
      () => 1,
    );
    expect(r).toBe(1);

    await cli(['prepare', '--checkpoint', model, '--dtype', 'float32']);
    expect(compileBlocker(exp)).toBeUndefined();
    info = specInfo(spec);
    expect(info.state).toBe('prepared');
    expect(fs.existsSync(path.join(info.preparedDir!, '.checkpoint_prepared'))).toBe(true);

    await cli(['compile', exp, '--no-verify']);
    info = specInfo(spec);
    expect(info.state).toBe('compiled');
    expect(info.compile).toMatchObject({ state: 'up-to-date', backend: 'ort' });

    // Whitespace is not a change of the spec (issue 19.6); another model_name is.
    const text = fs.readFileSync(spec, 'utf8');
    fs.writeFileSync(spec, text + ' \n');
    expect(specInfo(spec).state).toBe('compiled');
    fs.writeFileSync(spec, text.replace(/"model_name": "([^"]*)"/, '"model_name": "$1-edited"'));
    expect(specInfo(spec)).toMatchObject({ state: 'stale', compile: { changed: ['spec'] } });

    await cli(['compile', exp, '--no-verify']);
    expect(specInfo(spec).state).toBe('compiled');
    fs.rmSync(specInfo(spec).compile.artifact!);
    expect(specInfo(spec)).toMatchObject({ state: 'stale', compile: { changed: ['artifact'] } });
  });

  it('a spec outside an export dir takes its prepared dir from files[0]', () => {
    const root = tmp();
    const spec = path.join(root, 'x.weight_spec.json');
    fs.writeFileSync(spec, JSON.stringify({ files: [{ path: 'ck/model.safetensors' }], inputs: [] }));
    expect(preparedDirOfSpec(spec)).toBe(path.join(root, 'ck'));
    expect(specInfo(spec)).toMatchObject({ state: 'not-prepared', isExportDir: false, preparedDir: path.join(root, 'ck') });
    fs.writeFileSync(spec, '{ not json');
    expect(specInfo(spec)).toMatchObject({ state: 'not-prepared' });
    expect(specInfo(spec).preparedDir).toBeUndefined();
  });

  it('names the action of each state and recognizes spec files', () => {
    expect(stateAction('not-prepared').command).toBe('weightSpec.prepare');
    expect(stateAction('prepared').command).toBe('weightSpec.compile');
    expect(stateAction('compiled').command).toBe('weightSpec.run');
    expect(stateAction('stale').command).toBe('weightSpec.recompile');
    expect(isSpecFile('/a/weight_spec.json')).toBe(true);
    expect(isSpecFile('/a/b.weight_spec.json')).toBe(true);
    expect(isSpecFile('/a/weight_spec.json.bak')).toBe(false);
    expect(isSpecFile('/a/config.json')).toBe(false);
  });
});

describe("the status bar follows the active editor's export (issue 50)", () => {
  it("finds the export's spec from the spec itself or any file of its folder (the ONNX viewer's model.onnx); nothing elsewhere", async () => {
    const root = tmp();
    const model = path.join(root, 'tiny');
    const exp = path.join(root, 'tiny-export');
    await writeTinyLlama(model);
    await cli(['export', '--config', model, '--out', exp, '--ctx-len', '32']);
    const spec = path.join(exp, 'weight_spec.json');
    expect(specOfActiveFile(spec)).toBe(spec);
    expect(specOfActiveFile(path.join(exp, 'model.onnx'))).toBe(spec);
    expect(specOfActiveFile(path.join(exp, 'export-report.json'))).toBe(spec);
    expect(specOfActiveFile(path.join(model, 'config.json'))).toBeUndefined();
    expect(specOfActiveFile(path.join(model, 'model.safetensors'))).toBeUndefined();
  });

  it("shows the spec's errors beside its state, none when it has none", () => {
    expect(statusLabel('not-prepared')).toBe('not prepared');
    expect(statusLabel('compiled', { errors: 0 })).toBe('compiled');
    expect(statusLabel('not-prepared', { errors: 1 })).toBe('not prepared · 1 error');
    expect(statusLabel('stale', { errors: 3 })).toBe('stale · 3 errors');
  });
});
