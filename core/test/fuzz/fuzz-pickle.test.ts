/**
 * Fuzzing the `.bin` reader: mutated state-dict pickles, random opcode soups and mutated
 * zip containers. Every input ends in a validated state dict or one FormatError, bounded.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { BIN_DTYPE_SIZE, decodeStateDict, openTorchBin } from '../../src/formats/pickle';
import { mutated, outcome, outcomeAsync, runFuzz, runFuzzAsync, tally } from '../support/fuzz-harness';
import { buildTorchBin, stateDictPickle, type TensorDesc } from '../support/pickle-build';

const tmp = tempDirs('ws-fuzz-bin-')();

const STORAGE = ['FloatStorage', 'BFloat16Storage', 'LongStorage', 'BoolStorage', 'HalfStorage'];
const desc: fc.Arbitrary<TensorDesc> = fc
  .record({
    key: fc.string({ unit: 'grapheme', maxLength: 12 }),
    storageKey: fc.constantFrom('0', '1', '2'),
    storageType: fc.constantFrom(...STORAGE),
    storageNumel: fc.oneof(fc.nat(64), fc.constantFrom(2 ** 31, 2 ** 40, 2 ** 53 - 1)),
    offset: fc.oneof(fc.nat(64), fc.constantFrom(-1, 2 ** 40)),
    shape: fc.array(fc.oneof(fc.nat(8), fc.constantFrom(2 ** 30, 2 ** 52)), { maxLength: 4 }),
    parameter: fc.boolean(),
  })
  .chain((d) =>
    fc
      .array(fc.oneof(fc.nat(16), fc.constant(2 ** 40)), { minLength: d.shape.length, maxLength: d.shape.length })
      .map((stride) => ({ ...d, stride })),
  );

const pickles = fc.tuple(fc.array(desc, { maxLength: 5 }), fc.constantFrom(2 as const, 4 as const)).map(([ds, p]) => {
  // One storage key must keep one type/size, as torch writes it.
  const first = new Map<string, TensorDesc>();
  const fixed = ds.map((d) => {
    const f = first.get(d.storageKey) ?? d;
    first.set(d.storageKey, f);
    return { ...d, storageType: f.storageType, storageNumel: f.storageNumel };
  });
  return stateDictPickle(fixed, p);
});

/** A random soup of opcodes a state dict uses, with random small arguments. */
const OPS = [
  0x28, 0x29, 0x30, 0x32, 0x4e, 0x51, 0x52, 0x5d, 0x61, 0x62, 0x65, 0x73, 0x74, 0x75, 0x7d, 0x85, 0x86, 0x87, 0x88, 0x89, 0x93, 0x94,
];
const soup = fc
  .array(
    fc.oneof(
      fc.constantFrom(...OPS).map((o) => [o]),
      fc.tuple(fc.constantFrom(0x4b, 0x68, 0x71, 0x8c), fc.nat(255)).map(([o, a]) => [o, a]),
      fc.constantFrom(
        [...Buffer.from('ccollections\nOrderedDict\n')],
        [...Buffer.from('ctorch._utils\n_rebuild_tensor_v2\n')],
        [...Buffer.from('ctorch\nFloatStorage\n')],
        [0x8c, 7, ...Buffer.from('storage')],
        [0x8c, 1, 0x30],
        [0x8c, 3, ...Buffer.from('cpu')],
      ),
    ),
    { maxLength: 80 },
  )
  .map((parts) => Uint8Array.from([0x80, 2, ...parts.flat(), 0x2e]));

function checkDecoded(pkl: Uint8Array): void {
  const r = outcome('fuzz.bin', () => decodeStateDict(pkl, 'fuzz.bin'));
  if (!r.ok) return;
  for (const t of r.value.tensors) {
    const es = BIN_DTYPE_SIZE[t.dtype];
    expect(t.spanStart + t.spanLength).toBeLessThanOrEqual(t.storage.numel * es);
    expect(t.byteLength).toBe(t.shape.reduce((a, b) => a * b, 1) * es);
  }
}

describe('.bin reader fuzz', () => {
  it('decodes or refuses mutated state-dict pickles (seeded)', () => {
    tally.reset();
    runFuzz('pickle-mutations', 1200, mutated(pickles), checkDecoded);
    expect(tally.ok).toBeGreaterThan(20);
    expect(tally.refused).toBeGreaterThan(50);
  });

  it('decodes or refuses random opcode soups (seeded)', () => {
    runFuzz('pickle-soup', 800, soup, checkDecoded);
  });

  it('opens or refuses mutated .bin zips, and reads every tensor it accepts (seeded)', async () => {
    const good = fc.tuple(fc.array(fc.integer({ min: 1, max: 16 }), { minLength: 1, maxLength: 3 }), fc.boolean()).map(([sizes, zip64]) => {
      const storages: Record<string, Uint8Array> = {};
      const ds: TensorDesc[] = sizes.map((n, i) => {
        storages[String(i)] = new Uint8Array(n * 4).fill(i + 1);
        return { key: `t${i}`, storageKey: String(i), storageType: 'FloatStorage', storageNumel: n, offset: 0, shape: [n], stride: [1] };
      });
      return buildTorchBin(stateDictPickle(ds, 2), storages, { zip64 });
    });
    let i = 0;
    tally.reset();
    await runFuzzAsync('bin-zip-mutations', 400, mutated(good), async (bytes) => {
      const f = path.join(tmp, `f${i++ % 8}.bin`);
      fs.writeFileSync(f, bytes);
      const r = await outcomeAsync(f, async () => {
        const bin = await openTorchBin(f);
        try {
          for (const t of bin.tensors) expect((await bin.read(t)).length).toBe(t.byteLength);
        } finally {
          await bin.close();
        }
      });
      void r;
    });
    expect(tally.ok).toBeGreaterThan(20);
    expect(tally.refused).toBeGreaterThan(20);
  });
});
