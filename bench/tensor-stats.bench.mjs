// Benchmark (issue 50, item 5): a tensor's statistics on demand, as the checkpoint viewer asks
// for them (core/src/view/tensor-stats.ts tensorStats: min, max, mean, std, NaN/Inf counts, a
// histogram, the first values, by range reads in bounded chunks), on a generated 1 GiB bf16
// tensor [32768, 16384] of trained-like values (normal, σ 0.02). Target: < 2 s. Printed beside a
// baseline measured in the same rounds: a plain read of the same bytes in the same chunk size
// (what no statistics can beat), the two taking turns going first; medians of 3 rounds with
// their spread. Where this process may drop the page cache (root), every timed run starts cold.
// Env: WS_STATS_BENCH_MB (1024), WS_STATS_BENCH_ROUNDS (3). Exits 1 when the target is missed.
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadBundled } from './support.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MB = Number(process.env.WS_STATS_BENCH_MB ?? 1024);
const ROUNDS = Math.max(1, Number(process.env.WS_STATS_BENCH_ROUNDS ?? 3));
const TARGET_MS = 2000;

const { tensorStats, STATS_CHUNK_BYTES } = await loadBundled(
  root,
  `export { tensorStats, STATS_CHUNK_BYTES } from './core/src/view/tensor-stats';`,
  ['onnxruntime-node'],
);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ws-stats-bench-'));
const file = path.join(tmp, 'big.safetensors');
const cols = 16384;
const rows = Math.floor((MB * 2 ** 20) / 2 / cols);
const bytes = rows * cols * 2;

/** Box–Muller normal(0, 0.02) as bf16 bits (round to nearest even), one 64 MiB block repeated. */
function writeCheckpoint() {
  let header = JSON.stringify({ w: { dtype: 'BF16', shape: [rows, cols], data_offsets: [0, bytes] } });
  while ((8 + header.length) % 8) header += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  const block = Buffer.alloc(Math.min(64 << 20, bytes));
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  for (let i = 0; i < block.length; i += 2) {
    f[0] = 0.02 * Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random());
    const x = u[0];
    block.writeUInt16LE(((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff, i);
  }
  const fd = openSync(file, 'w');
  writeSync(fd, len);
  writeSync(fd, Buffer.from(header));
  for (let done = 0; done < bytes; done += block.length) writeSync(fd, block, 0, Math.min(block.length, bytes - done));
  closeSync(fd);
}

/** Drops the page cache when allowed (root); says whether it could. */
function dropCaches() {
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

function plainRead() {
  const fd = openSync(file, 'r');
  const buf = Buffer.allocUnsafe(STATS_CHUNK_BYTES);
  let total = 0;
  for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0;) total += n;
  closeSync(fd);
  return total;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const spread = (xs) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;

writeCheckpoint();
const loads = [];
const reads = [];
const stats = [];
let cold = true;
let last;
for (let r = 0; r < ROUNDS; r++) {
  loads.push(os.loadavg()[0]);
  const order = r % 2 === 0 ? ['read', 'stats'] : ['stats', 'read'];
  for (const side of order) {
    cold = dropCaches() && cold;
    const t0 = performance.now();
    if (side === 'read') plainRead();
    else last = await tensorStats(file, 'w');
    (side === 'read' ? reads : stats).push(performance.now() - t0);
  }
}
rmSync(tmp, { recursive: true, force: true });

const ms = median(stats);
const ok = ms < TARGET_MS;
console.log(
  `tensor statistics of a ${(bytes / 2 ** 30).toFixed(2)} GiB bf16 tensor [${rows}, ${cols}]; load average ${loads
    .map((x) => x.toFixed(1))
    .join(
      '/',
    )} over ${ROUNDS} rounds; page cache ${cold ? "dropped in this machine before every run (a VM's host may still cache the disk)" : 'not dropped (not root): warm reads'}`,
);
console.log(`  plain read of the bytes: median ${median(reads).toFixed(0)} ms (rounds ${spread(reads)})`);
console.log(
  `  statistics:              median ${ms.toFixed(0)} ms (rounds ${spread(stats)}), ${(ms / median(reads)).toFixed(2)} × the plain read; target < ${TARGET_MS} ms ${ok ? 'OK' : 'MISSED'}`,
);
console.log(`  (mean ${last.mean.toExponential(2)}, std ${last.std.toExponential(3)}: σ 0.02 as generated)`);
process.exit(ok ? 0 : 1);
