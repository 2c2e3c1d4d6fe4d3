/**
 * Issue #28 point 6: prepare's lock (core/src/prepare/lock.ts). A stale lock is taken over
 * atomically — 40 trials of four concurrent takeovers, never two holders at once (before, 10
 * of 40 trials had two: each read the dead pid and removed the lock by name, possibly the
 * other's fresh one) — and a bare pid is not trusted: a live process that is not the holder
 * (started after the lock was written, or with another start time) does not block forever.
 */
import { spawn } from 'node:child_process';
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { holderAlive, lockOutput, processStartTime } from '../../src/prepare/lock';

const tmp = tempDirs('ws-lock-');

/**
 * A script that waits for the wall clock to reach argv[3] (so the four processes start their
 * takeover together), takes the lock of argv[2], and logs `+pid` / `-pid` around 30 ms held.
 */
async function lockScript(dir: string): Promise<string> {
  const entry = path.join(dir, 'take.ts');
  fs.writeFileSync(
    entry,
    `import fs from 'node:fs';
import { lockOutput } from ${JSON.stringify(path.resolve(__dirname, '../../src/prepare/lock'))};
const [out, at, log] = process.argv.slice(2);
setTimeout(() => lockOutput(out).then(async (l) => {
  fs.appendFileSync(log, '+' + process.pid + '\\n');
  await new Promise((r) => setTimeout(r, 30));
  fs.appendFileSync(log, '-' + process.pid + '\\n');
  await l.release();
}, () => undefined), Number(at) - Date.now());
`,
  );
  const outfile = path.join(dir, 'take.js');
  await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', outfile, logLevel: 'error' });
  return outfile;
}

it('40 trials of four processes taking over one stale lock at once: never two holders', async () => {
  const dir = tmp();
  const script = await lockScript(dir);
  let worst = 0;
  for (let trial = 0; trial < 40; trial++) {
    const out = path.join(dir, `P${trial}`);
    const log = path.join(dir, `log${trial}`);
    fs.writeFileSync(log, '');
    // A pid above the kernel's pid_max (4194304) never names a running process.
    fs.writeFileSync(`${out}.lock`, '4194305\n');
    const at = String(Date.now() + 250);
    const kids = Array.from({ length: 4 }, () => spawn(process.execPath, [script, out, at, log], { stdio: 'ignore' }));
    await Promise.all(kids.map((k) => new Promise((r) => k.once('close', r))));
    let holders = 0;
    const events = fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
    for (const e of events) {
      holders += e.startsWith('+') ? 1 : -1;
      worst = Math.max(worst, holders);
    }
    expect(events.length, `trial ${trial}`).toBeGreaterThanOrEqual(2);
    expect(fs.existsSync(`${out}.lock`)).toBe(false);
    expect(fs.existsSync(`${out}.lock.takeover`)).toBe(false);
  }
  expect(worst).toBe(1);
}, 300_000);

it('a live process is the holder only with the recorded start time, or (bare pid) when it started before the lock', async () => {
  const child = spawn('sleep', ['30']);
  try {
    await new Promise((r) => child.once('spawn', r));
    const pid = child.pid!;
    const start = processStartTime(pid)!;
    expect(start).toMatch(/^\d+$/);
    expect(holderAlive(`${pid} ${start} abc`, Date.now())).toBe(true);
    expect(holderAlive(`${pid} ${Number(start) - 1} abc`, Date.now())).toBe(false);
    // An old-style bare pid: written an hour before this process started, it is not its lock.
    expect(holderAlive(`${pid}\n`, Date.now() - 3_600_000)).toBe(false);
    expect(holderAlive(`${pid}\n`, Date.now())).toBe(true);

    const out = path.join(tmp(), 'P');
    fs.writeFileSync(`${out}.lock`, `${pid}\n`);
    const hourAgo = new Date(Date.now() - 3_600_000);
    fs.utimesSync(`${out}.lock`, hourAgo, hourAgo);
    const lock = await lockOutput(out);
    expect(fs.readFileSync(`${out}.lock`, 'utf8')).toMatch(new RegExp(`^${process.pid} \\d+ [0-9a-f]{16}\\n$`));
    await expect(lockOutput(out)).rejects.toThrow(`another prepare (pid ${process.pid}) is writing this folder`);
    await lock.release();
    expect(fs.existsSync(`${out}.lock`)).toBe(false);
  } finally {
    child.kill();
  }
});
