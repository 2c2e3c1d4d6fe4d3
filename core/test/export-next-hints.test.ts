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
import { COMPILE_RECORD } from '../src/compile/record';
import { cliInProcess } from '../../test/support/cli';
import { describeFixtures, fixturesDir } from '../../test/support/fixtures';
import { tempDirs } from '../../test/support/temp';
import { workerPath } from './prepare-support';

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
