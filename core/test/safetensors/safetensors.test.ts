/**
 * safetensors writer and reader on real files in a temp dir: round trips, the exact header
 * layout, the writer's order/length checks and atomicity, partial reads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import {
  Checkpoint,
  SafetensorsReader,
  SafetensorsWriter,
  readSafetensorsHeader,
  readSafetensorsHeaderSync,
  readTensorBytes,
  readTensorBytesSync,
  serializeSafetensors,
  writeSafetensors,
  type TensorData,
} from '../../src/formats/safetensors';
import { PipelineError } from '../../src/errors';

const tmp = tempDirs('ws-st-')();
let n = 0;
const fresh = (name = 'x.safetensors') => {
  const d = path.join(tmp, String(n++));
  fs.mkdirSync(d);
  return path.join(d, name);
};

function bytes(len: number, seed: number): Uint8Array {
  const b = new Uint8Array(len);
  for (let i = 0; i < len; i++) b[i] = (i * 31 + seed * 7) & 0xff;
  return b;
}

const sample: TensorData[] = [
  { key: 'model.embed_tokens.weight', dtype: 'BF16', shape: [5, 3], data: bytes(30, 1) },
  { key: 'scalar', dtype: 'F32', shape: [], data: bytes(4, 2) },
  { key: 'empty', dtype: 'F16', shape: [0, 4], data: new Uint8Array(0) },
  { key: 'ids', dtype: 'I64', shape: [3], data: bytes(24, 3) },
  { key: 'flags', dtype: 'BOOL', shape: [2], data: new Uint8Array([0, 1]) },
  { key: 'ключ.ü', dtype: 'U8', shape: [3], data: bytes(3, 4) },
  { key: '__proto__', dtype: 'F64', shape: [1], data: bytes(8, 5) },
  { key: 'fp8', dtype: 'F8_E4M3', shape: [2, 2], data: bytes(4, 6) },
];

describe('round trip', () => {
  it('write → read gives the same tensors, bytes and metadata', async () => {
    const file = fresh();
    await writeSafetensors(file, sample, { format: 'pt', note: 'ünïcode' });
    const h = await readSafetensorsHeader(file);
    expect(h.metadata).toEqual({ format: 'pt', note: 'ünïcode' });
    expect(h.fileSize).toBe(fs.statSync(file).size);
    expect([...h.tensors.keys()].sort()).toEqual(sample.map((t) => t.key).sort());
    for (const t of sample) {
      const info = h.tensors.get(t.key)!;
      expect(info.dtype).toBe(t.dtype);
      expect(info.shape).toEqual(t.shape);
      expect(await readTensorBytes(file, info)).toEqual(t.data);
      expect(readTensorBytesSync(file, info)).toEqual(t.data);
    }
    expect(readSafetensorsHeaderSync(file)).toEqual(h);
    // The file on disk equals the in-memory serialization.
    expect(new Uint8Array(fs.readFileSync(file))).toEqual(serializeSafetensors(sample, { format: 'pt', note: 'ünïcode' }));
    // No temp file is left behind.
    expect(fs.readdirSync(path.dirname(file))).toEqual(['x.safetensors']);
  });

  it('places tensors in declared order, 8-byte aligned data start', async () => {
    const file = fresh();
    await writeSafetensors(file, sample);
    const buf = fs.readFileSync(file);
    const hlen = Number(buf.readBigUInt64LE(0));
    expect((8 + hlen) % 8).toBe(0);
    const json = JSON.parse(buf.subarray(8, 8 + hlen).toString('utf8'));
    let pos = 0;
    for (const t of sample) {
      expect(json[t.key].data_offsets).toEqual([pos, pos + t.data.length]);
      expect(buf.subarray(8 + hlen + pos, 8 + hlen + pos + t.data.length).equals(Buffer.from(t.data))).toBe(true);
      pos += t.data.length;
    }
    expect(buf.length).toBe(8 + hlen + pos);
  });

  it('writes the header exactly as the Rust safetensors does (space padding)', () => {
    const out = serializeSafetensors([{ key: 'a', dtype: 'F32', shape: [1], data: new Uint8Array([1, 2, 3, 4]) }]);
    const json = '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'; // 54 bytes → pad 2 to 56
    expect(json.length).toBe(54);
    const want = Buffer.concat([Buffer.from([56, 0, 0, 0, 0, 0, 0, 0]), Buffer.from(json + '  '), Buffer.from([1, 2, 3, 4])]);
    expect(Buffer.from(out).equals(want)).toBe(true);
  });

  it('reads a file written by hand (the Rust format with __metadata__ first)', async () => {
    const file = fresh();
    const json = '{"__metadata__":{"format":"pt"},"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}';
    const buf = Buffer.concat([Buffer.alloc(8), Buffer.from(json), Buffer.from([0, 0x3c, 0, 0xc0])]);
    buf.writeBigUInt64LE(BigInt(json.length), 0);
    fs.writeFileSync(file, buf);
    const h = await readSafetensorsHeader(file);
    expect(h.headerLength).toBe(json.length);
    expect(h.dataStart).toBe(8 + json.length);
    expect(h.tensors.get('w')).toEqual({
      key: 'w',
      dtype: 'F16',
      shape: [2],
      dataOffset: 8 + json.length,
      byteLength: 4,
      begin: 0,
      end: 4,
    });
    expect([...(await readTensorBytes(file, h.tensors.get('w')!))]).toEqual([0, 0x3c, 0, 0xc0]);
  });

  it('an empty checkpoint ({} header) round trips', async () => {
    const file = fresh();
    await writeSafetensors(file, []);
    expect((await readSafetensorsHeader(file)).tensors.size).toBe(0);
  });
});

describe('SafetensorsWriter', () => {
  const entries = [
    { key: 'a', dtype: 'F32' as const, shape: [2] },
    { key: 'b', dtype: 'BF16' as const, shape: [3, 2] },
  ];

  it('streams parts, then renames atomically on finish', async () => {
    const file = fresh();
    const w = await SafetensorsWriter.open(file, entries, { k: 'v' });
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(w.tempFile)).toBe(true);
    expect(path.dirname(w.tempFile)).toBe(path.dirname(file));
    expect(w.next).toBe('a');
    await w.write('a', bytes(8, 1));
    await w.writePart('b', bytes(5, 2));
    await w.writePart('b', bytes(7, 3));
    expect(w.next).toBeUndefined();
    await w.finish();
    expect(fs.existsSync(w.tempFile)).toBe(false);
    expect(fs.statSync(file).size).toBe(w.size);
    const ck = await Checkpoint.open(file);
    expect(ck.keys()).toEqual(['a', 'b']);
    expect(await ck.read('b')).toEqual(new Uint8Array([...bytes(5, 2), ...bytes(7, 3)]));
  });

  it('refuses wrong order, wrong length, overlong parts and unknown keys', async () => {
    const file = fresh();
    const w = await SafetensorsWriter.open(file, entries);
    await expect(w.write('b', bytes(12, 0))).rejects.toThrow(/out of order; expected "a"/);
    await expect(w.write('a', bytes(7, 0))).rejects.toThrow(/got 7 bytes, declared 8/);
    await w.write('a', bytes(8, 0));
    await expect(w.writePart('b', bytes(13, 0))).rejects.toThrow(/got 13 bytes, declared 12/);
    await w.write('b', bytes(12, 0));
    await expect(w.write('c', bytes(1, 0))).rejects.toThrow(PipelineError);
    await w.finish();
    await expect(w.write('a', bytes(8, 0))).rejects.toThrow(/after finish/);
  });

  it('finish() with missing tensors fails and leaves nothing behind', async () => {
    const file = fresh();
    const w = await SafetensorsWriter.open(file, entries);
    await w.write('a', bytes(8, 0));
    await expect(w.finish()).rejects.toThrow(/1 tensor\(s\) unwritten, first "b"/);
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
  });

  it('abort() removes the temp file and keeps an existing target intact', async () => {
    const file = fresh();
    fs.writeFileSync(file, 'old');
    const w = await SafetensorsWriter.open(file, entries);
    await w.write('a', bytes(8, 0));
    await w.abort();
    await w.abort();
    expect(fs.readdirSync(path.dirname(file))).toEqual(['x.safetensors']);
    expect(fs.readFileSync(file, 'utf8')).toBe('old');
  });

  it('rejects invalid declarations before creating a file', async () => {
    const file = fresh();
    const bad = [
      [
        { key: 'a', dtype: 'F32', shape: [1] },
        { key: 'a', dtype: 'F32', shape: [1] },
      ],
      [{ key: '__metadata__', dtype: 'F32', shape: [1] }],
      [{ key: 'a', dtype: 'F12', shape: [1] }],
      [{ key: 'a', dtype: 'F32', shape: [-1] }],
      [{ key: 'a', dtype: 'F32', shape: [1.5] }],
      [{ key: 'a', dtype: 'F32', shape: [2 ** 30, 2 ** 30] }],
    ];
    for (const e of bad) {
      await expect(SafetensorsWriter.open(file, e as never)).rejects.toThrow(PipelineError);
    }
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
  });

  it('writeSafetensors with a wrong data length fails without leaving a file', async () => {
    const file = fresh();
    await expect(writeSafetensors(file, [{ key: 'a', dtype: 'F32', shape: [2], data: bytes(4, 0) }])).rejects.toThrow(/declared 8/);
    expect(fs.readdirSync(path.dirname(file))).toEqual([]);
  });
});

describe('SafetensorsReader', () => {
  it('reads whole tensors and byte ranges through one descriptor', async () => {
    const file = fresh();
    await writeSafetensors(file, sample);
    const r = await SafetensorsReader.open(file);
    try {
      expect(await r.read('ids')).toEqual(sample[3]!.data);
      expect(await r.read('ids', { start: 8, length: 8 })).toEqual(sample[3]!.data.subarray(8, 16));
      const into = new Uint8Array(16);
      const got = await r.read(r.info('ids')!, { start: 16, length: 8, into });
      expect(got.buffer).toBe(into.buffer);
      expect(got).toEqual(sample[3]!.data.subarray(16, 24));
      await expect(r.read('ids', { start: 20, length: 8 })).rejects.toThrow(RangeError);
      await expect(r.read('nope')).rejects.toThrow(/has no tensor "nope"/);
    } finally {
      await r.close();
    }
  });

  it('reports a file truncated after its header was read', async () => {
    const file = fresh();
    await writeSafetensors(file, sample);
    const h = await readSafetensorsHeader(file);
    fs.truncateSync(file, h.fileSize - 4);
    const last = [...h.tensors.values()].at(-1)!;
    await expect(readTensorBytes(file, last)).rejects.toThrow(new RegExp(`${file}: file ended at byte`));
  });
});

describe('Checkpoint layouts made here', () => {
  it('a directory of shards without an index', async () => {
    const dir = path.dirname(fresh());
    await writeSafetensors(path.join(dir, 'part-2.safetensors'), [sample[3]!]);
    await writeSafetensors(path.join(dir, 'part-1.safetensors'), [sample[0]!, sample[1]!]);
    const ck = await Checkpoint.open(dir);
    expect(ck.layout).toBe('directory');
    expect(ck.files).toEqual([path.join(dir, 'part-1.safetensors'), path.join(dir, 'part-2.safetensors')]);
    expect(ck.keys()).toEqual([sample[0]!.key, sample[1]!.key, sample[3]!.key]);
    expect(ck.fileOf('ids')).toBe(path.join(dir, 'part-2.safetensors'));
    expect(await ck.read('ids')).toEqual(sample[3]!.data);
    expect(ck.totalBytes()).toBe(30 + 4 + 24);
    expect(await ck.config()).toBeUndefined();
  });

  it('an index with shards in a subdirectory and through a symlink', async () => {
    const dir = path.dirname(fresh());
    fs.mkdirSync(path.join(dir, 'sub'));
    await writeSafetensors(path.join(dir, 'sub', 'a.safetensors'), [sample[0]!]);
    const elsewhere = path.dirname(fresh());
    await writeSafetensors(path.join(elsewhere, 'blob'), [sample[1]!]);
    fs.symlinkSync(path.join(elsewhere, 'blob'), path.join(dir, 'b.safetensors'));
    const weight_map = { [sample[0]!.key]: 'sub/a.safetensors', [sample[1]!.key]: 'b.safetensors' };
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: { total_size: 34 }, weight_map }));
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'llama', hidden_size: 8 }));
    const ck = await Checkpoint.open(dir);
    expect(ck.layout).toBe('index');
    expect(ck.indexMetadata).toEqual({ total_size: 34 });
    expect(ck.get('scalar')?.file).toBe(path.join(dir, 'b.safetensors'));
    expect(await ck.read('scalar')).toEqual(sample[1]!.data);
    expect(await ck.config()).toEqual({ model_type: 'llama', hidden_size: 8 });
    expect(ck.has('nope')).toBe(false);
    expect(ck.get('toString')).toBeUndefined();
  });
});

describe('header layout with metadata', () => {
  it('puts __metadata__ first, as the Rust writer does', () => {
    const out = serializeSafetensors([{ key: 'b', dtype: 'U8', shape: [1, 1], data: new Uint8Array([7]) }], { format: 'pt' });
    const json = '{"__metadata__":{"format":"pt"},"b":{"dtype":"U8","shape":[1,1],"data_offsets":[0,1]}}'; // 86 → pad 2
    expect(json.length).toBe(86);
    expect(Buffer.from(out).subarray(8).toString('latin1')).toBe(`${json}  \x07`);
    expect(Buffer.from(out).readBigUInt64LE(0)).toBe(88n);
  });
});

describe('writer I/O errors', () => {
  it('names the output when its directory does not exist', async () => {
    const file = path.join(tmp, 'no-such-dir', 'x.safetensors');
    await expect(writeSafetensors(file, [sample[1]!])).rejects.toThrow(`${file}: cannot create (ENOENT)`);
  });
});
