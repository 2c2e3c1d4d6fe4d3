/**
 * Table-driven corpus of malformed safetensors files, index files and checkpoint
 * directories (made here in a temp dir). Each must be refused with one FormatError that
 * names the offending file and says what is wrong — no crash, no hang, no allocation of a
 * size the header merely claims.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import {
  Checkpoint,
  parseSafetensorsHeader,
  readSafetensorsHeader,
  readSafetensorsHeaderSync,
  serializeSafetensors,
} from '../../src/formats/safetensors';

const tmp = tempDirs('ws-st-bad-')();
/** A fresh checkpoint folder per case. */
const checkpointDir = tempDirs('ws-st-bad-ck-');

/** A file: 8-byte LE length (default: the header's byte length) + header + data bytes. */
function st(header: string | Buffer, data = 0, length?: bigint): Buffer {
  const h = typeof header === 'string' ? Buffer.from(header, 'utf8') : header;
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(length ?? BigInt(h.length));
  return Buffer.concat([len, h, Buffer.alloc(data)]);
}
const t = (dtype: string, shape: unknown, offsets: unknown) => ({ dtype, shape, data_offsets: offsets });
const hdr = (o: Record<string, unknown>) => JSON.stringify(o);
const good = serializeSafetensors([{ key: 'w', dtype: 'F32', shape: [2], data: new Uint8Array(8) }]);

interface FileCase {
  name: string;
  bytes: Buffer;
  error: RegExp;
}

const fileCases: FileCase[] = [
  { name: 'empty file', bytes: Buffer.alloc(0), error: /0 bytes, too short/ },
  { name: 'five bytes', bytes: Buffer.from([1, 2, 3, 4, 5]), error: /5 bytes, too short/ },
  { name: 'header length zero', bytes: st('', 8), error: /header length is 0/ },
  {
    name: 'header length 2^40',
    bytes: st('{}', 0, 2n ** 40n),
    error: /not a safetensors file \(its first 8 bytes are no header length up to the 100000000-byte limit\)/,
  },
  {
    name: 'header length 2^64-1',
    bytes: st('{}', 0, 2n ** 64n - 1n),
    error: /not a safetensors file \(its first 8 bytes are no header length up to the 100000000-byte limit\)/,
  },
  { name: 'header length past end of file', bytes: st('{}', 0, 100n), error: /header length 100 runs past the end of the 10-byte file/ },
  { name: 'truncated inside the header', bytes: Buffer.from(good).subarray(0, 30), error: /runs past the end/ },
  { name: 'not JSON', bytes: st('{"a": '), error: /header is not valid JSON/ },
  { name: 'JSON array', bytes: st('[1, 2]'), error: /does not start with "\{"/ },
  { name: 'JSON string', bytes: st('"{}"'), error: /does not start with "\{"/ },
  { name: 'JSON then garbage', bytes: st('{} xyz'), error: /not valid JSON/ },
  { name: 'trailing comma', bytes: st('{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},}', 1), error: /not valid JSON/ },
  { name: 'comment', bytes: st('{/* c */}'), error: /not valid JSON/ },
  { name: 'invalid UTF-8', bytes: st(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])), error: /not valid UTF-8/ },
  { name: 'unknown dtype', bytes: st(hdr({ w: t('F12', [1], [0, 2]) }), 2), error: /tensor "w": unknown dtype "F12"/ },
  { name: 'lower-case dtype', bytes: st(hdr({ w: t('f32', [1], [0, 4]) }), 4), error: /unknown dtype "f32"/ },
  { name: 'missing dtype', bytes: st(hdr({ w: { shape: [1], data_offsets: [0, 4] } }), 4), error: /unknown dtype undefined/ },
  { name: 'entry not an object', bytes: st(hdr({ w: 5 })), error: /tensor "w": entry is 5, not an object/ },
  { name: 'shape not an array', bytes: st(hdr({ w: t('F32', 2, [0, 8]) }), 8), error: /shape is 2, not an array/ },
  { name: 'negative dim', bytes: st(hdr({ w: t('F32', [-1], [0, 4]) }), 4), error: /shape\[0\] is -1, not a non-negative integer/ },
  { name: 'float dim', bytes: st(hdr({ w: t('F32', [1.5], [0, 4]) }), 4), error: /shape\[0\] is 1.5/ },
  { name: 'string dim', bytes: st(hdr({ w: t('F32', ['2'], [0, 8]) }), 8), error: /shape\[0\] is "2"/ },
  {
    name: 'huge dims (2^90 elements)',
    bytes: st(hdr({ w: t('U8', [2 ** 30, 2 ** 30, 2 ** 30], [0, 8]) }), 8),
    error: /more elements than any file can hold/,
  },
  {
    name: 'claims 2^60 bytes (shape and offsets agree)',
    bytes: st(hdr({ w: t('U8', [2 ** 50, 1024], [0, 2 ** 60]) }), 8),
    error: /tensor "w": shape \[1125899906842624,1024\] has more elements than any file can hold/,
  },
  {
    name: 'claims 2^50 bytes of data in a small file',
    bytes: st(hdr({ w: t('U8', [2 ** 50], [0, 2 ** 50]) }), 8),
    error: /run past the 8-byte data region/,
  },
  {
    name: 'shape × size ≠ byte length',
    bytes: st(hdr({ w: t('F32', [2], [0, 4]) }), 4),
    error: /shape \[2\] × F32 \(4 bytes\) needs 8 bytes but data_offsets \[0, 4\] span 4/,
  },
  {
    name: 'data_offsets missing',
    bytes: st(hdr({ w: { dtype: 'F32', shape: [1] } }), 4),
    error: /data_offsets is missing, not \[begin, end\]/,
  },
  { name: 'data_offsets of three', bytes: st(hdr({ w: t('F32', [1], [0, 4, 8]) }), 4), error: /data_offsets is an array of 3/ },
  { name: 'data_offsets negative', bytes: st(hdr({ w: t('F32', [1], [-4, 0]) }), 4), error: /data_offsets begin is -4/ },
  { name: 'data_offsets strings', bytes: st(hdr({ w: t('F32', [1], ['0', '4']) }), 4), error: /data_offsets begin is "0"/ },
  { name: 'data_offsets reversed', bytes: st(hdr({ w: t('F32', [1], [4, 0]) }), 4), error: /end before they begin/ },
  { name: 'offsets past end of file', bytes: st(hdr({ w: t('F32', [25], [0, 100]) }), 8), error: /run past the 8-byte data region/ },
  { name: 'data region truncated', bytes: st(hdr({ w: t('F32', [2], [0, 8]) }), 4), error: /run past the 4-byte data region/ },
  {
    name: 'overlapping tensors',
    bytes: st(hdr({ a: t('F32', [2], [0, 8]), b: t('F32', [2], [4, 12]) }), 12),
    error: /tensor "b" data_offsets \[4, 12\] overlap "a"/,
  },
  { name: 'identical offsets (aliasing)', bytes: st(hdr({ a: t('F32', [1], [0, 4]), b: t('F32', [1], [0, 4]) }), 4), error: /overlap/ },
  {
    name: 'gap between tensors',
    bytes: st(hdr({ a: t('F32', [1], [0, 4]), b: t('F32', [1], [8, 12]) }), 12),
    error: /gap in the data region: bytes 4\.\.8/,
  },
  { name: 'data does not start at 0', bytes: st(hdr({ a: t('F32', [1], [4, 8]) }), 8), error: /gap in the data region: bytes 0\.\.4/ },
  { name: 'trailing bytes after the last tensor', bytes: st(hdr({ a: t('F32', [1], [0, 4]) }), 8), error: /4 trailing bytes/ },
  {
    name: 'duplicate tensor key',
    bytes: st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 4),
    error: /header has the key "a" twice/,
  },
  {
    name: 'duplicate key spelled with an escape',
    bytes: st('{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"\\u0061":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', 1),
    error: /key "a" twice/,
  },
  {
    name: 'duplicate key inside an entry',
    bytes: st('{"a":{"dtype":"U8","dtype":"F32","shape":[1],"data_offsets":[0,1]}}', 1),
    error: /key "dtype" twice/,
  },
  // The duplicate check is made with the entries' walk: it still wins over an entry's error before or after it.
  {
    name: 'duplicate key before a bad entry',
    bytes: st(
      '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"X"}}',
      1,
    ),
    error: /header has the key "a" twice/,
  },
  {
    name: 'duplicate key after a bad entry',
    bytes: st(
      '{"b":{"dtype":"X"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
      1,
    ),
    error: /header has the key "a" twice/,
  },
  {
    name: 'duplicate key inside the metadata after a bad entry',
    bytes: st('{"b":{"dtype":"X"},"__metadata__":{"f":"pt","f":"pt"}}', 1),
    error: /header has the key "f" twice/,
  },
  { name: 'a bad entry without duplicates', bytes: st('{"b":{"dtype":"X"}}', 1), error: /tensor "b": unknown dtype "X"/ },
  { name: '__metadata__ a string', bytes: st(hdr({ __metadata__: 'x' })), error: /__metadata__ must be an object of strings/ },
  { name: '__metadata__ null', bytes: st(hdr({ __metadata__: null })), error: /__metadata__ must be an object/ },
  {
    name: '__metadata__ with a number value',
    bytes: st(hdr({ __metadata__: { format: 1 } })),
    error: /__metadata__ value for "format" is 1, not a string/,
  },
  { name: 'deeply nested metadata', bytes: st(`{"__metadata__":${'['.repeat(200_000)}${']'.repeat(200_000)}}`), error: /nests deeper/ },
];

describe('malformed safetensors files', () => {
  for (const c of fileCases) {
    it(c.name, async () => {
      const file = path.join(tmp, `${c.name.replace(/[^a-z0-9]+/gi, '-')}.safetensors`);
      fs.writeFileSync(file, c.bytes);
      const err = await readSafetensorsHeader(file).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FormatError);
      const fe = err as FormatError;
      expect(fe.file).toBe(file);
      expect(fe.message.startsWith(`${file}: `)).toBe(true);
      expect(fe.message).toMatch(c.error);
      expect(fe.message).not.toContain('\n');
      if (fe.byte !== undefined) expect(fe.byte).toBeLessThanOrEqual(c.bytes.length);
      // The sync reader and the in-memory parser agree.
      expect(() => readSafetensorsHeaderSync(file)).toThrow(fe.message);
      expect(() => parseSafetensorsHeader(c.bytes, c.bytes.length, file)).toThrow(FormatError);
    });
  }

  it('points at the offending tensor entry', async () => {
    const text = hdr({ a: t('F32', [1], [0, 4]), bad: t('F12', [1], [4, 8]) });
    const file = path.join(tmp, 'where.safetensors');
    fs.writeFileSync(file, st(text, 8));
    const e = (await readSafetensorsHeader(file).catch((x: unknown) => x)) as FormatError;
    expect(e.byte).toBe(8 + text.indexOf('"bad"'));
  });

  it('refuses a directory, a missing file and a FIFO without blocking', async () => {
    await expect(readSafetensorsHeader(tmp)).rejects.toThrow(new FormatError(tmp, 'is a directory, not a safetensors file').message);
    const missing = path.join(tmp, 'missing.safetensors');
    await expect(readSafetensorsHeader(missing)).rejects.toThrow(`${missing}: file does not exist`);
    const fifo = path.join(tmp, 'pipe.safetensors');
    execFileSync('mkfifo', [fifo]);
    await expect(readSafetensorsHeader(fifo)).rejects.toThrow(`${fifo}: is a FIFO, expected a file`);
    expect(() => readSafetensorsHeaderSync(fifo)).toThrow(`${fifo}: is a FIFO, expected a file`);
  });
});

/** A checkpoint directory case: files to create, what to open, which file the error names. */
interface DirCase {
  name: string;
  files: Record<string, string | Buffer>;
  open?: string;
  blame: string;
  error: RegExp;
}

const shardA = Buffer.from(serializeSafetensors([{ key: 'a', dtype: 'U8', shape: [2], data: new Uint8Array(2) }]));
const shardB = Buffer.from(serializeSafetensors([{ key: 'b', dtype: 'U8', shape: [1], data: new Uint8Array(1) }]));
const INDEX = 'model.safetensors.index.json';
const index = (map: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ metadata: { total_size: 3 }, ...extra, weight_map: map });

const dirCases: DirCase[] = [
  {
    name: 'index not JSON',
    files: { [INDEX]: '{"weight_map": {', 'a.safetensors': shardA },
    blame: INDEX,
    error: /index is not valid JSON/,
  },
  { name: 'index is an array', files: { [INDEX]: '[]' }, blame: INDEX, error: /index JSON is not an object/ },
  { name: 'index without weight_map', files: { [INDEX]: '{"metadata": {}}' }, blame: INDEX, error: /no "weight_map"/ },
  {
    name: 'weight_map is an array',
    files: { [INDEX]: '{"weight_map": ["a.safetensors"]}' },
    blame: INDEX,
    error: /"weight_map" is not an object/,
  },
  {
    name: 'weight_map value not a string',
    files: { [INDEX]: index({ a: 1 }) },
    blame: INDEX,
    error: /weight_map\["a"\] is not a file name/,
  },
  {
    name: 'metadata not an object',
    files: { [INDEX]: index({ a: 'a.safetensors' }, { metadata: 5 }), 'a.safetensors': shardA },
    blame: INDEX,
    error: /"metadata" is not an object/,
  },
  {
    name: 'duplicate key in weight_map',
    files: { [INDEX]: '{"weight_map": {"a": "a.safetensors", "a": "b.safetensors"}}', 'a.safetensors': shardA, 'b.safetensors': shardB },
    blame: INDEX,
    error: /index has the key "a" twice/,
  },
  {
    name: 'absolute shard path',
    files: { [INDEX]: index({ a: '/etc/passwd' }) },
    blame: INDEX,
    error: /shard "\/etc\/passwd" is an absolute path/,
  },
  { name: 'shard path with ..', files: { [INDEX]: index({ a: '../a.safetensors' }) }, blame: INDEX, error: /contains "\.\."/ },
  {
    name: 'shard path escaping via a subdirectory',
    files: { [INDEX]: index({ a: 'sub/../../a.safetensors' }) },
    blame: INDEX,
    error: /contains "\.\."/,
  },
  {
    name: 'Windows drive path',
    files: { [INDEX]: index({ a: 'C:\\weights\\a.safetensors' }) },
    blame: INDEX,
    error: /is an absolute path/,
  },
  { name: 'empty shard name', files: { [INDEX]: index({ a: '' }) }, blame: INDEX, error: /is empty/ },
  {
    name: 'missing shard',
    files: { [INDEX]: index({ a: 'a.safetensors', b: 'gone.safetensors' }), 'a.safetensors': shardA },
    blame: INDEX,
    error: /shard "gone.safetensors" \(for "b"\) does not exist/,
  },
  {
    name: 'key not in its shard',
    files: { [INDEX]: index({ a: 'a.safetensors', b: 'a.safetensors' }), 'a.safetensors': shardA },
    blame: INDEX,
    error: /maps "b" to "a.safetensors", which has no such tensor/,
  },
  {
    name: 'corrupt shard',
    files: { [INDEX]: index({ a: 'a.safetensors' }), 'a.safetensors': st('{"a": nope}') },
    blame: 'a.safetensors',
    error: /header is not valid JSON/,
  },
  {
    name: 'same key in two shards without an index',
    files: { '1.safetensors': shardA, '2.safetensors': shardA },
    blame: '2.safetensors',
    error: /tensor "a" is also in 1.safetensors/,
  },
  {
    name: 'directory without safetensors',
    files: { 'config.json': '{}' },
    blame: '.',
    error: /has no model.safetensors.index.json and no \*.safetensors file/,
  },
  {
    name: 'two index files and no model index',
    files: { 'a.safetensors.index.json': '{}', 'b.safetensors.index.json': '{}' },
    blame: '.',
    error: /several index files/,
  },
  {
    name: 'single corrupt model.safetensors',
    files: { 'model.safetensors': Buffer.from([9, 9, 9]) },
    blame: 'model.safetensors',
    error: /too short/,
  },
  {
    name: 'index opened directly, not JSON object',
    files: { 'x.json': '"hello"' },
    open: 'x.json',
    blame: 'x.json',
    error: /not an object/,
  },
];

describe('malformed checkpoints', () => {
  for (const c of dirCases) {
    it(c.name, async () => {
      const dir = checkpointDir();
      for (const [name, body] of Object.entries(c.files)) fs.writeFileSync(path.join(dir, name), body);
      const err = await Checkpoint.open(path.join(dir, c.open ?? '.')).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(FormatError);
      const fe = err as FormatError;
      const blamed = path.join(dir, c.blame);
      expect(fe.file).toBe(blamed);
      expect(fe.message.startsWith(`${blamed}: `)).toBe(true);
      expect(fe.message).toMatch(c.error);
    });
  }

  it('points at the weight_map entry at fault', async () => {
    const dir = checkpointDir();
    const text = index({ a: 'a.safetensors', b: 'missing.safetensors' });
    fs.writeFileSync(path.join(dir, INDEX), text);
    fs.writeFileSync(path.join(dir, 'a.safetensors'), shardA);
    const e = (await Checkpoint.open(dir).catch((x: unknown) => x)) as FormatError;
    expect(e.byte).toBe(text.indexOf('"b"'));
  });

  it('a bad config.json is a FormatError from config(), not from open()', async () => {
    const dir = checkpointDir();
    fs.writeFileSync(path.join(dir, 'model.safetensors'), shardA);
    fs.writeFileSync(path.join(dir, 'config.json'), '{"a": 1,, }');
    const ck = await Checkpoint.open(dir);
    await expect(ck.config()).rejects.toThrow(`${path.join(dir, 'config.json')}: config.json is not valid JSON`);
    await expect(ck.read('zzz')).rejects.toThrow(/has no tensor "zzz"/);
    await expect(Checkpoint.open(path.join(dir, 'nope'))).rejects.toThrow(`${path.join(dir, 'nope')}: does not exist`);
  });
});
