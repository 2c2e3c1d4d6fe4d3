/**
 * Faults during `weight-spec compile` (real CLI, real export + prepare of the llama fixture):
 * SIGKILL at seeded random moments, a file-size limit (a full disk for the artifact), and a
 * prepared shard deleted before compiling. Each run ends in a clear one-line error or a
 * complete compile; `compile.json` never points at a missing or torn artifact; a re-run
 * repairs, and the repaired model reproduces the fixture's reference logits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { decodeModel } from '../../src/formats/onnx';
import { REPO_ROOT, describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { havePrlimit, rng, runChild } from '../support/faults-harness';

const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
let tmp: string;
const makeTmp = tempDirs('ws-faults-compile-');
let exp: string;
let prepared: string;

const cli = (args: string[], extra: Parameters<typeof runChild>[2] = {}) => runChild(CLI, args, extra);
const errors = (stderr: string) =>
  stderr
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('weight-spec:'));

/** 'complete' when compile.json names an artifact that exists and decodes; 'absent' when there is no record. */
function state(): 'complete' | 'absent' {
  const rec = path.join(exp, 'compile.json');
  if (!fs.existsSync(rec)) return 'absent';
  const r = JSON.parse(fs.readFileSync(rec, 'utf8')) as { artifacts: { model: string }; stats: { artifactBytes: number } };
  const bytes = fs.readFileSync(r.artifacts.model);
  expect(bytes.length).toBe(r.stats.artifactBytes);
  decodeModel(bytes, r.artifacts.model);
  return 'complete';
}

/** Any compiled-*.onnx left in the prepared directory must be a complete model. */
function noTornArtifacts(): void {
  for (const n of fs.readdirSync(prepared).filter((x) => /^compiled-.*\.onnx$/.test(x)))
    decodeModel(fs.readFileSync(path.join(prepared, n)), n);
}

async function logitsMatchReference(): Promise<void> {
  const ref = JSON.parse(fs.readFileSync(path.join(fixturesDir(), 'llama', 'reference.json'), 'utf8')) as {
    input_ids: number[];
    logits: number[][];
  };
  const dump = path.join(tmp, 'logits.json');
  const r = await cli(['run', exp, '--input-ids', ref.input_ids.join(','), '--dump-logits', dump]);
  expect(errors(r.stderr)).toEqual([]);
  const got = (JSON.parse(fs.readFileSync(dump, 'utf8')) as { logits: number[][] }).logits;
  expect(got.length).toBe(ref.input_ids.length);
  let worst = 0;
  got.forEach((row, t) => row.forEach((v, j) => (worst = Math.max(worst, Math.abs(v - ref.logits[t]![j]!)))));
  expect(worst).toBeLessThan(1e-4);
}

describeFixtures('compile under faults', () => {
  beforeAll(async () => {
    if (!fs.existsSync(CLI)) throw new Error(`${CLI} missing: run node scripts/bundle.mjs first`);
    tmp = makeTmp();
    const src = path.join(tmp, 'llama');
    fs.cpSync(path.join(fixturesDir(), 'llama'), src, { recursive: true });
    exp = path.join(tmp, 'exp');
    // Prepare first: export links the prepared folder only once it exists (issue 30.8).
    const p = await cli(['prepare', '--checkpoint', src, '--dtype', 'float32']);
    expect(errors(p.stderr)).toEqual([]);
    const e = await cli(['export', '--config', src, '--out', exp]);
    expect(errors(e.stderr)).toEqual([]);
    prepared = fs.realpathSync(
      path.join(
        exp,
        fs.readdirSync(exp).find((n) => fs.lstatSync(path.join(exp, n)).isSymbolicLink())!,
      ),
    );
  }, 120_000);

  it('SIGKILL at random moments: the record is absent or names a complete artifact; a re-run repairs', async () => {
    const full = await cli(['compile', exp, '--force']);
    expect(full.code).toBe(0);
    const next = rng(99);
    const results: string[] = [];
    let killed = 0;
    // Up to 16 attempts until 4 runs were killed mid-way: delays over 20–120 % of a run
    // (machine load varies), shrinking whenever a run finished before its kill.
    let window = full.ms;
    for (let k = 0; k < 16 && killed < 4; k++) {
      fs.rmSync(path.join(exp, 'compile.json'), { force: true });
      const r = await cli(['compile', exp, '--force'], { killAfterMs: Math.round(window * (0.2 + next(1000) / 1000)) });
      if (r.signal === 'SIGKILL') killed++;
      else window *= 0.8;
      const s = state();
      if (r.code === 0) expect(s).toBe('complete');
      noTornArtifacts();
      results.push(`${r.signal ?? r.code}:${s}`);
    }
    console.log(`[faults] compile kills (full run ${full.ms} ms): ${results.join(', ')}`);
    expect(killed).toBeGreaterThanOrEqual(4);
    const again = await cli(['compile', exp]);
    expect(again.code).toBe(0);
    expect(state()).toBe('complete');
    await logitsMatchReference();
  }, 300_000);

  it('a file-size limit (disk full) while writing the artifact: one clear error, no torn artifact; a re-run repairs', async () => {
    if (!havePrlimit()) throw new Error('prlimit is needed to simulate a full disk for compile');
    fs.rmSync(path.join(exp, 'compile.json'), { force: true });
    const r = await cli(['compile', exp, '--force'], { fsizeBytes: 4096 });
    expect(r.code).toBe(1);
    expect(errors(r.stderr)).toHaveLength(1);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    console.log(`[faults] compile under a 4 KiB file-size limit: ${errors(r.stderr)[0]}`);
    expect(state()).toBe('absent');
    noTornArtifacts();
    const again = await cli(['compile', exp]);
    expect(again.code).toBe(0);
    expect(state()).toBe('complete');
  }, 120_000);

  it('a prepared shard missing: a clear error naming it, and the previous good compile is not destroyed', async () => {
    expect(state()).toBe('complete');
    const before = fs.readFileSync(path.join(exp, 'compile.json'), 'utf8');
    const shard = fs.readdirSync(prepared).find((n) => n.endsWith('.safetensors'))!;
    const saved = fs.readFileSync(path.join(prepared, shard));
    fs.rmSync(path.join(prepared, shard));
    try {
      const r = await cli(['compile', exp, '--force']);
      expect(r.code).toBe(1);
      const e = errors(r.stderr);
      expect(e).toHaveLength(1);
      expect(e[0]).toContain(shard.replace(/\.safetensors$/, ''));
      expect(fs.readFileSync(path.join(exp, 'compile.json'), 'utf8')).toBe(before);
    } finally {
      fs.writeFileSync(path.join(prepared, shard), saved);
    }
    const again = await cli(['compile', exp]);
    expect(again.code).toBe(0);
    await logitsMatchReference();
  }, 120_000);
});
