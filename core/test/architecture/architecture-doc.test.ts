/**
 * docs/ARCHITECTURE.md describes the code as it is: every repository path it names exists
 * (a path is a backticked token starting with one of the repository's top-level folders),
 * it names nothing outside the repository, its floor table is the one the layering test
 * enforces, and every arrow it states (`A → B`, `A ↛ B`, `A → B only`) holds in the import graph.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { FLOORS, importGraph, zoneOf } from '../../../test/support/import-graph';

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

it.each(['ARCHITECTURE.md', 'MODULES.md'])('every repository path docs/%s names exists (or is built output git ignores)', (name) => {
  const paths = namedPaths(fs.readFileSync(path.join(REPO_ROOT, 'docs', name), 'utf8'));
  expect(paths.length).toBeGreaterThan(20);
  const missing = paths.filter((p) => !fs.existsSync(path.join(REPO_ROOT, p)) && !gitIgnored(p));
  expect(missing).toEqual([]);
});

it('docs/ARCHITECTURE.md points at nothing outside the repository but the shared fixtures', () => {
  const outside = [...doc.matchAll(/`(\.\.\/[^`]*)`/g)].map((m) => m[1]!).filter((p) => p !== '../' && !p.startsWith('../shared/fixtures'));
  expect(outside).toEqual([]);
});

/** The doc's section under `## <title>` (to the next `## `). */
function section(title: string): string {
  const start = doc.indexOf(`\n## ${title}\n`);
  expect(start, `docs/ARCHITECTURE.md has no "## ${title}"`).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

const ticked = (line: string) => [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

it('the floor table is the one core/test/architecture/layers.test.ts enforces', () => {
  const rows = section('Floors')
    .split('\n')
    .filter((l) => /^\|\s*\d+\s*\|/.test(l))
    .map((l) => ticked(l.split('|')[2]!).map((p) => zoneOf(p.replace(/\/$/, '/x.ts'))));
  expect(rows).toEqual(FLOORS.map((f) => [...f]));
});

it('every arrow the doc states holds in the import graph, and a false one would fail', () => {
  const graph = importGraph(false, true);
  const under = (file: string, p: string) => (p.endsWith('/') ? file.startsWith(p) : file === p);
  const holds = (a: string, arrow: string, b: string, only: boolean): boolean => {
    const edges = [...graph].flatMap(([from, deps]) => (under(from, a) ? deps.map((to) => [from, to] as const) : []));
    if (arrow === '↛') return !edges.some(([, to]) => under(to, b));
    if (!only) return edges.some(([, to]) => under(to, b));
    const folder = b.slice(0, b.lastIndexOf('/') + 1);
    const into = edges.filter(([from, to]) => to.startsWith(folder) && !from.startsWith(folder));
    return into.length > 0 && into.every(([, to]) => to === b);
  };
  const arrows = section('Arrows')
    .split('\n')
    .filter((l) => l.startsWith('- `'))
    .map((l) => {
      const m = /^- `([^`]+)` (→|↛) `([^`]+)`( only)?$/.exec(l);
      expect(m, `not an arrow: ${l}`).not.toBeNull();
      return { line: l, a: m![1]!, arrow: m![2]!, b: m![3]!, only: !!m![4] };
    });
  expect(arrows.length).toBeGreaterThan(10);
  expect(arrows.filter((x) => !holds(x.a, x.arrow, x.b, x.only)).map((x) => x.line)).toEqual([]);
  // the checker can fail: the opposite of a stated arrow does not hold
  expect(holds('core/src/compile/', '↛', 'core/src/artifacts/', false)).toBe(false);
  expect(holds('core/src/cli/', '→', 'core/src/prepare/index.ts', true)).toBe(false);
});
