/**
 * Issue 15.6: Ctrl-C and kill. A real signal to a real `dist/cli.js` process, at several
 * points of a prepare (lock taken, temp folder filling, later): the process removes exactly
 * its own temporaries and lock, prints one line saying the output was not written (or was
 * already complete), and exits 130 (SIGINT) / 143 (SIGTERM). Temporaries of a run killed
 * with SIGKILL (which no handler sees) are removed by the next run, which says so. Export
 * and compile register the same way.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { leftovers as leftoversInTemp } from '../../../test/support/temp-guard';
import { t, writeCheckpoint } from '../support/prepare-support';

const tmp = tempDirs('ws-interrupt-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Spawns the CLI; `when` decides (polled every 5 ms) when to send `sig`. */
function runAndSignal(args: string[], sig: NodeJS.Signals | undefined, when: () => boolean): Promise<Run & { sent: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
    let stderr = '';
    let sent = false;
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setInterval(() => {
      if (sig && !sent && when()) {
        sent = true;
        child.kill(sig);
      }
    }, 5);
    child.on('close', (code, signal) => {
      clearInterval(timer);
      resolve({ code, signal, stderr, sent });
    });
  });
}

/** Our temporaries and locks in `dir` (names prepare, export and compile give them). */
function leftovers(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => /\.(tmp|old)-\d+-[0-9a-f]{8}$/.test(n) || n.endsWith('.lock'));
}

/** A bf16 checkpoint of ~`mb` MB in 4 shards: prepare to float32 takes long enough to interrupt. */
async function bigCheckpoint(dir: string, mb: number): Promise<void> {
  const per = Math.floor((mb * 2 ** 20) / 2 / 4 / 1024);
  const shards = [0, 1, 2, 3].map((s) => [
    t(`model.layers.${s}.mlp.up_proj.weight`, [per, 1024], s + 1),
    t(`model.layers.${s}.input_layernorm.weight`, [1024], s + 10),
  ]);
  await writeCheckpoint(dir, shards, { model_type: 'llama' });
}

describe('interrupting prepare', () => {
  it('at several points, SIGINT and SIGTERM leave no temporary and no lock, print one line and exit 130 / 143', async () => {
    const root = tmp();
    const ckpt = path.join(root, 'ckpt');
    await bigCheckpoint(ckpt, 160);
    const points: { name: string; sig: NodeJS.Signals; when: (parent: string) => boolean }[] = [
      { name: 'lock taken', sig: 'SIGINT', when: (p) => fs.readdirSync(p).some((n) => n.endsWith('.lock')) },
      { name: 'temp folder made', sig: 'SIGTERM', when: (p) => fs.readdirSync(p).some((n) => /^prepared\.tmp-\d+-/.test(n)) },
      {
        name: 'temp folder holding data',
        sig: 'SIGINT',
        when: (p) => {
          const d = fs.readdirSync(p).find((n) => /^prepared\.tmp-\d+-/.test(n));
          if (!d) return false;
          return fs.readdirSync(path.join(p, d)).some((f) => fs.statSync(path.join(p, d, f)).size > 8 << 20);
        },
      },
    ];
    let interrupted = 0;
    for (const [i, pt] of points.entries()) {
      const parent = path.join(root, `out-${i}`);
      fs.mkdirSync(parent);
      const out = path.join(parent, 'prepared');
      const r = await runAndSignal(['prepare', '--checkpoint', ckpt, '--dtype', 'float32', '--out', out], pt.sig, () => pt.when(parent));
      expect(leftovers(parent), pt.name).toEqual([]);
      if (r.code === 0) continue; // finished before the point was reached: nothing to judge
      interrupted++;
      expect(r.code, `${pt.name}: ${r.stderr}`).toBe(pt.sig === 'SIGINT' ? 130 : 143);
      const lines = r.stderr.split('\n').filter((l) => l !== '');
      expect(lines, pt.name).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^weight-spec: interrupted \\(${pt.sig}\\): (nothing was written to ${out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}|.* was already complete)`,
        ),
      );
      if (/nothing was written/.test(lines[0]!)) expect(fs.existsSync(out)).toBe(false);
    }
    expect(interrupted, 'at least two of the points were reached before prepare finished').toBeGreaterThanOrEqual(2);
  });

  it('temporaries of a run killed with SIGKILL are removed by the next run, which says so', async () => {
    const root = tmp();
    const ckpt = path.join(root, 'ckpt');
    await bigCheckpoint(ckpt, 96);
    const out = path.join(root, 'prepared');
    const killed = await runAndSignal(['prepare', '--checkpoint', ckpt, '--dtype', 'float32', '--out', out], 'SIGKILL', () =>
      fs.readdirSync(root).some((n) => /^prepared\.tmp-\d+-/.test(n)),
    );
    expect(killed.sent).toBe(true);
    expect(killed.signal).toBe('SIGKILL');
    expect(fs.readdirSync(root).some((n) => /^prepared\.tmp-\d+-/.test(n))).toBe(true); // left behind, as SIGKILL does
    const next = await runAndSignal(['prepare', '--checkpoint', ckpt, '--dtype', 'float32', '--out', out], undefined, () => false);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(/weight-spec: removed 1 temporary of interrupted runs in .*: prepared\.tmp-\d+-[0-9a-f]{8}/);
    expect(leftovers(root)).toEqual([]);
  });
});

describe('a held prepare (the e2e Cancel point)', () => {
  it('holds only the checkpoint its failpoint names; a signal there leaves nothing complete and no temporary', async () => {
    const root = tmp();
    const held = path.join(root, 'big');
    const other = path.join(root, 'other');
    await bigCheckpoint(held, 8);
    await bigCheckpoint(other, 8);
    const env = { WEIGHT_SPEC_FAILPOINT: `prepare-before-commit:${held}` };
    // another checkpoint goes through: the scope is honoured, not a global pause
    const free = await runToFailpoint(
      ['prepare', '--checkpoint', other, '--dtype', 'float32', '--out', path.join(root, 'o1')],
      'prepare-before-commit',
      'SIGTERM',
      env,
    );
    expect([free.reached, free.code], free.stderr).toEqual([false, 0]);
    const out = path.join(root, 'o2');
    const r = await runToFailpoint(
      ['prepare', '--checkpoint', held, '--dtype', 'float32', '--out', out],
      'prepare-before-commit',
      'SIGTERM',
      env,
    );
    expect(r.reached, r.stderr).toBe(true);
    expect(r.code).toBe(143);
    expect(fs.existsSync(path.join(out, '.checkpoint_prepared'))).toBe(false);
    expect(leftovers(root)).toEqual([]);
  });
});

/** Spawns the CLI with a failpoint and sends `sig` once the process reports it is there. */
function runToFailpoint(
  args: string[],
  point: string,
  sig: NodeJS.Signals,
  env: NodeJS.ProcessEnv = {},
): Promise<Run & { reached: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off', WEIGHT_SPEC_FAILPOINT: point, ...env },
    });
    let stderr = '';
    let reached = false;
    child.stderr.on('data', (d) => {
      stderr += d;
      if (!reached && stderr.includes(`failpoint ${point}\n`)) {
        reached = true;
        child.kill(sig);
      }
    });
    child.on('close', (code, signal) => resolve({ code, signal, reached, stderr: stderr.replace(`failpoint ${point}\n`, '') }));
  });
}

describeFixtures('interrupting export and compile', () => {
  it('export: SIGINT while its files are being written exits 130 with one line, and the next export completes', async () => {
    const dir = tmp();
    const out = path.join(dir, 'e');
    const r = await runToFailpoint(['export', '--config', path.join(fixturesDir(), 'llama'), '--out', out], 'export-writing', 'SIGINT');
    expect(r.reached).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr.split('\n').filter((l) => l !== '')).toEqual([
      `weight-spec: interrupted (SIGINT): ${out} holds an unfinished export (its export-report.json says "writing"); run the export again`,
    ]);
    expect(leftovers(out)).toEqual([]);
    const again = spawnSync(process.execPath, [CLI, 'export', '--config', path.join(fixturesDir(), 'llama'), '--out', out], {
      encoding: 'utf8',
    });
    expect(again.status, again.stderr).toBe(0);
  });

  it('export --onnx: SIGINT while the MXFP4 experts sit dequantized in TMPDIR removes them and exits 130', async () => {
    // GPT-OSS: the legacy graph holds the experts dequantized, so export writes them to a scratch
    // file in TMPDIR first (mxfp4-sources.ts); an interrupt must not leave it there.
    const dir = tmp();
    const scratch = tmp('ws-interrupt-tmpdir-');
    const src = path.join(fixturesDir(), 'gpt_oss_full');
    const args = ['export', '--onnx', path.join(src, 'legacy.onnx'), '--checkpoint', src, '--out', path.join(dir, 'e')];
    const r = await runToFailpoint(args, 'export-mxfp4-dequantized', 'SIGINT', { TMPDIR: scratch });
    expect(r.reached).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr.split('\n').filter((l) => l !== '')).toHaveLength(1);
    expect(r.stderr).toMatch(/^weight-spec: interrupted \(SIGINT\)/);
    expect(leftoversInTemp(scratch)).toEqual([]);
  });

  it('compile: SIGTERM after locating the prepared folder exits 143 with one line and writes no artifact', async () => {
    const dir = tmp();
    const llama = path.join(fixturesDir(), 'llama');
    for (const step of [
      ['export', '--config', llama, '--out', path.join(dir, 'e')],
      ['prepare', '--checkpoint', llama, '--dtype', 'float32', '--out', path.join(dir, 'p')],
    ]) {
      const s = spawnSync(process.execPath, [CLI, ...step], { encoding: 'utf8' });
      expect(s.status, s.stderr).toBe(0);
    }
    const before = fs.readdirSync(path.join(dir, 'p')).sort();
    const r = await runToFailpoint(['compile', path.join(dir, 'e'), '--prepared', path.join(dir, 'p')], 'compile-writing', 'SIGTERM');
    expect(r.reached).toBe(true);
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr.split('\n').filter((l) => l !== '')).toEqual([
      `weight-spec: interrupted (SIGTERM): nothing was written to ${path.join(dir, 'e')}`,
    ]);
    expect(fs.readdirSync(path.join(dir, 'p')).sort()).toEqual(before);
    expect(fs.existsSync(path.join(dir, 'e', 'compile.json'))).toBe(false);
  });
});

describe('interrupting the demo', () => {
  it('SIGINT during its export removes the temp directory the demo made and exits 130', async () => {
    const scratch = tmp('ws-interrupt-tmpdir-');
    const r = await runToFailpoint(['demo', '--max-new-tokens', '1'], 'export-writing', 'SIGINT', { TMPDIR: scratch });
    expect(r.reached).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr.split('\n').filter((l) => l !== '')).toHaveLength(1);
    expect(leftoversInTemp(scratch)).toEqual([]);
  });
});
