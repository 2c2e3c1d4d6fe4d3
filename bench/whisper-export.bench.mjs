// Benchmark: `weight-spec export --config` on the real whisper-large-v3 config (issue 45): both
// graphs (encoder + decoder, 32 layers each, 128 mel bins) and whisper.json written in < 2 s wall,
// < 300 MB peak RSS, < 8 MiB of ONNX together. Run after `node scripts/bundle.mjs`.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timedNode } from './support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const fixtures = path.resolve(process.env.WEIGHT_SPEC_FIXTURES ?? path.join(root, '..', 'shared', 'fixtures'));
const cfg = path.join(path.dirname(fixtures), 'configs', 'whisper-large-v3.json');
const cli = path.join(root, 'dist', 'cli.js');
const TARGET = { seconds: 2, rssMb: 300, mib: 8 };

if (!existsSync(cli)) {
  console.error('whisper-export.bench: dist/cli.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
if (!existsSync(cfg)) {
  console.error(`whisper-export.bench: ${cfg} missing (set WEIGHT_SPEC_FIXTURES)`);
  process.exit(1);
}
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-whisper-bench-'));
let failed = false;
try {
  const model = path.join(tmp, 'whisper-large-v3');
  mkdirSync(model);
  copyFileSync(cfg, path.join(model, 'config.json'));
  const out = path.join(tmp, 'export');
  const { r, seconds, rssMb } = timedNode([cli, 'export', '--config', model, '--out', out]);
  if (r.status !== 0) throw new Error(`whisper-large-v3: export failed (${r.status}): ${r.stderr.trim()}`);
  const parts = ['encoder', 'decoder'].map((g) => {
    const rep = JSON.parse(readFileSync(path.join(out, g, 'export-report.json'), 'utf8'));
    return { g, mib: statSync(path.join(out, g, 'model.onnx')).size / 2 ** 20, nodes: rep.graph.nodes, inputs: rep.weights.count };
  });
  const mib = parts.reduce((a, p) => a + p.mib, 0);
  console.log('export --config whisper-large-v3 (both graphs; wall incl. node start-up; peak RSS of the CLI process)');
  for (const p of parts) console.log(`  ${p.g.padEnd(8)} ${p.mib.toFixed(2)} MiB, ${p.nodes} nodes, ${p.inputs} weight inputs`);
  console.log(`  total    ${seconds.toFixed(2)} s, ${Number.isNaN(rssMb) ? 'n/a' : rssMb.toFixed(0)} MB RSS, ${mib.toFixed(2)} MiB ONNX`);
  const misses = [];
  if (seconds >= TARGET.seconds) misses.push(`${seconds.toFixed(2)} s ≥ ${TARGET.seconds} s`);
  if (rssMb >= TARGET.rssMb) misses.push(`${rssMb.toFixed(0)} MB ≥ ${TARGET.rssMb} MB`);
  if (mib >= TARGET.mib) misses.push(`${mib.toFixed(2)} MiB ≥ ${TARGET.mib} MiB`);
  if (misses.length) {
    console.error(`whisper-export.bench: target missed: ${misses.join('; ')}`);
    failed = true;
  } else console.log(`  targets met: < ${TARGET.seconds} s, < ${TARGET.rssMb} MB, < ${TARGET.mib} MiB`);
} catch (e) {
  console.error(`whisper-export.bench: ${e instanceof Error ? e.message : e}`);
  failed = true;
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
