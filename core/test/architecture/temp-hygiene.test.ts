/**
 * Tests leave nothing in the temp folder (issue #15.8): every test makes its temp dirs with
 * `tempDirs()` (test/support/temp.ts), which the ESLint rule in eslint.config.mjs enforces,
 * and the run's temp-guard (test/support/temp-guard.ts) counts what is left, excusing only
 * the files ONNX Runtime writes there on its own.
 */
import { ESLint } from 'eslint';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { leftovers } from '../../../test/support/temp-guard';

const tmp = tempDirs('ws-hygiene-');
const underParent = tmp();
const underMaker = tempDirs('ws-under-', { under: underParent });

/** Only the temp rule (no-restricted-syntax), with the repository's own ESLint config. */
const eslint = new ESLint({ cwd: REPO_ROOT, ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-syntax' });

/** `file:line message` of each temp-rule finding in `results`. */
function findings(results: ESLint.LintResult[]): string[] {
  return results.flatMap((r) => r.messages.map((m) => `${path.relative(REPO_ROOT, r.filePath)}:${m.line} ${m.message}`));
}

describe('tests make temp dirs only through tempDirs()', () => {
  it('no test file or test helper calls mkdtemp or os.tmpdir() itself, or tempDirs() inside a test or hook', async () => {
    // Only files that mention the names (tempDirs: anywhere but a top-level declaration) can break
    // the rule: lint those (parsing all ~150 takes 20 s). `npm run lint` checks every file anyway.
    const dirs = ['core/test', 'server/test', 'client/test', 'test/support'];
    const files = dirs
      .flatMap((d) => fs.readdirSync(path.join(REPO_ROOT, d), { recursive: true, encoding: 'utf8' }).map((f) => path.join(REPO_ROOT, d, f)))
      .filter(
        (f) =>
          /\.[cm]?[jt]s$/.test(f) && /mkdtemp|tmpdir|^(?!(export )?const \w+ = tempDirs\().*\btempDirs\(/m.test(fs.readFileSync(f, 'utf8')),
      );
    expect(files).toContain(path.join(REPO_ROOT, 'test/support/temp.ts'));
    expect(findings(await eslint.lintFiles(files))).toEqual([]);
  }, 120_000);

  it('the rule flags the hand-made temp files and dirs that leaked before (export-onnx-memory, fuzz-pickle, resolve)', async () => {
    const leaky = [
      "import os from 'node:os';",
      "import fs, { mkdtempSync } from 'node:fs';",
      "import { tmpdir } from 'node:os';",
      'const hook = `${os.tmpdir()}/ws-rss-hook-${process.pid}.cjs`;',
      "const tmp = fs.mkdtempSync('/x/ws-fuzz-bin-');",
      "const dir = mkdtempSync(tmpdir() + '/ckpt-');",
      "void fs.promises.mkdtemp('/x/y-');",
    ].join('\n');
    const results = await eslint.lintText(leaky, { filePath: path.join(REPO_ROOT, 'core/test/leaky.test.ts') });
    expect(findings(results).map((f) => f.replace(/^core\/test\/leaky\.test\.ts:/, ''))).toEqual([
      '4 tmpdir() in a test: make temp dirs with tempDirs() from test/support/temp.ts',
      '5 mkdtempSync() in a test: make temp dirs with tempDirs() from test/support/temp.ts',
      '6 mkdtempSync() in a test: make temp dirs with tempDirs() from test/support/temp.ts',
      '6 tmpdir() in a test: make temp dirs with tempDirs() from test/support/temp.ts',
      '7 mkdtemp() in a test: make temp dirs with tempDirs() from test/support/temp.ts',
    ]);
    // tempDirs() registers an afterAll, which vitest never runs when registered inside a test or
    // hook (serving-interface.test.ts leaked ws-serving-onnx-* that way)
    const late = [
      "import { beforeAll, it } from 'vitest';",
      "import { tempDirs } from '../../../test/support/temp';",
      "const top = tempDirs('ws-ok-');",
      "beforeAll(() => void tempDirs('ws-hook-')());",
      "it('a', () => void tempDirs('ws-it-')());",
      "it.skipIf(false)('b', () => void top());",
      "it.skipIf(false)('c', () => void tempDirs('ws-skip-if-')());",
    ].join('\n');
    const lateResults = await eslint.lintText(late, { filePath: path.join(REPO_ROOT, 'core/test/late.test.ts') });
    expect(findings(lateResults).map((f) => f.replace(/^core\/test\/late\.test\.ts:(\d+) .*/, '$1'))).toEqual(['4', '5', '7']);
    // the helper itself is where temp dirs are made
    const helper = await eslint.lintFiles(['test/support/temp.ts']);
    expect(findings(helper)).toEqual([]);
    expect(fs.readFileSync(path.join(REPO_ROOT, 'test/support/temp.ts'), 'utf8')).toMatch(/mkdtempSync\(/);
  });
});

describe('tempDirs()', () => {
  it('refuses to be called inside a test, where its cleanup would never run', () => {
    // eslint-disable-next-line no-restricted-syntax -- the misuse this test is about
    expect(() => tempDirs('ws-hygiene-late-')).toThrow(/tempDirs\(\) called inside a test: call it at the top level/);
  });

  it("makes fresh dirs under 'under' when given", () => {
    const [a, b] = [underMaker(), underMaker('ws-other-')];
    expect([path.dirname(a), path.dirname(b)]).toEqual([underParent, underParent]);
    expect(path.basename(a)).toMatch(/^ws-under-.{6}$/);
    expect(path.basename(b)).toMatch(/^ws-other-.{6}$/);
    expect(a).not.toBe(underMaker());
  });
});

describe("temp-guard counts what a test left, except ONNX Runtime's own files", () => {
  it('excuses .ses and mat-debug-<pid>.log files of any size, nothing else', () => {
    const root = tmp();
    fs.writeFileSync(path.join(root, '.ses'), 'x'.repeat(51));
    fs.writeFileSync(path.join(root, 'mat-debug-4080.log'), '');
    fs.writeFileSync(path.join(root, 'mat-debug-1772.log'), 'telemetry line\n'.repeat(100));
    expect(leftovers(root)).toEqual([]);
    // the leaks of the last CI run, an empty file, another dotfile, and look-alikes of ORT's names
    fs.mkdirSync(path.join(root, 'ws-prep-worker-qXqL4y'));
    fs.writeFileSync(path.join(root, 'ws-rss-10432-1796275019910.txt'), '123');
    fs.writeFileSync(path.join(root, 'ws-rss-hook-10432.cjs'), 'x');
    fs.writeFileSync(path.join(root, 'empty'), '');
    fs.writeFileSync(path.join(root, '.lock'), '');
    fs.writeFileSync(path.join(root, 'mat-debug-x.log'), '');
    fs.mkdirSync(path.join(root, 'mat-debug-7.log'));
    expect(leftovers(root)).toEqual([
      '.lock',
      'empty',
      'mat-debug-7.log',
      'mat-debug-x.log',
      'ws-prep-worker-qXqL4y',
      'ws-rss-10432-1796275019910.txt',
      'ws-rss-hook-10432.cjs',
    ]);
  });
});
