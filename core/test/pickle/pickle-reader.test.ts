/**
 * The `.bin` reader on checkpoints the tests build: a zip with `archive/data.pkl` (the
 * stream CPython's pickler writes for torch.save, assembled here from opcodes) and
 * `archive/data/N` storages. Tensor bytes must come back exactly as encoded.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import { openTorchBin } from '../../src/formats/pickle';
import { buildTorchBin, buildZip, stateDictPickle, type TensorDesc } from '../support/pickle-build';

const makeTmp = tempDirs('ws-pickle-');
let tmp: string;
beforeAll(() => {
  tmp = makeTmp();
});

let n = 0;
function write(bytes: Uint8Array): string {
  const f = path.join(tmp, `m${n++}.bin`);
  fs.writeFileSync(f, bytes);
  return f;
}

/** Deterministic pseudo-random bytes. */
function bytesOf(len: number, seed: number): Uint8Array {
  const out = new Uint8Array(len);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < len; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

// CPython 3.11 pickle.dumps of an OrderedDict state dict with torch's persistent_id
// (`a.weight` [2,3] and a strided view `b` [2] stride 3 offset 1 of storage 0), protocol 2 and 4.
const CPYTHON_P2 =
  '800263636f6c6c656374696f6e730a4f726465726564446963740a710029527101285808000000612e776569676874710263746f7263682e5f7574696c730a5f72656275696c645f74656e736f725f76320a71032828580700000073746f72616765710463746f7263680a466c6f617453746f726167650a71055801000000307106580300000063707571074b06747108514b004b024b038671094b034b0186710a8968002952710b74710c52710d580100000062710e6803282868046805680668074b0674710f514b014b028571104b0385711189680029527112747113527114757d711558090000005f6d657461646174617116680029527117580000000071187d7119580700000076657273696f6e711a4b01737373622e';
const CPYTHON_P4 =
  '800495f2000000000000008c0b636f6c6c656374696f6e73948c0b4f72646572656444696374949394295294288c08612e776569676874948c0c746f7263682e5f7574696c73948c125f72656275696c645f74656e736f725f763294939428288c0773746f72616765948c05746f726368948c0c466c6f617453746f726167659493948c0130948c03637075944b067494514b004b024b0386944b034b018694896802295294749452948c016294680728286808680b680c680d4b067494514b014b0285944b03859489680229529474945294757d948c095f6d657461646174619468022952948c00947d948c0776657273696f6e944b01737373622e';
const TWO: TensorDesc[] = [
  { key: 'a.weight', storageKey: '0', storageType: 'FloatStorage', storageNumel: 6, offset: 0, shape: [2, 3], stride: [3, 1] },
  { key: 'b', storageKey: '0', storageType: 'FloatStorage', storageNumel: 6, offset: 1, shape: [2], stride: [3] },
];
const f32 = (...v: number[]) => new Uint8Array(Float32Array.from(v).buffer);

describe('test builder', () => {
  it('emits the same bytes as CPython for the same state dict (so tests exercise real streams)', () => {
    expect(Buffer.from(stateDictPickle(TWO, 2)).toString('hex')).toBe(CPYTHON_P2);
    expect(Buffer.from(stateDictPickle(TWO, 4)).toString('hex')).toBe(CPYTHON_P4);
  });
});

describe('openTorchBin', () => {
  for (const [proto, hex] of [
    [2, CPYTHON_P2],
    [4, CPYTHON_P4],
  ] as const) {
    it(`reads the CPython protocol-${proto} stream: contiguous tensor and strided view`, async () => {
      const storage = f32(1, 2, 3, 4, 5, 6);
      const bin = await openTorchBin(write(buildTorchBin(Buffer.from(hex, 'hex'), { '0': storage })));
      try {
        expect(bin.prefix).toBe('archive');
        expect(bin.tensors.map((t) => [t.key, t.dtype, t.shape, t.contiguous])).toEqual([
          ['a.weight', 'F32', [2, 3], true],
          ['b', 'F32', [2], false],
        ]);
        expect(await bin.read(bin.tensors[0]!)).toEqual(storage);
        expect(await bin.read(bin.tensors[1]!)).toEqual(f32(2, 5));
        expect(bin.skipped).toEqual([]);
      } finally {
        await bin.close();
      }
    });
  }

  it('reads every storage dtype byte-exactly, with offsets into shared storages', async () => {
    const types: [string, number][] = [
      ['DoubleStorage', 8],
      ['FloatStorage', 4],
      ['HalfStorage', 2],
      ['BFloat16Storage', 2],
      ['LongStorage', 8],
      ['IntStorage', 4],
      ['ShortStorage', 2],
      ['CharStorage', 1],
      ['ByteStorage', 1],
      ['BoolStorage', 1],
    ];
    const descs: TensorDesc[] = [];
    const storages: Record<string, Uint8Array> = {};
    const expected = new Map<string, Uint8Array>();
    types.forEach(([st, es], i) => {
      const data = bytesOf(24 * es, i + 1);
      storages[String(i)] = data;
      descs.push({
        key: `m.${st}.full`,
        storageKey: String(i),
        storageType: st,
        storageNumel: 24,
        offset: 0,
        shape: [4, 6],
        stride: [6, 1],
      });
      descs.push({
        key: `m.${st}.tail`,
        storageKey: String(i),
        storageType: st,
        storageNumel: 24,
        offset: 12,
        shape: [2, 3, 2],
        stride: [6, 2, 1],
      });
      expected.set(`m.${st}.full`, data);
      expected.set(`m.${st}.tail`, data.subarray(12 * es, 24 * es));
    });
    const bin = await openTorchBin(write(buildTorchBin(stateDictPickle(descs, 2), storages)));
    try {
      expect(bin.tensors.map((t) => t.dtype)).toEqual([
        'F64',
        'F64',
        'F32',
        'F32',
        'F16',
        'F16',
        'BF16',
        'BF16',
        'I64',
        'I64',
        'I32',
        'I32',
        'I16',
        'I16',
        'I8',
        'I8',
        'U8',
        'U8',
        'BOOL',
        'BOOL',
      ]);
      for (const t of bin.tensors) expect(Buffer.from(await bin.read(t)).equals(Buffer.from(expected.get(t.key)!))).toBe(true);
    } finally {
      await bin.close();
    }
  });

  it('materializes transposed, expanded, scalar and empty tensors correctly', async () => {
    // storage: 0..11 as int32; W is [3,4] row-major.
    const vals = Int32Array.from({ length: 12 }, (_, i) => i * 7 - 20);
    const storage = new Uint8Array(vals.buffer);
    const descs: TensorDesc[] = [
      { key: 'wt', storageKey: '0', storageType: 'IntStorage', storageNumel: 12, offset: 0, shape: [4, 3], stride: [1, 4] },
      { key: 'col2_expanded', storageKey: '0', storageType: 'IntStorage', storageNumel: 12, offset: 2, shape: [2, 3], stride: [0, 4] },
      { key: 'scalar', storageKey: '0', storageType: 'IntStorage', storageNumel: 12, offset: 5, shape: [], stride: [] },
      { key: 'empty', storageKey: '0', storageType: 'IntStorage', storageNumel: 12, offset: 0, shape: [0, 3], stride: [3, 1] },
      { key: 'unit_dims', storageKey: '0', storageType: 'IntStorage', storageNumel: 12, offset: 4, shape: [1, 4, 1], stride: [99, 1, 7] },
    ];
    const bin = await openTorchBin(write(buildTorchBin(stateDictPickle(descs, 4), { '0': storage })));
    try {
      const got = async (k: string) => Array.from(new Int32Array((await bin.read(bin.tensors.find((t) => t.key === k)!)).slice().buffer));
      const at = (r: number, c: number) => vals[r * 4 + c]!;
      expect(await got('wt')).toEqual([0, 1, 2, 3].flatMap((c) => [0, 1, 2].map((r) => at(r, c))));
      expect(await got('col2_expanded')).toEqual([at(0, 2), at(1, 2), at(2, 2), at(0, 2), at(1, 2), at(2, 2)]);
      expect(await got('scalar')).toEqual([vals[5]]);
      expect(await got('empty')).toEqual([]);
      expect(await got('unit_dims')).toEqual([at(1, 0), at(1, 1), at(1, 2), at(1, 3)]);
      expect(bin.tensors.find((t) => t.key === 'unit_dims')!.contiguous).toBe(true);
    } finally {
      await bin.close();
    }
  });

  it('unwraps nn.Parameter, reads ZIP64, deflated data.pkl and any archive prefix', async () => {
    const data = bytesOf(64, 9);
    const descs: TensorDesc[] = [
      { key: 'p', storageKey: '7', storageType: 'FloatStorage', storageNumel: 16, offset: 0, shape: [16], stride: [1], parameter: true },
    ];
    const pkl = stateDictPickle(descs, 2);
    for (const opts of [{ zip64: true }, { deflatePickle: true, align: 0 }, { prefix: 'pytorch_model', byteorder: null }]) {
      const bin = await openTorchBin(write(buildTorchBin(pkl, { '7': data }, opts)));
      expect(bin.tensors.map((t) => t.key)).toEqual(['p']);
      expect(await bin.read(bin.tensors[0]!)).toEqual(data);
      await bin.close();
    }
  });
});

describe('openTorchBin refuses what it cannot read', () => {
  const refuse = async (bytes: Uint8Array, re: RegExp) => {
    const f = write(bytes);
    const err = await openTorchBin(f).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(FormatError);
    expect((err as FormatError).message).toMatch(re);
    expect((err as FormatError).message).toContain(f);
    expect((err as FormatError).message.includes('\n')).toBe(false);
  };

  it('refuses the legacy (pre-1.6) pickle format with a re-save hint', async () => {
    // torch legacy: pickle of the magic number 0x1950a86a20f9469cfc6c first.
    await refuse(
      Uint8Array.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19, 0x2e]),
      /legacy \(pre-1\.6\).*re-save/,
    );
  });

  it('refuses tar, empty zip, garbage, big-endian storages and zips without data.pkl', async () => {
    const tar = new Uint8Array(1024);
    tar.set(Buffer.from('ustar'), 257);
    await refuse(tar, /tar-format/);
    await refuse(buildZip([]), /empty zip/);
    await refuse(Buffer.from('hello world, not a checkpoint'), /not a PyTorch zip/);
    await refuse(buildTorchBin(stateDictPickle(TWO, 2), { '0': f32(1, 2, 3, 4, 5, 6) }, { byteorder: 'big' }), /big-endian/);
    await refuse(buildZip([{ name: 'x/other.txt', data: Buffer.from('x') }]), /no <archive>\/data\.pkl/);
  });

  it('refuses a storage entry shorter than declared and a missing storage', async () => {
    await refuse(buildTorchBin(stateDictPickle(TWO, 2), { '0': f32(1, 2, 3) }), /storage 0 holds 12 bytes but 24 are declared/);
    await refuse(buildTorchBin(stateDictPickle(TWO, 2), {}), /archive\/data\/0 is missing/);
  });

  it('refuses a corrupted data.pkl (CRC) and a truncated zip', async () => {
    const good = buildTorchBin(stateDictPickle(TWO, 2), { '0': f32(1, 2, 3, 4, 5, 6) });
    const bad = good.slice();
    const at = Buffer.from(bad).indexOf(Buffer.from('a.weight'));
    bad[at] ^= 0x20;
    await refuse(bad, /CRC mismatch/);
    await refuse(good.subarray(0, good.length - 30), /end-of-central-directory|central directory/);
  });
});
