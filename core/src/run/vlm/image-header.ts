/**
 * What an image file says about itself before anything is decoded: its size (PNG's IHDR,
 * JPEG's SOF), PNG's bit depth and colour type, and JPEG's EXIF orientation. A 48 KB PNG can
 * declare 20000×20000 pixels and take minutes and gigabytes to inflate (issue #28 point 2),
 * so `run --image` judges the declared size against a pixel limit and against the model's
 * ctx_len first, and decodes only what passes.
 */
import { FormatError, UsageError } from '../../errors';

/** Pillow's `Image.MAX_IMAGE_PIXELS` (1024 · 1024 · 1024 // 4 // 3): its decompression-bomb limit. */
export const DEFAULT_MAX_IMAGE_PIXELS = 89_478_485;

/** The facts read from the header. */
export interface ImageHeader {
  kind: 'png' | 'jpeg';
  width: number;
  height: number;
  /** PNG: bits per sample (1, 2, 4, 8, 16). */
  bitDepth?: number;
  /** PNG: colour type (0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA). */
  colorType?: number;
  /** JPEG: EXIF orientation 1–8 (1 when absent). */
  orientation: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Reads the header of a PNG or JPEG (by its signature); throws a FormatError naming `file` otherwise. */
export function readImageHeader(file: string, b: Buffer): ImageHeader {
  if (b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE)) {
    // The first chunk must be IHDR: length 13, then width, height, depth, colour type.
    if (b.length < 33 || b.toString('latin1', 12, 16) !== 'IHDR') throw new FormatError(file, 'PNG without an IHDR chunk first');
    return { kind: 'png', width: b.readUInt32BE(16), height: b.readUInt32BE(20), bitDepth: b[24]!, colorType: b[25]!, orientation: 1 };
  }
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xd8) return jpegHeader(file, b);
  throw new FormatError(file, 'not a PNG or JPEG image (unknown signature)');
}

/** SOFn markers carrying the frame size (not DHT C4, JPG C8, DAC CC). */
const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;

function jpegHeader(file: string, b: Buffer): ImageHeader {
  let orientation = 1;
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) throw new FormatError(file, `JPEG marker expected at byte ${i}`);
    const m = b[i + 1]!;
    if (m === 0xff) {
      i++; // fill byte
      continue;
    }
    if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      i += 2;
      continue;
    }
    const len = b.readUInt16BE(i + 2);
    if (len < 2 || i + 2 + len > b.length) break;
    if (m === 0xe1 && b.toString('latin1', i + 4, i + 10) === 'Exif\0\0') orientation = exifOrientation(b.subarray(i + 10, i + 2 + len));
    if (isSof(m)) {
      if (len < 7) break;
      return { kind: 'jpeg', height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7), orientation };
    }
    if (m === 0xda || m === 0xd9) break; // scan data before any frame header
    i += 2 + len;
  }
  throw new FormatError(file, 'JPEG without a frame header (SOF) before its image data');
}

/** Tag 0x0112 of IFD0 in a TIFF block, 1 when absent or unreadable (as Pillow's getexif()). */
function exifOrientation(t: Buffer): number {
  if (t.length < 8) return 1;
  const le = t.toString('latin1', 0, 2) === 'II';
  if (!le && t.toString('latin1', 0, 2) !== 'MM') return 1;
  const u16 = (o: number) => (le ? t.readUInt16LE(o) : t.readUInt16BE(o));
  const u32 = (o: number) => (le ? t.readUInt32LE(o) : t.readUInt32BE(o));
  const ifd = u32(4);
  if (ifd + 2 > t.length) return 1;
  const n = u16(ifd);
  for (let k = 0; k < n; k++) {
    const e = ifd + 2 + k * 12;
    if (e + 12 > t.length) return 1;
    if (u16(e) === 0x0112) {
      const v = u16(e + 8);
      return v >= 1 && v <= 8 ? v : 1;
    }
  }
  return 1;
}

/**
 * Refuses a declared size above `maxPixels` (default Pillow's limit), naming the limit and the
 * flag that raises it; and a zero size. Called before any decoding.
 */
export function checkImagePixels(file: string, h: ImageHeader, maxPixels = DEFAULT_MAX_IMAGE_PIXELS): void {
  if (h.width === 0 || h.height === 0) throw new FormatError(file, `declares a size of ${h.width}×${h.height} pixels`);
  const px = h.width * h.height;
  if (px > maxPixels) {
    throw new UsageError(
      `${file}: declares ${h.width}×${h.height} = ${px} pixels, above the limit of ${maxPixels} ` +
        `(Pillow's decompression-bomb limit); refused before decoding — raise it with run --max-image-pixels <N> if the image is genuine`,
    );
  }
}
