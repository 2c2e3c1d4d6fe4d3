/**
 * Every `next:` hint an export prints is the exact command that works: the test parses the
 * hints (shell words, single quotes included), runs each through the CLI in this process, in
 * order, and ends with a compiled model — for plain, continuous-batching, expert-parallel,
 * VLM, CCL and sampler exports. The checkpoints are copies of the fixtures in a folder whose
 * name has a space, so an unquoted path in a hint would fail here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { COMPILE_RECORD } from '../../src/compile';
import { specInfo } from '../../src/editor/spec-state';
import { cliInProcess } from '../../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { workerPath } from '../support/prepare-support';

const tmp = tempDirs('ws-hints-');

/** The commands under `next:` (indented lines), as argv without the leading `weight-spec`. */
function hintsOf(stdout: string): string[][] {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.trim() === 'next:');
  expect(at, stdout).toBeGreaterThanOrEqual(0);
  const hints: string[][] = [];
  for (const l of lines.slice(at + 1)) {
    if (!/^\s+weight-spec /.test(l)) break;
    hints.push(shellWords(l.trim()).slice(1));
  }
  return hints;
}

/** POSIX shell words of a line with plain words and single-quoted parts. */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      expect(end).toBeGreaterThan(i);
      cur = (cur ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '\\') {
      cur = (cur ?? '') + line[++i];
    } else if (c === ' ') {
      if (cur !== undefined) words.push(cur);
      cur = undefined;
    } else cur = (cur ?? '') + c;
  }
  if (cur !== undefined) words.push(cur);
  return words;
}

const CASES: [string, string, string[]][] = [
  ['plain', 'llama', []],
  ['continuous batching', 'llama', ['--continuous-batching', '--batch-size', '2', '--ctx-len', '64']],
  ['expert parallel', 'mixtral', ['--moe-flavour', 'expert_parallel', '--pipeline-stages', '2']],
  ['VLM', 'qwen2_5_vl', []],
  ['CCL', 'llama', ['--ctx-len', '2048', '--comp-ctx-lengths-prefill', '1024', '--comp-ctx-lengths-decode', '1024,2048']],
  ['sampler', 'llama', ['--sampler']],
];

describeFixtures('export: the next: hints run as printed', () => {
  for (const [label, family, flags] of CASES) {
    it(`${label} (${family}): each hint runs and the last leaves a compiled model`, async () => {
      const root = path.join(tmp(), 'with space');
      const src = path.join(root, family);
      fs.cpSync(path.join(fixturesDir(), family), src, { recursive: true });
      const out = path.join(root, 'export out');
      const env = { WEIGHT_SPEC_PREPARE_WORKER: workerPath() };
      const exp = await cliInProcess(['export', '--config', src, '--out', out, ...flags], { env });
      expect(exp.code, exp.stderr).toBe(0);
      const hints = hintsOf(exp.stdout);
      expect(hints.map((h) => h[0])).toEqual(['prepare', 'compile']);
      for (const argv of hints) {
        const r = await cliInProcess(argv, { env });
        expect(r.code, `${argv.join(' ')}\n${r.stderr}`).toBe(0);
      }
      // the compile record (a VLM has one per graph folder) names the compiled model, which exists
      const records = [out, ...fs.readdirSync(out).map((d) => path.join(out, d))]
        .map((d) => path.join(d, COMPILE_RECORD))
        .filter((f) => fs.existsSync(f));
      expect(records.length).toBeGreaterThan(0);
      for (const f of records) {
        const model = (JSON.parse(fs.readFileSync(f, 'utf8')) as { artifacts: { model: string } }).artifacts.model;
        expect(fs.statSync(path.resolve(path.dirname(f), model)).size, f).toBeGreaterThan(0);
      }
    }, 300_000);
  }
});

describeFixtures('export: a config-only export’s prepare hint', () => {
  it('prepares exactly the layout derived from config.json (--spec); check, compile and the editor find it', async () => {
    const root = tmp();
    const cfgOnly = path.join(root, 'llama-config');
    fs.mkdirSync(cfgOnly);
    fs.copyFileSync(path.join(fixturesDir(), 'llama', 'config.json'), path.join(cfgOnly, 'config.json'));
    const out = path.join(root, 'out');
    const env = { WEIGHT_SPEC_PREPARE_WORKER: workerPath() };
    const exp = await cliInProcess(['export', '--config', cfgOnly, '--out', out], { env });
    expect(exp.code, exp.stderr).toBe(0);
    // the one placeholder a config-only export prints: the checkpoint it has not seen
    const [prepare] = hintsOf(exp.stdout.replace(/<checkpoint of [^>]*>/, path.join(fixturesDir(), 'llama')));
    expect(prepare!.slice(-2)).toEqual(['--spec', path.join(out, 'weight_spec.json')]);
    const report = JSON.parse(fs.readFileSync(path.join(out, 'export-report.json'), 'utf8')) as { model_id: string };
    const preparedDir = report.model_id;
    expect(fs.existsSync(preparedDir)).toBe(false);

    const prep = await cliInProcess(prepare!, { env });
    expect(prep.code, prep.stderr).toBe(0);
    expect(fs.existsSync(path.join(preparedDir, '.checkpoint_prepared'))).toBe(true);

    const spec = path.join(out, 'weight_spec.json');
    const check = await cliInProcess(['check', spec]);
    expect(check.stdout.trim().split('\n').at(-1)).toBe(`${spec}: ok`);
    expect(check.code).toBe(0);
    expect(specInfo(spec).preparedDir).toBe(preparedDir);
    const compile = await cliInProcess(['compile', out], { env });
    expect(compile.code, compile.stderr).toBe(0);
    expect(fs.existsSync(path.join(out, COMPILE_RECORD))).toBe(true);
    expect(specInfo(spec).state).toBe('compiled');
  }, 300_000);
});
