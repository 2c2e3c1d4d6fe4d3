// The peer of the prepare bench: the straightforward implementation a user would write instead
// of `weight-spec prepare` (QEfficient's own prepare is Python + torch, not installable here).
// One thread; each tensor read whole, converted element by element, written; Mixtral experts
// transposed and stacked per layer in memory, then written; each output file fsynced (as
// prepare's are) and closed. Usage: node prepare-peer.mjs <checkpoint> <out> float16|float32
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, writeSync } from 'node:fs';
import path from 'node:path';

const [src, out, dtype] = process.argv.slice(2);
if (!src || !out || (dtype !== 'float16' && dtype !== 'float32')) {
  console.error('usage: prepare-peer.mjs <checkpoint> <out> float16|float32');
  process.exit(2);
}
const OUT = dtype === 'float16' ? 'F16' : 'F32';
const outSize = OUT === 'F16' ? 2 : 4;
mkdirSync(out, { recursive: true });

/** f32 bits → f16 bits, round to nearest even (the textbook conversion). */
function halfBits(x) {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}

function convert(bytes) {
  const src = new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length >> 1);
  const res = Buffer.alloc(src.length * outSize);
  if (OUT === 'F32') {
    const dst = new Uint32Array(res.buffer, res.byteOffset, src.length);
    for (let i = 0; i < src.length; i++) dst[i] = src[i] << 16;
  } else {
    const dst = new Uint16Array(res.buffer, res.byteOffset, src.length);
    for (let i = 0; i < src.length; i++) dst[i] = halfBits(src[i] << 16);
  }
  return res;
}

function transpose(bytes, rows, cols) {
  const res = Buffer.alloc(bytes.length);
  const A = outSize === 2 ? Uint16Array : Uint32Array;
  const s = new A(bytes.buffer, bytes.byteOffset, rows * cols);
  const d = new A(res.buffer, res.byteOffset, rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) d[c * rows + r] = s[r * cols + c];
  return res;
}

function readHeader(fd) {
  const len = Buffer.alloc(8);
  readSync(fd, len, 0, 8, 0);
  const n = Number(len.readBigUInt64LE());
  const json = Buffer.alloc(n);
  readSync(fd, json, 0, n, 8);
  return { base: 8 + n, header: JSON.parse(json.toString()) };
}

function readTensor(fd, base, info) {
  const [a, b] = info.data_offsets;
  const buf = Buffer.alloc(b - a);
  for (let done = 0; done < buf.length;) done += readSync(fd, buf, done, buf.length - done, base + a + done);
  return buf;
}

function writeFile(file, tensors) {
  const header = {};
  let off = 0;
  for (const t of tensors) {
    header[t.key] = { dtype: OUT, shape: t.shape, data_offsets: [off, off + t.data.length] };
    off += t.data.length;
  }
  let json = Buffer.from(JSON.stringify(header));
  json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  const fd = openSync(file, 'w');
  writeSync(fd, len);
  writeSync(fd, json);
  for (const t of tensors) for (let done = 0; done < t.data.length;) done += writeSync(fd, t.data, done);
  fsyncSync(fd);
  closeSync(fd);
}

const EXPERT = /^(.*)\.experts\.(\d+)\.(w1|w2|w3)\.weight$/;
const ROLE = { w1: 'gate', w3: 'up', w2: 'down' };
const shards = readdirSync(src)
  .filter((f) => f.endsWith('.safetensors'))
  .sort();
shards.forEach((name, s) => {
  const fd = openSync(path.join(src, name), 'r');
  const { base, header } = readHeader(fd);
  const dense = [];
  const stacks = new Map();
  for (const [key, info] of Object.entries(header)) {
    if (key === '__metadata__') continue;
    const data = convert(readTensor(fd, base, info));
    const m = EXPERT.exec(key);
    if (!m) {
      dense.push({ key, shape: info.shape, data });
      continue;
    }
    const k = `${m[1]}.moe_weights.${ROLE[m[3]]}`;
    const st = stacks.get(k) ?? { key: k, parts: [], shape: [...info.shape].reverse() };
    stacks.set(k, st);
    st.parts[Number(m[2])] = transpose(data, info.shape[0], info.shape[1]);
  }
  closeSync(fd);
  writeFile(path.join(out, `base-${String(s).padStart(4, '0')}.safetensors`), dense);
  if (stacks.size) {
    const stacked = [...stacks.values()].map((st) => ({
      key: st.key,
      shape: [st.parts.length, ...st.shape],
      data: Buffer.concat(st.parts),
    }));
    writeFile(path.join(out, `experts-layer-${String(s).padStart(5, '0')}.safetensors`), stacked);
  }
});
// Reading config.json keeps the peer honest about what a prepared directory needs beside the weights.
readFileSync(path.join(src, 'config.json'));
