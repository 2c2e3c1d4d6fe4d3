/**
 * Test-side builders for `.bin` checkpoints: a pickle opcode assembler, a state-dict
 * pickler that emits the stream CPython's pickler emits for `torch.save` (protocol 2 or 4),
 * and a zip writer (stored entries, optional 64-byte alignment like torch, optional ZIP64).
 * Independent of the code under test: nothing here imports core/src/formats/pickle.
 */
import zlib from 'node:zlib';

/** Opcode-level pickle assembler. */
export class Pk {
  private readonly parts: number[] = [];
  private memoNext = 0;
  raw(...bytes: number[]): this {
    this.parts.push(...bytes);
    return this;
  }
  op(code: number): this {
    return this.raw(code);
  }
  proto(v: number): this {
    return this.raw(0x80, v);
  }
  u32(n: number): this {
    return this.raw(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff);
  }
  u64(n: bigint): this {
    for (let i = 0n; i < 8n; i++) this.raw(Number((n >> (8n * i)) & 0xffn));
    return this;
  }
  utf8(s: string): number[] {
    return [...Buffer.from(s, 'utf8')];
  }
  /** BINUNICODE (protocol 2) or SHORT_BINUNICODE (protocol 4, short strings). */
  str(s: string, short = false): this {
    const b = this.utf8(s);
    if (short && b.length < 256) return this.raw(0x8c, b.length, ...b);
    return this.raw(0x58)
      .u32(b.length)
      .raw(...b);
  }
  global(module: string, name: string): this {
    return this.raw(0x63, ...this.utf8(`${module}\n${name}\n`));
  }
  stackGlobal(module: string, name: string): this {
    return this.str(module, true).memoize().str(name, true).memoize().raw(0x93);
  }
  int(n: number): this {
    if (n >= 0 && n < 256) return this.raw(0x4b, n);
    if (n >= 0 && n < 65536) return this.raw(0x4d, n & 0xff, n >> 8);
    if (n >= -(2 ** 31) && n < 2 ** 31) return this.raw(0x4a).u32(n >>> 0);
    return this.long(BigInt(n));
  }
  /** LONG1: little-endian two's complement, minimal length. */
  long(v: bigint): this {
    const out: number[] = [];
    let x = v;
    for (;;) {
      out.push(Number(x & 0xffn));
      x >>= 8n;
      const sign = out[out.length - 1]! & 0x80;
      if ((x === 0n && !sign) || (x === -1n && sign)) break;
    }
    return this.raw(0x8a, out.length, ...out);
  }
  mark(): this {
    return this.raw(0x28);
  }
  /** BINPUT / LONG_BINPUT with the next memo index. */
  put(): this {
    const i = this.memoNext++;
    return i < 256 ? this.raw(0x71, i) : this.raw(0x72).u32(i);
  }
  memoize(): this {
    this.memoNext++;
    return this.raw(0x94);
  }
  get(i: number): this {
    return i < 256 ? this.raw(0x68, i) : this.raw(0x6a).u32(i);
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
  get length(): number {
    return this.parts.length;
  }
}

/** One tensor of a state dict to pickle. */
export interface TensorDesc {
  key: string;
  storageKey: string;
  storageType: string; // e.g. FloatStorage
  storageNumel: number;
  offset: number;
  shape: number[];
  stride: number[];
  /** Wrap in torch._utils._rebuild_parameter (an nn.Parameter). */
  parameter?: boolean;
}

/**
 * Pickles an OrderedDict state dict the way torch.save does (persistent ids for storages,
 * `_rebuild_tensor_v2`, `_metadata` state via BUILD), memoizing like CPython.
 */
export function stateDictPickle(tensors: TensorDesc[], protocol: 2 | 4 = 2): Uint8Array {
  const p4 = protocol >= 4;
  const body = new Pk();
  const memo = new Map<string, number>();
  let next = 0;
  const remember = (tag: string) => {
    memo.set(tag, next);
    if (p4) body.memoize();
    else body.put();
    next++;
  };
  const glob = (m: string, n: string) => {
    const tag = `g:${m}.${n}`;
    if (memo.has(tag)) return body.get(memo.get(tag)!);
    if (p4) {
      body.str(m, true);
      remember(`s:${m}:${next}`);
      body.str(n, true);
      remember(`s:${n}:${next}`);
      body.raw(0x93);
    } else body.global(m, n);
    remember(tag);
    return body;
  };
  const s = (v: string) => {
    const tag = `s:${v}`;
    if (memo.has(tag)) return body.get(memo.get(tag)!);
    body.str(v, p4);
    remember(tag);
    return body;
  };
  const tuple = (items: (() => void)[]) => {
    if (items.length === 0) return body.raw(0x29);
    if (items.length <= 3) {
      items.forEach((f) => f());
      body.raw(0x84 + items.length);
    } else {
      body.mark();
      items.forEach((f) => f());
      body.raw(0x74);
    }
    remember(`t:${next}`);
    return body;
  };
  const od = () => {
    glob('collections', 'OrderedDict');
    body.raw(0x29, 0x52);
    remember(`od:${next}`);
  };
  od();
  body.mark();
  for (const t of tensors) {
    s(t.key);
    if (t.parameter) glob('torch._utils', '_rebuild_parameter').mark();
    glob('torch._utils', '_rebuild_tensor_v2');
    body.mark();
    // persistent_id returns a fresh tuple per tensor; its strings are memo hits.
    body.mark();
    s('storage');
    glob('torch', t.storageType);
    s(t.storageKey);
    s('cpu');
    body.int(t.storageNumel).raw(0x74);
    remember(`pid:${next}`);
    body.raw(0x51); // BINPERSID
    body.int(t.offset);
    tuple(t.shape.map((d) => () => body.int(d)));
    tuple(t.stride.map((d) => () => body.int(d)));
    body.raw(0x89); // requires_grad False
    od(); // backward_hooks
    body.raw(0x74); // args tuple
    remember(`a:${next}`);
    body.raw(0x52);
    remember(`r:${next}`);
    if (t.parameter) {
      body.raw(0x89);
      od();
      body.raw(0x74);
      remember(`pa:${next}`);
      body.raw(0x52);
      remember(`pr:${next}`);
    }
  }
  body.raw(0x75); // SETITEMS
  // state = {'_metadata': OrderedDict([('', {'version': 1})])}
  body.raw(0x7d);
  remember(`d:${next}`);
  s('_metadata');
  od();
  s('');
  body.raw(0x7d);
  remember(`d:${next}`);
  s('version');
  body.int(1).raw(0x73, 0x73, 0x73, 0x62, 0x2e); // SETITEM ×3, BUILD, STOP
  const b = body.bytes();
  if (!p4) return Uint8Array.from([0x80, 2, ...b]);
  const head = new Pk().proto(4).raw(0x95).u64(BigInt(b.length));
  return Uint8Array.from([...head.bytes(), ...b]);
}

/** A zip entry to write. */
export interface ZipIn {
  name: string;
  data: Uint8Array;
  deflate?: boolean;
}

/**
 * Writes a zip: local headers, data, central directory, EOCD. `align` pads each local
 * header's extra field so data starts at a multiple of it (torch uses 64). `zip64` stores
 * sizes and offsets in ZIP64 extra fields and a ZIP64 end record, as large torch files do.
 */
export function buildZip(entries: ZipIn[], opts: { align?: number; zip64?: boolean } = {}): Uint8Array {
  const chunks: Buffer[] = [];
  const cds: Buffer[] = [];
  let off = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const payload = e.deflate ? zlib.deflateRawSync(e.data) : Buffer.from(e.data);
    const crc = zlib.crc32(e.data) >>> 0;
    let pad = 0;
    if (opts.align) {
      const start = off + 30 + name.length + 4;
      pad = (opts.align - (start % opts.align)) % opts.align;
    }
    const extra = opts.align ? Buffer.alloc(4 + pad) : Buffer.alloc(0);
    if (opts.align) {
      extra.writeUInt16LE(0x4246, 0); // "FB", as torch's writer
      extra.writeUInt16LE(pad, 2);
    }
    const lh = Buffer.alloc(30);
    lh.writeUInt32LE(0x04034b50, 0);
    lh.writeUInt16LE(opts.zip64 ? 45 : 20, 4);
    lh.writeUInt16LE(e.deflate ? 8 : 0, 8);
    lh.writeUInt32LE(crc, 14);
    lh.writeUInt32LE(payload.length, 18);
    lh.writeUInt32LE(e.data.length, 22);
    lh.writeUInt16LE(name.length, 26);
    lh.writeUInt16LE(extra.length, 28);
    chunks.push(lh, name, extra, payload);
    const z = opts.zip64 ? Buffer.alloc(28) : Buffer.alloc(0);
    if (opts.zip64) {
      z.writeUInt16LE(1, 0);
      z.writeUInt16LE(24, 2);
      z.writeBigUInt64LE(BigInt(e.data.length), 4);
      z.writeBigUInt64LE(BigInt(payload.length), 12);
      z.writeBigUInt64LE(BigInt(off), 20);
    }
    const cd = Buffer.alloc(46);
    cd.writeUInt32LE(0x02014b50, 0);
    cd.writeUInt16LE(45, 4);
    cd.writeUInt16LE(opts.zip64 ? 45 : 20, 6);
    cd.writeUInt16LE(e.deflate ? 8 : 0, 10);
    cd.writeUInt32LE(crc, 16);
    cd.writeUInt32LE(opts.zip64 ? 0xffffffff : payload.length, 20);
    cd.writeUInt32LE(opts.zip64 ? 0xffffffff : e.data.length, 24);
    cd.writeUInt16LE(name.length, 28);
    cd.writeUInt16LE(z.length, 30);
    cd.writeUInt32LE(opts.zip64 ? 0xffffffff : off, 42);
    cds.push(cd, name, z);
    off += 30 + name.length + extra.length + payload.length;
  }
  const cdBuf = Buffer.concat(cds);
  const tail: Buffer[] = [];
  if (opts.zip64) {
    const r = Buffer.alloc(56);
    r.writeUInt32LE(0x06064b50, 0);
    r.writeBigUInt64LE(44n, 4);
    r.writeUInt16LE(45, 12);
    r.writeUInt16LE(45, 14);
    r.writeBigUInt64LE(BigInt(entries.length), 24);
    r.writeBigUInt64LE(BigInt(entries.length), 32);
    r.writeBigUInt64LE(BigInt(cdBuf.length), 40);
    r.writeBigUInt64LE(BigInt(off), 48);
    const loc = Buffer.alloc(20);
    loc.writeUInt32LE(0x07064b50, 0);
    loc.writeBigUInt64LE(BigInt(off + cdBuf.length), 8);
    loc.writeUInt32LE(1, 16);
    tail.push(r, loc);
  }
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(opts.zip64 ? 0xffff : entries.length, 8);
  eocd.writeUInt16LE(opts.zip64 ? 0xffff : entries.length, 10);
  eocd.writeUInt32LE(opts.zip64 ? 0xffffffff : cdBuf.length, 12);
  eocd.writeUInt32LE(opts.zip64 ? 0xffffffff : off, 16);
  return new Uint8Array(Buffer.concat([...chunks, cdBuf, ...tail, eocd]));
}

/** A torch-style `.bin`: `<prefix>/data.pkl`, `<prefix>/data/<key>`, version, byteorder. */
export function buildTorchBin(
  pkl: Uint8Array,
  storages: Record<string, Uint8Array>,
  opts: { prefix?: string; byteorder?: string | null; align?: number; zip64?: boolean; deflatePickle?: boolean } = {},
): Uint8Array {
  const prefix = opts.prefix ?? 'archive';
  const entries: ZipIn[] = [{ name: `${prefix}/data.pkl`, data: pkl, deflate: opts.deflatePickle }];
  if (opts.byteorder !== null) entries.push({ name: `${prefix}/byteorder`, data: Buffer.from(opts.byteorder ?? 'little') });
  for (const [k, v] of Object.entries(storages)) entries.push({ name: `${prefix}/data/${k}`, data: v });
  entries.push({ name: `${prefix}/version`, data: Buffer.from('3\n') });
  entries.push({ name: `${prefix}/.data/serialization_id`, data: Buffer.from('1234567890') });
  return buildZip(entries, { align: opts.align ?? 64, zip64: opts.zip64 });
}

/** Parses a safetensors file independently of core (for checking converter output). */
export function parseSafetensors(buf: Uint8Array): Map<string, { dtype: string; shape: number[]; data: Uint8Array }> {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const n = Number(b.readBigUInt64LE(0));
  const header = JSON.parse(b.toString('utf8', 8, 8 + n)) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const out = new Map<string, { dtype: string; shape: number[]; data: Uint8Array }>();
  for (const [k, v] of Object.entries(header)) {
    if (k === '__metadata__') continue;
    out.set(k, { dtype: v.dtype, shape: v.shape, data: buf.subarray(8 + n + v.data_offsets[0], 8 + n + v.data_offsets[1]) });
  }
  return out;
}
