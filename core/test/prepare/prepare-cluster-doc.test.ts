/**
 * docs/PREPARE-CLUSTER.md cannot drift: its Slurm scripts and submission, its Kubernetes
 * Indexed Job and finalize Job, and its Ray program are taken from the page and run here (a dry
 * run: no cluster) against the llama fixture, only the paths substituted. `sbatch` is a stand-in
 * that runs an array script once per index with the variables Slurm sets, `ray` a stand-in module
 * whose tasks are threads, `weight-spec` is dist/cli.js. Each result must be byte-identical to a
 * single-host prepare. Run `npm run build` first.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-cluster-doc-');
const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs', 'PREPARE-CLUSTER.md'), 'utf8');
const blocks = [...doc.matchAll(/^```(\w+)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1]!, text: m[2]! }));
const CKPT = path.join(fixturesDir(), 'llama');
/** The paths the page uses, replaced longest first. */
const DOC_OUTS = ['/shared/prepared/DeepSeek-V3-bf16', '/models/DeepSeek-V3-bf16'];
const DOC_CKPTS = ['/shared/models/DeepSeek-V3', '/models/DeepSeek-V3'];

const FAKE_SBATCH = `
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const args = process.argv.slice(2);
const script = args[args.length - 1];
const text = fs.readFileSync(script, 'utf8');
const dep = args.find((a) => a.startsWith('--dependency='));
if (dep && dep !== '--dependency=afterok:4242') { console.error('sbatch: unknown dependency ' + dep); process.exit(1); }
const m = /^#SBATCH --array=(\\d+)-(\\d+)$/m.exec(text);
const ids = m ? Array.from({ length: Number(m[2]) - Number(m[1]) + 1 }, (_, k) => Number(m[1]) + k) : [undefined];
const count = ids.length;
Promise.all(ids.map((id) => new Promise((resolve) => {
  const env = { ...process.env, ...(id === undefined ? {} : { SLURM_ARRAY_TASK_ID: String(id), SLURM_ARRAY_TASK_COUNT: String(count) }) };
  spawn('bash', [script], { env, stdio: ['ignore', 2, 2] }).on('close', resolve);
}))).then((codes) => {
  if (codes.some((c) => c !== 0)) { console.error('sbatch: a task failed'); process.exit(1); }
  console.log(args.includes('--parsable') ? '4242' : 'Submitted batch job 4242');
});
`;

const FAKE_RAY = `
from concurrent.futures import ThreadPoolExecutor
_pool = ThreadPoolExecutor(max_workers=16)
def init(*a, **k):
    pass
def remote(*a, **k):
    def wrap(f):
        class Remote:
            def remote(self, *args, **kw):
                return _pool.submit(f, *args, **kw)
        return Remote()
    return wrap
def get(x):
    return [f.result() for f in x] if isinstance(x, list) else x.result()
`;

let single = '';
let bin = '';
const env = () => ({
  ...process.env,
  PATH: `${bin}:${process.env.PATH}`,
  WEIGHT_SPEC_PROGRESS: 'off',
  SOURCE_DATE_EPOCH: '1700000000',
});

/** Replaces the page's paths with the test's. */
function substitute(text: string, out: string): string {
  let s = text;
  for (const p of DOC_OUTS) s = s.split(p).join(out);
  for (const p of DOC_CKPTS) s = s.split(p).join(CKPT);
  return s;
}

function run(
  cmd: string,
  args: string[],
  o: { cwd?: string; extra?: Record<string, string> } = {},
): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: o.cwd, env: { ...env(), ...o.extra } });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code: code ?? -1, out }));
  });
}

function expectLikeSingle(out: string): void {
  const names = fs.readdirSync(single).sort();
  expect(fs.readdirSync(out).sort()).toEqual(names);
  for (const n of names) {
    const a = path.join(single, n);
    const b = path.join(out, n);
    if (fs.lstatSync(a).isSymbolicLink()) expect(fs.readlinkSync(b), n).toBe(fs.readlinkSync(a));
    else expect(fs.readFileSync(b).equals(fs.readFileSync(a)), n).toBe(true);
  }
  // the staging and records folders are gone
  expect(fs.readdirSync(path.dirname(out)).filter((n) => n.startsWith(`${path.basename(out)}.`))).toEqual([]);
}

beforeAll(() => {
  const dir = tmp();
  bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(
    path.join(bin, 'weight-spec'),
    `#!/bin/sh\nexec "${process.execPath}" "${path.join(REPO_ROOT, 'dist', 'cli.js')}" "$@"\n`,
    {
      mode: 0o755,
    },
  );
  fs.writeFileSync(path.join(bin, 'sbatch'), `#!${process.execPath}\n${FAKE_SBATCH}`, { mode: 0o755 });
  single = path.join(dir, 'single');
  const r = spawnSync(path.join(bin, 'weight-spec'), ['prepare', '--checkpoint', CKPT, '--dtype', 'bfloat16', '--out', single], {
    env: env(),
    encoding: 'utf8',
  });
  expect(r.status, r.stderr).toBe(0);
});

describe('docs/PREPARE-CLUSTER.md, run as written', () => {
  it('Slurm: the array script, the finalize script and their submission', async () => {
    const scripts = blocks.filter((b) => b.lang === 'bash' && b.text.startsWith('#!/bin/bash'));
    expect(scripts).toHaveLength(2);
    expect(scripts[0]!.text).toMatch(/--shard "\$SLURM_ARRAY_TASK_ID\/\$SLURM_ARRAY_TASK_COUNT"/);
    expect(scripts[1]!.text).toMatch(/--finalize\n/);
    const submit = blocks.find((b) => b.lang === 'bash' && b.text.includes('sbatch --parsable'));
    expect(submit).toBeDefined();
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'prepare-shards.sbatch'), scripts[0]!.text);
    fs.writeFileSync(path.join(dir, 'prepare-finalize.sbatch'), scripts[1]!.text);
    const out = path.join(dir, 'out');
    // the scripts take their paths from CKPT/OUT; the submission runs verbatim
    const r = await run('bash', ['-euo', 'pipefail', '-c', submit!.text], { cwd: dir, extra: { CKPT, OUT: out } });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/shard 7\/8: /);
    expectLikeSingle(out);
  }, 180_000);

  it('Kubernetes: the Indexed Job once per completion index, then the finalize Job', async () => {
    const yamls = blocks.filter((b) => b.lang === 'yaml');
    expect(yamls).toHaveLength(2);
    const [shards, finalize] = yamls.map((b) => b.text);
    expect(shards).toMatch(/completionMode: Indexed/);
    const completions = Number(/^\s+completions: (\d+)$/m.exec(shards!)![1]);
    const argOf = (y: string) => /^\s+args:\n\s+- (.+)$/m.exec(y)![1]!;
    expect(argOf(shards!)).toContain(`--shard "$JOB_COMPLETION_INDEX/${completions}"`);
    expect(argOf(finalize!)).toMatch(/--finalize$/);
    const out = path.join(tmp(), 'out');
    const pods = await Promise.all(
      Array.from({ length: completions }, (_, i) =>
        run('sh', ['-c', substitute(argOf(shards!), out)], { extra: { JOB_COMPLETION_INDEX: String(i) } }),
      ),
    );
    for (const p of pods) expect(p.code, p.out).toBe(0);
    const fin = await run('sh', ['-c', substitute(argOf(finalize!), out)]);
    expect(fin.code, fin.out).toBe(0);
    expectLikeSingle(out);
  }, 180_000);

  it('Ray: the program with a stand-in ray module', async () => {
    const py = blocks.filter((b) => b.lang === 'python');
    expect(py).toHaveLength(1);
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'ray.py'), FAKE_RAY);
    const out = path.join(dir, 'out');
    fs.writeFileSync(path.join(dir, 'prepare_ray.py'), substitute(py[0]!.text, out));
    const r = await run('/usr/bin/python3', [path.join(dir, 'prepare_ray.py')], { cwd: dir, extra: { PYTHONPATH: dir } });
    expect(r.code, r.out).toBe(0);
    expectLikeSingle(out);
  }, 180_000);
});
