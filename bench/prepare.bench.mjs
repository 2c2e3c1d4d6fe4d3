// Benchmark (issue 4): `weight-spec prepare` bf16 → f16 of a generated ≥ 2 GB sharded checkpoint
// against `cp` of the same files, measured in the same run: 3 rounds of cp then prepare, ratio = the
// median over rounds of cp time / prepare time (neighbouring runs see the same machine load).
// Targets: throughput ≥ 0.7 × cp's, peak RSS below the RAM budget (--max-ram-gb). Prints the numbers.
// Run after `node scripts/bundle.mjs` (npm run bench does). WS_PREPARE_BENCH_GB overrides the size.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = path.join(root, 'dist', 'cli.js');
if (!existsSync(cli) || !existsSync(path.join(root, 'dist', 'prepare-worker.js'))) {
  console.error('prepare.bench: dist/cli.js or dist/prepare-worker.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const GB = Number(process.env.WS_PREPARE_BENCH_GB ?? 2.2);
const BUDGET_GB = 1;
const TARGET_RATIO = 0.7;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-prepare-bench-'));
const src = path.join(tmp, 'ckpt');
mkdirSync(src);

// ---- generate: 5 shards of [4096, 4096] bf16 tensors (32 MiB each), header written by hand
const SHARDS = 5;
const tensorBytes = 4096 * 4096 * 2;
const perShard = Math.max(1, Math.round((GB * 1e9) / SHARDS / tensorBytes));
const noise = randomBytes(tensorBytes);
// Keep values finite and varied: clear the exponent's top bit of every bf16.
for (let i = 1; i < noise.length; i += 2) noise[i] &= 0xbf;
const weightMap = {};
for (let s = 0; s < SHARDS; s++) {
  const name = `model-${String(s + 1).padStart(5, '0')}-of-${String(SHARDS).padStart(5, '0')}.safetensors`;
  const header = { __metadata__: { format: 'pt' } };
  for (let k = 0; k < perShard; k++) {
    const key = `model.layers.${s * perShard + k}.mlp.proj.weight`;
    header[key] = { dtype: 'BF16', shape: [4096, 4096], data_offsets: [k * tensorBytes, (k + 1) * tensorBytes] };
    weightMap[key] = name;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(path.join(src, name), 'w');
  writeSync(fd, len);
  writeSync(fd, json);
  for (let k = 0; k < perShard; k++) {
    noise[0] = k & 0xff; // tensors differ
    writeSync(fd, noise);
  }
  closeSync(fd);
}
writeFileSync(path.join(src, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
writeFileSync(path.join(src, 'config.json'), JSON.stringify({ model_type: 'llama' }));
spawnSync('sync');
const files = Object.values(weightMap).filter((v, i, a) => a.indexOf(v) === i);
const bytes = files.reduce((a, f) => a + statSync(path.join(src, f)).size, 0);

function timed(cmd, args) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', cmd, ...args], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) {
    console.error(`prepare.bench: ${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr.trim()}`);
    rmSync(tmp, { recursive: true, force: true });
    process.exit(1);
  }
  return { s, rssKb: Number(r.stderr.trim().split('\n').pop()), stdout: r.stdout };
}

const cpRuns = [];
const prepRuns = [];
const ROUNDS = Number(process.env.WS_PREPARE_BENCH_ROUNDS ?? 3);
for (let round = 0; round < ROUNDS; round++) {
  const cpDir = path.join(tmp, `cp-${round}`);
  mkdirSync(cpDir);
  const c = timed('cp', [...files.map((f) => path.join(src, f)), cpDir]);
  // cp leaves its data dirty in memory; prepare fsyncs every file. Also time the flush, so the
  // durable-copy baseline (cp + sync) is printed beside plain cp.
  const t0 = process.hrtime.bigint();
  spawnSync('sync');
  cpRuns.push({ ...c, syncS: Number(process.hrtime.bigint() - t0) / 1e9 });
  rmSync(cpDir, { recursive: true });
  spawnSync('sync');
  const out = path.join(tmp, `prepared-${round}`);
  prepRuns.push(timed(process.execPath, [cli, 'prepare', '--checkpoint', src, '--dtype', 'float16', '--out', out, '--max-ram-gb', String(BUDGET_GB)]));
  if (round === 0) {
    // Spot check: the output is a valid prepared checkpoint of the same size in f16.
    const written = readdirSync(out).filter((f) => f.startsWith('base-')).reduce((a, f) => a + statSync(path.join(out, f)).size, 0);
    if (!existsSync(path.join(out, '.checkpoint_prepared')) || written < bytes * 0.99) {
      console.error('prepare.bench: prepared output incomplete');
      rmSync(tmp, { recursive: true, force: true });
      process.exit(1);
    }
  }
  rmSync(out, { recursive: true });
  spawnSync('sync');
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cp = { s: median(cpRuns.map((r) => r.s)) };
const prep = { s: median(prepRuns.map((r) => r.s)) };
const mbps = (s) => bytes / s / 1e6;
const ratios = cpRuns.map((c, i) => c.s / prepRuns[i].s);
const ratio = median(ratios);
const durable = median(cpRuns.map((c, i) => (c.s + c.syncS) / prepRuns[i].s));
const peakRssMb = Math.max(...prepRuns.map((r) => r.rssKb)) / 1024;
const budgetMb = (BUDGET_GB * 1024 ** 3) / 2 ** 20;
console.log(`checkpoint: ${(bytes / 1e9).toFixed(2)} GB bf16 in ${files.length} shards (${tmp}); load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} on ${os.availableParallelism?.() ?? os.cpus().length} cores`);
console.log(`cp:       median ${cp.s.toFixed(2)} s  ${mbps(cp.s).toFixed(0)} MB/s   (runs: ${cpRuns.map((r) => r.s.toFixed(2)).join(', ')} s)`);
console.log(`prepare:  median ${prep.s.toFixed(2)} s  ${mbps(prep.s).toFixed(0)} MB/s   (runs: ${prepRuns.map((r) => r.s.toFixed(2)).join(', ')} s; bf16 → f16, fsynced)`);
console.log(`ratio:    ${ratio.toFixed(2)} × cp throughput (median of rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}; target ≥ ${TARGET_RATIO})`);
console.log(`          ${durable.toFixed(2)} × the throughput of cp + sync (a durable copy, as prepare's fsynced files are; sync ${cpRuns.map((r) => r.syncS.toFixed(2)).join(', ')} s)`);
console.log(`peak RSS: ${peakRssMb.toFixed(0)} MiB (budget ${budgetMb.toFixed(0)} MiB, --max-ram-gb ${BUDGET_GB})`);
rmSync(tmp, { recursive: true, force: true });
let ok = true;
if (ratio < TARGET_RATIO) { console.error(`prepare.bench: throughput ratio ${ratio.toFixed(2)} is below ${TARGET_RATIO}`); ok = false; }
if (peakRssMb >= budgetMb) { console.error(`prepare.bench: peak RSS ${peakRssMb.toFixed(0)} MiB is not below the budget ${budgetMb.toFixed(0)} MiB`); ok = false; }
process.exit(ok ? 0 : 1);
