// What several benchmarks share (not a benchmark: bench/run.mjs runs only *.bench.mjs):
// loading core modules from source the way the extension bundles them, and timing a CLI
// process with its peak RSS.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
