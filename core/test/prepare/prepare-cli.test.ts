/**
 * `weight-spec prepare`, the real CLI spawned: output and exit codes, and crash safety —
 * SIGKILL at several moments never leaves a directory with a sentinel whose contents are
 * incomplete, and the next run completes and cleans the leftovers up.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../src/formats/safetensors';
import { planPrepare, preparedStatus } from '../../src/prepare';
import { describeFixtures, fixturesDir, REPO_ROOT } from '../../../test/support/fixtures';
import { t, tempDir, writeCheckpoint } from '../support/prepare-support';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

function run(
  args: string[],
  killAfterMs?: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = killAfterMs !== undefined ? setTimeout(() => p.kill('SIGKILL'), killAfterMs) : undefined;
    p.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Every directory beside the source that carries a sentinel must be complete and readable. */
async function checkNoFalsePrepared(parent: string, expectedKeys: string[]): Promise<number> {
  let complete = 0;
  for (const name of fs.readdirSync(parent)) {
    const dir = path.join(parent, name);
    if (!fs.statSync(dir).isDirectory() || !fs.existsSync(path.join(dir, '.checkpoint_prepared'))) continue;
    expect((await preparedStatus(dir)).state, `${dir} has a sentinel`).toBe('prepared');
    const ck = await Checkpoint.open(dir);
    expect(ck.keys().sort()).toEqual(expectedKeys);
    for (const f of ck.files) expect(fs.statSync(f).size).toBe(ck.headers.get(f)!.fileSize);
    complete++;
  }
  return complete;
}

beforeAll(() => {
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: REPO_ROOT, stdio: 'inherit' });
});

describe('prepare CLI', () => {
  it('prints the prepared directory, says when nothing changed, and fails with one line', async () => {
    const parent = tempDir('ws-prep-cli-');
    const src = path.join(parent, 'tiny');
    await writeCheckpoint(src, [
      [
        t('model.embed_tokens.weight', [16, 8], 1),
        t('model.layers.0.mlp.experts.0.gate_proj.weight', [4, 8], 2),
        t('model.layers.0.mlp.experts.0.up_proj.weight', [4, 8], 3),
        t('model.layers.0.mlp.experts.0.down_proj.weight', [8, 4], 4),
      ],
    ]);
    const first = await run(['prepare', '--checkpoint', src, '--dtype', 'float16']);
    expect(first.code, first.stderr).toBe(0);
    const dir = first.stdout.trim().split('\n').pop()!;
    expect(path.dirname(dir)).toBe(parent);
    expect(path.basename(dir)).toMatch(/^tiny-prepared-float16-[0-9a-f]{10}$/);
    expect(fs.existsSync(path.join(dir, '.checkpoint_prepared'))).toBe(true);
    const second = await run(['prepare', '--checkpoint', src, '--dtype', 'float16']);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^prepare: up to date \(fingerprint [0-9a-f]{12}, nothing changed; [\d.]+ ms\)\n/);
    expect(second.stdout.trim().split('\n').pop()).toBe(dir);

    const usage = await run(['prepare', '--checkpoint', src, '--dtype', 'float16', '--pipeline-stages', '2']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^weight-spec: prepare: --pipeline-stages\/--parallel-experts need --moe-flavour expert_parallel/);
    const over = await run(['prepare', '--checkpoint', src, '--dtype', 'float32', '--max-ram-gb', '0.0000001']);
    expect(over.code).toBe(1);
    expect(over.stderr.trim().split('\n')).toHaveLength(1);
    expect(over.stderr).toMatch(/^weight-spec: task .* needs an estimated .* over the RAM budget of 107 B; raise --max-ram-gb/);
    const missing = await run(['prepare', '--checkpoint', path.join(parent, 'nope'), '--dtype', 'float16']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^weight-spec: .*nope: no such file or directory/);
  });
});

describeFixtures('prepare CLI: expert-parallel N = E / P on the 4-expert mixtral fixture', () => {
  // QEfficient release/v1.22.8.0 QEfficient/transformers/models/modeling_auto.py:
  // num_parallelized_experts = num_experts // num_pipeline_stages, with num_experts % P == 0.
  it('(P, N) = (2, 2) and (4, 1) succeed into two directories; P · N ≠ E exits 2 naming E, P and N', async () => {
    const src = path.join(tempDir(), 'mixtral');
    fs.cpSync(path.join(fixturesDir(), 'mixtral'), src, { recursive: true });
    for (const f of fs.readdirSync(src)) fs.chmodSync(path.join(src, f), 0o644);
    const ep = ['--checkpoint', src, '--dtype', 'bfloat16', '--moe-flavour', 'expert_parallel'];
    const a = await run(['prepare', ...ep, '--pipeline-stages', '2', '--parallel-experts', '2']);
    const b = await run(['prepare', ...ep, '--pipeline-stages', '4', '--parallel-experts', '1']);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const dirA = a.stdout.trim().split('\n').pop()!;
    const dirB = b.stdout.trim().split('\n').pop()!;
    expect(dirA).not.toBe(dirB);
    const m = 'model.layers.0.block_sparse_moe.moe_weights';
    expect((await Checkpoint.open(dirA)).get(`${m}.gate`)!.shape).toEqual([2, 2, 64, 96]);
    expect((await Checkpoint.open(dirB)).get(`${m}.down`)!.shape).toEqual([1, 4, 96, 64]);
    // N omitted: derived (same plan, so the same directory, already up to date)
    const derived = await run(['prepare', ...ep, '--pipeline-stages', '2']);
    expect(derived.code, derived.stderr).toBe(0);
    expect(derived.stdout.trim().split('\n').pop()).toBe(dirA);
    const bad = await run(['prepare', ...ep, '--pipeline-stages', '2', '--parallel-experts', '4']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.split('\n')[0]).toMatch(
      /^weight-spec: prepare: .*--parallel-experts 4 \(N\) × --pipeline-stages 2 \(P\) = 8, but the model has 4 experts \(E\)/,
    );
    const odd = await run(['prepare', ...ep, '--pipeline-stages', '3']);
    expect(odd.code).toBe(2);
    expect(odd.stderr.split('\n')[0]).toMatch(/4 experts \(E\) do not split into 3 pipeline stages \(P\)/);
  });
});

describe('prepare CLI: SIGKILL safety', () => {
  let src: string;
  let parent: string;
  beforeAll(async () => {
    parent = tempDir('ws-prep-kill-');
    src = path.join(parent, 'ckpt');
    const H = 1024;
    const shard = (i: number) =>
      Array.from({ length: 6 }, (_, j) => ({
        key: `model.layers.${i}.mlp.proj${j}.weight`,
        dtype: 'BF16' as const,
        shape: [4096, H],
        data: new Uint8Array(randomBytes(4096 * H * 2)),
      }));
    const experts = Array.from({ length: 4 }, (_, e) =>
      ['w1', 'w3', 'w2'].map((w) => ({
        key: `model.layers.9.block_sparse_moe.experts.${e}.${w}.weight`,
        dtype: 'BF16' as const,
        shape: [1024, 1024],
        data: new Uint8Array(randomBytes(1024 * 1024 * 2)),
      })),
    ).flat();
    await writeCheckpoint(src, [shard(0), shard(1), [...shard(2), ...experts]], { model_type: 'mixtral', num_local_experts: 4 });
  });

  it('never leaves a sentinel over incomplete contents; the next run completes', async () => {
    const plan = await planPrepare({ checkpoint: src, dtype: 'float32' });
    const keys = [...plan.outputs.keys()].sort();
    // The kill moments are fractions of a whole run's time: the faster of two runs (the first
    // one reads a cold cache), lowered again whenever a run finishes before its kill.
    let duration = Infinity;
    for (let i = 0; i < 2; i++) {
      const t0 = Date.now();
      const full = await run(['prepare', '--checkpoint', src, '--dtype', 'float32', '--out', path.join(parent, 'timing')]);
      duration = Math.min(duration, Date.now() - t0);
      expect(full.code, full.stderr).toBe(0);
      fs.rmSync(path.join(parent, 'timing'), { recursive: true });
    }
    const args = ['prepare', '--checkpoint', src, '--dtype', 'float32'];
    let killed = 0;
    let midWork = 0;
    // From process start-up through planning, conversion and finalization.
    for (const frac of [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.97]) {
      const before = new Set(fs.readdirSync(parent));
      const t0 = Date.now();
      const r = await run(args, Math.round(duration * frac));
      if (r.signal === 'SIGKILL') killed++;
      // A temp directory this run created and left behind: it was killed in the middle of the work.
      if (fs.readdirSync(parent).some((n) => n.includes('.tmp-') && !before.has(n))) midWork++;
      await checkNoFalsePrepared(parent, keys);
      if (r.code === 0) {
        // Finished before the kill: the directory is complete; remove it to kill a fresh run again.
        fs.rmSync(plan.outDir, { recursive: true });
        duration = Math.min(duration, Date.now() - t0);
      }
    }
    expect(killed).toBeGreaterThanOrEqual(4);
    expect(midWork).toBeGreaterThanOrEqual(2);
    const last = await run(args);
    expect(last.code, last.stderr).toBe(0);
    expect(last.stdout.trim().split('\n').pop()).toBe(plan.outDir);
    expect(await checkNoFalsePrepared(parent, keys)).toBe(1);
    // Leftovers of the killed runs are gone.
    expect(fs.readdirSync(parent).filter((n) => /\.(tmp|old)-\d+-/.test(n))).toEqual([]);
    const again = await run(args);
    expect(again.stdout).toMatch(/^prepare: up to date/);
  }, 120_000);
});
