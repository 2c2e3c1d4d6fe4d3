/**
 * Issue #28 point 5: a compile.json from elsewhere neither deletes nor is believed.
 * - A forged record in another export naming the user's artifact (right name pattern, right
 *   fingerprint prefix, a prepared folder with prepare's sentinel) used to be "ours": the next
 *   compile of that export deleted the user's artifact.
 * - A record copied along with an export folder names the original folder's files in its
 *   stamps; they hold, so the copy was "up to date" although its graph differs, and `run` would
 *   load the original's artifact. Up to date is judged on the export's own files.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { compileStatus, readCompileRecord } from '../../src/compile';
import { decodeModel, encodeModel } from '../../src/formats/onnx';
import { makeLegacyExport } from '../support/compile-support';

const tmp = tempDirs('ws-trust-compile-');
const cli = (args: string[]) => cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '' } });
const legacy = () => path.join(fixturesDir(), 'phi3', 'legacy.onnx');

describeFixtures('compile.json is judged where it sits', () => {
  it("a forged record naming the user's artifact does not get it deleted", async () => {
    const user = makeLegacyExport(legacy(), tmp());
    expect((await cli(['compile', user.exportDir])).code).toBe(0);
    const artifact = readCompileRecord(user.exportDir)!.artifacts.model!;
    expect(path.dirname(artifact)).toBe(fs.realpathSync(user.preparedDir));
    const bytes = fs.readFileSync(artifact);

    // Another export (its own prepared weights) carrying a copy of the user's record.
    const other = makeLegacyExport(legacy(), tmp());
    fs.copyFileSync(path.join(user.exportDir, 'compile.json'), path.join(other.exportDir, 'compile.json'));
    expect(readCompileRecord(other.exportDir)).toBeUndefined();
    const r = await cli(['compile', other.exportDir]);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(artifact)).toEqual(bytes);
    expect(compileStatus(user.exportDir).state).toBe('up-to-date');
  });

  it('a copied export folder, re-exported with another graph, is not up to date on the original stamps', async () => {
    const user = makeLegacyExport(legacy(), tmp());
    expect((await cli(['compile', user.exportDir])).code).toBe(0);
    const copy = path.join(user.root, 'copy');
    fs.cpSync(user.exportDir, copy, { recursive: true, verbatimSymlinks: true });
    // "Re-export" the copy: the same weights, another graph (a changed doc string is enough).
    const m = decodeModel(fs.readFileSync(path.join(copy, 'model.onnx')), path.join(copy, 'model.onnx'));
    (m as { docString?: string }).docString = 'exported again with --ctx-len 16';
    fs.writeFileSync(path.join(copy, 'model.onnx'), encodeModel(m));
    const st = compileStatus(copy);
    expect(st.state).not.toBe('up-to-date');
    const r = await cli(['compile', copy]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(/up to date/);
    expect(readCompileRecord(copy)!.artifacts.model).not.toBe(readCompileRecord(user.exportDir)!.artifacts.model);
    expect(compileStatus(copy).state).toBe('up-to-date');
  });
});
