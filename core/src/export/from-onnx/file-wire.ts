/**
 * Protobuf wire scanning over a file by positional reads, for ONNX files far larger than
 * memory: only tags, lengths and the small fields asked for are read; payloads such as
 * `raw_data` are skipped by offset, and ranges are copied file-to-file in bounded chunks.
 */
import { openSync, readSync, closeSync, fstatSync, writeSync } from 'node:fs';
import { FormatError } from '../../errors';

/** One field of a message in the file: `[start, end)` spans tag and value; `[vStart, vEnd)` the value. */
export interface FileField {
  field: number;
  wire: number;
  start: number;
  end: number;
  vStart: number;
  vEnd: number;
  int?: number;
}

const WINDOW = 1 << 16;
const dec = new TextDecoder('utf-8');

/** A read-only ONNX (or any protobuf) file with a small read-ahead window. */
export class FileWire {
  private win = new Uint8Array(0);
  private winStart = 0;
  readonly size: number;
  private constructor(
    readonly file: string,
    private readonly fd: number,
  ) {
    this.size = fstatSync(fd).size;
  }

  /** Opens `file`; the caller must {@link close} it. */
  static open(file: string): FileWire {
    return new FileWire(file, openSync(file, 'r'));
  }

  close(): void {
    closeSync(this.fd);
  }

  private byte(pos: number): number {
    if (pos < this.winStart || pos >= this.winStart + this.win.length) {
      if (pos >= this.size) throw new FormatError(this.file, 'protobuf data ends inside a field', pos);
      const len = Math.min(WINDOW, this.size - pos);
      this.win = new Uint8Array(len);
      readSync(this.fd, this.win, 0, len, pos);
      this.winStart = pos;
    }
    return this.win[pos - this.winStart]!;
  }

  /** Reads a varint at `pos`: [value, position after it]. */
  varint(pos: number): [number, number] {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      const b = this.byte(pos + i);
      if (i < 8) result += (b & 0x7f) * mul;
      mul *= 128;
      if ((b & 0x80) === 0) return [result, pos + i + 1];
    }
    throw new FormatError(this.file, 'varint longer than 10 bytes', pos);
  }

  /** The fields of the message occupying `[start, end)`. */
  fields(start: number, end: number): FileField[] {
    const out: FileField[] = [];
    let pos = start;
    while (pos < end) {
      const fStart = pos;
      const [tag, p1] = this.varint(pos);
      const field = Math.floor(tag / 8);
      const wire = tag & 7;
      if (field === 0) throw new FormatError(this.file, 'protobuf field number 0', fStart);
      let vStart = p1;
      let vEnd: number;
      let int: number | undefined;
      if (wire === 0) [int, vEnd] = this.varint(p1);
      else if (wire === 1) vEnd = p1 + 8;
      else if (wire === 5) vEnd = p1 + 4;
      else if (wire === 2) {
        const [len, p2] = this.varint(p1);
        vStart = p2;
        vEnd = p2 + len;
      } else throw new FormatError(this.file, `unsupported protobuf wire type ${wire}`, fStart);
      if (vEnd > end) throw new FormatError(this.file, `protobuf field ${field} runs past its message`, fStart);
      out.push({ field, wire, start: fStart, end: vEnd, vStart, vEnd, int });
      pos = vEnd;
    }
    return out;
  }

  /** Reads `[start, end)` (only for small fields: names, shapes, attributes). */
  bytes(start: number, end: number): Uint8Array {
    const buf = new Uint8Array(end - start);
    let done = 0;
    while (done < buf.length) {
      const n = readSync(this.fd, buf, done, buf.length - done, start + done);
      if (n === 0) throw new FormatError(this.file, 'unexpected end of file', start + done);
      done += n;
    }
    return buf;
  }

  /** The UTF-8 string value of a length-delimited field. */
  string(f: FileField): string {
    return dec.decode(this.bytes(f.vStart, f.vEnd));
  }

  /** Copies `[start, end)` of this file to `outFd` in chunks of at most `chunk` bytes. */
  copyTo(outFd: number, start: number, end: number, chunk = 8 << 20): void {
    const buf = new Uint8Array(Math.min(chunk, Math.max(1, end - start)));
    for (let pos = start; pos < end; ) {
      const n = readSync(this.fd, buf, 0, Math.min(buf.length, end - pos), pos);
      if (n === 0) throw new FormatError(this.file, 'unexpected end of file', pos);
      let w = 0;
      while (w < n) w += writeSync(outFd, buf, w, n - w);
      pos += n;
    }
  }
}

/** Encodes a varint (non-negative, < 2^53). */
export function varintBytes(v: number): Uint8Array {
  const out: number[] = [];
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return Uint8Array.from(out);
}
