/**
 * Issue #14, point 4: an interrupted export can be re-run. The report claims the artifacts
 * (state "writing") before anything changes and is completed last, so an export that fails
 * half-way (here: the file-size limit hits while model.onnx is written, as ENOSPC would) leaves
 * a directory the next export may replace — while a foreign model.onnx is still refused.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { havePrlimit } from '../support/faults-harness';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const tmp = tempDirs('ws-export-safety-');

function cli(args: string[], fsizeBytes?: number) {
  const argv =
    fsizeBytes === undefined ? [process.execPath, CLI, ...args] : ['prlimit', `--fsize=${fsizeBytes}`, process.execPath, CLI, ...args];
  const r = spawnSync(argv[0]!, argv.slice(1), {
    encoding: 'utf8',
    env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', WEIGHT_SPEC_DEBUG: '' },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const report = (out: string) =>
  JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8')) as { tool: string; state: string };

beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first`);
});

describe('export after an interrupted export (#14.4)', () => {
  it.runIf(havePrlimit())('a write failure half-way leaves a directory the next export replaces', () => {
    const out = path.join(tmp(), 'o');
    const config = path.join(fixturesDir(), 'llama');
    expect(cli(['export', '--config', config, '--out', out]).code).toBe(0);
    expect(report(out).state).toBe('complete');
    // model.onnx (~22 KB) no longer fits; the report (~1 KB) does.
    const cut = cli(['export', '--config', config, '--out', out, '--dtype', 'float16'], 4096);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toMatch(/^weight-spec: .*model\.onnx: cannot write: file size limit reached \(EFBIG\)\n$/);
    expect(report(out)).toMatchObject({ tool: 'weight-spec export', state: 'writing' });
    const again = cli(['export', '--config', config, '--out', out, '--dtype', 'float16']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(0);
    expect(report(out).state).toBe('complete');
  });

  it('a foreign model.onnx is still refused, and left as it was', () => {
    const out = tmp();
    fs.writeFileSync(path.join(out, 'model.onnx'), 'not ours');
    const r = cli(['export', '--config', path.join(fixturesDir(), 'llama'), '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/model\.onnx exists and was not made by weight-spec export/);
    expect(fs.readFileSync(path.join(out, 'model.onnx'), 'utf8')).toBe('not ours');
    expect(fs.existsSync(path.join(out, 'export-report.json'))).toBe(false);
  });
});
