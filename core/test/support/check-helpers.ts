// Test data for the checker, made in code: safetensors files built byte by byte from the
// format's definition (independent of core/src/formats), in a fresh temp directory.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { varint } from './wire-bytes';
import { tempDirs } from '../../../test/support/temp';

const SIZE: Record<string, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  U8: 1,
  I8: 1,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  F8_E8M0: 1,
};

/** Bytes of a safetensors file holding `tensors` (data filled with a byte pattern). */
export function safetensorsBytes(tensors: { key: string; dtype: string; shape: number[] }[]): Buffer {
  const header: Record<string, unknown> = {};
  let off = 0;
  for (const t of tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1) * SIZE[t.dtype]!;
    header[t.key] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + n] };
    off += n;
  }
  let json = JSON.stringify(header);
  while ((8 + Buffer.byteLength(json)) % 8 !== 0) json += ' ';
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const data = Buffer.alloc(off);
  for (let i = 0; i < off; i++) data[i] = i % 251;
  return Buffer.concat([len, Buffer.from(json), data]);
}

const made = tempDirs('ws-check-');

/** A fresh temp dir, removed after the importing test file's tests. */
export function tempDir(prefix = 'ws-check-'): string {
  return made(prefix);
}

/** Writes a safetensors file (creating parent dirs) and returns its path. */
export function writeTensors(file: string, tensors: { key: string; dtype: string; shape: number[] }[]): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, safetensorsBytes(tensors));
  return file;
}

/** The v5 spec {@link twoFileCheckpoint} writes beside its files. */
export interface TwoFileSpec {
  files: { format: string; path: string }[];
  inputs: { name: string; location: { file: number; key: string } }[];
  model_name: string;
  version: number | string;
}

/**
 * A small two-file checkpoint in `dir/ckpt/` and a v5 spec for it; `extraA` adds tensors to
 * the first file that the spec does not map.
 */
export function twoFileCheckpoint(dir: string, extraA: { key: string; dtype: string; shape: number[] }[] = []): { spec: TwoFileSpec } {
  writeTensors(path.join(dir, 'ckpt', 'a.safetensors'), [
    { key: 'model.embed_tokens.weight', dtype: 'F32', shape: [16, 4] },
    { key: 'model.layers.0.self_attn.q_proj.weight', dtype: 'F32', shape: [4, 4] },
    { key: 'model.layers.0.self_attn.k_proj.weight', dtype: 'F32', shape: [2, 4] },
    ...extraA,
  ]);
  writeTensors(path.join(dir, 'ckpt', 'b.safetensors'), [
    { key: 'model.norm.weight', dtype: 'F32', shape: [4] },
    { key: 'lm_head.weight', dtype: 'F32', shape: [16, 4] },
  ]);
  const input = (name: string, file: number, key = name) => ({ location: { file, key }, name });
  return {
    spec: {
      files: [
        { format: 'safetensors', path: 'ckpt/a.safetensors' },
        { format: 'safetensors', path: 'ckpt/b.safetensors' },
      ],
      inputs: [
        input('model.embed_tokens.weight', 0),
        input('model.layers.0.self_attn.q_proj.weight', 0),
        input('model.layers.0.self_attn.k_proj.weight', 0),
        input('model.norm.weight', 1),
        input('lm_head.weight', 1),
      ],
      model_name: 'tiny',
      version: 5,
    },
  };
}

/** The text range of the n-th (0-based) occurrence of `needle` in `text`. */
export function rangeOf(text: string, needle: string, nth = 0): { start: number; end: number } {
  let at = -1;
  for (let i = 0; i <= nth; i++) {
    at = text.indexOf(needle, at + 1);
    if (at < 0) throw new Error(`"${needle}" not found ${nth + 1} times`);
  }
  return { start: at, end: at + needle.length };
}

// --- a minimal ONNX protobuf writer (wire format by hand, independent of core/src/formats/onnx)

const fieldVarint = (f: number, n: number) => Buffer.from([...varint(f * 8), ...varint(n)]);
const fieldBytes = (f: number, b: Buffer | string) => {
  const buf = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  return Buffer.concat([Buffer.from([...varint(f * 8 + 2), ...varint(buf.length)]), buf]);
};

/** ONNX TensorProto.DataType numbers used in tests. */
export const ELEM = { FLOAT: 1, INT64: 7, FLOAT16: 10, BFLOAT16: 16 } as const;

/** A graph input/output: name, elem type, dims (numbers or symbolic names). */
export interface TestValue {
  name: string;
  elem: number;
  dims: (number | string)[];
}

function valueInfo(v: TestValue): Buffer {
  const dims = v.dims.map((d) => fieldBytes(1, typeof d === 'number' ? fieldVarint(1, d) : fieldBytes(2, d)));
  const shape = fieldBytes(2, Buffer.concat(dims));
  const tensorType = fieldBytes(1, Buffer.concat([fieldVarint(1, v.elem), shape]));
  return Buffer.concat([fieldBytes(1, v.name), fieldBytes(2, tensorType)]);
}

/** Bytes of an ONNX model with the given graph inputs/outputs, no nodes, and metadata. */
export function onnxBytes(inputs: TestValue[], outputs: TestValue[], metadata: Record<string, string> = {}): Buffer {
  const graph = Buffer.concat([
    fieldBytes(2, 'test'),
    ...inputs.map((v) => fieldBytes(11, valueInfo(v))),
    ...outputs.map((v) => fieldBytes(12, valueInfo(v))),
  ]);
  const opset = Buffer.concat([fieldBytes(1, ''), fieldVarint(2, 18)]);
  const meta = Object.entries(metadata).map(([k, v]) => fieldBytes(14, Buffer.concat([fieldBytes(1, k), fieldBytes(2, v)])));
  return Buffer.concat([fieldVarint(1, 8), fieldBytes(2, 'weight-spec-test'), fieldBytes(7, graph), fieldBytes(8, opset), ...meta]);
}
