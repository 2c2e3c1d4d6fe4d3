/**
 * Full decode and encode of ONNX ModelProto with protobufjs, from the official schema in
 * `schema.ts` (parsed once, on first use). Results are plain objects (see `types.ts`).
 *
 * Use this for graphs (a few MB); for reading what a possibly huge model holds use
 * `summarizeOnnx`, which never materializes tensor data.
 */
import protobuf from 'protobufjs';
import { FormatError, oneLine } from '../../errors';
import { atomicWriteFile } from '../../paths/atomic';
import { ONNX_PROTO } from './schema';
import { summarizeOnnxBytes } from './summary';
import { MAX_IR_VERSION, type ModelProto, type TensorProto } from './types';
import { sniffNonOnnx } from './wire-reader';
import { readInputFile } from '../../paths';

let root: protobuf.Root | undefined;

/** The protobufjs root of onnx.proto (parsed on first call). */
export function onnxRoot(): protobuf.Root {
  if (!root) root = protobuf.parse(ONNX_PROTO, { keepCase: false }).root;
  return root;
}

/** A protobufjs message type of onnx.proto, e.g. `messageType('TensorProto')`. */
export function messageType(name: string): protobuf.Type {
  return onnxRoot().lookupType(`onnx.${name}`);
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: Number, arrays: true, defaults: false };

function byteOf(msg: string): number | undefined {
  const m = /offset (\d+)/.exec(msg) ?? /index out of range: (\d+)/.exec(msg);
  return m ? Number(m[1]) : undefined;
}

/** Turns a protobufjs failure into a FormatError naming the file and, where known, the byte. */
function decodeFailure(err: unknown, bytes: Uint8Array, file: string, what: string): FormatError {
  const msg = oneLine(err);
  const sniffed = sniffNonOnnx(bytes.subarray(0, 64), bytes.length);
  if (sniffed) return new FormatError(file, sniffed);
  if (/max depth exceeded|call stack/i.test(msg)) return new FormatError(file, `not an ONNX ${what}: messages nested too deeply`);
  const detail = msg.replace(/^index out of range: (\d+) \+ (\d+) > (\d+)$/, 'a field of $2 bytes at byte $1 runs past the end ($3 bytes)');
  return new FormatError(file, `not an ONNX ${what}: ${detail}`, byteOf(msg));
}

/**
 * Decodes a whole `.onnx` file's bytes. Throws {@link FormatError} (naming `file` and the
 * byte) when the bytes are not a well-formed ModelProto: the wire walk of `summarizeOnnx`
 * runs first (protobufjs alone accepts wrong wire types for known fields and reads garbage),
 * so a model without a graph, with an implausible ir_version, truncated, or with raw_data
 * that contradicts its dims is refused the same way by both paths.
 */
export function decodeModel(bytes: Uint8Array, file: string): ModelProto {
  summarizeOnnxBytes(bytes, file);
  const T = messageType('ModelProto');
  let model: ModelProto;
  try {
    model = T.toObject(T.decode(bytes), TO_OBJECT) as ModelProto;
  } catch (err) {
    throw decodeFailure(err, bytes, file, 'model');
  }
  validateModel(model, bytes, file);
  return model;
}

function validateModel(model: ModelProto, bytes: Uint8Array, file: string): void {
  const sniffed = () => sniffNonOnnx(bytes.subarray(0, 64), bytes.length);
  if (!model.graph) throw new FormatError(file, sniffed() ?? 'not an ONNX model: ModelProto has no graph');
  const ir = model.irVersion;
  if (ir === undefined) throw new FormatError(file, sniffed() ?? 'not an ONNX model: ModelProto has no ir_version');
  if (!Number.isInteger(ir) || ir < 1 || ir > MAX_IR_VERSION) {
    throw new FormatError(file, sniffed() ?? `not an ONNX model: implausible ir_version ${ir}`);
  }
}

/** Decodes one serialized TensorProto (used to read a typed-field initializer by offset). */
export function decodeTensor(bytes: Uint8Array, file: string): TensorProto {
  const T = messageType('TensorProto');
  try {
    return T.toObject(T.decode(bytes), TO_OBJECT) as TensorProto;
  } catch (err) {
    throw decodeFailure(err, bytes, file, 'tensor');
  }
}

/** Encodes a model (plain object in `toObject` shape) to `.onnx` bytes. */
export function encodeModel(model: ModelProto): Uint8Array {
  const T = messageType('ModelProto');
  const problem = T.verify(model);
  if (problem) throw new TypeError(`encodeModel: invalid ModelProto: ${problem}`);
  return T.encode(T.fromObject(model)).finish();
}

/** Reads and decodes a `.onnx` file (the whole file is read: graphs, not 100 GB models). */
export async function readModel(file: string): Promise<ModelProto> {
  return decodeModel(await readInputFile(file), file);
}

/** Encodes and writes a model atomically (temp file in the same directory, fsync, rename). */
export async function writeModel(file: string, model: ModelProto): Promise<void> {
  await atomicWriteFile(file, encodeModel(model));
}
