/**
 * Dense tasks made in pieces (core/src/prepare/run-piece.ts): the cuts, the order workers
 * take them in, and whole runs through real worker threads with pieces of a few kilobytes —
 * odd shapes, an empty tensor, bf16 and f32 sources — checked value by value against an
 * independent reference, byte for byte against the unpieced run, and by the read/write
 * tallies (every source byte read once, every output byte written once). A failing piece
 * leaves no output behind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { planPrepare, runPrepare } from '../../src/prepare';
import { interleave, runTasks, type Job } from '../../src/prepare/executor';
import { pieceRanges } from '../../src/prepare/run-piece';
import type { Task } from '../../src/prepare/types';
import { bf16ToNumber, readKey, refHalf, sameBytes, t, tempDir, u16, workerPath, writeCheckpoint } from '../support/prepare-support';

/** A checkpoint of two shards with odd shapes, an empty tensor and an f32 tensor. */
async function oddCheckpoint(dir: string): Promise<void> {
  const f32 = new Float32Array(1000 * 33).map((_, i) => Math.sin(i) * 3 + (i % 7 === 0 ? 1e-6 : 0));
  await writeCheckpoint(dir, [
    [
      t('model.embed_tokens.weight', [300, 257], 1),
      t('model.empty', [0, 8], 2),
      t('model.f32_weight', [1000, 33], 3, 'F32', new Uint8Array(f32.buffer)),
      t('model.norm.weight', [5], 4),
    ],
    [t('lm_head.weight', [64, 64], 5)],
  ]);
}

/** A dense task's shape, enough for pieceRanges. */
function fakeTask(tensors: [string, 'F16' | 'F32' | 'BF16', number[]][]): Task {
  return {
    tensors: tensors.map(([key, dtype, shape]) => ({ key, dtype, shape, stages: [], recipe: { kind: 'convert', src: key } })),
  } as unknown as Task;
}

describe('dense tasks in pieces', () => {
  it('cuts the data region into contiguous ranges on element boundaries of the tensor each cut falls in', () => {
    const task = fakeTask([
      ['a', 'F32', [1001]],
      ['e', 'F16', [0]],
      ['b', 'F16', [3, 333]],
      ['c', 'F32', [7]],
    ]);
    const sizes = [4004, 0, 1998, 28];
    const starts = [0, 4004, 4004, 6002];
    for (const pieceBytes of [1, 3, 100, 1000, 4003, 4004, 4005, 10_000]) {
      const r = pieceRanges(task, pieceBytes);
      expect(r[0]![0]).toBe(0);
      expect(r.at(-1)![1]).toBe(6030);
      for (let i = 1; i < r.length; i++) expect(r[i]![0]).toBe(r[i - 1]![1]);
      for (const [a, b] of r) {
        expect(b).toBeGreaterThan(a);
        // a cut inside a tensor lands on one of its element boundaries
        const k = starts.findIndex((s, j) => a > s && a < s + sizes[j]!);
        if (k >= 0) expect((a - starts[k]!) % (k === 0 || k === 3 ? 4 : 2), `${pieceBytes}: ${a} in tensor ${k}`).toBe(0);
        expect(b - a).toBeLessThanOrEqual(Math.max(pieceBytes, 1) + 3);
      }
    }
    expect(pieceRanges(task, 1 << 20)).toEqual([[0, 6030]]);
  });

  it('workers side by side take pieces of different files: two tasks at a time, one piece of each in turn', () => {
    const job = (id: string, i: number): Job => ({ task: { id } as Task, piece: [i, i + 1] });
    const lists = [0, 1, 2].map((n) => Array.from({ length: n === 1 ? 2 : 3 }, (_, i) => job(`t${n}`, i)));
    const order = interleave(lists, 2).map((j) => `${j.task.id}:${j.piece![0]}`);
    expect(order).toEqual(['t0:0', 't1:0', 't0:1', 't1:1', 't0:2', 't2:0', 't2:1', 't2:2']);
  });

  it('a pieced run with two workers equals the reference value by value and the unpieced run byte for byte', async () => {
    const src = path.join(tempDir(), 'odd');
    await oddCheckpoint(src);
    const pieced = await runPrepare({
      checkpoint: src,
      dtype: 'float16',
      out: path.join(tempDir(), 'pieced'),
      workers: 2,
      workerPath: workerPath(),
      pieceBytes: 4096,
    });
    const whole = await runPrepare({ checkpoint: src, dtype: 'float16', out: path.join(tempDir(), 'whole'), workers: 0 });
    expect(pieced.executor!.maxConcurrent).toBe(2);
    expect(pieced.executor!.pieces).toBeGreaterThan(50);
    expect(whole.executor!.pieces).toBe(0);
    for (const key of ['model.embed_tokens.weight', 'model.empty', 'model.f32_weight', 'model.norm.weight', 'lm_head.weight']) {
      const got = await readKey(pieced.outDir, key);
      expect(sameBytes(got, await readKey(whole.outDir, key)), key).toBe(true);
      const s = await readKey(src, key);
      const want =
        key === 'model.f32_weight'
          ? Array.from(new Float32Array(s.slice().buffer), (x) => refHalf(x))
          : Array.from(u16(s), (b) => refHalf(bf16ToNumber(b)));
      expect([...u16(got)], key).toEqual(want);
    }
    // the tallies: every source byte read once, every output byte written once, across pieces
    const plan = await planPrepare({ checkpoint: src, dtype: 'float16' });
    for (const task of plan.tasks) {
      const st = pieced.executor!.stats.get(task.id)!;
      for (const s of Object.values(task.sources)) expect(st.readBytes[s.key] ?? 0, s.key).toBe(s.byteLength);
      for (const o of task.tensors) {
        expect(st.writtenBytes[o.key], o.key).toBe(o.shape.reduce((a, b) => a * b, 1) * 2);
        expect(st.stages[o.key]).toEqual(o.stages);
      }
    }
  });

  it('a piece that fails (a source cut short after planning) fails the run and leaves no output file', async () => {
    const src = path.join(tempDir(), 'odd');
    await oddCheckpoint(src);
    const plan = await planPrepare({ checkpoint: src, dtype: 'float16' });
    const shard = path.join(src, 'model-00001-of-00002.safetensors');
    fs.truncateSync(shard, fs.statSync(shard).size - 1000);
    const outDir = tempDir();
    const err = await runTasks(plan.tasks, { outDir, budgetBytes: 1 << 30, workers: 2, workerPath: workerPath(), pieceBytes: 4096 }).catch(
      (e: Error) => e,
    );
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/model-00001-of-00002\.safetensors: .*run past/);
    expect((err as Error).message).not.toContain('\n');
    // the failed task's file is neither there nor half there (its temp file was removed)
    const failed = plan.tasks.find((x) => x.sourceFiles.includes(shard))!.file;
    expect(fs.readdirSync(outDir).filter((f) => f.includes(failed) || f.includes('tmp'))).toEqual([]);
  });
});
