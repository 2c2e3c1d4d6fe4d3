// The safetensors viewer's page (core/src/view): the tensors of a checkpoint from its headers,
// the shard a key lives in, totals, links to the spec inputs that use a key, and one line for
// a file that cannot be read. Expected values come from the files, parsed here independently.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCheckpointPage, buildViewerPage, specInputKeyRange, type CheckpointPage } from '../../src/view';
import { describeFixtures, fixturesDir } from '../../../test/support/fixtures';
import { qwen3MoeTensors, writeSparseCheckpoint } from '../../../test/support/sparse-checkpoint.mjs';
import { tempDirs } from '../../../test/support/temp';

const tmp = tempDirs('ws-view-ck-');
const BYTES: Record<string, number> = { BF16: 2, F16: 2, F32: 4, I64: 8 };

/** key → {dtype, shape} of a safetensors file, read with JSON.parse only. */
function header(file: string): Record<string, { dtype: string; shape: number[]; data_offsets: number[] }> {
  const fd = fs.openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    fs.readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE(0));
    const h = Buffer.alloc(n);
    fs.readSync(fd, h, 0, n, 8);
    const json = JSON.parse(h.toString('utf8'));
    delete json.__metadata__;
    return json;
  } finally {
    fs.closeSync(fd);
  }
}

async function page(file: string, specs?: { file: string; text: string }[]): Promise<CheckpointPage> {
  const r = await buildViewerPage(file, specs ? { specs } : {});
  if (r.page.kind !== 'checkpoint') throw new Error(`expected a checkpoint page, got ${JSON.stringify(r.page)}`);
  return r.page;
}

describeFixtures('checkpoint page of a fixture', () => {
  const llama = path.join(fixturesDir(), 'llama');
  const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];

  it('opening either shard shows the whole indexed checkpoint: every key with dtype, shape, bytes and shard', async () => {
    for (const opened of shards) {
      const p = await page(path.join(llama, opened));
      expect(p.layout).toBe('index');
      expect(p.files.map((f) => f.name)).toEqual(shards);
      const want = shards.flatMap((s, i) => Object.entries(header(path.join(llama, s))).map(([key, t]) => ({ key, t, shard: i })));
      expect(p.tensors.map((t) => t.key).sort()).toEqual(want.map((w) => w.key).sort());
      for (const w of want) {
        const got = p.tensors.find((t) => t.key === w.key)!;
        expect(got.dtype).toBe(w.t.dtype);
        expect(got.shape).toEqual(w.t.shape);
        expect(got.bytes).toBe(w.t.shape.reduce((a, b) => a * b, 1) * BYTES[w.t.dtype]!);
        expect(got.shard).toBe(w.shard);
      }
      expect(p.totalBytes).toBe(want.reduce((s, w) => s + w.t.data_offsets[1]! - w.t.data_offsets[0]!, 0));
      expect(p.files.map((f) => f.tensors)).toEqual(shards.map((s) => Object.keys(header(path.join(llama, s))).length));
      // Storage order: within a shard by data offset.
      const first = p.tensors.filter((t) => t.shard === 0).map((t) => header(path.join(llama, shards[0]!))[t.key]!.data_offsets[0]!);
      expect(first).toEqual([...first].sort((a, b) => a - b));
    }
  });

  it('links each key to the spec inputs that read it (through a symlinked folder too), and only those', async () => {
    const dir = tmp();
    fs.symlinkSync(llama, path.join(dir, 'ckpt'));
    const h1 = header(path.join(llama, shards[0]!));
    const h2 = header(path.join(llama, shards[1]!));
    const k1 = Object.keys(h1)[0]!;
    const k2 = Object.keys(h2)[0]!;
    const spec = {
      files: [
        { format: 'safetensors', path: `ckpt/${shards[0]}` },
        { format: 'safetensors', path: `ckpt/${shards[1]}` },
      ],
      inputs: [
        { location: { file: 0, key: k1 }, name: 'graph.in.a' },
        { location: { file: 1, key: k2 }, name: k2 },
        { location: { file: 0, key: k2 }, name: 'wrong.shard' }, // k2 is not in shard 0: no link
        { location: { file: 1, key: 'no.such.key' }, name: 'missing' },
      ],
      version: 5,
    };
    const specFile = path.join(dir, 'weight_spec.json');
    const text = JSON.stringify(spec, null, 2);
    const other = path.join(tmp(), 'weight_spec.json');
    const otherText = JSON.stringify({
      files: [{ format: 'safetensors', path: 'elsewhere.safetensors' }],
      inputs: [{ location: { file: 0, key: k1 }, name: k1 }],
      version: 5,
    });
    const p = await page(path.join(llama, shards[1]!), [
      { file: specFile, text },
      { file: other, text: otherText },
    ]);
    expect(p.linkedSpecs).toEqual([specFile]);
    expect(Object.keys(p.links).sort()).toEqual([k1, k2].sort());
    expect(p.links[k1]!.map((l) => [l.spec, l.input, l.name])).toEqual([[specFile, 0, 'graph.in.a']]);
    expect(p.links[k2]!.map((l) => [l.input, l.name])).toEqual([[1, k2]]);
    // Following a link selects the key's string in the spec text.
    const r = specInputKeyRange(text, specFile, p.links[k2]![0]!.input)!;
    expect(text.slice(r.start, r.end)).toBe(JSON.stringify(k2));
    expect(specInputKeyRange(text, specFile, 99)).toBeUndefined();
  });

  it('a stray file beside an unrelated checkpoint is shown alone', async () => {
    const dir = tmp();
    for (const s of shards) fs.copyFileSync(path.join(llama, s), path.join(dir, s));
    fs.copyFileSync(path.join(llama, 'model.safetensors.index.json'), path.join(dir, 'model.safetensors.index.json'));
    fs.copyFileSync(path.join(llama, shards[0]!), path.join(dir, 'extra.safetensors'));
    const p = await page(path.join(dir, 'extra.safetensors'));
    expect(p.layout).toBe('single');
    expect(p.files.map((f) => f.name)).toEqual(['extra.safetensors']);
    expect(p.tensors.length).toBe(Object.keys(header(path.join(llama, shards[0]!))).length);
  });
});

describe('checkpoint page of a generated 20,000-tensor checkpoint', () => {
  it('reads 16 sparse shards of a 60 GB Qwen3-MoE layout from their headers', async () => {
    const dir = tmp();
    const tensors = qwen3MoeTensors({ layers: 51 });
    expect(tensors.length).toBeGreaterThanOrEqual(20_000);
    const { totalBytes } = writeSparseCheckpoint(dir, tensors, 16);
    const t0 = performance.now();
    const p = await buildCheckpointPage(path.join(dir, 'model-00007-of-00016.safetensors'));
    const ms = performance.now() - t0;
    expect(p.tensors.length).toBe(tensors.length);
    expect(p.files.length).toBe(16);
    expect(p.totalBytes).toBe(totalBytes);
    expect(p.tensors.map((t) => t.key)).toEqual(tensors.map((t) => t.key)); // written in this order, shard by shard
    const expert = p.tensors.find((t) => t.key === 'model.layers.50.mlp.experts.127.down_proj.weight')!;
    expect([expert.dtype, expert.shape, expert.bytes, p.files[expert.shard]!.name]).toEqual([
      'BF16',
      [2048, 768],
      2048 * 768 * 2,
      'model-00016-of-00016.safetensors',
    ]);
    // The data (60 GB of holes) is never read: reading it would take minutes, not this.
    expect(ms).toBeLessThan(20_000);
  });
});

describe('a file that cannot be read', () => {
  it('gives one line naming the file and what is wrong', async () => {
    const dir = tmp();
    const cases: [string, Buffer | string, RegExp][] = [
      ['truncated.safetensors', Buffer.from([0x10, 0, 0, 0, 0, 0, 0, 0, 0x7b]), /header length 16 runs past the end/],
      ['json.safetensors', '{"not": "safetensors"}', /safetensors|header/],
      ['empty.safetensors', '', /too short/],
    ];
    for (const [name, bytes, why] of cases) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, bytes);
      const r = await buildViewerPage(file);
      expect(r.page.kind).toBe('error');
      const msg = (r.page as { message: string }).message;
      expect(msg).toContain(file);
      expect(msg).toMatch(why);
      expect(msg).not.toContain('\n');
      expect(msg).not.toMatch(/\bat .*\.(ts|js):\d+/); // no stack
    }
    const gone = await buildViewerPage(path.join(dir, 'missing.safetensors'));
    expect(gone.page).toMatchObject({ kind: 'error' });
    expect((gone.page as { message: string }).message).toMatch(/missing\.safetensors: does not exist/);
  });
});
