// Runs every bench/*.bench.mjs (or those whose name contains an argument: `node bench/run.mjs prepare`)
// one after another as separate processes, and exits 1 when any of them fails.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error(`bench: no bench/*.bench.mjs matches ${filters.join(', ') || '(none present)'}`);
  process.exit(1);
}
const results = [];
for (const f of files) {
  console.log(`\n=== ${f} ===`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [path.join(dir, f)], { stdio: 'inherit' });
  results.push({ f, ok: r.status === 0, s: (Date.now() - t0) / 1000 });
}
console.log('\n=== summary ===');
for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.f} (${r.s.toFixed(1)} s)`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
