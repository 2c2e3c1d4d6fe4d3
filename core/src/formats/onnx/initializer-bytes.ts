/**
 * Reading one initializer's bytes by the offsets a summary recorded, without decoding the
 * model: raw_data straight from the file, external data from the file it names, typed
 * fields by decoding only that TensorProto.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';
import { FormatError, oneLine } from '../../errors';
import { tensorBytes } from './builders';
import { decodeTensor } from './codec';
import type { InitializerSummary } from './value-summary';
import { quoted } from './wire-reader';

async function readRange(file: string, offset: number, length: number | undefined, what: string): Promise<Uint8Array> {
  let fh;
  try {
    fh = await open(file, 'r');
  } catch (err) {
    throw new FormatError(file, `cannot read ${what}: ${oneLine(err)}`);
  }
  try {
    const size = (await fh.stat()).size;
    const len = length ?? size - offset;
    if (offset < 0 || len < 0 || offset + len > size) {
      throw new FormatError(file, `${what}: bytes [${offset}, ${offset + len}) are outside the file (${size} bytes)`, offset);
    }
    const out = new Uint8Array(len);
    let done = 0;
    while (done < len) {
      const { bytesRead } = await fh.read(out, done, len - done, offset + done);
      if (bytesRead <= 0) throw new FormatError(file, `${what}: the file ended early`, offset + done);
      done += bytesRead;
    }
    return out;
  } finally {
    await fh.close();
  }
}

/**
 * The path an external_data `location` names, relative to the model's directory. Absolute
 * paths and `..` segments are refused, as ONNX Runtime refuses them.
 */
export function externalDataPath(modelFile: string, location: string): string {
  const parts = location.split(/[\\/]+/);
  if (location === '' || path.isAbsolute(location) || /^[a-zA-Z]:/.test(location) || parts.includes('..')) {
    throw new FormatError(modelFile, `external data location ${quoted(location)} must be a relative path inside the model's directory`);
  }
  return path.join(path.dirname(modelFile), location);
}

/**
 * The little-endian bytes of one initializer that `summarizeOnnx(file)` listed, read by
 * offset: only that tensor's bytes are read.
 */
export async function readInitializerBytes(file: string, init: InitializerSummary): Promise<Uint8Array> {
  const what = `initializer ${quoted(init.name)}`;
  if (init.storage === 'raw') return readRange(file, init.byteOffset!, init.byteLength, what);
  if (init.storage === 'external') {
    const ext = init.external!;
    const target = externalDataPath(file, ext.location);
    return readRange(target, ext.offset, ext.length >= 0 ? ext.length : undefined, `external data of ${what}`);
  }
  const msg = await readRange(file, init.messageOffset, init.messageLength, what);
  try {
    return tensorBytes(decodeTensor(msg, file));
  } catch (err) {
    if (err instanceof FormatError) throw err;
    throw new FormatError(file, `${what}: ${oneLine(err)}`, init.messageOffset);
  }
}
