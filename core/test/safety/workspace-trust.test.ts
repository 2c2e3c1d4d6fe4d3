// Issue #28 point 1, the decision behind the editor's Prepare and Compile (vscode-free, so the
// extension's modal and the server's refusal are unit-tested here): paths read from
// export-report.json, compile.json and the spec are resolved against the file that holds them
// and must stay inside the workspace roots or that file's folder.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileOutside, outsideConfirmation, outsideRefusal, prepareTargets } from '../../src/editor/workspace-trust';
import { confineFilePath, judgeFilePath } from '../../src/paths';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-trust-unit-');

/** root/{ws/{ckpt, exp}, victim/prep}: an export whose report says what `report` says. */
function layout(report: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const root = tmp();
  const ws = path.join(root, 'ws');
  const exp = path.join(ws, 'exp');
  fs.mkdirSync(path.join(ws, 'ckpt'), { recursive: true });
  fs.mkdirSync(path.join(root, 'victim', 'prep'), { recursive: true });
  fs.mkdirSync(exp);
  fs.writeFileSync(path.join(exp, 'export-report.json'), JSON.stringify({ tool: 'weight-spec export', ...report }));
  fs.writeFileSync(
    path.join(exp, 'weight_spec.json'),
    JSON.stringify({ version: 5, files: [{ path: 'p/model.safetensors' }], inputs: [] }),
  );
  for (const [name, v] of Object.entries(extra)) fs.writeFileSync(path.join(exp, name), JSON.stringify(v));
  return { root, ws, exp, spec: path.join(exp, 'weight_spec.json'), victim: path.join(root, 'victim', 'prep') };
}

describe('paths read from files in the workspace', () => {
  it('resolves against the file (not a cwd) and admits the workspace roots and the file folder', () => {
    const l = layout({ source: { checkpoint: '../ckpt' }, prepared: { dir: 'prepared' } });
    const t = prepareTargets(l.spec, [l.ws]);
    expect(t.checkpoint).toMatchObject({ abs: path.join(l.ws, 'ckpt'), inside: true, field: 'source.checkpoint' });
    expect(t.out).toMatchObject({ abs: path.join(l.exp, 'prepared'), inside: true });
    expect(t.outside).toEqual([]);
    expect(outsideConfirmation('Prepare', t.outside)).toBeUndefined();
    // Without roots only the report's own folder counts.
    expect(prepareTargets(l.spec, []).outside.map((v) => v.field)).toEqual(['source.checkpoint']);
  });

  it('a relative ../ value, an absolute value and a symlink leading out are outside, each named by file and field', () => {
    const l = layout({ source: { checkpoint: '/etc' }, prepared: { dir: '../../victim/prep' } });
    const t = prepareTargets(l.spec, [l.ws]);
    expect(t.outside.map((v) => [v.field, v.abs])).toEqual([
      ['source.checkpoint', '/etc'],
      ['prepared.dir', l.victim],
    ]);
    const line = outsideRefusal(t.outside)!;
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toContain(`${path.join(l.exp, 'export-report.json')}: "source.checkpoint" names /etc`);
    expect(line).toContain('(and 1 more)');
    const ask = outsideConfirmation('Prepare', t.outside)!;
    expect(ask.message).toContain('2 paths');
    expect(ask.detail).toContain(`export-report.json "prepared.dir" → ${l.victim}`);
    fs.symlinkSync(l.victim, path.join(l.ws, 'link'));
    const v = judgeFilePath(path.join(l.exp, 'export-report.json'), 'prepared.dir', '../link', [l.ws]);
    expect(v.inside).toBe(false);
    expect(v.message).toContain(`a symlink leads it to ${l.victim}`);
    expect(() => confineFilePath(path.join(l.exp, 'x.json'), 'f', '../../victim', [l.ws])).toThrow(/x\.json: "f" names/);
    expect(judgeFilePath(path.join(l.exp, 'x.json'), 'f', 42, [l.ws])).toMatchObject({ inside: false });
  });

  it('without prepared.dir, --out is the folder of the spec first file, judged too', () => {
    const l = layout({ source: { checkpoint: '../ckpt' } });
    expect(prepareTargets(l.spec, [l.ws]).out).toMatchObject({ abs: path.join(l.exp, 'p'), inside: true, field: 'files[0].path' });
  });

  it("Prepare's folder picker starts at the model folder the report's source.config names, only inside the workspace (issue 36)", () => {
    // Exported from a config without weights: no checkpoint recorded, the picker is shown.
    const l = layout({ source: { config: '../ckpt/config.json', checkpoint: null } });
    fs.writeFileSync(path.join(l.ws, 'ckpt', 'config.json'), '{}');
    const t = prepareTargets(l.spec, [l.ws]);
    expect(t.checkpoint).toBeUndefined();
    expect(t.pickFrom).toBe(path.join(l.ws, 'ckpt'));
    // A folder given as source.config is the model folder itself.
    const f = layout({ source: { config: '../ckpt' } });
    expect(prepareTargets(f.spec, [f.ws]).pickFrom).toBe(path.join(f.ws, 'ckpt'));
    // Outside the workspace, or gone: no start folder from the report (the picker opens at the export).
    const out = layout({ source: { config: '../../victim/prep/config.json' } });
    fs.writeFileSync(path.join(out.victim, 'config.json'), '{}');
    expect(prepareTargets(out.spec, [out.ws]).pickFrom).toBeUndefined();
    expect(prepareTargets(layout({ source: { config: '../gone/config.json' } }).spec, [l.ws]).pickFrom).toBeUndefined();
  });

  it('compile: the report, the spec files and compile.json prepared / artifacts.* are judged', () => {
    const l = layout(
      { prepared: { dir: '../ckpt' } },
      { 'compile.json': { prepared: path.join(l0(), 'x'), artifacts: { model: '/tmp/elsewhere/compiled-a-0123456789ab.onnx' } } },
    );
    expect(compileOutside(l.exp, [l.ws]).map((v) => v.field)).toEqual(['prepared', 'artifacts.model']);
  });
});

function l0(): string {
  return tmp();
}
