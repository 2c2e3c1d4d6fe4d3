/**
 * `npm run docs:perf` (scripts/perf-table.mjs, issue 48) writes docs/PERFORMANCE.md's headline
 * tables and the README's performance lines from the bench's JSON summaries. Run here on a copy
 * of the repository's two docs with summaries whose figures this test chose, so every cell it
 * expects comes from those figures, not from the script: the table carries them with the date,
 * load and commit; a partial run is refused; `--check` finds a stale doc.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-perf-table-');
const fig = (median: number, min: number, max: number) => ({ median, min, max, rounds: [min, median, max] });

function prepareSummary(complete = true) {
  return {
    bench: 'prepare',
    date: '2026-12-05T03:00:00.000Z',
    commit: 'abc1234',
    cores: 2,
    rounds: 5,
    complete,
    conversions: [
      {
        label: 'dense FP8 E4M3 → bf16',
        sourceBytes: 2.27e9,
        outBytes: 4.53e9,
        judged: true,
        ratioCp: fig(0.91, 0.85, 0.99),
        ratioParallel: fig(0.62, 0.55, 0.7),
        wallS: { cp: fig(3.1, 3, 3.3), parallel: fig(2.4, 2.3, 2.6), prepare: fig(6.8, 6.5, 7) },
        cpuS: { cp: fig(1.2, 1.1, 1.3), parallel: fig(1.3, 1.2, 1.4), prepare: fig(3.4, 3.3, 3.6) },
        peakRssMiB: 202,
        directIo: 'yes (5 O_DIRECT opens)',
        load: { min: 0.4, max: 1.3 },
        verdict: 'MISSED',
        parallelGoal: 'MISSED',
      },
    ],
    links: { bytesFactor: 13, timeFactor: 0.96, verdict: 'OK' },
  };
}
const lspSummary = {
  bench: 'lsp',
  date: '2026-12-05T02:50:00.000Z',
  commit: 'abc1234',
  cores: 2,
  load: { min: 0.2, max: 0.9 },
  runs: 5,
  complete: true,
  targets: { cold: 0.5, edit: 0.1, p95Ms: 20, heap: 3 },
  sizes: [
    {
      inputs: 20000,
      coldWall: { server: [150, 140], json: [400, 200], ratio: 0.4, rounds: [0.375, 0.7] },
      coldCpu: { server: [141, 138], json: [370, 360], ratio: 0.38, rounds: [0.381, 0.383] },
      editWall: { server: [20], json: [400], ratio: 0.05, rounds: [0.05] },
      editCpu: { server: [13.5], json: [350], ratio: 0.039, rounds: [0.039] },
    },
  ],
  mainInputs: 20000,
  hoverP95Ms: 2.9,
  completionP95Ms: 5.5,
  heapRatio: 2.48,
};

/** A copy of the script and the two docs, with `prepare` and `lsp` as the latest summaries. */
function repoWith(prepare: unknown, lsp: unknown): string {
  const root = tmp();
  for (const f of ['scripts/perf-table.mjs', 'docs/PERFORMANCE.md', 'README.md']) {
    fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, f), path.join(root, f));
  }
  fs.mkdirSync(path.join(root, 'bench', 'results'), { recursive: true });
  fs.writeFileSync(path.join(root, 'bench', 'results', 'prepare-latest.json'), JSON.stringify(prepare));
  fs.writeFileSync(path.join(root, 'bench', 'results', 'lsp-latest.json'), JSON.stringify(lsp));
  return root;
}
const run = (root: string, ...args: string[]) =>
  spawnSync(process.execPath, [path.join(root, 'scripts', 'perf-table.mjs'), ...args], { encoding: 'utf8' });

it('writes the summaries’ figures, date, load and commit into both docs; --check then passes', () => {
  const root = repoWith(prepareSummary(), lspSummary);
  expect(run(root, '--check').status).toBe(1);
  expect(run(root).status).toBe(0);
  const perf = fs.readFileSync(path.join(root, 'docs', 'PERFORMANCE.md'), 'utf8');
  expect(perf).toContain('2026-12-05, commit abc1234, 2 cores, load 0.4–1.3');
  expect(perf).toContain('| 0.91 (0.85–0.99) MISSED');
  expect(perf).toContain('| 0.62 (0.55–0.70) MISSED');
  expect(perf).toContain('| 6.80 / 3.40');
  expect(perf).toContain('13 × the bytes in 0.96 × the time');
  expect(perf).toContain('0.40 (0.38–0.70) MISSED in 1 of 2 rounds');
  expect(perf).toContain('load 0.2–0.9');
  expect(perf).not.toContain('Not generated yet');
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  expect(readme).toContain('prepare writes at ≥ 0.91 × `cp` + `sync`');
  expect(readme).toContain('≤ 0.70 × VS Code');
  expect(run(root, '--check').status).toBe(0);
});

it('refuses the summary of a partial run, and says which', () => {
  const root = repoWith(prepareSummary(false), lspSummary);
  const r = run(root);
  expect(r.status).toBe(1);
  expect(r.stderr.trim()).toMatch(/^perf-table: bench\/results\/prepare-latest\.json is from a partial run/);
  expect(fs.readFileSync(path.join(root, 'README.md'), 'utf8')).toBe(fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8'));
});
