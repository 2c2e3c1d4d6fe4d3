import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSpecFile, mergeState, preparedDirOfSpec, specInfo, stateAction } from '../src/spec-state';

function exportDir(): { dir: string; spec: string; prepared: string; source: string } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-state-'));
  const source = path.join(root, 'llama');
  const prepared = path.join(root, 'llama-qeff-prepared-float32');
  const dir = path.join(root, 'export');
  fs.mkdirSync(source);
  fs.mkdirSync(dir);
  const spec = path.join(dir, 'weight_spec.json');
  fs.writeFileSync(spec, JSON.stringify({ files: [{ format: 'safetensors', path: 'llama-qeff-prepared-float32/base-0000.safetensors' }], inputs: [], version: 5 }));
  fs.writeFileSync(path.join(dir, 'model.onnx'), 'x');
  fs.writeFileSync(
    path.join(dir, 'export-report.json'),
    JSON.stringify({ tool: 'weight-spec export', source: { config: path.join(source, 'config.json'), checkpoint: source }, options: { dtype: 'float32' }, prepared: { dir: prepared } }),
  );
  return { dir, spec, prepared, source };
}

const past = (f: string, secondsAgo: number) => {
  const t = new Date(Date.now() - secondsAgo * 1000);
  fs.utimesSync(f, t, t);
};

describe('specInfo', () => {
  it('walks not prepared → prepared → compiled → stale', () => {
    const e = exportDir();
    let info = specInfo(e.spec);
    expect(info).toMatchObject({ state: 'not-prepared', isExportDir: true, preparedDir: e.prepared, sourceCheckpoint: e.source, dtype: 'float32' });

    fs.mkdirSync(e.prepared);
    fs.writeFileSync(path.join(e.prepared, '.checkpoint_prepared'), '');
    expect(specInfo(e.spec).state).toBe('prepared');

    const model = path.join(e.prepared, 'model.bound.onnx');
    fs.writeFileSync(model, 'x');
    for (const f of [e.spec, path.join(e.dir, 'model.onnx'), path.join(e.prepared, '.checkpoint_prepared')]) past(f, 60);
    fs.writeFileSync(path.join(e.dir, 'compile.json'), JSON.stringify({ version: 1, backend: 'ort', fingerprint: 'f', artifacts: { model } }));
    past(path.join(e.dir, 'compile.json'), 30);
    info = specInfo(e.spec);
    expect(info.state).toBe('compiled');
    expect(info.compileRecord).toMatchObject({ backend: 'ort', model });

    fs.writeFileSync(e.spec, fs.readFileSync(e.spec, 'utf8') + ' ');
    expect(specInfo(e.spec).state).toBe('stale');
  });

  it('a compile whose artifact is gone is stale', () => {
    const e = exportDir();
    fs.mkdirSync(e.prepared);
    fs.writeFileSync(path.join(e.prepared, '.checkpoint_prepared'), '');
    for (const f of [e.spec, path.join(e.dir, 'model.onnx'), path.join(e.prepared, '.checkpoint_prepared')]) past(f, 60);
    fs.writeFileSync(path.join(e.dir, 'compile.json'), JSON.stringify({ artifacts: { model: path.join(e.prepared, 'gone.onnx') } }));
    expect(specInfo(e.spec).state).toBe('stale');
  });

  it('a spec outside an export dir takes its prepared dir from files[0]', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-state-'));
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

describe('mergeState', () => {
  it("the server's fingerprint verdict wins over file times; preparedness stays the disk's", () => {
    const e = exportDir();
    const disk = specInfo(e.spec);
    expect(disk.state).toBe('not-prepared');
    expect(mergeState(disk, undefined)).toBe('not-prepared');
    expect(mergeState(disk, { compile: { state: 'never-compiled' } })).toBe('not-prepared');
    expect(mergeState({ ...disk, state: 'compiled' }, { compile: { state: 'never-compiled' } })).toBe('prepared');
    expect(mergeState({ ...disk, state: 'compiled' }, { compile: { state: 'stale' } })).toBe('stale');
    expect(mergeState({ ...disk, state: 'stale' }, { compile: { state: 'up-to-date' } })).toBe('compiled');
  });
});
