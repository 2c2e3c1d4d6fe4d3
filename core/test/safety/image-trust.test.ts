/**
 * Issue #28 points 2, 8 and 9: an image given to `run --image` is untrusted input.
 * - A small PNG declaring a huge size is refused from its IHDR, before any decoding, above
 *   Pillow's `Image.MAX_IMAGE_PIXELS` (89478485, PIL/Image.py) and when its patch grid cannot
 *   fit ctx_len; `--max-image-pixels` raises the limit. The bombs are made here in code.
 * - 16-bit PNG samples keep their high byte, as Pillow's "RGB;16B" unpacker does (3000 → 11).
 * - JPEG EXIF orientation is applied as transformers' `load_image` does
 *   (src/transformers/image_utils.py: `PIL.ImageOps.exif_transpose(image)`).
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { VlmManifest } from '../../src/export/vlm/export-vlm';
import { decodeImage, orient, type RgbImage } from '../../src/run/vlm/image';
import { DEFAULT_MAX_IMAGE_PIXELS, readImageHeader } from '../../src/run/vlm/image-header';
import { readImages } from '../../src/run/vlm/inputs';
import { tempDirs } from '../../../test/support/temp';
import { qwen3VlManifest } from '../../../test/support/vlm-manifest';

const req = createRequire(__filename);
const tmp = tempDirs('image-trust-');

function crc32(b: Buffer): number {
  let c = ~0;
  for (const x of b) {
    c ^= x;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/** A PNG declaring `w`×`h` RGB pixels whose IDAT holds the first rows only: tens of bytes. */
function bombPng(w: number, h: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  const rows = zlib.deflateSync(Buffer.alloc((1 + 3 * w) * 4));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', rows),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const manifest = (modelDir: string): VlmManifest => qwen3VlManifest(modelDir, 16);

describe('image bombs are refused from the header', () => {
  it('20000×20000 in a small PNG: refused at once, naming the limit and the flag', () => {
    const dir = tmp();
    const file = path.join(dir, 'bomb.png');
    const png = bombPng(20000, 20000);
    expect(png.length).toBeLessThan(4096);
    writeFileSync(file, png);
    const t0 = performance.now();
    expect(() => decodeImage(file)).toThrow(
      `${file}: declares 20000×20000 = 400000000 pixels, above the limit of ${DEFAULT_MAX_IMAGE_PIXELS} (Pillow's decompression-bomb limit); ` +
        'refused before decoding — raise it with run --max-image-pixels <N> if the image is genuine',
    );
    expect(performance.now() - t0).toBeLessThan(5000);
    // Just above the limit too; at the limit it would decode (not tried: 358 MB).
    writeFileSync(file, bombPng(9473, 9446)); // 89481958 pixels
    expect(() => decodeImage(file)).toThrow(/declares 9473×9446 = 89481958 pixels, above the limit of 89478485/);
  });

  it('a raised limit still refuses an image whose patch grid cannot fit ctx_len, before decoding', () => {
    const dir = tmp();
    const file = path.join(dir, 'big.png');
    writeFileSync(file, bombPng(20000, 20000));
    const t0 = performance.now();
    // max_pixels 16777216 (Qwen3-VL's default) → 4096×4096 → (4096/32)² = 16384 image tokens.
    expect(() => readImages([file], manifest(dir), { maxPixels: 1e9, ctxLen: 4096 })).toThrow(
      `${file}: 20000×20000 resizes to 4096×4096, 16384 image tokens; the images need 16384 positions but ctx_len is 4096 ` +
        '(refused before decoding; use a smaller image or a larger ctx_len)',
    );
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('a JPEG SOF declaring 65535×65535 is refused the same way', () => {
    const dir = tmp();
    const file = path.join(dir, 'bomb.jpg');
    const jpeg = req('jpeg-js') as { encode(i: { data: Uint8Array; width: number; height: number }, q: number): { data: Buffer } };
    const b = Buffer.from(jpeg.encode({ data: new Uint8Array(8 * 8 * 4).fill(200), width: 8, height: 8 }, 90).data);
    const sof = b.indexOf(Buffer.from([0xff, 0xc0]));
    b.writeUInt16BE(65535, sof + 5);
    b.writeUInt16BE(65535, sof + 7);
    writeFileSync(file, b);
    expect(readImageHeader(file, b)).toMatchObject({ kind: 'jpeg', width: 65535, height: 65535 });
    expect(() => decodeImage(file)).toThrow(/declares 65535×65535 = 4294836225 pixels, above the limit/);
  });
});

describe('pixel values as Pillow gives them', () => {
  it('16-bit RGB PNG: the high byte of each sample (3000 → 11), as Pillow', () => {
    const dir = tmp();
    const file = path.join(dir, 'deep.png');
    const { PNG } = req('pngjs') as {
      PNG: { new (o: Record<string, unknown>): { data: unknown }; sync: { write(p: unknown, o: Record<string, unknown>): Buffer } };
    };
    const p = new PNG({ width: 2, height: 1, bitDepth: 16, colorType: 2, inputColorType: 2, inputHasAlpha: false });
    p.data = new Uint16Array([3000, 65535, 256, 0, 255, 511]);
    writeFileSync(file, PNG.sync.write(p, { bitDepth: 16, colorType: 2, inputColorType: 2, inputHasAlpha: false }));
    expect(Array.from(decodeImage(file).data)).toEqual([11, 255, 1, 0, 0, 1]);
  });

  it('JPEG EXIF orientation: exif_transpose of the stored pixels (6 = ROTATE_270, 3 = ROTATE_180, 8 = ROTATE_90)', () => {
    const dir = tmp();
    const W = 32;
    const H = 16;
    const rgba = new Uint8Array(W * H * 4);
    // Four flat quadrants (JPEG keeps flat 8×8 blocks nearly exact): red, green / blue, white.
    for (let y = 0; y < H; y++)
      for (let x = 0; x < W; x++) {
        const q = (y < H / 2 ? 0 : 2) + (x < W / 2 ? 0 : 1);
        rgba.set(
          [
            [255, 0, 0, 255],
            [0, 255, 0, 255],
            [0, 0, 255, 255],
            [255, 255, 255, 255],
          ][q]!,
          (y * W + x) * 4,
        );
      }
    const jpeg = req('jpeg-js') as { encode(i: { data: Uint8Array; width: number; height: number }, q: number): { data: Buffer } };
    const plain = Buffer.from(jpeg.encode({ data: rgba, width: W, height: H }, 100).data);
    const withExif = (o: number): Buffer => {
      // APP1 "Exif\0\0" + big-endian TIFF, IFD0 with one entry: Orientation (0x0112, SHORT, 1) = o.
      const tiff = Buffer.from([0x4d, 0x4d, 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, o, 0, 0, 0, 0, 0, 0, 0, 0]);
      const body = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
      const len = Buffer.alloc(2);
      len.writeUInt16BE(body.length + 2);
      return Buffer.concat([plain.subarray(0, 2), Buffer.from([0xff, 0xe1]), len, body, plain.subarray(2)]);
    };
    writeFileSync(path.join(dir, 'plain.jpg'), plain);
    const base = decodeImage(path.join(dir, 'plain.jpg'));
    const px = (img: RgbImage, x: number, y: number) => Array.from(img.data.subarray((y * img.width + x) * 3, (y * img.width + x) * 3 + 3));
    const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) <= 8);
    for (const [o, w, h, topLeft] of [
      [6, H, W, [0, 0, 255]], // clockwise: the bottom-left (blue) quadrant comes to the top left
      [3, W, H, [255, 255, 255]],
      [8, H, W, [0, 255, 0]], // counter-clockwise: the top-right (green) comes to the top left
      [2, W, H, [0, 255, 0]],
    ] as const) {
      const file = path.join(dir, `o${o}.jpg`);
      writeFileSync(file, withExif(o));
      expect(readImageHeader(file, withExif(o)).orientation).toBe(o);
      const img = decodeImage(file);
      expect([img.width, img.height]).toEqual([w, h]);
      expect(near(px(img, 1, 1), [...topLeft])).toBe(true);
      expect(img).toEqual(orient(base, o));
    }
  });
});
