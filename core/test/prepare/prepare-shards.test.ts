/**
 * `prepare --shard i/N` + `prepare --finalize` (issue 35, part 2): the shards run as concurrent
 * `dist/cli.js` processes into one output, and the result is compared byte for byte — every
 * file, the manifest included (SOURCE_DATE_EPOCH pins its date) — with a single-host prepare of
 * the same plan, for N = 1, 2, 3 and 7 on the MoE (mixtral), FP8 (deepseek_v3) and dense (llama)
 * fixtures. Run `npm run build` first.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { assignShards, parseShard } from '../../src/prepare/shards';
import type { Task } from '../../src/prepare/types';
import { cliInProcess } from '../../../test/support/cli';
import { REPO_ROOT, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-shards-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const ENV = { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', SOURCE_DATE_EPOCH: '1700000000' };

/** Runs `node dist/cli.js <args>` as a process. */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: ENV });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  expect(r.stderr, args.join(' ')).toBe('');
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

/** Every entry of `dir`: name → bytes (a symlink → its target). */
function contents(dir: string): Map<string, string | Buffer> {
  const out = new Map<string, string | Buffer>();
  for (const n of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, n);
    const st = fs.lstatSync(p);
    out.set(n, st.isSymbolicLink() ? `-> ${fs.readlinkSync(p)}` : fs.readFileSync(p));
  }
  return out;
}

function expectIdentical(a: string, b: string): void {
  const ca = contents(a);
  const cb = contents(b);
  expect([...cb.keys()]).toEqual([...ca.keys()]);
  for (const [n, bytes] of ca) expect(Buffer.compare(Buffer.from(cb.get(n)!), Buffer.from(bytes)), n).toBe(0);
}

const FAMILIES = [
  { name: 'mixtral', kind: 'MoE' },
  { name: 'deepseek_v3', kind: 'FP8 (MoE)' },
  { name: 'llama', kind: 'dense' },
];

describe('prepare --shard i/N, --finalize: byte-identical to one host', () => {
  for (const fam of FAMILIES) {
    it(`${fam.name} (${fam.kind}): N = 1, 2, 3, 7 as concurrent processes`, async () => {
      const ckpt = path.join(fixturesDir(), fam.name);
      const dir = tmp();
      const base = ['prepare', '--checkpoint', ckpt, '--dtype', 'float16'];
      const single = path.join(dir, 'single');
      await ok([...base, '--out', single]);
      expect(fs.existsSync(path.join(single, '.checkpoint_prepared'))).toBe(true);
      for (const n of [1, 2, 3, 7]) {
        const out = path.join(dir, `n${n}`);
        const runs = await Promise.all(Array.from({ length: n }, (_, i) => cli([...base, '--out', out, '--shard', `${i}/${n}`])));
        for (const r of runs) expect(r.code, r.stderr).toBe(0);
        const fin = await ok([...base, '--out', out, '--finalize']);
        expect(fin.trim().split('\n').pop()).toBe(out);
        expectIdentical(single, out);
      }
      // nothing is left beside the outputs: no staging folder, records or lock
      expect(fs.readdirSync(dir).sort()).toEqual(['n1', 'n2', 'n3', 'n7', 'single']);
    }, 240_000);
  }
});

describe('prepare --shard: idempotent, duplicate hosts, missing tasks', () => {
  it('re-running a shard skips its recorded tasks; the same shard twice at once does not corrupt', async () => {
    const ckpt = path.join(fixturesDir(), 'mixtral');
    const dir = tmp();
    const base = ['prepare', '--checkpoint', ckpt, '--dtype', 'float16'];
    const single = path.join(dir, 'single');
    await ok([...base, '--out', single]);
    const out = path.join(dir, 'out');
    // shard 0 of 2, run twice at once (two hosts given the same index)
    const twice = await Promise.all([0, 1].map(() => cli([...base, '--out', out, '--shard', '0/2'])));
    for (const r of twice) expect(r.code, r.stderr).toBe(0);
    // run again: everything of shard 0 is present and recorded, nothing is redone
    expect(await ok([...base, '--out', out, '--shard', '0/2'])).toMatch(/shard 0\/2: 0 of 2 tasks written, 2 already present/);
    // finalize refuses, naming every missing task and its shard
    const refused = await cli([...base, '--out', out, '--finalize']);
    expect(refused.code).toBe(1);
    const line = refused.stderr.trim();
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toMatch(/cannot finalize, 3 of 5 tasks missing: /);
    for (const id of ['experts:layer-1', 'dense:base-0001.safetensors', 'dense:base-0002.safetensors']) expect(line).toContain(`${id} (`);
    expect(line).toContain('shard 1/2');
    expect(fs.existsSync(out)).toBe(false);
    await ok([...base, '--out', out, '--shard', '1/2']);
    await ok([...base, '--out', out, '--finalize']);
    expectIdentical(single, out);
    // a finished output: a shard and a finalize are no-ops
    expect(await ok([...base, '--out', out, '--shard', '1/2'])).toMatch(/already prepared/);
    expect(await ok([...base, '--out', out, '--finalize'])).toMatch(/up to date/);
  }, 120_000);

  it('a file present without a record (a killed run) is rewritten, and a damaged record is not trusted', async () => {
    const ckpt = path.join(fixturesDir(), 'llama');
    const dir = tmp();
    const base = ['prepare', '--checkpoint', ckpt, '--dtype', 'float16'];
    const single = path.join(dir, 'single');
    await ok([...base, '--out', single]);
    const out = path.join(dir, 'out');
    const staging = (await ok([...base, '--out', out, '--shard', '0/1'])).trim().split('\n').pop()!;
    const records = `${staging}.records`;
    // truncate a task file: its recorded size no longer matches, so the task is redone
    const victim = fs.readdirSync(staging).find((n) => n.endsWith('.safetensors'))!;
    fs.truncateSync(path.join(staging, victim), 10);
    expect(await ok([...base, '--out', out, '--shard', '0/1'])).toMatch(/1 of 2 tasks written, 1 already present/);
    // an entry naming another task's file (present, with that file's size; its own fingerprint
    // kept) counts for nothing: finalize would otherwise commit the wrong bytes under its name;
    // and neither does a record of the wrong shape
    const recFile = path.join(records, 'shard-0-of-1.json');
    const rec = JSON.parse(fs.readFileSync(recFile, 'utf8'));
    fs.writeFileSync(
      recFile,
      JSON.stringify({ ...rec, tasks: [{ ...rec.tasks[0], file: rec.tasks[1].file, size: rec.tasks[1].size }, ...rec.tasks.slice(1)] }),
    );
    expect((await cli([...base, '--out', out, '--finalize'])).stderr).toMatch(/1 of 2 tasks missing/);
    fs.writeFileSync(recFile, JSON.stringify({ ...rec, tasks: rec.tasks.map((t: { size: number }) => ({ ...t, size: String(t.size) })) }));
    expect((await cli([...base, '--out', out, '--finalize'])).stderr).toMatch(/2 of 2 tasks missing/);
    // a record that does not parse counts for nothing
    fs.writeFileSync(path.join(records, 'shard-0-of-1.json'), '{');
    expect((await cli([...base, '--out', out, '--finalize'])).stderr).toMatch(/2 of 2 tasks missing/);
    expect(await ok([...base, '--out', out, '--shard', '0/1'])).toMatch(/2 of 2 tasks written/);
    await ok([...base, '--out', out, '--finalize']);
    expectIdentical(single, out);
  }, 120_000);
});

describe('prepare --shard: usage errors (exit 2, one-line message)', () => {
  const ckpt = path.join(fixturesDir(), 'llama');
  for (const [args, msg] of [
    [['--shard', '2/2'], /--shard 2\/2: i must be below N/],
    [['--shard', '0/0'], /--shard 0\/0: N must be at least 1/],
    [['--shard', '1'], /--shard must be i\/N/],
    [['--shard', '-1/2'], /--shard must be i\/N/],
    [['--shard', '0/2', '--finalize'], /--shard and --finalize are separate steps/],
  ] as const) {
    it(args.join(' '), async () => {
      const r = await cliInProcess(['prepare', '--checkpoint', ckpt, '--dtype', 'float16', '--out', path.join(tmp(), 'o'), ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr.split('\n')[0]).toMatch(msg);
    });
  }
});

describe('assignShards', () => {
  const task = (id: string, outBytes: number) => ({ id, outBytes }) as Task;
  it('is deterministic, balances bytes (LPT) and ignores the tasks’ order', () => {
    const tasks = [task('a', 70), task('b', 60), task('c', 50), task('d', 40), task('e', 30), task('f', 30)];
    const one = assignShards(tasks, 3);
    expect(assignShards([...tasks].reverse(), 3)).toEqual(one);
    const load = [0, 0, 0];
    for (const t of tasks) load[one.get(t.id)!]! += t.outBytes;
    expect(load).toEqual([100, 90, 90]);
    expect(parseShard(' 3/7 ')).toEqual({ i: 3, n: 7 });
  });
});
