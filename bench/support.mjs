// What several benchmarks share (not a benchmark: bench/run.mjs runs only *.bench.mjs):
// loading core modules from source the way the extension bundles them, and timing a CLI
// process with its peak RSS; the commit a bench ran at and its machine-readable summary
// (bench/results/*-latest.json, read by scripts/perf-table.mjs).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';

/**
 * The exports of `source` (TypeScript re-exports relative to the repository `root`), bundled by
 * esbuild into one CommonJS module as the extension bundles them, and evaluated here.
 */
export async function loadBundled(root, source, external) {
  const out = await build({
    stdin: { contents: source, resolveDir: root, loader: 'ts' },
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    write: false,
    mainFields: ['module', 'main'],
    external,
    logLevel: 'warning',
  });
  const mod = { exports: {} };
  const here = path.join(root, 'bench', 'x.js');
  new Function('module', 'exports', 'require', '__filename', '__dirname', out.outputFiles[0].text)(
    mod,
    mod.exports,
    createRequire(here),
    here,
    path.dirname(here),
  );
  return mod.exports;
}

const haveTime = existsSync('/usr/bin/time');

/**
 * `node <args>` timed: the spawn result, wall seconds (with node's start-up) and the process's
 * peak RSS in MB (NaN without /usr/bin/time).
 */
export function timedNode(args) {
  const t0 = process.hrtime.bigint();
  const r = haveTime
    ? spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, ...args], { encoding: 'utf8' })
    : spawnSync(process.execPath, args, { encoding: 'utf8' });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const rssMb = haveTime ? Number(r.stderr.trim().split('\n').pop()) / 1024 : NaN;
  return { r, seconds, rssMb };
}

/** The commit the bench ran at (`git rev-parse --short HEAD`), `+dirty` when tracked files (but bench/results) have changes. */
export function commitOf(root) {
  const r = spawnSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (r.status !== 0) return 'unknown';
  // the summaries an earlier bench of the same run just wrote do not make the tree dirty
  const status = ['-C', root, 'status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results'];
  const dirty = spawnSync('git', status, { encoding: 'utf8' }).stdout.trim();
  return `${r.stdout.trim()}${dirty ? '+dirty' : ''}`;
}

/** Writes `summary` as JSON to `file` (temp + rename); the docs' tables are generated from it. */
export function writeSummary(file, summary) {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(summary, null, 2)}\n`);
  renameSync(tmp, file);
}
