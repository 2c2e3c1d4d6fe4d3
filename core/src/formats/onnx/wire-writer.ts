/**
 * The protobuf wire-format writer of the code that writes ONNX without the protobufjs codec:
 * the graph builder's encoder (a 48-layer, 128-expert graph in milliseconds, no schema load)
 * and the compile step's byte-level model rewrite. Field numbers come from `fields.ts`;
 * repeated scalars are written unpacked (proto2's default, as onnx.proto declares them).
 */

import { WIRE } from './fields';

const enc = new TextEncoder();

/** Appends fields to one growing buffer; {@link finish} returns the bytes. */
export class WireWriter {
  private buf: Uint8Array;
  private len = 0;
  /** Sub-messages get a writer each, so start small (a 64 KiB start cost 0.5 s on 48×128 experts). */
  constructor(size = 256) {
    this.buf = new Uint8Array(size);
  }
  private ensure(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.len));
    this.buf = next;
  }
  private varint(v: number): void {
    this.ensure(10);
    if (v < 0) {
      // int64 two's complement, 10 bytes
      let b = BigInt.asUintN(64, BigInt(v));
      for (let k = 0; k < 10; k++) {
        const byte = Number(b & 0x7fn);
        b >>= 7n;
        this.buf[this.len++] = b > 0n ? byte | 0x80 : byte;
        if (b === 0n) break;
      }
      return;
    }
    while (v >= 0x80) {
      this.buf[this.len++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.len++] = v;
  }
  private tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }
  /** A varint field (int32, int64, enum). */
  int(field: number, v: number): this {
    this.tag(field, WIRE.VARINT);
    this.varint(v);
    return this;
  }
  /** A length-delimited field. */
  bytes(field: number, b: Uint8Array): this {
    this.tag(field, WIRE.LEN);
    this.varint(b.length);
    return this.raw(b);
  }
  /** A UTF-8 string field. */
  string(field: number, s: string): this {
    return this.bytes(field, enc.encode(s));
  }
  /** A 32-bit float field. */
  float(field: number, f: number): this {
    this.tag(field, WIRE.I32);
    this.ensure(4);
    new DataView(this.buf.buffer, this.buf.byteOffset + this.len, 4).setFloat32(0, f, true);
    this.len += 4;
    return this;
  }
  /** A sub-message written by `fn`. */
  msg(field: number, fn: (w: WireWriter) => void): this {
    const sub = new WireWriter();
    fn(sub);
    return this.bytes(field, sub.buf.subarray(0, sub.len));
  }
  /** Appends bytes already in wire format (whole fields copied from another message). */
  raw(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }
  /** The bytes written (a copy). */
  finish(): Uint8Array {
    return this.buf.slice(0, this.len);
  }
}
