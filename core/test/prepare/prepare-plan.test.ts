/**
 * Planner, executor and finalization: fingerprints, staged refs with a single write, grouped
 * tasks over shards, missing group keys, the RAM budget, no-op re-runs and staleness.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint, writeSafetensors } from '../../src/formats/safetensors';
import { executeTask, isPreparedUpToDate, planPrepare, preparedStatus, readPreparedManifest, runPrepare } from '../../src/prepare';
import { concat, readKey, sameBytes, t, tempDir, transposeExperts, workerPath, writeCheckpoint } from '../support/prepare-support';

const m = (l: number) => `model.layers.${l}.block_sparse_moe`;

/** A Mixtral-style checkpoint with `layers` MoE layers of E experts, experts spread over shards. */
async function moeCheckpoint(dir: string, o: { layers?: number; E?: number; I?: number; H?: number; drop?: string; dense?: boolean } = {}) {
  const { layers = 2, E = 4, I = 16, H = 8 } = o;
  const shards: ReturnType<typeof t>[][] = [[], [], []];
  let seed = 1;
  if (o.dense !== false) shards[0]!.push(t('model.embed_tokens.weight', [32, H], seed++));
  for (let l = 0; l < layers; l++) {
    if (o.dense !== false) shards[0]!.push(t(`${m(l)}.gate.weight`, [E, H], seed++));
    for (let e = 0; e < E; e++) {
      // Expert e of every layer lands in shard (E - 1 - e) % 3: later shards hold earlier experts.
      const shard = shards[(E - 1 - e) % 3]!;
      for (const [w, shape] of [
        ['w1', [I, H]],
        ['w3', [I, H]],
        ['w2', [H, I]],
      ] as const) {
        const key = `${m(l)}.experts.${e}.${w}.weight`;
        if (key !== o.drop) shard.push(t(key, [...shape], seed++));
      }
    }
  }
  await writeCheckpoint(
    dir,
    shards.filter((s) => s.length),
    { model_type: 'mixtral', num_local_experts: E },
  );
}

describe('prepare plan: fingerprints', () => {
  it('different P/E → different hashes (and directories); same options → same hash', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { E: 4 });
    const opts = { checkpoint: src, dtype: 'float16' as const };
    const p0 = await planPrepare(opts);
    const p0b = await planPrepare(opts);
    const p1 = await planPrepare({ ...opts, moeFlavour: 'expert_parallel', pipelineStages: 2, parallelExperts: 2 });
    const p2 = await planPrepare({ ...opts, moeFlavour: 'expert_parallel', pipelineStages: 4 });
    const p3 = await planPrepare({ ...opts, dtype: 'bfloat16' });
    expect(p0b.fingerprint).toBe(p0.fingerprint);
    expect(new Set([p0, p1, p2, p3].map((p) => p.fingerprint)).size).toBe(4);
    expect(new Set([p0, p1, p2, p3].map((p) => p.outDir)).size).toBe(4);
    // packed canonical down [N, P, I, H] (I = 16, H = 8)
    expect(p1.outputs.get(`${m(0)}.moe_weights.down`)!.shape).toEqual([2, 2, 16, 8]);
    expect(p2.outputs.get(`${m(0)}.moe_weights.down`)!.shape).toEqual([1, 4, 16, 8]);
    // N derived when omitted: the same plan as giving it
    expect((await planPrepare({ ...opts, moeFlavour: 'expert_parallel', pipelineStages: 2 })).fingerprint).toBe(p1.fingerprint);
  });

  it('a changed source file (size or mtime) changes the fingerprint', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src);
    const before = await planPrepare({ checkpoint: src, dtype: 'float16' });
    const shard = before.sourceFiles.find((f) => f.path.endsWith('.safetensors'))!;
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(path.join(src, shard.path), later, later);
    const after = await planPrepare({ checkpoint: src, dtype: 'float16' });
    expect(after.fingerprint).not.toBe(before.fingerprint);
  });
});

describe('prepare plan: staged tensors, grouped tasks', () => {
  it('one key through several stages before its single write: stacked → packed → final inside one task', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 1 });
    const res = await runPrepare({
      checkpoint: src,
      dtype: 'float16',
      moeFlavour: 'expert_parallel',
      pipelineStages: 2,
      parallelExperts: 2,
      workerPath: workerPath(),
    });
    const task = res.plan.tasks.find((x) => x.id === 'experts:layer-0')!;
    const gate = task.tensors.find((x) => x.key === `${m(0)}.moe_weights.gate`)!;
    expect(gate.stages).toEqual(['source', 'stacked', 'packed', 'final']);
    expect(task.outputs).toContainEqual({ key: `${m(0)}.moe_weights.gate`, stage: 'final' });
    expect(task.inputs).toContainEqual({ key: `${m(0)}.experts.3.w1.weight`, stage: 'source' });
    const stats = res.executor!.stats.get(task.id)!;
    expect(stats.stages[`${m(0)}.moe_weights.gate`]).toEqual(['source', 'stacked', 'packed', 'final']);
    // Each source tensor read exactly once (its byte count), each output written exactly once.
    for (const [key, s] of Object.entries(task.sources)) expect(stats.readBytes[key]).toBe(s.byteLength);
    for (const x of task.tensors) expect(stats.writtenBytes[x.key]).toBe(x.shape.reduce((a, b) => a * b, 1) * 2);
    // No intermediate files: the directory holds exactly the planned shards and the finalization files.
    expect(fs.readdirSync(res.outDir).sort()).toEqual([
      '.checkpoint_prepared',
      '.checkpoint_prepared.json',
      'base-0000.safetensors',
      'config.json',
      'experts-layer-00000.safetensors',
      'model.safetensors.index.json',
    ]);
  });

  it('reports progress: bytes and tasks, monotonic, ending at the totals', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 3 });
    const seen: { bytesDone: number; bytesTotal: number; tasksDone: number; tasksTotal: number }[] = [];
    const res = await runPrepare({ checkpoint: src, dtype: 'float32', workerPath: workerPath(), onProgress: (p) => seen.push(p) });
    const last = seen[seen.length - 1]!;
    expect(last).toEqual({ bytesDone: res.plan.totalBytes, bytesTotal: res.plan.totalBytes, tasksDone: 4, tasksTotal: 4 });
    for (let i = 1; i < seen.length; i++) {
      expect(seen[i]!.bytesDone).toBeGreaterThanOrEqual(seen[i - 1]!.bytesDone);
      expect(seen[i]!.tasksDone).toBeGreaterThanOrEqual(seen[i - 1]!.tasksDone);
    }
    expect(seen[0]).toMatchObject({ bytesDone: 0, tasksDone: 0 });
  });

  it('runs the same plan in this thread (workers: 0) with identical output files', async () => {
    const root = tempDir();
    const src = path.join(root, 'moe');
    await moeCheckpoint(src, { layers: 2 });
    const a = await runPrepare({ checkpoint: src, dtype: 'float16', out: path.join(root, 'a'), workerPath: workerPath() });
    const b = await runPrepare({ checkpoint: src, dtype: 'float16', out: path.join(root, 'b'), workers: 0 });
    expect(b.executor!.maxConcurrent).toBe(1);
    for (const t of a.plan.tasks)
      expect(sameBytes(fs.readFileSync(path.join(a.outDir, t.file)), fs.readFileSync(path.join(b.outDir, t.file)))).toBe(true);
  });

  it('grouped task waits for all its keys: one task per layer spanning every shard, experts in index order', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 2 });
    const plan = await planPrepare({ checkpoint: src, dtype: 'bfloat16' });
    const grouped = plan.tasks.filter((x) => x.transform === 'moe-stack');
    expect(grouped.map((x) => x.id)).toEqual(['experts:layer-0', 'experts:layer-1']);
    for (const g of grouped) {
      expect(g.sourceFiles.length).toBe(3);
      expect(g.inputs.length).toBe(12);
    }
    const res = await runPrepare({ checkpoint: src, dtype: 'bfloat16', workerPath: workerPath() });
    const parts = await Promise.all([0, 1, 2, 3].map((e) => readKey(src, `${m(1)}.experts.${e}.w3.weight`)));
    expect(sameBytes(await readKey(res.outDir, `${m(1)}.moe_weights.up`), transposeExperts(concat(parts), 4, 16, 8, 2))).toBe(true);
  });

  it('missing group key fails before any write (at planning)', async () => {
    const root = tempDir();
    const src = path.join(root, 'moe');
    await moeCheckpoint(src, { drop: `${m(1)}.experts.2.w3.weight` });
    await expect(runPrepare({ checkpoint: src, dtype: 'float16', workerPath: workerPath() })).rejects.toThrow(
      `"${m(1)}.experts.2.w3.weight" is missing`,
    );
    expect(fs.readdirSync(root)).toEqual(['moe']);
  });

  it('missing group key fails before any write (key gone after planning: the worker checks first)', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 1 });
    const plan = await planPrepare({ checkpoint: src, dtype: 'float16' });
    const task = plan.tasks.find((x) => x.id === 'experts:layer-0')!;
    // Rewrite the shard holding expert 0 without its w2.
    const file = task.sources[`${m(0)}.experts.0.w2.weight`]!.file;
    const ck = await Checkpoint.open(file);
    const keep = ck.keys().filter((k) => k !== `${m(0)}.experts.0.w2.weight`);
    const tensors = await Promise.all(keep.map(async (k) => ({ ...ck.get(k)!, data: await ck.read(k) })));
    fs.rmSync(file);
    await writeSafetensors(
      file,
      tensors.map((x) => ({ key: x.key, dtype: x.dtype, shape: x.shape, data: x.data })),
    );
    const out = tempDir();
    await expect(executeTask(task, out)).rejects.toThrow(/experts\.0\.w2\.weight.*missing; nothing was written/);
    expect(fs.readdirSync(out)).toEqual([]);
  });
});

describe('prepare executor: RAM budget', () => {
  it('budget limits concurrency (observed peak of admitted bytes ≤ budget)', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 4, I: 64, H: 64, dense: false });
    const plan = await planPrepare({ checkpoint: src, dtype: 'float16' });
    const peak = Math.max(...plan.tasks.map((x) => x.peakBytes));
    expect(plan.tasks.length).toBe(4);
    const tight = await runPrepare({
      checkpoint: src,
      dtype: 'float16',
      budgetBytes: Math.floor(peak * 1.5),
      workers: 2,
      workerPath: workerPath(),
    });
    expect(tight.executor!.peakAdmittedBytes).toBeLessThanOrEqual(Math.floor(peak * 1.5));
    expect(tight.executor!.maxConcurrent).toBe(1);
    fs.rmSync(tight.outDir, { recursive: true });
    const roomy = await runPrepare({ checkpoint: src, dtype: 'float16', budgetBytes: peak * 4, workers: 2, workerPath: workerPath() });
    expect(roomy.executor!.peakAdmittedBytes).toBeLessThanOrEqual(peak * 4);
    expect(roomy.executor!.maxConcurrent).toBe(2);
  });

  it('one task above the budget → clear error at planning, naming the task and both sizes', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 1 });
    const plan = await planPrepare({ checkpoint: src, dtype: 'float16' });
    const big = plan.tasks.reduce((a, b) => (a.peakBytes >= b.peakBytes ? a : b));
    const err = await planPrepare({ checkpoint: src, dtype: 'float16', budgetBytes: 1000 }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain(`task ${big.id} (${big.file})`);
    expect((err as Error).message).toMatch(/needs an estimated [\d.]+ KiB at once, over the RAM budget of 1000 B/);
    expect(fs.readdirSync(path.dirname(src))).toEqual(['moe']);
  });
});

describe('prepare: finalization and re-runs', () => {
  it('writes a strict manifest and the sentinel; an unchanged plan is a no-op; a change gives a new directory', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src);
    const first = await runPrepare({ checkpoint: src, dtype: 'float16', workerPath: workerPath() });
    const man = await readPreparedManifest(first.outDir);
    expect(man.fingerprint).toBe(first.fingerprint);
    expect(man.target_dtype).toBe('float16');
    expect(man.source).toBe(src);
    expect(man.source_files.map((f) => f.path)).toContain('model.safetensors.index.json');
    expect(man.output_files.map((f) => f.path).sort()).toEqual([
      'base-0000.safetensors',
      'experts-layer-00000.safetensors',
      'experts-layer-00001.safetensors',
    ]);
    expect(man.transforms.map((x) => x.id).sort()).toEqual(['dense', 'moe-stack']);
    expect(fs.readFileSync(path.join(first.outDir, '.checkpoint_prepared'), 'utf8').trim()).toBe(first.fingerprint);
    expect(await isPreparedUpToDate(first.outDir)).toBe(true);

    const mtime = fs.statSync(path.join(first.outDir, 'base-0000.safetensors')).mtimeMs;
    const again = await runPrepare({ checkpoint: src, dtype: 'float16', workerPath: workerPath() });
    expect(again.upToDate).toBe(true);
    expect(again.outDir).toBe(first.outDir);
    expect(fs.statSync(path.join(first.outDir, 'base-0000.safetensors')).mtimeMs).toBe(mtime);

    // Touch a source shard: the old directory becomes stale, the new plan gets its own directory.
    const shard = path.join(src, man.source_files.find((f) => f.path.endsWith('.safetensors'))!.path);
    const later = new Date(Date.now() + 10_000);
    fs.utimesSync(shard, later, later);
    expect((await preparedStatus(first.outDir)).state).toBe('stale');
    const changed = await runPrepare({ checkpoint: src, dtype: 'float16', workerPath: workerPath() });
    expect(changed.upToDate).toBe(false);
    expect(changed.outDir).not.toBe(first.outDir);
    expect(await isPreparedUpToDate(changed.outDir)).toBe(true);
  });

  it('rejects a manifest with unknown fields and reports a missing sentinel', async () => {
    const src = path.join(tempDir(), 'moe');
    await moeCheckpoint(src, { layers: 1 });
    const res = await runPrepare({ checkpoint: src, dtype: 'bfloat16', workerPath: workerPath() });
    const file = path.join(res.outDir, '.checkpoint_prepared.json');
    const man = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.writeFileSync(file, JSON.stringify({ ...man, surprise: 1 }));
    await expect(readPreparedManifest(res.outDir)).rejects.toThrow(/invalid prepared manifest/);
    fs.writeFileSync(file, JSON.stringify(man));
    fs.rmSync(path.join(res.outDir, '.checkpoint_prepared'));
    expect(await preparedStatus(res.outDir)).toMatchObject({ state: 'not-prepared' });
    // The next run rebuilds it (same plan, incomplete directory).
    const again = await runPrepare({ checkpoint: src, dtype: 'bfloat16', workerPath: workerPath() });
    expect(again.upToDate).toBe(false);
    expect(await isPreparedUpToDate(res.outDir)).toBe(true);
  });

  it('refuses to replace a --out directory that is not a prepared checkpoint', async () => {
    const root = tempDir();
    const src = path.join(root, 'moe');
    await moeCheckpoint(src, { layers: 1 });
    const out = path.join(root, 'mine');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'notes.txt'), 'keep me');
    await expect(runPrepare({ checkpoint: src, dtype: 'float16', out, workerPath: workerPath() })).rejects.toThrow(
      /is not a prepared checkpoint/,
    );
    expect(fs.readFileSync(path.join(out, 'notes.txt'), 'utf8')).toBe('keep me');
  });
});
