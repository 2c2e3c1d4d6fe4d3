/**
 * Fuzzing the safetensors header parser: valid files, then byte flips, truncations, lies in
 * the 8-byte length field, huge claimed shapes, bad/overlapping data offsets, duplicate keys,
 * NaN/Infinity, deep JSON and unicode keys. Every input ends in a header whose every tensor
 * lies inside the file, or in one FormatError — read from the header, never allocated.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import { parseSafetensorsHeader, readSafetensorsHeader, type SafetensorsHeader } from '../../src/formats/safetensors';
import { mutated, outcome, outcomeAsync, runFuzz, tally } from '../support/fuzz-harness';

const FILE = 'fuzz.safetensors';
const SIZE: Record<string, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 };
const tmp = tempDirs('ws-fuzz-st-')();

/** Serializes a header object (or raw header text) and a data section into a file image. */
function image(header: unknown, data: Uint8Array, lengthField?: bigint): Uint8Array {
  const text = typeof header === 'string' ? header : JSON.stringify(header);
  const h = Buffer.from(text, 'utf8');
  const out = Buffer.alloc(8 + h.length + data.length);
  out.writeBigUInt64LE(lengthField ?? BigInt(h.length), 0);
  h.copy(out, 8);
  Buffer.from(data).copy(out, 8 + h.length);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

interface T {
  key: string;
  dtype: string;
  shape: number[];
}
const tensor: fc.Arbitrary<T> = fc.record({
  key: fc.oneof(
    fc.constantFrom('model.embed_tokens.weight', 'lm_head.weight', 'a'),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 16 }),
  ),
  dtype: fc.constantFrom(...Object.keys(SIZE)),
  shape: fc.array(fc.nat(5), { maxLength: 3 }),
});

/** A valid file image. */
const validFile = fc.tuple(fc.uniqueArray(tensor, { selector: (t) => t.key, maxLength: 5 }), fc.boolean()).map(([ts, meta]) => {
  const header: Record<string, unknown> = {};
  if (meta) header.__metadata__ = { format: 'pt' };
  let off = 0;
  for (const t of ts) {
    const n = t.shape.reduce((a, b) => a * b, 1) * SIZE[t.dtype]!;
    header[t.key] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + n] };
    off += n;
  }
  return image(header, new Uint8Array(off).fill(0x3c));
});

/** Structure-aware lies: one tensor's fields replaced by hostile values. */
const LIES: unknown[] = [-1, 1.5, 2 ** 53, 2 ** 60, 2 ** 64, 1e308, '4', null, [], {}, true];
const liedFile = fc
  .tuple(tensor, fc.constantFrom('shape', 'data_offsets', 'dtype', 'whole'), fc.constantFrom(...LIES), fc.nat(3))
  .map(([t, field, lie, mode]) => {
    const n = t.shape.reduce((a, b) => a * b, 1) * SIZE[t.dtype]!;
    const entry: Record<string, unknown> = { dtype: t.dtype, shape: t.shape, data_offsets: [0, n] };
    if (field === 'shape') entry.shape = mode === 0 ? lie : [2 ** 30, 2 ** 30, lie];
    else if (field === 'data_offsets') entry.data_offsets = mode === 0 ? lie : mode === 1 ? [lie, n] : [0, lie];
    else if (field === 'dtype') entry.dtype = mode === 0 ? lie : 'F128';
    const header = field === 'whole' ? { [t.key]: lie } : { [t.key]: entry };
    return image(header, new Uint8Array(n));
  });

/** Text-level tricks JSON.stringify cannot produce. */
const textTricks = fc
  .constantFrom(
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}',
    '{"a":{"dtype":"F32","shape":[NaN],"data_offsets":[0,4]}}',
    '{"a":{"dtype":"F32","shape":[Infinity],"data_offsets":[0,4]}}',
    '{"a":{"dtype":"F32","shape":[1e999],"data_offsets":[0,4]}}',
    '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    '{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
    '{"\\ud800":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}',
    '{"__metadata__":{"x":1},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}',
    '{"__metadata__":"x"}',
    `{"a":${'['.repeat(100000)}${']'.repeat(100000)}}`,
    '\ufeff{}',
    '{}    ',
    '',
    'null',
    '[]',
  )
  .map((t) => image(t, new Uint8Array(16)));

const lengthLies = fc
  .tuple(validFile, fc.constantFrom(0n, 1n, 7n, 2n ** 32n, 2n ** 53n, 2n ** 60n, 2n ** 64n - 1n, 100_000_000n))
  .map(([img, len]) => {
    const c = Buffer.from(img);
    c.writeBigUInt64LE(len, 0);
    return new Uint8Array(c);
  });

function checkHeader(h: SafetensorsHeader, size: number): void {
  for (const t of h.tensors.values()) {
    const numel = t.shape.reduce((a, b) => a * b, 1);
    expect(t.byteLength).toBe(numel * SIZE[t.dtype]!);
    expect(t.end - t.begin).toBe(t.byteLength);
    expect(t.dataOffset).toBe(h.dataStart + t.begin);
    expect(t.dataOffset + t.byteLength).toBeLessThanOrEqual(size);
  }
}

function parse(img: Uint8Array): void {
  const r = outcome(FILE, () => parseSafetensorsHeader(img, img.length, FILE));
  if (r.ok) checkHeader(r.value, img.length);
}

describe('safetensors reader fuzz', () => {
  it('parses or refuses mutated files (seeded)', () => {
    tally.reset();
    runFuzz('safetensors-mutations', 2000, mutated(validFile), parse);
    expect(tally.ok).toBeGreaterThan(100);
    expect(tally.refused).toBeGreaterThan(100);
  });
  it('refuses structural lies in the header (seeded)', () => {
    tally.reset();
    runFuzz('safetensors-lies', 800, fc.oneof(liedFile, textTricks, lengthLies), parse);
    expect(tally.refused).toBeGreaterThan(400);
  });

  it('rejects a claimed 2^60-byte tensor from the header, and a 2^60 header length, without allocating', async () => {
    const huge = image({ w: { dtype: 'U8', shape: [2 ** 30, 2 ** 30], data_offsets: [0, 2 ** 60] } }, new Uint8Array(8));
    expect(() => parseSafetensorsHeader(huge, huge.length, FILE)).toThrow(FormatError);
    const f = path.join(tmp, 'huge.safetensors');
    fs.writeFileSync(f, huge);
    expect((await outcomeAsync(f, () => readSafetensorsHeader(f))).ok).toBe(false);
    const lie = Buffer.from(huge);
    lie.writeBigUInt64LE(2n ** 60n, 0);
    fs.writeFileSync(f, lie);
    const r = await outcomeAsync(f, () => readSafetensorsHeader(f));
    expect(r.ok).toBe(false);
  });
});
