// Benchmark: `weight-spec export --config` on the real Qwen3-VL-30B-A3B config (issue 16) and
// Qwen2.5-VL-7B and Gemma-3-27B (issue 33), LLaVA-1.5-7B, Mistral-Small-3.1-24B and Llama-4-Scout-17B-16E (issue 44): per model, both graphs (vision + language) written in < 2 s wall
// total, < 300 MB peak RSS, < 8 MiB of ONNX together — beside the seed's QEfficient numbers for
// Qwen3-VL (vision 17.6 s + decoder 87.0 s = 104.6 s; 1.48 MiB + 76.92 MiB = 78.40 MiB). Run
// after `node scripts/bundle.mjs`.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timedNode } from './support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'));
const configs = path.join(path.dirname(fixtures), 'configs');
const cli = path.join(root, 'dist', 'cli.js');
const SEED = { seconds: 104.6, mib: 78.4 };
const TARGET = { seconds: 2, rssMb: 300, mib: 8 };

if (!existsSync(cli)) {
  console.error('vlm-export.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const CASES = [
  { config: 'qwen3-vl-30b-a3b.json', name: 'Qwen3-VL-30B-A3B-Instruct', seed: SEED },
  { config: 'qwen2.5-vl-7b.json', name: 'Qwen2.5-VL-7B-Instruct' },
  { config: 'gemma-3-27b.json', name: 'gemma-3-27b-it' },
  { config: 'llava-1.5-7b.json', name: 'llava-1.5-7b-hf' },
  { config: 'mistral-small-3.1-24b.json', name: 'Mistral-Small-3.1-24B-Instruct-2503' },
  { config: 'llama-4-scout-17b-16e.json', name: 'Llama-4-Scout-17B-16E-Instruct' },
];
let failed = false;
for (const c of CASES) {
  const cfg = path.join(configs, c.config);
  if (!existsSync(cfg)) {
    console.error(`vlm-export.bench: ${cfg} missing (set WEIGHT_SPEC_FIXTURES)`);
    process.exit(1);
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-vlm-bench-'));
  try {
    const model = path.join(tmp, c.name);
    mkdirSync(model);
    copyFileSync(cfg, path.join(model, 'config.json'));
    const out = path.join(tmp, 'export');
    const args = [cli, 'export', '--config', model, '--out', out];
    const { r, seconds, rssMb } = timedNode(args);
    if (r.status !== 0) throw new Error(`${c.name}: export failed (${r.status}): ${r.stderr.trim()}`);
    const parts = ['vision', 'language'].map((g) => {
      const rep = JSON.parse(readFileSync(path.join(out, g, 'export-report.json'), 'utf8'));
      return { g, mib: statSync(path.join(out, g, 'model.onnx')).size / 2 ** 20, nodes: rep.graph.nodes, inputs: rep.weights.count };
    });
    const mib = parts.reduce((a, p) => a + p.mib, 0);
    console.log(`export --config ${c.name} (both graphs; wall incl. node start-up; peak RSS of the CLI process)`);
    for (const p of parts) console.log(`  ${p.g.padEnd(8)} ${p.mib.toFixed(2)} MiB, ${p.nodes} nodes, ${p.inputs} weight inputs`);
    const seed = c.seed ? ` (seed: ${c.seed.seconds} s, ${c.seed.mib} MiB)` : '';
    console.log(
      `  total    ${seconds.toFixed(2)} s, ${Number.isNaN(rssMb) ? 'n/a' : rssMb.toFixed(0)} MB RSS, ${mib.toFixed(2)} MiB ONNX${seed}`,
    );
    const misses = [];
    if (seconds >= TARGET.seconds) misses.push(`${seconds.toFixed(2)} s ≥ ${TARGET.seconds} s`);
    if (rssMb >= TARGET.rssMb) misses.push(`${rssMb.toFixed(0)} MB ≥ ${TARGET.rssMb} MB`);
    if (mib >= TARGET.mib) misses.push(`${mib.toFixed(2)} MiB ≥ ${TARGET.mib} MiB`);
    if (misses.length) {
      console.error(`vlm-export.bench: ${c.name}: target missed: ${misses.join('; ')}`);
      failed = true;
    } else console.log(`  targets met (< ${TARGET.seconds} s, < ${TARGET.rssMb} MB, < ${TARGET.mib} MiB)`);
  } catch (e) {
    console.error(`vlm-export.bench: ${e.message}`);
    failed = true;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
process.exit(failed ? 1 : 0);
