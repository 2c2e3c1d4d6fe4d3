/**
 * The metadata-only summary of a large ONNX stays small in memory: a synthetic model with
 * ~300 MB of raw_data is summarized (`weight-spec inspect`, in a fresh process) with a peak
 * far below its size, and the offsets it reports are right (bytes after the big tensor read
 * back by offset). Memory is measured in child processes (test/support/peak-rss.ts): inside
 * the test worker the lifetime peak also counted the file's writer and earlier tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { REPO_ROOT } from '../../../test/support/fixtures';
import { peakRss } from '../../../test/support/peak-rss';
import { tempDirs } from '../../../test/support/temp';
import { readInitializerBytes, summarizeOnnx, summarizeOnnxSync } from '../../src/formats/onnx';
import { len, tag, varint } from '../support/wire-bytes';

const BIG = 300_000_000; // bytes of raw_data: 75M float32 values
const MB = 1024 * 1024;

const utf8 = (s: string) => [...Buffer.from(s)];

/** TensorProto bytes up to (and including) raw_data's length prefix. */
function tensorHead(name: string, dims: number[], rawLength: number): number[] {
  return [...len(8, utf8(name)), ...dims.flatMap((d) => [...tag(1, 0), ...varint(d)]), ...tag(2, 0), 1, ...tag(9, 2), ...varint(rawLength)];
}

const tmp = tempDirs('onnx-mem-')();
const file = path.join(tmp, 'big.onnx');
const tinyFile = path.join(tmp, 'tiny.onnx');
const CLI = path.join(REPO_ROOT, 'dist', 'cli.js');
const after = Buffer.from(new Float32Array([1.5, -2, 3.25, 4]).buffer);
let bigOffset = 0;
let afterOffset = 0;

/** Writes the model with `big` bytes of raw_data in its middle tensor; returns the offsets. */
function writeModel(target: string, big: number): { bigOffset: number; afterOffset: number } {
  const small = tensorHead('small', [2], 8);
  const bigHead = tensorHead('big', [1000, big / 4000], big);
  const afterHead = tensorHead('after', [4], 16);
  const initializers = [
    [...tag(5, 2), ...varint(small.length + 8), ...small],
    [...tag(5, 2), ...varint(bigHead.length + big), ...bigHead],
    [...tag(5, 2), ...varint(afterHead.length + 16), ...afterHead],
  ];
  const node = len(1, [...len(1, utf8('x')), ...len(1, utf8('big')), ...len(2, utf8('y')), ...len(4, utf8('MatMul'))]);
  const input = len(11, [
    ...len(1, utf8('x')),
    ...len(2, len(1, [...tag(1, 0), 1, ...len(2, [...len(1, len(2, utf8('n'))), ...len(1, [...tag(1, 0), ...varint(1000)])])])),
  ]);
  const graphLength =
    node.length + input.length + initializers[0]!.length + 8 + initializers[1]!.length + big + initializers[2]!.length + 16;
  const head = [
    ...tag(1, 0),
    8,
    ...len(8, [...tag(2, 0), 17]),
    ...len(14, [...len(1, utf8('k')), ...len(2, utf8('v'))]),
    ...tag(7, 2),
    ...varint(graphLength),
    ...node,
    ...input,
  ];
  const fd = fs.openSync(target, 'w');
  let pos = 0;
  const put = (b: Uint8Array | number[]) => {
    const buf = Buffer.from(b as Uint8Array);
    fs.writeSync(fd, buf, 0, buf.length, pos);
    pos += buf.length;
  };
  put(head);
  put(initializers[0]!);
  put(new Uint8Array(8).fill(9));
  put(initializers[1]!);
  const bigAt = pos;
  const chunk = Buffer.alloc(8 * MB, 0x3c);
  for (let done = 0; done < big; done += chunk.length) put(chunk.subarray(0, Math.min(chunk.length, big - done)));
  put(initializers[2]!);
  const afterAt = pos;
  put(after);
  fs.closeSync(fd);
  return { bigOffset: bigAt, afterOffset: afterAt };
}

beforeAll(() => {
  ({ bigOffset, afterOffset } = writeModel(file, BIG));
  writeModel(tinyFile, 4000);
});

describe('summary memory on a 300 MB model', () => {
  test('summary is right and memory stays far below the file size', async () => {
    expect(fs.statSync(file).size).toBeGreaterThan(BIG);
    const big = peakRss(tmp, [CLI, 'inspect', file]);
    const tiny = peakRss(tmp, [CLI, 'inspect', tinyFile]);
    expect(big.stderr).toBe('');
    expect(big.status).toBe(0);
    expect(big.stdout).toContain('big');
    const grew = (big.kb - tiny.kb) / 1024;
    if (process.env.SHOW_ONNX_MEMORY)
      console.log(`inspect of ${fs.statSync(file).size} bytes: peak ${grew.toFixed(1)} MB over a 4 KB model`);
    // A third of the file: a full read (300 MB, the control below) fails it by far, while
    // allocator slack between two fresh processes does not.
    expect(grew, `peak RSS ${big.kb} KB vs ${tiny.kb} KB for a 4 KB model`).toBeLessThan(100);

    const s = summarizeOnnxSync(file);
    const s2 = await summarizeOnnx(file);
    expect(s2).toEqual(s);
    expect(s.irVersion).toBe(8);
    expect(s.opsets).toEqual([{ domain: '', version: 17 }]);
    expect({ ...s.metadata }).toEqual({ k: 'v' });
    expect(s.inputs).toEqual([{ name: 'x', elemType: 1, dtype: 'F32', dims: ['n', 1000], hasShape: true }]);
    expect(s.initializers.map((t) => [t.name, t.storage, t.dims, t.byteLength])).toEqual([
      ['small', 'raw', [2], 8],
      ['big', 'raw', [1000, BIG / 4000], BIG],
      ['after', 'raw', [4], 16],
    ]);
    expect(s.initializers[1]!.byteOffset).toBe(bigOffset);
    expect(s.initializers[2]!.byteOffset).toBe(afterOffset);
    expect({ ...s.consumers }).toEqual({ x: ['MatMul'], small: [], big: ['MatMul'], after: [] });
    expect(Buffer.from(await readInitializerBytes(file, s.initializers[2]!)).equals(after)).toBe(true);
    expect(Buffer.from(await readInitializerBytes(file, s.initializers[0]!)).equals(Buffer.alloc(8, 9))).toBe(true);
  });

  test('the measurement would see a full read (control)', () => {
    const read = (f: string) =>
      peakRss(tmp, ['-e', `process.stdout.write(String(require('fs').readFileSync(${JSON.stringify(f)}).length))`]);
    const big = read(file);
    const tiny = read(tinyFile);
    expect(Number(big.stdout)).toBeGreaterThan(BIG);
    expect((big.kb - tiny.kb) / 1024).toBeGreaterThan(200);
  });
});
