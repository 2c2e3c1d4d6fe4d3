/**
 * Issue 36 item 13: `check` and `inspect` take a VLM export folder (vlm.json + vision/ +
 * language/) as their help says a folder is accepted — check both specs, list both graphs —
 * and `export --config some/file.json` names the model after the file, not its parent folder.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { modelNameOfConfig } from '../../src/export/export-config';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-vlm-folder-');

it('modelNameOfConfig: a config.json is named after its folder, another file after its own stem', () => {
  expect(modelNameOfConfig('/m/Qwen3-8B/config.json')).toBe('Qwen3-8B');
  expect(modelNameOfConfig('/work/configs/qwen3-30b-a3b.json')).toBe('qwen3-30b-a3b');
  expect(modelNameOfConfig('/work/configs/llama-config.json')).toBe('llama');
});

describeFixtures('a VLM export folder through check and inspect', () => {
  let work = '';
  const cli = (...args: string[]) => cliInProcess(args, { cwd: work });

  beforeAll(async () => {
    work = tmp();
    mkdirSync(path.join(work, 'model'));
    // Config only (no weights): the export plans the prepared layout from the config.
    copyFileSync(path.join(fixturesDir(), 'qwen3_vl_moe', 'config.json'), path.join(work, 'model', 'config.json'));
    const r = await cli('export', '--config', 'model', '--out', 'out');
    expect(r.code, r.stderr).toBe(0);
  }, 120_000);

  it('check <VLM export dir> checks the vision and the language spec', async () => {
    const r = await cli('check', 'out');
    expect(r.stderr).toBe('');
    const shown = r.stdout.split('\n').filter((l) => /: (ok|\d+ errors?, \d+ warnings?)$/.test(l));
    expect(shown.map((l) => l.slice(0, l.lastIndexOf(':')))).toEqual([
      path.join('out', 'vision', 'weight_spec.json'),
      path.join('out', 'language', 'weight_spec.json'),
    ]);
    // Before prepare: not prepared (one warning per spec), no error.
    expect(r.code).toBe(0);
    expect(r.stdout.match(/\[not-prepared\]/g)).toHaveLength(2);
    const j = await cli('check', 'out', '--json');
    const problems = JSON.parse(j.stdout) as { code: string; file: string }[];
    expect([...new Set(problems.map((p) => p.file))].sort()).toEqual(
      [path.join('out', 'language', 'weight_spec.json'), path.join('out', 'vision', 'weight_spec.json')].sort(),
    );
    expect((await cli('check', 'out', '--onnx', 'x.onnx')).code).toBe(2);
  });

  it('inspect <VLM export dir> lists both graphs', async () => {
    const r = await cli('inspect', 'out');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(path.join('out', 'vision', 'model.onnx'));
    expect(r.stdout).toContain(path.join('out', 'language', 'model.onnx'));
    const j = JSON.parse((await cli('inspect', 'out', '--json')).stdout) as unknown[];
    expect(j).toHaveLength(2);
  });
});

describeFixtures('export --config <a file not named config.json>', () => {
  it('names the model after the file, not after the folder that holds it', async () => {
    const work = tmp();
    mkdirSync(path.join(work, 'configs'));
    copyFileSync(path.join(fixturesDir(), 'llama', 'config.json'), path.join(work, 'configs', 'tiny-llama.json'));
    const r = await cliInProcess(['export', '--config', path.join('configs', 'tiny-llama.json'), '--out', 'out'], { cwd: work });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^exported tiny-llama \(/m);
    expect(r.stdout).not.toMatch(/exported configs/);
  });
});
