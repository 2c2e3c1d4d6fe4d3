// Benchmark: the editor viewers' open time — the page data core computes for the webview
// (core/src/view buildViewerPage: headers only) — for the ONNX exports of every real config in
// ../shared/configs and for a generated Qwen3-MoE checkpoint of 20,046 tensors (16 sparse
// shards, 60 GB declared). Target (issue 19): each page in < 1 s. Printed beside a baseline
// measured in the same run: what `weight-spec inspect` reads for the same file (summarizeOnnx /
// Checkpoint.open), so the ratio says what the page adds (graph walk and grouping, the
// embedded spec's check, spec links). (The graph explorer: graph-explorer.bench.mjs.)
// Run after `node scripts/bundle.mjs` (for the exports).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { qwen3MoeTensors, writeSparseCheckpoint } from '../test/support/sparse-checkpoint.mjs';
import { loadBundled } from './support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'));
const configs = path.join(path.dirname(fixtures), 'configs');
const cli = path.join(root, 'dist', 'cli.js');
const TARGET_MS = 1000;
const RUNS = 3;

if (!existsSync(cli)) {
  console.error('viewers.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
if (!existsSync(configs)) {
  console.error(`viewers.bench: ${configs} missing (set WEIGHT_SPEC_FIXTURES)`);
  process.exit(1);
}

// core/src/view as one CommonJS module (what the extension bundles), evaluated here.
const src = `export { buildViewerPage } from './core/src/view';
export { summarizeOnnx } from './core/src/formats/onnx';
export { Checkpoint } from './core/src/formats/safetensors';`;
const { buildViewerPage, summarizeOnnx, Checkpoint } = await loadBundled(root, src, ['onnxruntime-node']);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-viewers-bench-'));
let failed = false;

/** Median and first (cold) time of `fn` over RUNS runs, in ms. */
async function time(fn) {
  const ms = [];
  let last;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    last = await fn();
    ms.push(performance.now() - t0);
  }
  const sorted = [...ms].sort((a, b) => a - b);
  return { first: ms[0], median: sorted[Math.floor(RUNS / 2)], last };
}

const rows = [];
function report(name, what, page, base, extra) {
  const ok = page.first < TARGET_MS;
  if (!ok) failed = true;
  rows.push(
    `  ${name.padEnd(34)} ${what.padEnd(38)} page ${page.first.toFixed(0).padStart(5)} ms (median ${page.median.toFixed(0).padStart(4)})  inspect read ${base.median.toFixed(0).padStart(4)} ms  ${(page.median / base.median).toFixed(1).padStart(4)}x  ${extra}${ok ? '' : `  TARGET MISSED (≥ ${TARGET_MS} ms)`}`,
  );
}

try {
  for (const name of readdirSync(configs)
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5))
    .sort()) {
    const model = path.join(tmp, name);
    mkdirSync(model, { recursive: true });
    copyFileSync(path.join(configs, `${name}.json`), path.join(model, 'config.json'));
    const exp = path.join(tmp, `${name}-export`);
    const r = spawnSync(process.execPath, [cli, 'export', '--config', model, '--out', exp], { encoding: 'utf8' });
    if (r.status !== 0) {
      console.error(`${name}: export failed: ${r.stderr.trim()}`);
      failed = true;
      continue;
    }
    // A VLM export holds its graphs in vision/ and language/.
    const graphs = readdirSync(exp, { recursive: true })
      .filter((x) => x.endsWith('.onnx'))
      .sort();
    for (const f of graphs) {
      const file = path.join(exp, f);
      const page = await time(() => buildViewerPage(file));
      const p = page.last.page;
      if (p.kind !== 'onnx') {
        console.error(`${name}/${f}: ${p.message}`);
        failed = true;
        continue;
      }
      const base = await time(() => summarizeOnnx(file));
      const json = JSON.stringify(p).length;
      report(
        `${name}/${f}`,
        `${p.nodeCount} nodes, ${p.weightGroups.reduce((s, w) => s + w.weights.length, 0)} weights, ${page.last.graph.groups.length} groups`,
        page,
        base,
        `page JSON ${(json / 1024).toFixed(0)} KiB (the graph explorer: bench/graph-explorer.bench.mjs)`,
      );
    }
  }
  // A 30B-class checkpoint of 20,046 tensors: open a shard → the whole indexed checkpoint,
  // with one spec referencing it (every key linked).
  const ck = path.join(tmp, 'qwen3-moe-20k');
  const tensors = qwen3MoeTensors({ layers: 51 });
  const { files } = writeSparseCheckpoint(ck, tensors, 16);
  const spec = {
    files: files.map((f) => ({ format: 'safetensors', path: path.relative(tmp, f) })),
    inputs: tensors.map((t, i) => ({ location: { file: Math.floor(i / Math.ceil(tensors.length / 16)), key: t.key }, name: t.key })),
    version: 5,
  };
  const specFile = path.join(tmp, 'weight_spec.json');
  const specText = JSON.stringify(spec, null, 2);
  writeFileSync(specFile, specText);
  const opened = files[6];
  for (const [what, opts] of [
    ['no spec in the workspace', {}],
    ['+ links from a 20,046-input spec', { specs: [{ file: specFile, text: specText }] }],
  ]) {
    const page = await time(() => buildViewerPage(opened, opts));
    const p = page.last.page;
    if (p.kind !== 'checkpoint' || p.tensors.length !== tensors.length) {
      console.error(`checkpoint page: ${JSON.stringify(p).slice(0, 300)}`);
      failed = true;
      continue;
    }
    const base = await time(() => Checkpoint.open(ck));
    report(
      `sparse checkpoint (${tensors.length} tensors)`,
      what,
      page,
      base,
      `${Object.keys(p.links).length} keys linked; page JSON ${(JSON.stringify(p).length / 2 ** 20).toFixed(1)} MiB`,
    );
  }
  console.log(`viewer open time: page data from core (first run = what opening a file costs; median of ${RUNS}); target < ${TARGET_MS} ms`);
  for (const r of rows) console.log(r);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
