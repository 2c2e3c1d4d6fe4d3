/**
 * Issue #28 point 1, the aftermath: a prepared folder replaced by a prepare of another
 * checkpoint (what a repository's report steered Prepare to do) keeps its name, and `check`
 * said ok while `compile` bound the other weights. Now both say, as an error, that the
 * manifest records another source / fingerprint than the folder name and the report say.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-trust-prov-');
const cli = (args: string[]) => cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '', WEIGHT_SPEC_PROGRESS: 'off' } });

describeFixtures('a prepared folder replaced by another prepare', () => {
  it('check reports prepared-mismatch and compile refuses, naming the folder', async () => {
    const root = tmp();
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(root, 'llama'), { recursive: true });
    const exp = path.join(root, 'exp');
    expect((await cli(['export', '--config', path.join(root, 'llama'), '--out', exp])).code).toBe(0);
    const report = JSON.parse(fs.readFileSync(path.join(exp, 'export-report.json'), 'utf8')) as { prepared: { dir: string } };
    const prepared = report.prepared.dir;
    expect((await cli(['prepare', '--checkpoint', path.join(root, 'llama'), '--dtype', 'float32', '--out', prepared])).code).toBe(0);
    const spec = path.join(exp, 'weight_spec.json');
    expect((await cli(['check', spec])).code).toBe(0);

    // Another checkpoint of the same architecture, other weights, prepared into the user's folder.
    const other = path.join(root, 'other');
    fs.cpSync(path.join(root, 'llama'), other, { recursive: true });
    const shard = path.join(other, 'model-00002-of-00002.safetensors');
    const bytes = fs.readFileSync(shard);
    bytes.fill(0x3f, bytes.length - 64);
    fs.writeFileSync(shard, bytes);
    expect((await cli(['prepare', '--checkpoint', other, '--dtype', 'float32', '--out', prepared])).code).toBe(0);

    const checked = await cli(['check', spec]);
    expect(checked.code).toBe(1);
    expect(checked.stdout + checked.stderr).toContain('prepared-mismatch');
    expect(checked.stdout + checked.stderr).toMatch(/its manifest's fingerprint [0-9a-f]{10} is not the [0-9a-f]{10} its name says/);
    const compiled = await cli(['compile', exp]);
    expect(compiled.code).toBe(1);
    expect(compiled.stderr.trim().split('\n')).toHaveLength(1);
    expect(compiled.stderr).toContain(`${prepared}: its manifest's fingerprint`);
    expect(compiled.stderr).toContain(`prepared from ${other}`);
  });
});
