/**
 * compileStatus: one answer for compile (skip), run (warn), the server's lens and the
 * extension's status bar. Made on the demo's tiny Llama (export → prepare → compile, in
 * this process); each case changes one input and expects the part it changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { compile, compileStatus } from '../../src/compile';
import { writeTinyLlama } from '../../src/demo/tiny-model';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-cstatus-');
let root: string;
let model: string;
let exp: string;

/** A fresh copy of the export directory (its prepared link and weights are shared, read-only). */
function copyExport(): string {
  const dir = path.join(tmp(), 'exp');
  fs.cpSync(exp, dir, { recursive: true, verbatimSymlinks: true, filter: (f) => path.basename(f) !== 'compile.json' });
  return dir;
}

const later = (f: string) => {
  const t = new Date(Date.now() + 5000);
  fs.utimesSync(f, t, t);
};

/** A real change of the spec's content (its model_name), written in the same layout. */
const editSpec = (dir: string) => {
  const f = path.join(dir, 'weight_spec.json');
  const spec = JSON.parse(fs.readFileSync(f, 'utf8')) as { model_name?: string };
  fs.writeFileSync(f, JSON.stringify({ ...spec, model_name: `${spec.model_name ?? ''}-edited` }, null, 2));
};

beforeAll(async () => {
  root = tmp();
  model = path.join(root, 'tiny');
  exp = path.join(root, 'tiny-export');
  await writeTinyLlama(model);
  // Prepare first: export links the prepared folder only once it exists (issue 30.8), and
  // the retargeted-link case below needs that link.
  for (const args of [
    ['prepare', '--checkpoint', model, '--dtype', 'float32'],
    ['export', '--config', model, '--out', exp, '--ctx-len', '32'],
  ]) {
    const r = await cliInProcess(args);
    expect(r.code, r.stderr).toBe(0);
  }
});

describe('compileStatus', () => {
  it('never compiled, then up to date without reading the graph or the spec', async () => {
    const dir = copyExport();
    expect(compileStatus(dir)).toEqual({ state: 'never-compiled' });
    await compile(dir, { backend: 'ort', verify: false });
    // Files are read by path or, through paths/file-kind.ts, opened by path and read by descriptor.
    const read = vi.spyOn(fs, 'readFileSync');
    const open = vi.spyOn(fs, 'openSync');
    try {
      const st = compileStatus(dir);
      expect(st.state).toBe('up-to-date');
      expect(st.backend).toBe('ort');
      expect(fs.existsSync(st.artifact!)).toBe(true);
      // Only compile.json itself and the prepared folder's list of what compile wrote there
      // (the proof the artifact is this export's, issue #28) are read: the stamps decide.
      const byPath = [...read.mock.calls, ...open.mock.calls].map((c) => c[0]).filter((p) => typeof p === 'string');
      expect(byPath.map((p) => path.basename(String(p)))).toEqual(['compile.json', '.weight-spec-compiled.json']);
    } finally {
      read.mockRestore();
      open.mockRestore();
    }
  });

  it('names the part that changed: spec, graph, artifact', async () => {
    const dir = copyExport();
    await compile(dir, { backend: 'ort', verify: false });
    editSpec(dir);
    expect(compileStatus(dir)).toMatchObject({ state: 'stale', changed: ['spec'] });
    later(path.join(dir, 'model.onnx'));
    expect(compileStatus(dir)).toMatchObject({ state: 'stale', changed: ['graph', 'spec'] });
    const again = await compile(dir, { backend: 'ort', verify: false });
    expect(again.upToDate).toBe(false);
    expect(again.changed).toEqual(['graph', 'spec']);
    expect(compileStatus(dir).state).toBe('up-to-date');
    fs.rmSync(compileStatus(dir).artifact!);
    expect(compileStatus(dir)).toMatchObject({ state: 'stale', changed: ['artifact'] });
  });

  it('the spec counts by its content: a trailing newline, new indentation or a touch keep the compile up to date (issue 19.6)', async () => {
    const dir = copyExport();
    await compile(dir, { backend: 'ort', verify: false });
    const f = path.join(dir, 'weight_spec.json');
    const text = fs.readFileSync(f, 'utf8');
    fs.writeFileSync(f, `${text}\n`);
    later(f);
    expect(compileStatus(dir).state).toBe('up-to-date');
    fs.writeFileSync(f, JSON.stringify(JSON.parse(text), null, 4));
    expect(compileStatus(dir).state).toBe('up-to-date');
    expect((await compile(dir, { backend: 'ort', verify: false })).upToDate).toBe(true);
    editSpec(dir);
    expect(compileStatus(dir)).toMatchObject({ state: 'stale', changed: ['spec'] });
  });

  it('a retargeted prepared link is a prepared change, even with every file stamp unchanged', async () => {
    const dir = copyExport();
    await compile(dir, { backend: 'ort', verify: false, links: true });
    const link = fs.readdirSync(dir).find((n) => fs.lstatSync(path.join(dir, n)).isSymbolicLink())!;
    const target = fs.realpathSync(path.join(dir, link));
    const copy = path.join(tmp(), 'prepared-copy');
    fs.cpSync(target, copy, { recursive: true, preserveTimestamps: true });
    fs.rmSync(path.join(dir, link));
    fs.symlinkSync(copy, path.join(dir, link));
    expect(compileStatus(dir)).toMatchObject({ state: 'stale', changed: ['prepared'] });
  });

  it('with the compile about to run: another backend or other options are stale; compile skips only when up to date', async () => {
    const dir = copyExport();
    const first = await compile(dir, { backend: 'ort', verify: false });
    const req = (keepNames: boolean) => ({ backend: 'ort' as const, options: { links: false, keepNames } });
    expect(compileStatus(dir, req(false)).state).toBe('up-to-date');
    expect(compileStatus(dir, req(true))).toMatchObject({ state: 'stale', changed: ['options'] });
    expect(compileStatus(dir, { backend: 'qaic', options: {} })).toMatchObject({ state: 'stale', changed: ['backend'] });
    const second = await compile(dir, { backend: 'ort', verify: false });
    expect(second.upToDate).toBe(true);
    expect(second.record.fingerprint).toBe(first.record.fingerprint);
  });

  it('a record that does not match the schema reads as never compiled', () => {
    const dir = copyExport();
    fs.writeFileSync(path.join(dir, 'compile.json'), JSON.stringify({ version: 1, backend: 'ort', fingerprint: 'f', artifacts: {} }));
    expect(compileStatus(dir).state).toBe('never-compiled');
  });

  it('run refuses a stale compiled model (issue 15.1), and --recompile rebuilds it first', async () => {
    const dir = copyExport();
    await compile(dir, { backend: 'ort', verify: false });
    editSpec(dir);
    const r = await cliInProcess(['run', dir, '--input-ids', '1,2', '--max-new-tokens', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the compiled model is stale (spec changed since the compile)');
    expect(r.stderr).toContain('--recompile');
    const again = await cliInProcess(['run', dir, '--input-ids', '1,2', '--max-new-tokens', '1', '--recompile']);
    expect(again.code, again.stderr).toBe(0);
    expect(compileStatus(dir).state).toBe('up-to-date');
  });
});
