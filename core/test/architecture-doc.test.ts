/**
 * docs/ARCHITECTURE.md describes the code as it is: every repository path it names exists
 * (a path is a backticked token starting with one of the repository's top-level folders),
 * and it names nothing outside the repository.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../test/support/fixtures';

const TOP = ['core', 'server', 'client', 'test', 'scripts', 'docs', 'bench', 'syntaxes', 'dist'];
const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs', 'ARCHITECTURE.md'), 'utf8');

/** Backticked tokens that are repository paths; a glob or placeholder names the folder before it. */
function namedPaths(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const t = m[1]!.replace(/[),.;:]+$/, '');
    if (!TOP.some((d) => t === d || t.startsWith(`${d}/`))) continue;
    const fixed = t.split(/[*<>{}…]/)[0]!;
    out.add(fixed.slice(0, fixed.endsWith('/') || fixed === t ? fixed.length : fixed.lastIndexOf('/')).replace(/\/$/, ''));
  }
  return [...out].sort();
}

/** A path git ignores (built or generated: dist/, test/e2e/screenshots/) need not exist in a checkout. */
function gitIgnored(p: string): boolean {
  // as a file and as a folder (a `dir/` pattern matches only what git knows is a folder)
  return [p, `${p}/`].some((q) => spawnSync('git', ['check-ignore', '-q', '--no-index', q], { cwd: REPO_ROOT }).status === 0);
}

it('every repository path docs/ARCHITECTURE.md names exists (or is built output git ignores)', () => {
  const paths = namedPaths(doc);
  expect(paths.length).toBeGreaterThan(20);
  const missing = paths.filter((p) => !fs.existsSync(path.join(REPO_ROOT, p)) && !gitIgnored(p));
  expect(missing).toEqual([]);
});

it('docs/ARCHITECTURE.md points at nothing outside the repository but the shared fixtures', () => {
  const outside = [...doc.matchAll(/`(\.\.\/[^`]*)`/g)].map((m) => m[1]!).filter((p) => p !== '../' && !p.startsWith('../shared/fixtures'));
  expect(outside).toEqual([]);
});
