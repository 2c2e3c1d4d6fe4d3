// `npm test`'s wrapper: runs the given command (the whole suite, `npm run test:all`) and ends
// with its wall time, so a slower suite is seen at once. Exit code: the command's.
import { spawnSync } from 'node:child_process';

const [cmd, ...args] = process.argv.slice(2);
const t0 = Date.now();
const r = spawnSync(cmd, args, { stdio: 'inherit' });
const s = Math.round((Date.now() - t0) / 1000);
console.log(`\nnpm test: ${r.status === 0 ? 'passed' : 'FAILED'} in ${Math.floor(s / 60)} min ${s % 60} s (${s} s wall)`);
process.exit(r.status ?? 1);
