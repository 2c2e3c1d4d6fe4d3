/**
 * The Checkpoint view over every fixture directory, checked against an independent reading
 * of the same files done here (index.json + raw header bytes with JSON.parse).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { Checkpoint, readSafetensorsHeader, readSafetensorsHeaderSync, readTensorBytes } from '../../src/formats/safetensors';
import { describeFixtures, FIXTURE_FOLDERS, fixturesDir, NOT_CHECKPOINTS } from '../../../test/support/fixtures';

interface Raw {
  file: string;
  dtype: string;
  shape: number[];
  start: number;
  end: number;
}

/** Independent reading: the index's weight_map (if any) and each file's raw JSON header. */
function rawListing(dir: string): Map<string, Raw> {
  const indexFile = path.join(dir, 'model.safetensors.index.json');
  const files = fs.existsSync(indexFile)
    ? [...new Set(Object.values(JSON.parse(fs.readFileSync(indexFile, 'utf8')).weight_map as Record<string, string>))]
    : ['model.safetensors'];
  const out = new Map<string, Raw>();
  for (const name of files) {
    const buf = fs.readFileSync(path.join(dir, name));
    const n = Number(buf.readBigUInt64LE(0));
    const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8')) as Record<
      string,
      { dtype: string; shape: number[]; data_offsets: [number, number] }
    >;
    for (const [key, t] of Object.entries(header)) {
      if (key === '__metadata__') continue;
      out.set(key, {
        file: path.join(dir, name),
        dtype: t.dtype,
        shape: t.shape,
        start: 8 + n + t.data_offsets[0],
        end: 8 + n + t.data_offsets[1],
      });
    }
  }
  if (fs.existsSync(indexFile)) {
    const map = JSON.parse(fs.readFileSync(indexFile, 'utf8')).weight_map as Record<string, string>;
    // The index is authoritative: every mapped key must be in the shard it names.
    for (const [k, f] of Object.entries(map)) expect(out.get(k)?.file).toBe(path.join(dir, f));
    for (const k of [...out.keys()]) if (!(k in map)) out.delete(k);
  }
  return out;
}

/** Every fixture folder that is a checkpoint (llama_lora holds PEFT adapters, read by their own suite). */
const families = FIXTURE_FOLDERS.filter((f) => !(NOT_CHECKPOINTS as readonly string[]).includes(f));

describeFixtures('Checkpoint over the fixtures', () => {
  it('covers every fixture directory', () => {
    const dirs = fs.readdirSync(fixturesDir()).filter((d) => fs.statSync(path.join(fixturesDir(), d)).isDirectory());
    expect(dirs.sort()).toEqual([...FIXTURE_FOLDERS].sort());
  });

  for (const fam of families) {
    it(`${fam}: lists every tensor with the dtype and shape of the raw headers`, async () => {
      const dir = path.join(fixturesDir(), fam);
      const raw = rawListing(dir);
      const ck = await Checkpoint.open(dir);
      expect(ck.keys().sort()).toEqual([...raw.keys()].sort());
      expect(ck.keys().length).toBeGreaterThan(10);
      for (const [key, r] of raw) {
        const t = ck.get(key)!;
        expect(t.file).toBe(r.file);
        expect(t.dtype).toBe(r.dtype);
        expect(t.shape).toEqual(r.shape);
        expect(t.dataOffset).toBe(r.start);
        expect(t.byteLength).toBe(r.end - r.start);
      }
      expect(ck.layout).toBe(fs.existsSync(path.join(dir, 'model.safetensors.index.json')) ? 'index' : 'single');
      expect((await ck.config())?.model_type).toBeTypeOf('string');
    });

    it(`${fam}: reading through the view equals the file's bytes at the header's offsets`, async () => {
      const dir = path.join(fixturesDir(), fam);
      const raw = rawListing(dir);
      const ck = await Checkpoint.open(dir);
      const cache = new Map<string, Buffer>();
      for (const [key, r] of raw) {
        if (!cache.has(r.file)) cache.set(r.file, fs.readFileSync(r.file));
        const want = cache.get(r.file)!.subarray(r.start, r.end);
        const got = await ck.read(key);
        expect(got.length).toBe(want.length);
        expect(Buffer.from(got).equals(want)).toBe(true);
      }
    });
  }

  it('opens the index file itself and a single shard', async () => {
    const dir = path.join(fixturesDir(), 'llama');
    const viaIndex = await Checkpoint.open(path.join(dir, 'model.safetensors.index.json'));
    expect(viaIndex.indexFile).toBe(path.join(dir, 'model.safetensors.index.json'));
    expect(viaIndex.files).toHaveLength(2);
    const shard = path.join(dir, 'model-00002-of-00002.safetensors');
    const one = await Checkpoint.open(shard);
    expect(one.files).toEqual([shard]);
    const h = await readSafetensorsHeader(shard);
    expect(one.keys().sort()).toEqual([...h.tensors.keys()].sort());
    expect(readSafetensorsHeaderSync(shard)).toEqual(h);
    const first = [...h.tensors.values()][0]!;
    expect(await readTensorBytes(shard, first)).toEqual(await one.read(first.key));
  });

  it('gpt_oss: model.safetensors is the checkpoint, expected_dequant.safetensors is not part of it', async () => {
    const ck = await Checkpoint.open(path.join(fixturesDir(), 'gpt_oss'));
    expect(ck.files).toEqual([path.join(fixturesDir(), 'gpt_oss', 'model.safetensors')]);
  });
});
