// Small helpers shared by the server tests (data made in code, in temp dirs).
import { openSync, readSync, closeSync } from 'node:fs';

/** The JSON header of a safetensors file, read independently of core. */
export function safetensorsHeaderJson(file: string): Record<string, unknown> {
  const fd = openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    readSync(fd, len, 0, 8, 0);
    const n = Number(len.readBigUInt64LE());
    const buf = Buffer.alloc(n);
    readSync(fd, buf, 0, n, 8);
    return JSON.parse(buf.toString('utf8')) as Record<string, unknown>;
  } finally {
    closeSync(fd);
  }
}
