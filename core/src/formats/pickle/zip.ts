/**
 * Minimal read-only zip reader for PyTorch checkpoints: central directory (with ZIP64),
 * stored entries read by range straight from the file, deflated entries inflated with a
 * size cap. Every length and offset is checked against the file size before it is used,
 * so a lying header ends in a FormatError, never in a huge allocation.
 */
import fsp from 'node:fs/promises';
import zlib from 'node:zlib';
import { FormatError } from '../../errors';
import { printable } from '../../paths';
import { openRegularFile } from '../../paths/file-kind';

/** One central-directory entry. */
export interface ZipEntry {
  name: string;
  /** 0 = stored, 8 = deflate. */
  method: number;
  compressedSize: number;
  size: number;
  crc32: number;
  localHeaderOffset: number;
  /** Byte offset in the zip file of the central-directory record (for messages). */
  cdOffset: number;
}

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CD_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;
/** Central directories larger than this are refused (a state dict has thousands of entries, not millions). */
const MAX_CD_BYTES = 256 * 1024 * 1024;

function u64(dv: DataView, at: number, file: string, base: number): number {
  const v = dv.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new FormatError(file, 'zip64 field too large', base + at);
  return Number(v);
}

/** An open zip file. Call {@link ZipReader.close} when done. */
export class ZipReader {
  private constructor(
    readonly file: string,
    private readonly fh: fsp.FileHandle,
    readonly fileSize: number,
    readonly entries: Map<string, ZipEntry>,
  ) {}

  /** Opens `file` and reads its central directory. */
  static async open(file: string): Promise<ZipReader> {
    const fh = await openRegularFile(file);
    try {
      const size = (await fh.stat()).size;
      const entries = await readCentralDirectory(fh, size, file);
      return new ZipReader(file, fh, size, entries);
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  /** Reads exactly `length` bytes at `position` or fails with a FormatError. */
  async readAt(position: number, length: number): Promise<Uint8Array> {
    if (position < 0 || length < 0 || position + length > this.fileSize) {
      throw new FormatError(this.file, `read of ${length} bytes past the end of the file`, position);
    }
    const buf = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.fh.read(buf, done, length - done, position + done);
      if (bytesRead === 0) throw new FormatError(this.file, 'file shrank while reading', position + done);
      done += bytesRead;
    }
    return new Uint8Array(buf.buffer, buf.byteOffset, length);
  }

  /** Absolute offset of the entry's data (after its local header), validated. */
  async dataOffset(e: ZipEntry): Promise<number> {
    const h = await this.readAt(e.localHeaderOffset, 30);
    const dv = new DataView(h.buffer, h.byteOffset, 30);
    if (dv.getUint32(0, true) !== LOCAL_SIG)
      throw new FormatError(this.file, `bad local header for ${printable(e.name)}`, e.localHeaderOffset);
    const start = e.localHeaderOffset + 30 + dv.getUint16(26, true) + dv.getUint16(28, true);
    if (start + e.compressedSize > this.fileSize) {
      throw new FormatError(this.file, `entry ${printable(e.name)} claims ${e.compressedSize} bytes past the end of the file`, start);
    }
    return start;
  }

  /**
   * Reads `[start, start+length)` of an entry's uncompressed data. Stored entries are read
   * by range; deflated ones are inflated whole, refused beyond `maxInflate` bytes.
   */
  async read(e: ZipEntry, start = 0, length = e.size - start, maxInflate = 1 << 30): Promise<Uint8Array> {
    if (start < 0 || length < 0 || start + length > e.size) {
      throw new FormatError(this.file, `read outside entry ${printable(e.name)}`, e.cdOffset);
    }
    const off = await this.dataOffset(e);
    if (e.method === 0) return this.readAt(off + start, length);
    if (e.size > maxInflate)
      throw new FormatError(this.file, `compressed entry ${printable(e.name)} is too large to inflate (${e.size} bytes)`, off);
    const raw = await this.readAt(off, e.compressedSize);
    let out: Buffer;
    try {
      out = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, e.size) });
    } catch {
      throw new FormatError(this.file, `entry ${printable(e.name)} does not inflate to its declared ${e.size} bytes`, off);
    }
    if (out.length !== e.size)
      throw new FormatError(this.file, `entry ${printable(e.name)} inflates to ${out.length} bytes, not ${e.size}`, off);
    return new Uint8Array(out.buffer, out.byteOffset + start, length);
  }

  /** Reads a whole entry and verifies its CRC-32 (for small metadata entries). */
  async readChecked(e: ZipEntry, maxBytes: number): Promise<Uint8Array> {
    if (e.size > maxBytes)
      throw new FormatError(this.file, `entry ${printable(e.name)} is ${e.size} bytes (limit ${maxBytes})`, e.cdOffset);
    const data = await this.read(e, 0, e.size, maxBytes);
    if (zlib.crc32(data) >>> 0 !== e.crc32 >>> 0)
      throw new FormatError(this.file, `CRC mismatch in entry ${printable(e.name)}`, e.cdOffset);
    return data;
  }

  /** Closes the file. */
  async close(): Promise<void> {
    await this.fh.close();
  }
}

async function readCentralDirectory(fh: fsp.FileHandle, size: number, file: string): Promise<Map<string, ZipEntry>> {
  const tailLen = Math.min(size, 22 + 0xffff + 20);
  if (size < 22) throw new FormatError(file, 'too small to be a zip file', 0);
  const tail = Buffer.alloc(tailLen);
  await fh.read(tail, 0, tailLen, size - tailLen);
  let eocd = -1;
  for (let i = tailLen - 22; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG && i + 22 + tail.readUInt16LE(i + 20) <= tailLen) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new FormatError(file, 'no zip end-of-central-directory record', size);
  const eocdAbs = size - tailLen + eocd;
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    const loc = eocd - 20;
    if (loc < 0 || tail.readUInt32LE(loc) !== ZIP64_LOCATOR_SIG) throw new FormatError(file, 'zip64 locator missing', eocdAbs);
    const z64 = Number(tail.readBigUInt64LE(loc + 8));
    if (!(z64 >= 0 && z64 + 56 <= size)) throw new FormatError(file, 'zip64 record offset out of range', eocdAbs - 20);
    const rec = Buffer.alloc(56);
    await fh.read(rec, 0, 56, z64);
    const dv = new DataView(rec.buffer, rec.byteOffset, 56);
    if (dv.getUint32(0, true) !== ZIP64_EOCD_SIG) throw new FormatError(file, 'bad zip64 end record', z64);
    count = u64(dv, 32, file, z64);
    cdSize = u64(dv, 40, file, z64);
    cdOffset = u64(dv, 48, file, z64);
  }
  if (cdOffset + cdSize > size || cdSize > MAX_CD_BYTES) throw new FormatError(file, 'central directory out of range', eocdAbs);
  if (count * 46 > cdSize) throw new FormatError(file, `central directory claims ${count} entries in ${cdSize} bytes`, eocdAbs);
  const cd = Buffer.alloc(cdSize);
  await fh.read(cd, 0, cdSize, cdOffset);
  const entries = new Map<string, ZipEntry>();
  let p = 0;
  for (let i = 0; i < count; i++) {
    const at = cdOffset + p;
    if (p + 46 > cdSize || cd.readUInt32LE(p) !== CD_SIG) throw new FormatError(file, 'bad central directory record', at);
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    let csize = cd.readUInt32LE(p + 20);
    let usize = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    let local = cd.readUInt32LE(p + 42);
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > cdSize) throw new FormatError(file, 'central directory record runs past its end', at);
    const name = cd.toString('utf8', p + 46, p + 46 + nameLen);
    // ZIP64 extended information: only the fields saturated in the fixed record are present.
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen;) {
      const id = cd.readUInt16LE(x);
      const len = cd.readUInt16LE(x + 2);
      if (x + 4 + len > p + 46 + nameLen + extraLen) throw new FormatError(file, `bad extra field in ${printable(name)}`, at);
      if (id === 0x0001) {
        let q = x + 4;
        const take = (): number => {
          if (q + 8 > x + 4 + len) throw new FormatError(file, `short zip64 extra field in ${printable(name)}`, at);
          const v = cd.readBigUInt64LE(q);
          q += 8;
          if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new FormatError(file, `zip64 size too large in ${printable(name)}`, at);
          return Number(v);
        };
        if (usize === 0xffffffff) usize = take();
        if (csize === 0xffffffff) csize = take();
        if (local === 0xffffffff) local = take();
      }
      x += 4 + len;
    }
    if (flags & 1) throw new FormatError(file, `entry ${printable(name)} is encrypted`, at);
    if (method !== 0 && method !== 8)
      throw new FormatError(file, `entry ${printable(name)} uses unsupported compression method ${method}`, at);
    if (method === 0 && csize !== usize) throw new FormatError(file, `stored entry ${printable(name)} has different sizes`, at);
    if (local + 30 + csize > size) throw new FormatError(file, `entry ${printable(name)} lies past the end of the file`, at);
    if (entries.has(name)) throw new FormatError(file, `duplicate zip entry ${printable(name)}`, at);
    entries.set(name, {
      name,
      method,
      compressedSize: csize,
      size: usize,
      crc32: cd.readUInt32LE(p + 16),
      localHeaderOffset: local,
      cdOffset: at,
    });
    p = end;
  }
  return entries;
}
