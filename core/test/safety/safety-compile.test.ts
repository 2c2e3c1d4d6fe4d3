/**
 * Issue #14, points 5 and 6: compile trusts no path from compile.json — it loads, reports up
 * to date or deletes only an artifact it named itself (compiled-<stem>-<fingerprint>.onnx)
 * inside the prepared folder or the export's compiled/ folder — and it writes only into a
 * folder prepare made (the sentinel), never into a plain checkpoint or `/`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compile, readCompileRecord } from '../../src/compile';
import { resolveRunnable } from '../../src/run';
import { tempDirs } from '../../../test/support/temp';
import { makeSyntheticExport } from '../support/compile-support';

const tmp = tempDirs('ws-compile-safety-');
const ORT = { backend: 'ort' as const, verify: false };

describe('compile.json paths are not trusted (#14.5)', () => {
  it('a record naming a foreign file is neither up to date, nor run, nor deleted', async () => {
    const root = tmp();
    const ex = makeSyntheticExport(root, 16, 32, 1);
    const first = await compile(ex.exportDir, ORT);
    const ours = first.record.artifacts.model!;
    expect(path.dirname(ours)).toBe(fs.realpathSync(ex.preparedDir));
    // Someone points artifacts.model at a file of theirs, named like an artifact.
    const victimDir = path.join(root, 'victim');
    fs.mkdirSync(victimDir);
    const victim = path.join(victimDir, path.basename(ours));
    fs.writeFileSync(victim, 'precious');
    const recFile = path.join(ex.exportDir, 'compile.json');
    const rec = JSON.parse(fs.readFileSync(recFile, 'utf8'));
    fs.writeFileSync(recFile, JSON.stringify({ ...rec, artifacts: { model: victim } }, null, 2));

    expect(readCompileRecord(ex.exportDir)).toBeUndefined();
    expect(() => resolveRunnable(ex.exportDir)).toThrow(/compile\.json: not a record of a weight-spec compile here/);
    const again = await compile(ex.exportDir, ORT);
    expect(again.upToDate).toBe(false);
    expect(again.record.artifacts.model).toBe(ours);
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');

    // A changed input (forced recompile) drops the previous artifact only when it is ours.
    fs.writeFileSync(recFile, JSON.stringify({ ...again.record, artifacts: { model: victim } }, null, 2));
    await compile(ex.exportDir, { ...ORT, force: true });
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
    // The record's own prepared folder does not make a foreign folder trusted either.
    fs.writeFileSync(recFile, JSON.stringify({ ...again.record, prepared: victimDir, artifacts: { model: victim } }, null, 2));
    await compile(ex.exportDir, { ...ORT, force: true });
    expect(fs.readFileSync(victim, 'utf8')).toBe('precious');
  });
});

describe('compile writes only into prepared folders (#14.6)', () => {
  it('refuses a folder without the sentinel and --prepared /, with how to make one', async () => {
    const root = tmp();
    const ex = makeSyntheticExport(root, 16, 32, 1);
    fs.rmSync(path.join(ex.preparedDir, '.checkpoint_prepared'));
    fs.rmSync(path.join(ex.preparedDir, '.checkpoint_prepared.json'));
    const before = fs.readdirSync(ex.preparedDir).sort();
    await expect(compile(ex.exportDir, ORT)).rejects.toThrow(
      /prepared: not a prepared checkpoint \(no \.checkpoint_prepared\); compile writes only into folders prepare made: run weight-spec prepare --checkpoint .*prepared --dtype <dtype> and compile with --prepared <its output>$/,
    );
    expect(fs.readdirSync(ex.preparedDir).sort()).toEqual(before);
    await expect(compile(ex.exportDir, { ...ORT, prepared: '/' })).rejects.toThrow(
      /^\/: not a prepared checkpoint \(no \.checkpoint_prepared\)/,
    );
  });
});
