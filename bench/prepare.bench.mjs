// Benchmark (issue 22): `weight-spec prepare` against a durable copy of the same files
// (`cp` + `sync`, the physical limit of the job on this disk: prepare fsyncs its output too),
// measured in the same run, and against a parallel copy (four `cp` processes at once over the
// shards, then `sync`: a copy that keeps the disk's queue busy, so a slow single `cp` does not
// flatter prepare), in alternating rounds (cp, the parallel copy and prepare taking turns going
// first, then the peer; `sync` and a settling pause before each timed run so no run pays for the
// previous one's dirty pages). Each figure is the median of the rounds with its spread. Every
// conversion prints wall and CPU time (user + system of the whole process tree: prepare's worker
// threads, the copies' `cp` processes), the load average over its rounds, and whether prepare
// opened its outputs with O_DIRECT (seen in one more, untimed run under strace). The figures also
// go to bench/results/prepare-latest.json (WS_PREPARE_BENCH_JSON), which scripts/perf-table.mjs
// turns into docs/PERFORMANCE.md's headline table. Scenarios:
// - bf16 → f16 and bf16 → f32 of a generated 2.2 GB dense checkpoint (5 shards of 32 MiB tensors);
// - Mixtral-style MoE stacking (64 experts per layer, 1 MiB per expert matrix: many small reads
//   into one large write) of a generated ≥ 2 GB checkpoint, bf16 → f16;
// - untransformed shards (bf16 → bf16: hard links): time at 0.2 GB and at 2.2 GB;
// - FP8 (issue 35): a 2.2 GB block-scaled E4M3 checkpoint ([4096, 4096] tensors, weight_scale_inv
//   [32, 32], 5 shards: the size the other conversions are measured at) → bf16, f16 and f32, and a
//   ≥ 2 GB DeepSeek-style FP8 MoE checkpoint (64 separate experts per layer with their scales) →
//   bf16, f16 and f32: dequant + transpose + stack measured as one task. `fp8small`: the issue's first figure,
//   0.5 GB → bf16, printed with prepare's fixed start-up (an up-to-date re-run), not judged: Node's
//   start, the CLI bundle and the plan are a fifth of that run and cp has none of them. Their "peer" is
//   prepare with the scalar kernels and page-cache writes (WEIGHT_SPEC_SIMD=off WEIGHT_SPEC_DIRECT_IO=off),
//   the code before the SIMD kernels and direct writes. Prepare writes outputs of 16 MiB and more with
//   O_DIRECT (core/src/prepare/direct-io.ts) while `cp` goes through the page cache: on a loaded VM the
//   page cache's fresh pages are what slow `cp` + `sync` down most, so ratios above 1 there are not
//   disk speed; the quiet-machine figure is the one to hold against the target.
// Throughput is bytes written per second: the source size for cp, the prepared size for prepare
// (half the source for f16, twice for f32). The time ratio (source bytes per second) is printed
// beside it. The peer is the straightforward single-thread implementation (prepare-peer.mjs).
// Targets: throughput ≥ 0.95 × cp + sync's (the parallel copy's ratio is reported beside it, goal ≥ 0.95), peak RSS below the budget (--max-ram-gb 1), linked
// prepare at 2.2 GB within 1.5 × its time at 0.2 GB. Exits 1 when a target is missed.
// Env: WS_PREPARE_BENCH_ROUNDS (5; the peer runs in the first 3), WS_PREPARE_BENCH_GB (2.2), WS_PREPARE_BENCH_DIR (os.tmpdir()),
// WS_PREPARE_BENCH_SETTLE (2: seconds of pause after each sync),
// WS_PREPARE_BENCH_ONLY (comma list of f16,f32,moe,fp8,fp8small,fp8moe,gptq,links,shards), WS_PREPARE_BENCH_VALUES (bits: see prepare-data.mjs),
// WS_PREPARE_BENCH_SHARDS (2,4: the N of the shard scenario), WS_PREPARE_BENCH_MOE_GB (max(2.05, 0.93 × GB): the MoE
// checkpoints), WS_PREPARE_BENCH_JSON (the summary's path). Run after `node scripts/bundle.mjs`.
// - GPTQ (issue 46): a GPTQ v1 int4 checkpoint of GB/4 packed bytes ([4096, 4096] Linears, group 128) dequantized to
//   f16 and f32 (4× and 8× the source written); printed against cp + sync, not judged (no peer: nothing to compare with).
// - shards (issue 35): `prepare --shard i/N` as N concurrent processes + `--finalize`, against one process
//   (`--shard 0/1` + `--finalize`), on the dense checkpoint bf16 → f16; each sharded output is compared byte for
//   byte with a single-host prepare. On this machine the N processes share 2 cores and one disk, so the speed-up
//   is a sanity figure (≈ 1× or below: the same disk, and each shard hashes what it wrote), not a cluster number.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpSync, directIoUse, parallelCpSync, PARALLEL_COPIES, timed as measure } from './prepare-measure.mjs';
import { commitOf, writeSummary } from './support.mjs';
import { shards } from './prepare-shards.mjs';
import { denseCheckpoint, fp8DenseCheckpoint, fp8MoeCheckpoint, gptqCheckpoint, moeCheckpoint } from './prepare-data.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const cli = path.join(root, 'dist', 'cli.js');
if (!existsSync(cli) || !existsSync(path.join(root, 'dist', 'prepare-worker.js'))) {
  console.error('prepare.bench: dist/cli.js or dist/prepare-worker.js missing; run `node scripts/bundle.mjs` first');
  process.exit(1);
}
const GB = Number(process.env.WS_PREPARE_BENCH_GB ?? 2.2);
/** The MoE checkpoints' size: at least 2 GB (64 experts of a real layer's shape), WS_PREPARE_BENCH_MOE_GB for a quick check. */
const MOE_GB = Number(process.env.WS_PREPARE_BENCH_MOE_GB ?? Math.max(2.05, GB * 0.93));
const ROUNDS = Math.max(1, Number(process.env.WS_PREPARE_BENCH_ROUNDS ?? 5));
/** Rounds that also time the peer (slow: one thread; its figure needs fewer rounds). */
const PEER_ROUNDS = Math.min(ROUNDS, 3);
const ONLY = (process.env.WS_PREPARE_BENCH_ONLY ?? 'f16,f32,moe,fp8,fp8small,fp8moe,gptq,links,shards').split(',');
const BUDGET_GB = 1;
const TARGET = { ratio: 0.95, linkGrowth: 1.5 };
const tmp = mkdtempSync(path.join(process.env.WS_PREPARE_BENCH_DIR ?? os.tmpdir(), 'ws-prepare-bench-'));
const cleanup = () => rmSync(tmp, { recursive: true, force: true });
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

const env = { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' };
const sync = () => spawnSync('sync');
/** Seconds to wait after the `sync` before each timed run (WS_PREPARE_BENCH_SETTLE), for the host's writeback. */
const SETTLE = Number(process.env.WS_PREPARE_BENCH_SETTLE ?? 2);
/** Runs `cmd` timed (prepare-measure.mjs): wall and CPU seconds, peak RSS in KiB, the load at its end. */
const timed = (cmd, args, runEnv = env) => measure(cmd, args, runEnv, SETTLE);
const sizeOf = (dir, pick = (f) => f.endsWith('.safetensors')) =>
  readdirSync(dir)
    .filter(pick)
    .reduce((a, f) => a + statSync(path.join(dir, f)).size, 0);
const remove = (dir) => {
  rmSync(dir, { recursive: true, force: true });
  sync();
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
const prepare = (ck, dtype, out) => [
  process.execPath,
  [cli, 'prepare', '--checkpoint', ck.dir, '--dtype', dtype, '--out', out, '--max-ram-gb', String(BUDGET_GB)],
];

let ok = true;
const budgetMb = (BUDGET_GB * 1024 ** 3) / 2 ** 20;
const summary = [];
const DEFAULT_ONLY = 'f16,f32,moe,fp8,fp8small,fp8moe,gptq,links,shards';
/** The machine-readable summary (WS_PREPARE_BENCH_JSON, bench/results/prepare-latest.json): scripts/perf-table.mjs reads it. */
const resultsFile = path.resolve(process.env.WS_PREPARE_BENCH_JSON ?? path.join(root, 'bench', 'results', 'prepare-latest.json'));
const results = {
  bench: 'prepare',
  date: new Date().toISOString(),
  commit: commitOf(root),
  cores: os.availableParallelism?.() ?? os.cpus().length,
  loadAtStart: os.loadavg(),
  rounds: ROUNDS,
  gb: GB,
  only: ONLY,
  values: process.env.WS_PREPARE_BENCH_VALUES === 'bits' ? 'bits' : 'trained',
  // the docs' tables take only a run of every scenario at the default size and rounds
  complete: ONLY.join() === DEFAULT_ONLY && GB === 2.2 && ROUNDS === 5 && process.env.WS_PREPARE_BENCH_VALUES !== 'bits',
  conversions: [],
};

/** The peer of a scenario: the straightforward single-thread implementation (prepare-peer.mjs). */
const PEER = {
  label: 'peer (1 thread)',
  cmd: (ck, dir, dtype) => [process.execPath, [path.join(here, 'prepare-peer.mjs'), ck.dir, dir, dtype]],
};
/** The FP8 scenarios' "before": prepare itself with the scalar kernels and page-cache writes (SIMD and O_DIRECT turned off). */
const SCALAR = {
  label: 'scalar, page cache',
  cmd: (ck, dir, dtype) => [...prepare(ck, dtype, dir), { ...env, WEIGHT_SPEC_SIMD: 'off', WEIGHT_SPEC_DIRECT_IO: 'off' }],
};

/**
 * Alternating rounds of cp + sync, the parallel copy, prepare and the peer on `ck`; prints and
 * checks the figures. `peerRounds` 0 leaves the peer out; `target` false prints the ratio without
 * judging it.
 */
function compare(label, ck, dtype, peerOf = PEER, peerRounds = PEER_ROUNDS, target = true) {
  const runs = [];
  let outBytes = 0;
  const out = path.join(tmp, 'prepared');
  /** A baseline copy into a fresh directory, timed, then removed. */
  const copy = (make) => () => {
    const dir = path.join(tmp, 'copy');
    const t = timed(...make(ck, dir));
    if (sizeOf(dir) !== ck.bytes) {
      console.error(`prepare.bench: ${label}: a baseline copy wrote ${sizeOf(dir)} bytes of ${ck.bytes}`);
      process.exit(1);
    }
    remove(dir);
    return t;
  };
  const prep = () => {
    const t = timed(...prepare(ck, dtype, out));
    if (!existsSync(path.join(out, '.checkpoint_prepared'))) {
      console.error(`prepare.bench: ${label}: no sentinel in the prepared output`);
      process.exit(1);
    }
    outBytes = sizeOf(out);
    remove(out);
    return t;
  };
  const sides = [
    ['base', copy(cpSync)],
    ['par', copy(parallelCpSync)],
    ['prep', prep],
  ];
  for (let r = 0; r < ROUNDS; r++) {
    // Which side goes first turns round by round: a run right after gigabytes of writes can find
    // the host's write cache still draining (a guest `sync` does not wait for it).
    const run = {};
    for (let k = 0; k < sides.length; k++) {
      const [name, fn] = sides[(r + k) % sides.length];
      run[name] = fn();
    }
    if (r < peerRounds) {
      const peerDir = path.join(tmp, 'peer');
      run.peer = timed(...peerOf.cmd(ck, peerDir, dtype));
      const peerBytes = sizeOf(peerDir);
      remove(peerDir);
      if (Math.abs(peerBytes - outBytes) > outBytes * 0.01) {
        console.error(`prepare.bench: ${label}: the peer wrote ${peerBytes} bytes, prepare ${outBytes}; they do not do the same job`);
        process.exit(1);
      }
    }
    runs.push(run);
  }
  // untimed: one more run under strace, to see whether the outputs were opened with O_DIRECT
  const direct = directIoUse(prepare(ck, dtype, out), path.join(tmp, 'openat.trace'));
  remove(out);
  const written = runs.map((x) => outBytes / x.prep.s / (ck.bytes / x.base.s));
  const writtenPar = runs.map((x) => outBytes / x.prep.s / (ck.bytes / x.par.s));
  const time = runs.map((x) => x.base.s / x.prep.s);
  const peered = runs.filter((x) => x.peer);
  const speedup = peered.map((x) => x.peer.s / x.prep.s);
  const rss = Math.max(...runs.map((x) => x.prep.rssKb)) / 1024;
  const loads = runs.flatMap((x) => [x.base.load, x.par.load, x.prep.load]);
  const mbps = (b, s) => `${(b / s / 1e6).toFixed(0)} MB/s`;
  const med = (side, key = 's') => median(runs.map((x) => x[side][key]));
  const mq = median(peered.map((x) => x.peer.s));
  const ratio = median(written);
  const ratioPar = median(writtenPar);
  console.log(
    `\n${label}: ${(ck.bytes / 1e9).toFixed(2)} GB ${ck.dtype ?? 'BF16'} in ${ck.files.length} shards → ${(outBytes / 1e9).toFixed(2)} GB ${dtype}`,
  );
  const row = (name, side, bytes) =>
    console.log(
      `  ${name.padEnd(21)} median ${med(side).toFixed(2)} s wall, ${med(side, 'cpuS').toFixed(2)} s CPU, ${mbps(bytes, med(side))} written   (runs ${runs.map((x) => `${x[side].s.toFixed(2)}/${x[side].cpuS.toFixed(2)}`).join(', ')} s wall/CPU)`,
    );
  row('cp + sync:', 'base', ck.bytes);
  row(`${PARALLEL_COPIES} × cp ∥ + sync:`, 'par', ck.bytes);
  row('prepare:', 'prep', outBytes);
  if (peered.length)
    console.log(
      `  ${`${peerOf.label}:`.padEnd(21)} median ${mq.toFixed(2)} s, ${mbps(outBytes, mq)} written   (runs ${peered.map((x) => x.peer.s.toFixed(2)).join(', ')} s)`,
    );
  const verdict = target ? `target ≥ ${TARGET.ratio}) ${ratio >= TARGET.ratio ? 'OK' : 'MISSED'}` : 'not a target: see below)';
  console.log(`  ratio (bytes written/s): ${ratio.toFixed(2)} × cp + sync (rounds ${spread(written)}; ${verdict}`);
  console.log(
    `  ratio (bytes written/s): ${ratioPar.toFixed(2)} × the parallel copy (rounds ${spread(writtenPar)}; goal ≥ ${TARGET.ratio}, reported as measured) ${ratioPar >= TARGET.ratio ? 'met' : 'MISSED'}`,
  );
  console.log(`  time ratio (source bytes/s): ${median(time).toFixed(2)} × cp + sync (rounds ${spread(time)})`);
  if (peered.length) console.log(`  speed-up over the ${peerOf.label}: ${median(speedup).toFixed(2)}× (rounds ${spread(speedup)})`);
  console.log(`  peak RSS: ${rss.toFixed(0)} MiB (budget ${budgetMb.toFixed(0)} MiB) ${rss < budgetMb ? 'OK' : 'MISSED'}`);
  console.log(`  O_DIRECT: ${direct}; load average (1 min) over the rounds ${spread(loads)}`);
  if ((target && ratio < TARGET.ratio) || rss >= budgetMb) ok = false;
  const versus = peered.length ? `, ${median(speedup).toFixed(1)}× the ${peerOf.label}` : '';
  summary.push(
    `${label}: ${ratio.toFixed(2)} × cp + sync (bytes written/s, rounds ${spread(written)}; time ratio ${median(time).toFixed(2)})${target ? (ratio >= TARGET.ratio ? '' : ' MISSED') : ' (not a target)'}, ${ratioPar.toFixed(2)} × ${PARALLEL_COPIES} cp ∥${versus}, ${rss.toFixed(0)} MiB, O_DIRECT ${direct}`,
  );
  const fig = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs), rounds: xs });
  results.conversions.push({
    label,
    dtype,
    sourceBytes: ck.bytes,
    outBytes,
    judged: target,
    ratioCp: fig(written),
    ratioParallel: fig(writtenPar),
    timeRatioCp: fig(time),
    ...(peered.length ? { speedupPeer: { over: peerOf.label, ...fig(speedup) } } : {}),
    wallS: { cp: fig(runs.map((x) => x.base.s)), parallel: fig(runs.map((x) => x.par.s)), prepare: fig(runs.map((x) => x.prep.s)) },
    cpuS: {
      cp: fig(runs.map((x) => x.base.cpuS)),
      parallel: fig(runs.map((x) => x.par.cpuS)),
      prepare: fig(runs.map((x) => x.prep.cpuS)),
    },
    peakRssMiB: rss,
    directIo: direct,
    load: { min: Math.min(...loads), max: Math.max(...loads) },
    verdict: !target ? 'not judged' : ratio >= TARGET.ratio ? 'OK' : 'MISSED',
    parallelGoal: ratioPar >= TARGET.ratio ? 'met' : 'MISSED',
  });
  return { prepareS: med('prep') };
}

/**
 * The fixed part of a prepare run: the same command again on its finished output, which starts
 * Node, loads the CLI, plans from every header and finds the output up to date. Median of `rounds`.
 */
function startup(ck, dtype, rounds = ROUNDS) {
  const out = path.join(tmp, 'prepared');
  timed(...prepare(ck, dtype, out));
  const runs = Array.from({ length: rounds }, () => timed(...prepare(ck, dtype, out)).s);
  remove(out);
  return median(runs);
}

console.log(
  `prepare bench in ${tmp}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')} on ${os.availableParallelism?.() ?? os.cpus().length} cores; ${ROUNDS} rounds; values ${
    process.env.WS_PREPARE_BENCH_VALUES === 'bits' ? 'uniform bf16 bit patterns (the worst case)' : 'normal(0, 0.02), as trained weights'
  }`,
);
const dense = ONLY.some((x) => x === 'f16' || x === 'f32' || x === 'links' || x === 'shards')
  ? denseCheckpoint(path.join(tmp, 'dense'), GB)
  : undefined;
if (ONLY.includes('f16')) compare('dense bf16 → f16', dense, 'float16');
if (ONLY.includes('f32')) compare('dense bf16 → f32', dense, 'float32');
if (ONLY.includes('moe')) {
  const moe = moeCheckpoint(path.join(tmp, 'moe'), MOE_GB, 64);
  console.log(`\n(MoE checkpoint: ${moe.layers} layers × ${moe.experts} experts × 3 matrices [512, 1024] bf16, one layer per shard)`);
  compare('MoE stacking bf16 → f16', moe, 'float16');
  remove(moe.dir);
}
if (ONLY.includes('fp8')) {
  // the size the other conversions are measured at (issue 35: "as for the other conversions")
  const fp8 = fp8DenseCheckpoint(path.join(tmp, 'fp8'), GB, 5);
  console.log('\n(FP8 checkpoints: [4096, 4096] E4M3 tensors with F32 weight_scale_inv [32, 32], 128×128 blocks)');
  // one round of the scalar kernels: the "before" figure, and slow
  compare('dense FP8 E4M3 → bf16', fp8, 'bfloat16', SCALAR, 1);
  compare('dense FP8 E4M3 → f16', fp8, 'float16', SCALAR, 0);
  compare('dense FP8 E4M3 → f32', fp8, 'float32', SCALAR, 0);
  remove(fp8.dir);
}
if (ONLY.includes('fp8small')) {
  // The issue's first measurement, 0.5 GB: here the fixed start-up is a large part of the run, and
  // cp's is a few milliseconds. Printed with that start-up, not judged.
  const small = fp8DenseCheckpoint(path.join(tmp, 'fp8small'), 0.5);
  const { prepareS } = compare('dense FP8 E4M3 → bf16, 0.5 GB', small, 'bfloat16', SCALAR, 0, false);
  const fixed = startup(small, 'bfloat16');
  results.conversions[results.conversions.length - 1].startupS = fixed;
  console.log(
    `  of which start-up (the same command on its finished output: Node, the CLI bundle, the plan from every header, the up-to-date check): median ${(fixed * 1000).toFixed(0)} ms, ${((fixed / prepareS) * 100).toFixed(0)} % of the run`,
  );
  remove(small.dir);
}
if (ONLY.includes('fp8moe')) {
  const moe = fp8MoeCheckpoint(path.join(tmp, 'fp8moe'), MOE_GB, 64);
  console.log(
    `\n(FP8 MoE checkpoint, DeepSeek-style: ${moe.layers} layers × ${moe.experts} separate experts × gate/up [1024, 2048] + down [2048, 1024] E4M3 with their 128×128 scales; dequant + transpose + stack into moe_weights, one task per layer)`,
  );
  // one round of the scalar kernels: they take minutes here, and it is only the "before" figure
  compare('MoE FP8 E4M3 → bf16 (dequant + transpose + stack)', moe, 'bfloat16', SCALAR, 1);
  // f16: what Qualcomm's compiler takes; f32 writes four times the source
  compare('MoE FP8 E4M3 → f16 (dequant + transpose + stack)', moe, 'float16', SCALAR, 0);
  compare('MoE FP8 E4M3 → f32 (dequant + transpose + stack)', moe, 'float32', SCALAR, 0);
  remove(moe.dir);
}
if (ONLY.includes('gptq')) {
  const gptq = gptqCheckpoint(path.join(tmp, 'gptq'), GB / 4);
  console.log('\n(GPTQ v1 checkpoint: [4096, 4096] int4 Linears, group 128, qweight/qzeros/scales/g_idx; dequantized into …weight)');
  compare('GPTQ int4 → f16 (dequantize)', gptq, 'float16', PEER, 0, false);
  compare('GPTQ int4 → f32 (dequantize)', gptq, 'float32', PEER, 0, false);
  remove(gptq.dir);
}
if (ONLY.includes('links')) {
  const small = denseCheckpoint(path.join(tmp, 'small'), GB / 10);
  const times = { small: [], large: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, ck] of [
      ['small', small],
      ['large', dense],
    ]) {
      const out = path.join(tmp, 'linked');
      times[k].push(timed(...prepare(ck, 'bfloat16', out)).s);
      const files = readdirSync(out).filter((f) => f.endsWith('.safetensors'));
      if (!files.every((f) => statSync(path.join(out, f)).nlink > 1)) {
        console.error('prepare.bench: untransformed shards were not hard-linked');
        process.exit(1);
      }
      remove(out);
    }
  }
  const growth = median(times.large) / median(times.small);
  console.log(
    `\nuntransformed shards (bf16 → bf16, hard links): ${(small.bytes / 1e9).toFixed(2)} GB in median ${median(times.small).toFixed(2)} s, ${(dense.bytes / 1e9).toFixed(2)} GB in ${median(times.large).toFixed(2)} s`,
  );
  console.log(
    `  ${(dense.bytes / small.bytes).toFixed(0)}× the bytes takes ${growth.toFixed(2)}× the time (target ≤ ${TARGET.linkGrowth}) ${growth <= TARGET.linkGrowth ? 'OK' : 'MISSED'}`,
  );
  if (growth > TARGET.linkGrowth) ok = false;
  summary.push(`links: ${(dense.bytes / small.bytes).toFixed(0)}× the bytes in ${growth.toFixed(2)}× the time`);
  results.links = { bytesFactor: dense.bytes / small.bytes, timeFactor: growth, verdict: growth <= TARGET.linkGrowth ? 'OK' : 'MISSED' };
}
if (ONLY.includes('shards')) {
  const r = await shards(dense, { prepare, timed, remove, tmp, rounds: ROUNDS, env });
  summary.push(...r.summary);
  results.shards = r.figures;
  if (!r.figures.identical) ok = false;
}
results.loadAtEnd = os.loadavg();
results.ok = ok;
writeSummary(resultsFile, results);
console.log(`\nsummary (also in ${path.relative(root, resultsFile)}):\n  ${summary.join('\n  ')}`);
process.exit(ok ? 0 : 1);
