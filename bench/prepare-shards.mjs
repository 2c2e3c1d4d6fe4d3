// The shard scenario of the prepare bench (prepare.bench.mjs, issue 35): `prepare --shard i/N` as
// N concurrent processes + `--finalize`, against one process (`--shard 0/1` + `--finalize`), each
// sharded output compared byte for byte with a single-host prepare.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const sync = () => spawnSync('sync');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;

/** Runs the commands at once after a `sync`; seconds until the last ends. */
async function timedTogether(cmds, shardEnv) {
  sync();
  const t0 = process.hrtime.bigint();
  const codes = await Promise.all(
    cmds.map(
      ([cmd, args]) =>
        new Promise((resolve) => {
          const p = spawn(cmd, args, { env: shardEnv, stdio: ['ignore', 'ignore', 'pipe'] });
          let err = '';
          p.stderr.on('data', (d) => (err += d));
          p.on('close', (code) => resolve({ code, err, args }));
        }),
    ),
  );
  const bad = codes.find((c) => c.code !== 0);
  if (bad) {
    console.error(`prepare.bench: ${bad.args.join(' ')} failed (${bad.code}): ${bad.err.trim()}`);
    process.exit(1);
  }
  return Number(process.hrtime.bigint() - t0) / 1e9;
}
/** Every file of `a` and `b` byte for byte (the same names). */
function sameFiles(a, b) {
  const names = readdirSync(a).sort();
  if (readdirSync(b).sort().join() !== names.join()) return false;
  return names.every((n) => readFileSync(path.join(a, n)).equals(readFileSync(path.join(b, n))));
}

/**
 * N concurrent shard processes + finalize against one, and the identity of their outputs with one
 * host's. `b` is the bench's: `prepare(ck, dtype, out)` (its command), `timed`, `remove`, `tmp`,
 * `rounds`, `env`. Prints its figures; returns the summary lines and the machine-readable figures.
 */
export async function shards(ck, b) {
  const { prepare, timed, remove, tmp } = b;
  const summary = [];
  const shardEnv = { ...b.env, SOURCE_DATE_EPOCH: '1700000000' };
  const Ns = (process.env.WS_PREPARE_BENCH_SHARDS ?? '2,4').split(',').map(Number);
  const rounds = Math.min(b.rounds, 3);
  const single = path.join(tmp, 'single');
  const first = spawnSync(...prepare(ck, 'float16', single), { env: shardEnv, encoding: 'utf8' });
  if (first.status !== 0) {
    console.error(`prepare.bench: the single-host prepare failed (${first.status}): ${first.stderr.trim()}`);
    process.exit(1);
  }
  const sharded = async (n, out) => {
    const [cmd, args] = prepare(ck, 'float16', out);
    const t = await timedTogether(
      Array.from({ length: n }, (_, i) => [cmd, [...args, '--shard', `${i}/${n}`]]),
      shardEnv,
    );
    const f = timed(cmd, [...args, '--finalize'], shardEnv).s;
    return t + f;
  };
  const times = new Map([1, ...Ns].map((n) => [n, []]));
  let identical = true;
  for (let r = 0; r < rounds; r++) {
    for (const n of times.keys()) {
      const out = path.join(tmp, `sharded-${n}`);
      times.get(n).push(await sharded(n, out));
      if (r === 0) identical &&= sameFiles(single, out);
      remove(out);
    }
  }
  remove(single);
  const cores = os.availableParallelism?.() ?? os.cpus().length;
  console.log(`\nsharded prepare (--shard i/N as N concurrent processes, then --finalize), ${(ck.bytes / 1e9).toFixed(2)} GB bf16 → f16:`);
  const one = times.get(1);
  const figures = { processes: [] };
  console.log(`  1 process:    median ${median(one).toFixed(2)} s (runs ${one.map((x) => x.toFixed(2)).join(', ')} s)`);
  for (const n of Ns) {
    const sp = times.get(n).map((t, i) => one[i] / t);
    console.log(
      `  ${n} processes:  median ${median(times.get(n)).toFixed(2)} s, speed-up ${median(sp).toFixed(2)}× over 1 (rounds ${spread(sp)})`,
    );
    summary.push(`shards: ${n} processes ${median(sp).toFixed(2)}× one (sanity figure, ${cores} cores, one disk)`);
    figures.processes.push({ n, speedup: median(sp), min: Math.min(...sp), max: Math.max(...sp) });
  }
  console.log(
    `  sanity figure only: the processes share ${cores} cores and one disk here (each already runs ${cores} worker threads); ≈ 1× or below is expected here (a shard also hashes what it wrote); it is not what a cluster of hosts gains`,
  );
  console.log(`  byte-identical to a single-host prepare (every file, the manifest included): ${identical ? 'OK' : 'MISSED'}`);
  summary.push(`shards: output byte-identical to one host: ${identical ? 'yes' : 'NO'}`);
  figures.identical = identical;
  return { summary, figures };
}
