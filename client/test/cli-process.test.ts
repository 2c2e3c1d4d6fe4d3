import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_ENV, cliEnv, cliToolEnv, runCli } from '../../core/src/editor/cli-process';
import { tempDirs } from '../../test/support/temp';

const tmpDir = tempDirs('ws-');

// A stand-in CLI written here: prints plain progress lines like core's progress.ts does when
// stderr is not a terminal, then writes its output file last (as core's sentinels are).
function fakeCli(dir: string): string {
  const f = path.join(dir, 'cli.js');
  fs.writeFileSync(
    f,
    `const fs = require('fs');
const [cmd, out, steps, delay] = process.argv.slice(2);
if (cmd === 'fail') { process.stderr.write('weight-spec: /x/model.onnx: not an ONNX model (at byte 3)\\n'); process.exit(1); }
if (cmd === 'env') { process.stdout.write(JSON.stringify({ r: process.env.ELECTRON_RUN_AS_NODE, p: process.env.WEIGHT_SPEC_PROGRESS, o: process.env.WEIGHT_SPEC_ORT_PATH })); process.exit(0); }
let i = 0;
const n = Number(steps);
const tick = () => {
  i++;
  process.stderr.write('prepare: ' + Math.floor((i / n) * 100) + '% (' + i + '/' + n + ') layer ' + i + '\\n');
  if (i < n) setTimeout(tick, Number(delay));
  else { fs.writeFileSync(out, 'complete'); process.stdout.write('wrote ' + out + '\\n'); }
};
tick();
`,
  );
  return f;
}

describe('runCli', () => {
  const dir = tmpDir('ws-cli-');
  const cli = fakeCli(dir);

  it('reports progress percentages and collects stdout', async () => {
    const seen: number[] = [];
    const out = path.join(dir, 'done.txt');
    const r = await runCli({ node: process.execPath, cli }, ['go', out, '4', '5'], { onProgress: (p) => seen.push(p) });
    expect(r.code).toBe(0);
    expect(r.cancelled).toBe(false);
    expect(seen).toEqual([25, 50, 75, 100]);
    expect(r.stdout).toContain(`wrote ${out}`);
    expect(fs.readFileSync(out, 'utf8')).toBe('complete');
  });

  it('cancel kills the process before it finishes, so no output appears', async () => {
    const out = path.join(dir, 'never.txt');
    const ac = new AbortController();
    const t0 = Date.now();
    const r = await runCli({ node: process.execPath, cli }, ['go', out, '1000', '50'], { onProgress: () => ac.abort() }, ac.signal);
    expect(r.cancelled).toBe(true);
    expect(r.code).not.toBe(0);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(fs.existsSync(out)).toBe(false);
  });

  it('returns the one-line error split into file and message', async () => {
    const r = await runCli({ node: process.execPath, cli }, ['fail']);
    expect(r.code).toBe(1);
    expect(r.errorLine).toBe('weight-spec: /x/model.onnx: not an ONNX model (at byte 3)');
    expect(r.error).toEqual({ file: '/x/model.onnx', message: 'not an ONNX model (at byte 3)' });
  });

  it('runs the runtime as plain Node with plain progress and the ORT location', async () => {
    const r = await runCli({ node: process.execPath, cli, env: { WEIGHT_SPEC_ORT_PATH: '/ort' } }, ['env']);
    expect(JSON.parse(r.stdout)).toEqual({ r: '1', p: 'plain', o: '/ort' });
    expect(cliEnv({ A: 'x', B: undefined }, { C: 'y' })).toMatchObject({ A: 'x', C: 'y', ELECTRON_RUN_AS_NODE: '1' });
  });

  it('rejects when the runtime cannot be started', async () => {
    await expect(runCli({ node: path.join(dir, 'no-such-node'), cli }, [])).rejects.toThrow(/could not start/);
  });

  it('one environment for every CLI child (commands and tasks): progress interval included, tools from the settings', () => {
    expect(cliToolEnv({})).toEqual({ ELECTRON_RUN_AS_NODE: '1', WEIGHT_SPEC_PROGRESS: 'plain', WEIGHT_SPEC_PROGRESS_INTERVAL_MS: '250' });
    expect(cliToolEnv({ qaicCompilePath: '/q', ortPath: '/o' })).toEqual({
      ...CLI_ENV,
      WEIGHT_SPEC_QAIC_COMPILE: '/q',
      WEIGHT_SPEC_ORT_PATH: '/o',
    });
    expect(cliEnv({ PATH: '/bin' }, cliToolEnv({ ortPath: '/o' }))).toMatchObject({ PATH: '/bin', ...CLI_ENV, WEIGHT_SPEC_ORT_PATH: '/o' });
  });
});
