/**
 * Issue #28 point 3: `run --dump-logits F` goes through the same output policy as `--out`:
 * no file on /dev, /proc or /sys (as root, the atomic rename replaced /dev/null by a regular
 * file), no FIFO or other special file replaced, no symlink replaced; `-` writes stdout.
 * Each refusal comes before the model runs, one line naming the path.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { cliInProcess } from '../../../test/support/cli';
import { tempDirs } from '../../../test/support/temp';
import { checkOutputFile } from '../../src/paths';
import { makeLegacyExport, maxAbsDiff, type Reference } from '../support/compile-support';

const tmp = tempDirs('ws-trust-out-');
const cli = (args: string[]) => cliInProcess(args, { env: { WEIGHT_SPEC_DEBUG: '' } });

it('the policy refuses /dev, /proc and /sys paths without touching them', () => {
  for (const p of ['/dev/null', '/dev/stdout', '/proc/self/comm', '/sys/kernel/notes'])
    expect(() => checkOutputFile('/', p)).toThrow(/not a (file|folder) on disk/);
  expect(fs.statSync('/dev/null').isCharacterDevice()).toBe(true);
});

describeFixtures('run --dump-logits', () => {
  it('refuses a symlink, a FIFO and a device; "-" writes the logits to stdout', async () => {
    const made = makeLegacyExport(path.join(fixturesDir(), 'phi3', 'legacy.onnx'), tmp());
    expect((await cli(['compile', made.exportDir])).code).toBe(0);
    const r = JSON.parse(fs.readFileSync(path.join(fixturesDir(), 'phi3', 'reference.json'), 'utf8')) as Reference;
    const ids = [...r.input_ids, ...r.generated_ids.slice(0, -1)].join(',');

    const kept = path.join(made.root, 'kept.json');
    fs.writeFileSync(kept, 'mine\n');
    const link = path.join(made.root, 'link.json');
    fs.symlinkSync(kept, link);
    const viaLink = await cli(['run', made.exportDir, '--input-ids', ids, '--dump-logits', link]);
    expect(viaLink.code).toBe(1);
    expect(viaLink.stderr).toBe(`weight-spec: ${link}: is a symlink; refusing to replace it (name its target instead)\n`);
    expect(fs.lstatSync(link).isSymbolicLink()).toBe(true);
    expect(fs.readFileSync(kept, 'utf8')).toBe('mine\n');

    const fifo = path.join(made.root, 'pipe');
    execFileSync('mkfifo', [fifo]);
    const viaFifo = await cli(['run', made.exportDir, '--input-ids', ids, '--dump-logits', fifo]);
    expect(viaFifo.code).toBe(1);
    expect(viaFifo.stderr).toBe(`weight-spec: ${fifo}: is a FIFO, not a regular file; refusing to replace it\n`);
    expect(fs.lstatSync(fifo).isFIFO()).toBe(true);

    const dev = await cli(['run', made.exportDir, '--input-ids', ids, '--dump-logits', '/dev/null']);
    expect(dev.code).toBe(1);
    expect(dev.stderr).toBe('weight-spec: /dev/null: is under /dev, not a file on disk; write to a file (or "-" for stdout)\n');
    expect(fs.statSync('/dev/null').isCharacterDevice()).toBe(true);

    const out = await cli(['run', made.exportDir, '--input-ids', ids, '--dump-logits', '-']);
    expect(out.code).toBe(0);
    const logits = (JSON.parse(out.stdout) as { logits: number[][] }).logits;
    expect(maxAbsDiff(logits, r.logits)).toBeLessThanOrEqual(1e-4);
    expect(out.stderr).toMatch(/→ stdout/);
  }, 120_000);
});
