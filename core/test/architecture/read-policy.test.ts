/**
 * One way to read a file the tool did not write (issue #43): core/src/paths' read policy checks
 * the kind before it opens (a FIFO blocks `open()` forever, /dev/zero never ends) and caps the
 * size before the first byte. The ESLint rule in eslint.config.mjs (`readRestrictions`) makes a
 * plain `readFile`/`readFileSync` in core, server or client sources an error, as the layer rule
 * makes an upward import one; this suite runs that rule over the sources that mention the names
 * and shows it catches a stray read.
 */
import { ESLint } from 'eslint';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { ROOTS, sources } from '../../../test/support/import-graph';

/** Only no-restricted-syntax, with the repository's own ESLint config. */
const eslint = new ESLint({ cwd: REPO_ROOT, ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-syntax' });

function findings(results: ESLint.LintResult[]): string[] {
  return results.flatMap((r) => r.messages.map((m) => `${path.relative(REPO_ROOT, r.filePath)}:${m.line} ${m.message}`));
}

it('no source outside core/src/paths reads a file with readFile/readFileSync', async () => {
  // Only files that mention the names can break the rule (linting all of them takes long).
  const files = ROOTS.flatMap((r) => sources(r))
    .filter((f) => /\breadFile(Sync)?\b/.test(fs.readFileSync(path.join(REPO_ROOT, f), 'utf8')))
    .map((f) => path.join(REPO_ROOT, f));
  expect(files.length).toBeGreaterThan(3);
  expect(findings(await eslint.lintFiles(files))).toEqual([]);
}, 120_000);

it('the rule flags a stray read (the compile.json, refs and lock reads of before), and not the read policy itself', async () => {
  const stray = [
    "import fs, { readFileSync } from 'node:fs';",
    "import fsp from 'node:fs/promises';",
    "export const a = JSON.parse(fs.readFileSync('compile.json', 'utf8'));",
    "export const b = readFileSync('refs/main', 'utf8');",
    "export const c = fsp.readFile('x.lock', 'utf8');",
  ].join('\n');
  const [r] = await eslint.lintText(stray, { filePath: path.join(REPO_ROOT, 'core/src/editor/stray.ts') });
  expect(r!.messages.map((m) => m.line)).toEqual([3, 4, 5]);
  expect(r!.messages[0]!.message).toMatch(/through core\/src\/paths/);
  const [inside] = await eslint.lintText(stray, { filePath: path.join(REPO_ROOT, 'core/src/paths/stray.ts') });
  expect(inside!.messages).toEqual([]);
  const [server] = await eslint.lintText(stray, { filePath: path.join(REPO_ROOT, 'server/src/stray.ts') });
  expect(server!.messages).toHaveLength(3);
});
