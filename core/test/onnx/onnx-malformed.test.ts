/**
 * A corpus of broken ONNX files: every one must give one FormatError that names the file and
 * says what is wrong — from the full decode and from the metadata-only summary alike — and
 * never a crash, a RangeError or a hang.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { tempDirs } from '../../../test/support/temp';
import { FormatError } from '../../src/errors';
import { decodeModel, encodeModel, makeNode, makeTensor, makeValueInfo, summarizeOnnxSync } from '../../src/formats/onnx';
import { len, tag, varint } from '../support/wire-bytes';

const tmp = tempDirs('onnx-bad-')();

const utf8 = (s: string) => [...Buffer.from(s)];
const bytes = (...parts: (number[] | Uint8Array)[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

/** A valid model: ir_version 8, opset 17, one MatMul with a 2×2 raw_data initializer. */
const good = encodeModel({
  irVersion: 8,
  opsetImport: [{ domain: '', version: 17 }],
  graph: {
    name: 'g',
    node: [makeNode('MatMul', ['X', 'W'], ['Y'])],
    initializer: [makeTensor('W', 'F32', [2, 2], new Uint8Array(16).fill(7))],
    input: [makeValueInfo('X', 'F32', [1, 2])],
    output: [makeValueInfo('Y', 'F32', [1, 2])],
  },
});
const rawAt = Buffer.from(good).indexOf(Buffer.alloc(16, 7));
const IR = bytes(tag(1, 0), varint(8));
/** A producer_name after the graph, so an inner length that lies stays inside the file. */
const TAIL = len(2, utf8('x'.repeat(100)));
/** A graph around one hand-written TensorProto body. */
const withTensor = (tensor: number[]) => bytes(IR, len(7, bytes(len(5, tensor))), TAIL);

let seed = 12345;
const rand = (n: number) => Uint8Array.from({ length: n }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed >>> 16) & 0xff);

function safetensors(): Uint8Array {
  const header = Buffer.from(JSON.stringify({ w: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }));
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(header.length));
  return Buffer.concat([n, header, Buffer.alloc(8)]);
}

function nested(depth: number): Uint8Array {
  // NodeProto.attribute → AttributeProto.g → GraphProto.node → … `depth` times, inside a valid
  // model; built inside out as a list of prefixes (nothing follows a nested message).
  const prefixes: number[][] = [];
  let size = 0;
  for (let i = 0; i < depth; i++) {
    for (const field of [1, 6, 5]) {
      const p = [...tag(field, 2), ...varint(size)];
      prefixes.push(p);
      size += p.length;
    }
  }
  const body = Uint8Array.from(prefixes.reverse().flat());
  return bytes(IR, len(7, len(1, [...len(4, utf8('If')), ...body])));
}

const cases: { name: string; data: Uint8Array; want: RegExp; decodeOnly?: boolean }[] = [
  { name: 'empty file', data: new Uint8Array(0), want: /empty/ },
  { name: 'random bytes (1 KiB)', data: rand(1024), want: /./ },
  { name: 'random bytes (7)', data: rand(7), want: /./ },
  { name: 'truncated after 1 byte', data: good.subarray(0, 1), want: /truncated varint.*file ends/ },
  { name: 'truncated in the graph header', data: good.subarray(0, 8), want: /claims \d+ bytes but the file ends|truncated varint/ },
  { name: 'truncated inside raw_data', data: good.subarray(0, rawAt + 5), want: /claims \d+ bytes but the file ends/ },
  { name: 'truncated by one byte', data: good.subarray(0, good.length - 1), want: /claims \d+ bytes but the file ends|truncated/ },
  {
    name: 'graph length past EOF',
    data: bytes(IR, tag(7, 2), varint(1_000_000), [1, 2, 3]),
    want: /ModelProto.graph \(field 7\) claims 1000000 bytes but the file ends/,
  },
  {
    name: 'raw_data length past its tensor',
    data: withTensor([...tag(9, 2), ...varint(50), 1, 2, 3]),
    want: /TensorProto.raw_data \(field 9\) claims 50 bytes but the enclosing TensorProto ends/,
  },
  {
    name: 'ir_version with wire type 2',
    data: bytes(len(1, [8]), len(7, [])),
    want: /ModelProto\.ir_version \(field 1\) has wire type 2, expected 0/,
  },
  {
    name: 'tensor name as a varint',
    data: withTensor([...tag(8, 0), 5]),
    want: /TensorProto\.name \(field 8\) has wire type 0, expected 2/,
  },
  { name: 'protobuf group', data: bytes(IR, tag(15, 3), tag(15, 4)), want: /groups \(wire type 3\)/ },
  { name: 'invalid wire type 7', data: bytes(IR, [0x0f]), want: /invalid wire type 7/ },
  { name: 'field number 0', data: bytes([0x02, 0x00]), want: /invalid field number 0/ },
  { name: 'varint longer than 10 bytes', data: bytes(tag(1, 0), new Array(11).fill(0xff), [0]), want: /varint longer/ },
  { name: 'trailing garbage', data: bytes(good, [0xff]), want: /truncated varint/ },
  { name: 'a JSON file', data: Uint8Array.from(Buffer.from('{"version": 5, "files": []}\n')), want: /JSON/ },
  { name: 'a safetensors file', data: safetensors(), want: /safetensors/ },
  { name: 'a zip file', data: bytes([0x50, 0x4b, 0x03, 0x04], new Array(30).fill(0)), want: /zip/ },
  { name: 'no graph', data: IR, want: /no graph/ },
  { name: 'no ir_version', data: bytes(len(7, [])), want: /no ir_version/ },
  { name: 'implausible ir_version', data: bytes(tag(1, 0), varint(1000), len(7, [])), want: /implausible ir_version 1000/ },
  {
    name: 'raw_data size contradicts dims',
    data: withTensor([...tag(1, 0), 4, ...tag(2, 0), 1, ...len(8, utf8('w')), ...len(9, [0, 0, 0, 0])]),
    want: /raw_data has 4 bytes but dims \[4\] of data_type 1 need 16/,
  },
  {
    name: 'typed data count contradicts dims',
    data: withTensor([...tag(1, 0), 3, ...tag(2, 0), 7, ...len(7, [1, 2])]),
    want: /typed data holds 2 values but dims \[3\] need 3/,
  },
  {
    name: 'external data without location',
    data: withTensor([...tag(2, 0), 1, ...len(13, len(1, utf8('offset'))), ...tag(14, 0), 1]),
    want: /names no location/,
  },
  {
    name: 'external offset not a number',
    data: withTensor([
      ...tag(2, 0),
      1,
      ...len(13, [...len(1, utf8('location')), ...len(2, utf8('w.bin'))]),
      ...len(13, [...len(1, utf8('offset')), ...len(2, utf8('-4'))]),
    ]),
    want: /offset "-4" is not a non-negative integer/,
  },
  {
    name: 'opset version truncated',
    data: bytes(IR, len(8, [...tag(2, 0), 0x80])),
    want: /truncated varint \(OperatorSetIdProto.version \(field 2\)\)/,
  },
  {
    name: 'dim length past its shape',
    data: bytes(IR, len(7, len(11, [...len(1, utf8('x')), ...len(2, len(1, len(2, [...tag(1, 2), 9])))])), TAIL),
    want: /claims 9 bytes but the enclosing TensorShapeProto ends/,
  },
  { name: 'nesting 5000 deep', data: nested(5000), want: /nested too deeply/, decodeOnly: true },
];

describe('malformed ONNX corpus', () => {
  test('the corpus is big and the base model is valid', () => {
    expect(cases.length).toBeGreaterThanOrEqual(15);
    const file = path.join(tmp, 'good.onnx');
    fs.writeFileSync(file, good);
    expect(summarizeOnnxSync(file).initializers[0]!.byteOffset).toBe(rawAt);
    expect(decodeModel(good, file).graph!.node!.length).toBe(1);
  });

  for (const c of cases) {
    test(c.name, () => {
      const file = path.join(tmp, `${c.name.replace(/\W+/g, '-')}.onnx`);
      fs.writeFileSync(file, c.data);
      const paths: [string, () => unknown][] = [['decodeModel', () => decodeModel(fs.readFileSync(file), file)]];
      if (!c.decodeOnly) paths.push(['summarizeOnnx', () => summarizeOnnxSync(file)]);
      for (const [which, run] of paths) {
        let err: unknown;
        try {
          run();
        } catch (e) {
          err = e;
        }
        expect(err, `${which} must throw`).toBeInstanceOf(FormatError);
        const fe = err as FormatError;
        expect(fe.file).toBe(file);
        expect(fe.message.startsWith(`${file}: `)).toBe(true);
        expect(fe.message).not.toMatch(/\n/);
        expect(fe.detail, `${which}: ${fe.message}`).toMatch(c.want);
        if (process.env.SHOW_ONNX_ERRORS) console.log(`${c.name} [${which}]: ${fe.message}`);
      }
    });
  }
});
