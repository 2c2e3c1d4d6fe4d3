// Long fuzz campaign: runs the seeded fuzz tests (core/test/fuzz/fuzz-*.test.ts) with a larger
// budget and a fresh seed, then prints cases run / failures per campaign and in total.
//   node scripts/fuzz.mjs [--scale N (default 20)] [--seed S (default: time-based)]
// Reproduce a failure with the printed seed: node scripts/fuzz.mjs --seed S --scale N
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
};
const scale = Number(opt('scale', '20'));
const seed = Number(opt('seed', String(Date.now() % 2 ** 31)));
const reportDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ws-fuzz-'));
const report = path.join(reportDir, 'report.jsonl');
fs.writeFileSync(report, '');

console.log(`weight-spec fuzz: scale ${scale}, seed ${seed}`);
const t0 = Date.now();
const vitest = path.join('node_modules', 'vitest', 'vitest.mjs');
const run = spawnSync(process.execPath, [vitest, 'run', 'core/test/fuzz/fuzz-', '--testTimeout', '3600000', '--reporter', 'dot'], {
  stdio: ['ignore', 'inherit', 'inherit'],
  env: { ...process.env, FUZZ_SCALE: String(scale), FUZZ_SEED: String(seed), FUZZ_REPORT: report },
});

const reportText = fs.readFileSync(report, 'utf8');
fs.rmSync(reportDir, { recursive: true, force: true });
const rows = reportText
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));
let cases = 0;
let failures = 0;
for (const r of rows) {
  cases += r.cases;
  failures += r.failures;
  console.log(`  ${r.name.padEnd(28)} ${String(r.cases).padStart(9)} cases  ${r.failures} failures`);
}
// A test that failed outside a campaign (an assertion in a fixed case) also counts.
const testFailed = run.status !== 0 && failures === 0 ? 1 : 0;
console.log(
  `fuzz: ${cases} cases run, ${failures + testFailed} failures (seed ${seed}, scale ${scale}, ${((Date.now() - t0) / 1000).toFixed(1)} s)`,
);
process.exit(run.status === 0 && failures === 0 ? 0 : 1);
