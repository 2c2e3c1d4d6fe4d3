/**
 * Write-only protobuf encoding of the builder's {@link ModelObj} (the subset of onnx.proto
 * the builder emits). A direct writer rather than the general codec: it takes no schema load
 * and no object conversion, so a 48-layer, 128-expert graph encodes in milliseconds. Field
 * numbers are onnx.proto's; repeated scalars are written unpacked (proto2's default).
 */
import type { AttrObj, ModelObj, NodeObj, TensorObj, ValueInfoObj } from './builder';

class Writer {
  // sub-messages get a writer each, so start small (a 64 KiB start cost 0.5 s on 48×128 experts)
  buf: Uint8Array;
  len = 0;
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
  varint(v: number): void {
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
  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }
  int(field: number, v: number): void {
    this.tag(field, 0);
    this.varint(v);
  }
  bytes(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.varint(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  str(field: number, s: string): void {
    this.bytes(field, enc.encode(s));
  }
  float(field: number, f: number): void {
    this.tag(field, 5);
    this.ensure(4);
    new DataView(this.buf.buffer, this.buf.byteOffset + this.len, 4).setFloat32(0, f, true);
    this.len += 4;
  }
  msg(field: number, fn: (w: Writer) => void): void {
    const sub = new Writer();
    fn(sub);
    this.bytes(field, sub.buf.subarray(0, sub.len));
  }
}
const enc = new TextEncoder();

function tensor(w: Writer, t: TensorObj): void {
  for (const d of t.dims) w.int(1, d);
  w.int(2, t.dataType);
  if (t.name) w.str(8, t.name);
  w.bytes(9, t.rawData);
}

function attribute(w: Writer, a: AttrObj): void {
  w.str(1, a.name);
  if (a.f !== undefined) w.float(2, a.f);
  if (a.i !== undefined) w.int(3, a.i);
  if (a.s !== undefined) w.bytes(4, a.s);
  if (a.t !== undefined) w.msg(5, (x) => tensor(x, a.t!));
  for (const f of a.floats ?? []) w.float(7, f);
  for (const i of a.ints ?? []) w.int(8, i);
  w.int(20, a.type);
}

function node(w: Writer, n: NodeObj): void {
  for (const i of n.input) w.str(1, i);
  for (const o of n.output) w.str(2, o);
  w.str(3, n.name);
  w.str(4, n.opType);
  for (const a of n.attribute) w.msg(5, (x) => attribute(x, a));
  if (n.domain) w.str(7, n.domain);
}

function valueInfo(w: Writer, v: ValueInfoObj): void {
  w.str(1, v.name);
  w.msg(2, (tp) =>
    tp.msg(1, (tt) => {
      tt.int(1, v.type.tensorType.elemType);
      tt.msg(2, (sh) => {
        for (const d of v.type.tensorType.shape.dim) {
          sh.msg(1, (dm) => ('dimValue' in d ? dm.int(1, d.dimValue) : dm.str(2, d.dimParam)));
        }
      });
    }),
  );
}

/** Serializes the model to ONNX protobuf bytes. */
export function encodeBuiltModel(m: ModelObj): Uint8Array {
  const w = new Writer(1 << 20);
  w.int(1, m.irVersion);
  w.str(2, m.producerName);
  w.str(3, m.producerVersion);
  w.msg(7, (g) => {
    for (const n of m.graph.node) g.msg(1, (x) => node(x, n));
    g.str(2, m.graph.name);
    for (const t of m.graph.initializer) g.msg(5, (x) => tensor(x, t));
    for (const v of m.graph.input) g.msg(11, (x) => valueInfo(x, v));
    for (const v of m.graph.output) g.msg(12, (x) => valueInfo(x, v));
    for (const v of m.graph.valueInfo) g.msg(13, (x) => valueInfo(x, v));
  });
  for (const o of m.opsetImport) w.msg(8, (x) => {
    x.str(1, o.domain);
    x.int(2, o.version);
  });
  for (const p of m.metadataProps) w.msg(14, (x) => {
    x.str(1, p.key);
    x.str(2, p.value);
  });
  return w.buf.slice(0, w.len);
}
