// Benchmark: `weight-spec export --config` on real full-size configs (no weights, no Python).
// Targets (issue 6): Qwen3-30B-A3B (48 layers, 128 experts) < 1 s wall, < 200 MB peak RSS,
// model.onnx < 8 MiB — printed beside the seed's QEfficient numbers (87.0 s, 76.92 MiB).
// Llama-3.1-8B and Mixtral-8x7B must export too; Gemma-2-2B (issue 23) is held to the same
// targets, and so are issue 32's families (phi-2, starcoder2-15b, gpt-j-6b, whose published
// configs live in test/configs/). Run after `node scripts/bundle.mjs`.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timedNode } from './support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'));
const configs = path.join(path.dirname(fixtures), 'configs');
/** Published configs kept in the repository (issue 32's families); looked up before ../shared/configs. */
const repoConfigs = path.join(root, 'test', 'configs');
const cli = path.join(root, 'dist', 'cli.js');
const SEED = { seconds: 87.0, mib: 76.92 }; // QEfficient decoder export of Qwen3-VL-30B-A3B (seed measurement)
const TARGET = { seconds: 1, rssMb: 200, mib: 8 };
/** Configs held to TARGET (issue 6: Qwen3-30B-A3B; issue 23: the QEfficient-validated families' published configs). */
const TARGETED = ['qwen3-30b-a3b', 'gemma-2-2b', 'gpt-oss-20b', 'glm-4.5-air', 'phi-2', 'starcoder2-15b', 'gpt-j-6b'];
// issue 32: mpt-7b and starcoder (15.5B, gpt_bigcode) from test/configs; issue 31: Gemma-3-1B, its graph < 2 MiB
TARGETED.push('mpt-7b', 'starcoder', 'gemma-3-1b');
/** Tighter model.onnx limits (MiB) than TARGET.mib. */
const MIB_LIMIT = { 'gemma-3-1b': 2 };
/** Issue 31's largest models: the same wall and RSS targets, and model.onnx < 2 MiB (weight-free at 314B / 109B parameters). */
const TARGETED_31 = ['grok-1', 'llama-4-scout-17b-16e'];
const TARGET_31_MIB = 2;
/** Issue 45's encoders (bge-m3: XLM-RoBERTa, 24 layers, with its pooling when the folder has one): < 2 s wall each, RSS and size as TARGET. */
const TARGETED_45 = ['bge-m3'];
const TARGET_45_SECONDS = 2;

if (!existsSync(cli)) {
  console.error('export.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
if (!existsSync(configs)) {
  console.error(`export.bench: ${configs} missing (set WEIGHT_SPEC_FIXTURES)`);
  process.exit(1);
}
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-export-bench-'));
let failed = false;

function run(name) {
  const model = path.join(tmp, name);
  mkdirSync(model, { recursive: true });
  const own = path.join(repoConfigs, `${name}.json`);
  copyFileSync(existsSync(own) ? own : path.join(configs, `${name}.json`), path.join(model, 'config.json'));
  const out = path.join(tmp, `${name}-export`);
  const args = [cli, 'export', '--config', model, '--out', out];
  const { r, seconds, rssMb } = timedNode(args);
  if (r.status !== 0) {
    console.error(`${name}: export failed (${r.status}): ${r.stderr.trim()}`);
    failed = true;
    return undefined;
  }
  const mib = statSync(path.join(out, 'model.onnx')).size / 2 ** 20;
  const report = JSON.parse(readFileSync(path.join(out, 'export-report.json'), 'utf8'));
  return { name, seconds, rssMb, mib, nodes: report.graph.nodes, inputs: report.weights.count };
}

/** Baseline measured in the same run: the CLI doing nothing (`--version`), i.e. Node + bundle start-up. */
function baseline() {
  const { seconds, rssMb } = timedNode([cli, '--version']);
  return { seconds, rssMb };
}

try {
  const base = baseline();
  const names = [
    'qwen3-30b-a3b',
    'llama-3.1-8b',
    'mixtral-8x7b',
    ...TARGETED.filter((n) => n !== 'qwen3-30b-a3b'),
    ...TARGETED_31,
    ...TARGETED_45,
  ];
  const rows = names.map(run).filter(Boolean);
  console.log('export --config (wall incl. node start-up; peak RSS of the CLI process)');
  console.log(
    `  baseline (weight-spec --version, same run): ${base.seconds.toFixed(3)} s, ${Number.isNaN(base.rssMb) ? 'n/a' : base.rssMb.toFixed(0)} MB RSS`,
  );
  for (const r of rows) {
    console.log(
      `  ${r.name.padEnd(14)} ${r.seconds.toFixed(3).padStart(7)} s  ${Number.isNaN(r.rssMb) ? '   n/a' : r.rssMb.toFixed(0).padStart(4)} MB RSS  model.onnx ${r.mib.toFixed(2).padStart(6)} MiB  ${r.nodes} nodes, ${r.inputs} weight inputs`,
    );
  }
  const q = rows.find((r) => r.name === 'qwen3-30b-a3b');
  if (q) {
    console.log(
      `  qwen3-30b-a3b export work over the baseline: ${(q.seconds - base.seconds).toFixed(3)} s, ${(q.rssMb - base.rssMb).toFixed(0)} MB (${(q.seconds / base.seconds).toFixed(1)}x the start-up time)`,
    );
    console.log(
      `  qwen3-30b-a3b vs seed (QEfficient, PyTorch meta trace): ${q.seconds.toFixed(3)} s vs ${SEED.seconds} s (${(SEED.seconds / q.seconds).toFixed(0)}x faster), ` +
        `${q.mib.toFixed(2)} MiB vs ${SEED.mib} MiB (${(SEED.mib / q.mib).toFixed(0)}x smaller)`,
    );
  }
  // every targeted config: < 1 s wall, < 200 MB peak RSS, model.onnx < 8 MiB
  for (const t of rows.filter((r) => TARGETED.includes(r.name) || TARGETED_31.includes(r.name) || TARGETED_45.includes(r.name))) {
    const mibTarget = TARGETED_31.includes(t.name) ? TARGET_31_MIB : (MIB_LIMIT[t.name] ?? TARGET.mib);
    const secTarget = TARGETED_45.includes(t.name) ? TARGET_45_SECONDS : TARGET.seconds;
    const misses = [];
    if (t.seconds >= secTarget) misses.push(`wall ${t.seconds.toFixed(3)} s ≥ ${secTarget} s`);
    if (t.rssMb >= TARGET.rssMb) misses.push(`RSS ${t.rssMb.toFixed(0)} MB ≥ ${TARGET.rssMb} MB`);
    if (t.mib >= mibTarget) misses.push(`model.onnx ${t.mib.toFixed(2)} MiB ≥ ${mibTarget} MiB`);
    console.log(
      misses.length
        ? `  ${t.name}: TARGET MISSED: ${misses.join('; ')}`
        : `  ${t.name}: targets met: < ${secTarget} s, < ${TARGET.rssMb} MB, < ${mibTarget} MiB`,
    );
    if (misses.length) failed = true;
  }
  if (rows.length !== names.length) failed = true;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
