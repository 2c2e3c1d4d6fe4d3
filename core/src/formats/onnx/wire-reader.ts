/**
 * A protobuf wire-format reader over a file, by positional reads through a small window, so
 * a message can be walked field by field and a length-delimited payload (raw_data of a
 * multi-GB initializer) skipped by moving the position — its bytes are never read.
 *
 * Every length is checked against the end of its enclosing message before it is trusted;
 * a corrupt file raises one {@link FormatError} naming the file and the byte.
 */
import { closeSync, fstatSync, readSync } from 'node:fs';
import { FormatError } from '../../errors';
import { openRegularFileSync } from '../../paths/file-kind';
import { fieldName, WIRE } from './fields';

const WINDOW = 1 << 20;
const JUMP_WINDOW = 16 << 10;
const utf8 = new TextDecoder('utf-8', { fatal: false });

/** A name from the file for a one-line message: JSON-quoted (control characters escaped), at most 80 chars. */
export function quoted(s: string): string {
  return JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);
}

/** `ModelProto.graph (field 7)`, or `ModelProto field 99` for a field the walk does not know. */
export function fieldLabel(msg: string, field: number): string {
  const name = fieldName(msg, field);
  return name ? `${msg}.${name} (field ${field})` : `${msg} field ${field}`;
}

/** One field of a message: its tag at `start`; value bytes `[vStart, vEnd)`. */
export interface FieldHead {
  field: number;
  wire: number;
  start: number;
  vStart: number;
  vEnd: number;
  /** The varint value (wire type 0 only), int64 two's complement read as a signed number. */
  int: number;
}

/** Positional, windowed reads of one open file (or of bytes already in memory). */
export class FileReader {
  readonly size: number;
  private fd: number;
  private win: Uint8Array = Buffer.allocUnsafe(0);
  private buf: Buffer | undefined;
  private winStart = 0;

  private constructor(
    readonly file: string,
    fd: number,
    bytes?: Uint8Array,
  ) {
    this.fd = fd;
    if (bytes) {
      this.win = bytes;
      this.size = bytes.length;
    } else {
      const st = fstatSync(fd);
      if (!st.isFile()) throw new FormatError(file, st.isDirectory() ? 'is a directory, not an ONNX file' : 'is not a regular file');
      this.size = st.size;
    }
  }

  /** A reader over bytes in memory; `file` names them in errors. */
  static fromBytes(bytes: Uint8Array, file: string): FileReader {
    return new FileReader(file, -1, bytes);
  }

  /** Opens `file` for reading; an unreadable file is a FormatError. */
  static open(file: string): FileReader {
    let fd: number;
    try {
      fd = openRegularFileSync(file);
    } catch (err) {
      throw err instanceof FormatError ? err : new FormatError(file, `cannot read: ${(err as Error).message.split('\n')[0]}`);
    }
    try {
      return new FileReader(file, fd);
    } catch (err) {
      closeSync(fd);
      throw err;
    }
  }

  /** Closes the file (a no-op for in-memory bytes). */
  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** Raises a FormatError at `byte`. */
  fail(detail: string, byte?: number): never {
    throw new FormatError(this.file, detail, byte);
  }

  private fill(pos: number): void {
    if (this.fd < 0 || pos >= this.size) this.fail('read past the end of the data', pos);
    // Sequential scanning (a graph's nodes) reads big windows; a jump past a skipped payload
    // reads a small one, so a model with thousands of large tensors costs KBs per tensor.
    const sequential = pos === this.winStart + this.win.length;
    this.buf ??= Buffer.allocUnsafe(WINDOW);
    const want = Math.min(sequential ? WINDOW : JUMP_WINDOW, this.size - pos);
    let n = 0;
    while (n < want) {
      const got = this.read(this.buf, n, want - n, pos + n);
      if (got <= 0) this.fail('the file ended early (was it truncated while being read?)', pos + n);
      n += got;
    }
    this.winStart = pos;
    this.win = this.buf.subarray(0, n);
  }

  private read(into: Uint8Array, at: number, len: number, pos: number): number {
    try {
      return readSync(this.fd, into, at, len, pos);
    } catch (err) {
      return this.fail(`cannot read: ${(err as Error).message.split('\n')[0]}`, pos);
    }
  }

  /** The byte at `pos` (`pos < size` is the caller's check). */
  byte(pos: number): number {
    const i = pos - this.winStart;
    if (i < 0 || i >= this.win.length) {
      this.fill(pos);
      return this.win[0]!;
    }
    return this.win[i]!;
  }

  /** A fresh copy of `[start, end)`. */
  bytes(start: number, end: number): Uint8Array {
    const len = end - start;
    const out = new Uint8Array(len);
    if (start >= this.winStart && end <= this.winStart + this.win.length) {
      out.set(this.win.subarray(start - this.winStart, end - this.winStart));
      return out;
    }
    if (this.fd < 0) this.fail(`read of [${start}, ${end}) past the end of the data`, start);
    let done = 0;
    while (done < len) {
      const n = this.read(out, done, len - done, start + done);
      if (n <= 0) this.fail(`file ended while reading ${len} bytes`, start + done);
      done += n;
    }
    return out;
  }

  /** `[start, end)` as UTF-8 text (invalid sequences become U+FFFD). */
  string(start: number, end: number): string {
    const len = end - start;
    if (len > 0 && len <= 64) {
      // Names are short and mostly ASCII: build them from the window without TextDecoder.
      if (start < this.winStart || end > this.winStart + this.win.length) this.byte(start);
      if (end <= this.winStart + this.win.length) {
        const w = this.win;
        const o = start - this.winStart;
        let ascii = true;
        for (let i = 0; i < len; i++)
          if (w[o + i]! >= 0x80) {
            ascii = false;
            break;
          }
        if (ascii) return String.fromCharCode.apply(null, w.subarray(o, o + len) as unknown as number[]);
        return utf8.decode(w.subarray(o, o + len));
      }
    }
    return utf8.decode(this.bytes(start, end));
  }

  /** Position after the last {@link varint}. */
  next = 0;

  /**
   * Reads a varint at `pos` that must end before `end`; the position after it is left in
   * {@link next}. `msg`/`field`/`kind` only name it in errors (built on failure: this is the
   * hot path). Values past 2^53 lose precision (no ONNX count or size gets there); 10-byte
   * negatives are int64.
   */
  varint(pos: number, end: number, msg: string, field: number, kind: 'tag' | 'value' | 'length'): number {
    const what = () =>
      kind === 'tag' ? `${msg} field tag` : kind === 'length' ? `length of ${fieldLabel(msg, field)}` : fieldLabel(msg, field);
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (pos + i >= end) {
        this.fail(`truncated varint (${what()})${end >= this.size ? ': the file ends inside it' : ''}`, pos + i);
      }
      const b = this.byte(pos + i);
      if (i === 9 && b > 1) this.fail(`varint longer than 64 bits (${what()})`, pos);
      result += (b & 0x7f) * mul;
      mul *= 128;
      if ((b & 0x80) === 0) {
        if (i === 9 && b === 1) result = Number(BigInt.asIntN(64, this.bigVarint(pos)));
        this.next = pos + i + 1;
        return result;
      }
    }
    return this.fail(`varint longer than 10 bytes (${what()})`, pos);
  }

  private bigVarint(pos: number): bigint {
    let v = 0n;
    for (let i = 0; i < 10; i++) v |= BigInt(this.byte(pos + i) & 0x7f) << BigInt(7 * i);
    return v;
  }

  /**
   * Reads the field whose tag starts at `pos` inside a message ending at `end`. `msg` names
   * the message for error text. Groups and invalid wire types are errors (ONNX uses neither).
   */
  field(pos: number, end: number, msg: string): FieldHead {
    const tag = this.varint(pos, end, msg, 0, 'tag');
    const p = this.next;
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0 || tag > 0xffffffff) this.fail(`invalid field number ${field} in ${msg}`, pos);
    const head: FieldHead = { field, wire, start: pos, vStart: p, vEnd: p, int: 0 };
    switch (wire) {
      case WIRE.VARINT: {
        head.int = this.varint(p, end, msg, field, 'value');
        head.vEnd = this.next;
        break;
      }
      case WIRE.I64:
      case WIRE.I32: {
        head.vEnd = p + (wire === WIRE.I64 ? 8 : 4);
        if (head.vEnd > end) this.pastEnd(msg, field, head.vEnd - p, p, end);
        break;
      }
      case WIRE.LEN: {
        const len = this.varint(p, end, msg, field, 'length');
        const q = this.next;
        if (len < 0) this.fail(`negative length of ${fieldLabel(msg, field)}`, p);
        head.vStart = q;
        head.vEnd = q + len;
        if (head.vEnd > end) this.pastEnd(msg, field, len, q, end);
        break;
      }
      case WIRE.SGROUP:
      case WIRE.EGROUP:
        this.fail(`${fieldLabel(msg, field)} uses protobuf groups (wire type ${wire}), which ONNX never writes`, pos);
        break;
      default:
        this.fail(`invalid wire type ${wire} in ${fieldLabel(msg, field)}`, pos);
    }
    return head;
  }

  private pastEnd(msg: string, field: number, len: number, at: number, end: number): never {
    const where = at + len > this.size ? `the file ends at byte ${this.size}` : `the enclosing ${msg} ends at byte ${end}`;
    return this.fail(`${fieldLabel(msg, field)} claims ${len} bytes but ${where} (truncated or corrupt)`, at);
  }

  /** Fails unless `h` has wire type `wire` (a known field with the wrong encoding). */
  expect(h: FieldHead, wire: number, msg: string, name: string): void {
    if (h.wire !== wire) this.fail(`${msg}.${name} (field ${h.field}) has wire type ${h.wire}, expected ${wire}`, h.start);
  }

  /** Calls `fn` for each field of the message `[start, end)`. */
  each(start: number, end: number, msg: string, fn: (h: FieldHead) => void): void {
    let pos = start;
    while (pos < end) {
      const h = this.field(pos, end, msg);
      fn(h);
      pos = h.vEnd;
    }
  }

  /** Varints of a packed (wire 2) or single (wire 0) repeated integer field. */
  ints(h: FieldHead, msg: string, name: string): number[] {
    if (h.wire === WIRE.VARINT) return [h.int];
    this.expect(h, WIRE.LEN, msg, name);
    const out: number[] = [];
    let pos = h.vStart;
    while (pos < h.vEnd) {
      out.push(this.varint(pos, h.vEnd, msg, h.field, 'value'));
      pos = this.next;
    }
    return out;
  }
}

// A file that fails to parse is often another format: name it so the error says "this is a
// JSON file" rather than only "invalid wire type 3".

/** A short description of a non-ONNX file's content, or undefined when nothing is recognized. */
export function sniffNonOnnx(head: Uint8Array, fileSize: number): string | undefined {
  if (fileSize === 0) return 'the file is empty';
  let i = 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x0a || head[i] === 0x0d || head[i] === 0x09)) i++;
  if (head[i] === 0xef && head[i + 1] === 0xbb && head[i + 2] === 0xbf) i += 3;
  if (head[i] === 0x7b || head[i] === 0x5b) return 'looks like a JSON file, not an ONNX protobuf';
  if (head.length >= 9 && head[8] === 0x7b) {
    const n = Number(new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true));
    if (n > 0 && n + 8 <= fileSize) return 'looks like a safetensors file, not an ONNX protobuf';
  }
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    return 'looks like a zip archive (a torch .bin/.pt?), not an ONNX protobuf';
  }
  if (head[0] === 0x80 && head[1] !== undefined && head[1] <= 5) return 'looks like a Python pickle, not an ONNX protobuf';
  return undefined;
}
