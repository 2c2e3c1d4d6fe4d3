/**
 * No copy when nothing changes: a dense shard with no transform and no dtype change is its
 * source file, so prepare links it (hard link, else a relative symlink) instead of writing
 * its bytes — as QEfficient reuses the source checkpoint then
 * (quic/efficient-transformers `QEfficient/base/checkpoint_transforms.py`). The prepared
 * directory stays complete (sentinel, manifest, index), a later edit of the source is still
 * stale, the export → compile → run pipeline still reproduces the fixture's reference, and a
 * directory QEfficient prepared (`<name>-qeff-prepared-<dtype>`, sentinel only) compiles.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { describeFixtures, fixturesDir, REPO_ROOT, type FixtureRef } from '../../../test/support/fixtures';
import { tempDirs } from '../../../test/support/temp';
import { convertFloat } from '../../src/formats/float-convert';
import { Checkpoint, writeSafetensors } from '../../src/formats/safetensors';
import { planPrepare, preparedStatus, runPrepare } from '../../src/prepare';
import { maxAbsDiff } from '../support/graph-support';
import { workerPath } from '../support/prepare-support';

const tmp = tempDirs('ws-prep-links-');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');

function ws(...args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, WEIGHT_SPEC_PROGRESS: 'off' } });
  if (r.status !== 0) throw new Error(`weight-spec ${args.join(' ')} → exit ${r.status}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** Kilobytes `du -sk` charges to each argument, in one invocation (a hard-linked inode counts once, at its first path). */
function duK(...dirs: string[]): number[] {
  const r = spawnSync('du', ['-sk', ...dirs], { encoding: 'utf8' });
  return r.stdout
    .trim()
    .split('\n')
    .map((l) => Number(l.split('\t')[0]));
}

/** The llama fixture's bf16 weights widened to f32 (exact) in `dst`, one shard per source shard, keys kept. */
async function f32Copy(fx: string, dst: string): Promise<void> {
  fs.mkdirSync(dst, { recursive: true });
  fs.copyFileSync(path.join(fx, 'config.json'), path.join(dst, 'config.json'));
  const ck = await Checkpoint.open(fx);
  const weightMap: Record<string, string> = {};
  for (const file of ck.files) {
    const h = ck.headers.get(file)!;
    const tensors = await Promise.all(
      [...h.tensors.values()].map(async (t) => ({
        key: t.key,
        dtype: 'F32' as const,
        shape: t.shape,
        data: convertFloat(await ck.read(t.key), t.dtype, 'F32'),
      })),
    );
    await writeSafetensors(path.join(dst, path.basename(file)), tensors);
    for (const t of tensors) weightMap[t.key] = path.basename(file);
  }
  fs.writeFileSync(path.join(dst, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
}

describeFixtures('prepare links unchanged shards', () => {
  it('llama bf16 → bf16: every shard linked, no tensor bytes written (du), a complete prepared directory, stale after a source edit', async () => {
    const root = tmp();
    const src = path.join(root, 'llama');
    fs.cpSync(path.join(fixturesDir(), 'llama'), src, { recursive: true });
    const res = await runPrepare({ checkpoint: src, dtype: 'bfloat16', workerPath: workerPath() });
    const plan = res.plan;
    expect(plan.tasks.map((t) => [t.file, t.link && path.basename(t.link)])).toEqual([
      ['base-0000.safetensors', 'model-00001-of-00002.safetensors'],
      ['base-0001.safetensors', 'model-00002-of-00002.safetensors'],
    ]);
    for (const t of plan.tasks) {
      const out = path.join(res.outDir, t.file);
      const st = fs.lstatSync(out);
      const stats = res.executor!.stats.get(t.id)!;
      // same filesystem here: a hard link to the very inode of the source
      expect(stats.linked).toBe('hardlink');
      expect(st.ino).toBe(fs.statSync(t.link!).ino);
      expect(stats.writtenBytes).toEqual({});
    }
    // still a complete prepared directory
    expect(fs.readdirSync(res.outDir).sort()).toEqual([
      '.checkpoint_prepared',
      '.checkpoint_prepared.json',
      'base-0000.safetensors',
      'base-0001.safetensors',
      'config.json',
      'model.safetensors.index.json',
    ]);
    expect((await preparedStatus(res.outDir)).state).toBe('prepared');
    // du over source and prepared: the prepared directory is charged only metadata (the shards are the source's inodes)
    const [srcK, prepK] = duK(src, res.outDir);
    const shardK = plan.tasks.reduce((a, t) => a + fs.statSync(t.link!).size, 0) / 1024;
    expect(srcK).toBeGreaterThan(shardK);
    expect(prepK).toBeLessThan(32);

    // editing the source afterwards is detected as stale (the manifest's source mtimes)
    const shard = path.join(src, 'model-00002-of-00002.safetensors');
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(shard, later, later);
    const st = await preparedStatus(res.outDir);
    expect(st.state).toBe('stale');
    expect((await planPrepare({ checkpoint: src, dtype: 'bfloat16' })).fingerprint).not.toBe(res.fingerprint);
  }, 300_000);

  it('a float32 checkpoint prepared as float32 is all links; export → compile → run over it, and over a QEfficient-prepared copy, reproduces reference.json', async () => {
    const root = tmp();
    const fx = path.join(fixturesDir(), 'llama');
    const src = path.join(root, 'llama-f32');
    await f32Copy(fx, src);
    const ref = JSON.parse(fs.readFileSync(path.join(fx, 'reference.json'), 'utf8')) as FixtureRef;
    const out = path.join(root, 'export');
    ws('export', '--config', src, '--out', out, '--ctx-len', '32');
    const prepared = ws('prepare', '--checkpoint', src, '--dtype', 'float32').trim().split('\n').pop()!;
    for (const f of ['base-0000.safetensors', 'base-0001.safetensors']) expect(fs.statSync(path.join(prepared, f)).nlink).toBe(2);
    expect(duK(src, prepared)[1]).toBeLessThan(32);
    ws('compile', out, '--prepared', prepared);
    const dump = path.join(root, 'logits.json');
    const ids = [...ref.input_ids, ...ref.generated_ids.slice(0, -1)];
    ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dump);
    expect(maxAbsDiff((JSON.parse(fs.readFileSync(dump, 'utf8')) as { logits: number[][] }).logits, ref.logits)).toBeLessThanOrEqual(1e-4);

    // a directory QEfficient prepared: <name>-qeff-prepared-<dtype>, shards + index, the sentinel only (no manifest)
    const qeff = path.join(root, 'llama-f32-qeff-prepared-float32');
    fs.mkdirSync(qeff);
    for (const f of ['base-0000.safetensors', 'base-0001.safetensors', 'model.safetensors.index.json', 'config.json'])
      fs.copyFileSync(path.join(prepared, f), path.join(qeff, f));
    fs.writeFileSync(path.join(qeff, '.checkpoint_prepared'), '');
    ws('compile', out, '--prepared', qeff);
    const rec = JSON.parse(fs.readFileSync(path.join(out, 'compile.json'), 'utf8')) as { artifacts: { model: string } };
    expect(path.dirname(path.resolve(out, rec.artifacts.model))).toBe(fs.realpathSync(qeff));
    const dumpQ = path.join(root, 'logits-qeff.json');
    ws('run', out, '--input-ids', ids.join(','), '--dump-logits', dumpQ);
    expect(maxAbsDiff((JSON.parse(fs.readFileSync(dumpQ, 'utf8')) as { logits: number[][] }).logits, ref.logits)).toBeLessThanOrEqual(1e-4);
  }, 300_000);

  it('a shard that changes (dtype, or partly claimed by a transform) is written, not linked', async () => {
    const src = path.join(fixturesDir(), 'llama');
    const f32 = await planPrepare({ checkpoint: src, dtype: 'float32' });
    expect(f32.tasks.every((t) => !t.link)).toBe(true);
    const mixtral = await planPrepare({ checkpoint: path.join(fixturesDir(), 'mixtral'), dtype: 'bfloat16' });
    // every mixtral shard holds experts, so none is the source file unchanged
    expect(mixtral.tasks.filter((t) => t.link)).toEqual([]);
  });

  // /dev/shm is tmpfs, another filesystem than the temp dir here: a hard link is refused (EXDEV)
  const shm = '/dev/shm';
  const otherFs = fs.existsSync(shm) && fs.statSync(shm).dev !== fs.statSync(tmp()).dev;
  const shmTmp = tempDirs('ws-links-src-', { under: shm });
  it.skipIf(!otherFs)('across filesystems: relative symlinks, still prepared; compile says to prepare beside the source', async () => {
    const root = tmp();
    const src = shmTmp();
    fs.cpSync(path.join(fixturesDir(), 'llama'), path.join(src, 'llama'), { recursive: true });
    const ck = path.join(src, 'llama');
    const res = await runPrepare({ checkpoint: ck, dtype: 'bfloat16', out: path.join(root, 'p'), workerPath: workerPath() });
    for (const t of res.plan.tasks) {
      const out = path.join(res.outDir, t.file);
      expect(res.executor!.stats.get(t.id)!.linked).toBe('symlink');
      expect(fs.lstatSync(out).isSymbolicLink()).toBe(true);
      expect(path.isAbsolute(fs.readlinkSync(out))).toBe(false);
      expect(fs.realpathSync(out)).toBe(fs.realpathSync(t.link!));
    }
    expect((await preparedStatus(res.outDir)).state).toBe('prepared');
    expect(duK(res.outDir)[0]).toBeLessThan(32);
    // ONNX Runtime reads no external data through a symlink leaving the model's folder, and
    // a hard link cannot cross filesystems: one line saying what to do
    const f32src = path.join(src, 'llama-f32');
    await f32Copy(path.join(fixturesDir(), 'llama'), f32src);
    const exp = path.join(root, 'e');
    ws('export', '--config', f32src, '--out', exp, '--ctx-len', '32');
    const p32 = path.join(root, 'p32');
    ws('prepare', '--checkpoint', f32src, '--dtype', 'float32', '--out', p32);
    expect(fs.lstatSync(path.join(p32, 'base-0000.safetensors')).isSymbolicLink()).toBe(true);
    const r = spawnSync(process.execPath, [CLI, 'compile', exp, '--prepared', p32], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^weight-spec: .*base-0000\.safetensors: a symlink to .* cannot be hard-linked .*\(EXDEV\); prepare with --out on the source's filesystem/,
    );
  });
});
