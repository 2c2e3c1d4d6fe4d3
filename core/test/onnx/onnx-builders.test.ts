/**
 * Builders, tensor bytes from every storage form, metadata helpers, atomic writes and reads
 * by offset, on models made here (expected bytes are written independently with Buffer).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import {
  AttributeType,
  decodeModel,
  encodeModel,
  externalTensor,
  getMetadata,
  makeAttribute,
  makeNode,
  makeTensor,
  makeValueInfo,
  metadataRecord,
  readInitializerBytes,
  readModel,
  setMetadata,
  summarizeOnnx,
  TensorDataType,
  tensorBytes,
  writeModel,
  type ModelProto,
  type TensorProto,
} from '../../src/formats/onnx';

const tmp = tempDirs('onnx-build-')();

function le(kind: 'f32' | 'f64' | 'i64' | 'u64' | 'i32' | 'u32' | 'u16' | 'i8', xs: (number | bigint)[]): Buffer {
  const w = { f32: 4, f64: 8, i64: 8, u64: 8, i32: 4, u32: 4, u16: 2, i8: 1 }[kind];
  const b = Buffer.alloc(xs.length * w);
  xs.forEach((x, i) => {
    if (kind === 'f32') b.writeFloatLE(Number(x), i * 4);
    else if (kind === 'f64') b.writeDoubleLE(Number(x), i * 8);
    else if (kind === 'i64') b.writeBigInt64LE(BigInt(x), i * 8);
    else if (kind === 'u64') b.writeBigUInt64LE(BigInt(x), i * 8);
    else if (kind === 'i32') b.writeInt32LE(Number(x), i * 4);
    else if (kind === 'u32') b.writeUInt32LE(Number(x), i * 4);
    else if (kind === 'u16') b.writeUInt16LE(Number(x), i * 2);
    else b.writeInt8(Number(x), i);
  });
  return b;
}

const T = TensorDataType;
const typed: [TensorProto, Buffer][] = [
  [{ name: 'f', dataType: T.FLOAT, dims: [3], floatData: [1.5, -2, 1e-3] }, le('f32', [1.5, -2, 1e-3])],
  [{ name: 'd', dataType: T.DOUBLE, dims: [2], doubleData: [Math.PI, -0.5] }, le('f64', [Math.PI, -0.5])],
  [{ name: 'l', dataType: T.INT64, dims: [3], int64Data: [-1, 2 ** 40, 7] }, le('i64', [-1n, 2n ** 40n, 7n])],
  [{ name: 'i', dataType: T.INT32, dims: [2], int32Data: [-5, 123456] }, le('i32', [-5, 123456])],
  [{ name: 'h', dataType: T.FLOAT16, dims: [2], int32Data: [0x3c00, 0xc000] }, le('u16', [0x3c00, 0xc000])],
  [{ name: 'b', dataType: T.INT8, dims: [3], int32Data: [-1, 5, -128] }, le('i8', [-1, 5, -128])],
  [{ name: 'q', dataType: T.BOOL, dims: [2], int32Data: [1, 0] }, Buffer.from([1, 0])],
  [{ name: 'u', dataType: T.UINT32, dims: [2], uint64Data: [4000000000, 1] }, le('u32', [4000000000, 1])],
  [{ name: 'U', dataType: T.UINT64, dims: [1], uint64Data: [2 ** 50] }, le('u64', [2n ** 50n])],
];

describe('tensor bytes', () => {
  test.each(typed.map(([t, b]) => [t.name!, t, b] as const))('typed %s → little-endian bytes', (_n, t, want) => {
    expect(Buffer.from(tensorBytes(t)).equals(want)).toBe(true);
  });

  test('typed initializers in a file: summary sizes and reads by offset', async () => {
    const file = path.join(tmp, 'typed.onnx');
    await writeModel(file, {
      irVersion: 9,
      opsetImport: [{ version: 21 }],
      graph: {
        name: 'g',
        node: [makeNode('Identity', ['f'], ['y'])],
        initializer: typed.map(([t]) => t),
        output: [makeValueInfo('y', 'F32', [3])],
      },
    });
    const s = await summarizeOnnx(file);
    for (const [i, [t, want]] of typed.entries()) {
      const si = s.initializers[i]!;
      expect([si.name, si.storage, si.byteLength]).toEqual([t.name, 'typed', want.length]);
      expect(Buffer.from(await readInitializerBytes(file, si)).equals(want)).toBe(true);
    }
  });

  test('external and STRING tensors have no in-file bytes', () => {
    expect(() => tensorBytes(externalTensor('e', 'F32', [2], { location: 'w.bin', offset: 0 }))).toThrow(/externally/);
    expect(() => tensorBytes({ name: 's', dataType: T.STRING, dims: [1], stringData: [Buffer.from('x')] })).toThrow(/STRING/);
  });
});

describe('builders', () => {
  test('makeTensor checks sizes and dims', () => {
    expect(makeTensor('w', 'BF16', [2, 3], new Uint8Array(12))).toMatchObject({ dataType: 16, dims: [2, 3] });
    expect(() => makeTensor('w', 'F32', [2, 3], new Uint8Array(12))).toThrow(/12 bytes given.*need 24/);
    expect(() => makeTensor('w', 'F32', [-1], new Uint8Array(0))).toThrow(/invalid dims/);
    expect(() => makeTensor('w', 'NOPE' as never, [1], new Uint8Array(4))).toThrow(/unknown dtype/);
  });

  test('externalTensor writes location/offset/length entries', () => {
    expect(externalTensor('w', 'F16', [4, 4], { location: 'a.safetensors', offset: 4096 })).toEqual({
      name: 'w',
      dataType: 10,
      dims: [4, 4],
      dataLocation: 1,
      externalData: [
        { key: 'location', value: 'a.safetensors' },
        { key: 'offset', value: '4096' },
        { key: 'length', value: '32' },
      ],
    });
  });

  test('makeAttribute kinds', () => {
    expect(makeAttribute('axis', 'int', -1)).toEqual({ name: 'axis', type: AttributeType.INT, i: -1 });
    expect(makeAttribute('eps', 'float', 1e-5)).toEqual({ name: 'eps', type: AttributeType.FLOAT, f: 1e-5 });
    expect(makeAttribute('perm', 'ints', [0, 2, 1])).toEqual({ name: 'perm', type: AttributeType.INTS, ints: [0, 2, 1] });
    expect(makeAttribute('s', 'floats', [0.5])).toEqual({ name: 's', type: AttributeType.FLOATS, floats: [0.5] });
    expect(makeAttribute('mode', 'string', 'constant')).toEqual({
      name: 'mode',
      type: AttributeType.STRING,
      s: new TextEncoder().encode('constant'),
    });
    expect(() => makeAttribute('axis', 'int', 1.5)).toThrow(/not an integer/);
  });

  test('a model with subgraphs, functions and sparse initializers round-trips', () => {
    const then: ModelProto['graph'] = {
      name: 'then',
      node: [makeNode('Identity', ['a'], ['o'])],
      output: [makeValueInfo('o', 'F32', [1])],
    };
    const m: ModelProto = {
      irVersion: 10,
      opsetImport: [
        { domain: '', version: 21 },
        { domain: 'local', version: 1 },
      ],
      producerName: 'p',
      modelVersion: 3,
      graph: {
        name: 'g',
        node: [
          {
            ...makeNode('If', ['c'], ['o']),
            attribute: [
              { name: 'then_branch', type: AttributeType.GRAPH, g: then },
              { name: 'else_branch', type: AttributeType.GRAPH, g: then },
            ],
          },
          makeNode('Twice', ['o'], ['z'], [], 'call', 'local'),
        ],
        input: [makeValueInfo('c', 'BOOL', []), makeValueInfo('a', 'F32', [1])],
        output: [makeValueInfo('z', 'F32', undefined)],
        sparseInitializer: [
          { values: makeTensor('sp', 'F32', [1], new Uint8Array(4)), indices: { dataType: 7, dims: [1], int64Data: [3] }, dims: [8] },
        ],
      },
      functions: [
        {
          name: 'Twice',
          domain: 'local',
          input: ['x'],
          output: ['y'],
          node: [makeNode('Add', ['x', 'x'], ['y'])],
          opsetImport: [{ domain: '', version: 21 }],
        },
      ],
      metadataProps: [{ key: 'a', value: '1' }],
      configuration: [{ name: 'two-cards', numDevices: 2, device: ['qaic:0', 'qaic:1'] }],
    };
    const back = decodeModel(encodeModel(m), 'mem.onnx');
    expect(decodeModel(encodeModel(back), 'mem.onnx')).toEqual(back);
    expect(back.functions![0]!.node![0]!.opType).toBe('Add');
    expect(back.graph!.node![0]!.attribute![0]!.g!.node![0]!.opType).toBe('Identity');
    expect(back.graph!.sparseInitializer![0]!.dims).toEqual([8]);
    expect(back.configuration).toEqual([{ name: 'two-cards', numDevices: 2, device: ['qaic:0', 'qaic:1'] }]);
    expect(back.graph!.output![0]!.type!.tensorType!.shape).toBeUndefined();
  });

  test('encodeModel refuses objects that are not a ModelProto', () => {
    expect(() => encodeModel({ irVersion: 'eight' } as never)).toThrow(/invalid ModelProto/);
  });
});

describe('metadata, files', () => {
  test('setMetadata replaces in place, removes, keeps order', () => {
    const m: ModelProto = {
      metadataProps: [
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'a', value: '3' },
      ],
    };
    expect(getMetadata(m, 'a')).toBe('3');
    setMetadata(m, 'a', 'x');
    expect(m.metadataProps).toEqual([
      { key: 'a', value: 'x' },
      { key: 'b', value: '2' },
    ]);
    setMetadata(m, 'c', 'y');
    setMetadata(m, 'b', undefined);
    expect({ ...metadataRecord(m) }).toEqual({ a: 'x', c: 'y' });
    expect(getMetadata(m, 'b')).toBeUndefined();
  });

  test('writeModel replaces atomically; readModel names unreadable files', async () => {
    const file = path.join(tmp, 'w.onnx');
    const base = { irVersion: 8, graph: { name: 'one' } };
    await writeModel(file, base);
    await writeModel(file, { ...base, graph: { name: 'two' } });
    expect((await readModel(file)).graph!.name).toBe('two');
    expect(fs.readdirSync(tmp).filter((n) => n.includes('.tmp-'))).toEqual([]);
    await expect(readModel(path.join(tmp, 'missing.onnx'))).rejects.toThrow(FormatError);
    await expect(summarizeOnnx(path.join(tmp, 'missing.onnx'))).rejects.toThrow(/missing\.onnx: file does not exist/);
    await expect(summarizeOnnx(tmp)).rejects.toThrow(/onnx-build-[^/]*: is a directory, expected a file$/);
    await expect(summarizeOnnx(tmp)).rejects.toBeInstanceOf(FormatError);
  });

  test('unknown (newer) fields are skipped by the summary and the decoder', async () => {
    const file = path.join(tmp, 'newer.onnx');
    const bytes = Buffer.concat([
      Buffer.from(encodeModel({ irVersion: 11, graph: { name: 'g' } })),
      Buffer.from([0x98, 0x06, 0x05, 0x9a, 0x06, 0x01, 0x00]) /* field 99: varint, then bytes */,
    ]);
    fs.writeFileSync(file, bytes);
    expect((await summarizeOnnx(file)).graphName).toBe('g');
    expect(decodeModel(bytes, file).graph!.name).toBe('g');
  });

  test('external data: refused locations and out-of-file ranges', async () => {
    const dir = path.join(tmp, 'ext');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'w.bin'), Buffer.alloc(16));
    const file = path.join(dir, 'm.onnx');
    const mk = (location: string, offset: number) =>
      writeModel(file, {
        irVersion: 8,
        graph: { name: 'g', initializer: [externalTensor('w', 'F32', [4], { location, offset })] },
      });
    for (const [loc, off, want] of [
      ['../w.bin', 0, /must be a relative path/],
      [path.join(dir, 'w.bin'), 0, /must be a relative path/],
      ['w.bin', 8, /outside the file \(16 bytes\)/],
      ['nope.bin', 0, /cannot read/],
    ] as const) {
      await mk(loc, off);
      const s = await summarizeOnnx(file);
      await expect(readInitializerBytes(file, s.initializers[0]!)).rejects.toThrow(want);
      await expect(readInitializerBytes(file, s.initializers[0]!)).rejects.toBeInstanceOf(FormatError);
    }
  });
});
