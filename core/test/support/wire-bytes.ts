/**
 * Protobuf wire encoding by hand for tests: varints (64-bit, two's complement for negatives),
 * tags and length-delimited fields as plain byte arrays. Independent of core/src/formats/onnx,
 * so tests can build well-formed and deliberately broken ONNX bytes the code under test must
 * read (or reject).
 */

/** A varint: any number or bigint, negatives as their 64-bit two's complement (10 bytes). */
export function varint(v: bigint | number): number[] {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return out;
}

/** The tag of `field` with wire type `wire` (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
export const tag = (field: number, wire: number): number[] => varint(field * 8 + wire);

/** A varint field. */
export const vf = (field: number, v: bigint | number): number[] => [...tag(field, 0), ...varint(v)];

/** A length-delimited field; `lie` writes another length than the body's. */
export const len = (field: number, body: ArrayLike<number>, lie?: bigint | number): number[] => [
  ...tag(field, 2),
  ...varint(lie ?? body.length),
  ...Array.from(body),
];

/** A UTF-8 string field. */
export const sf = (field: number, s: string): number[] => len(field, [...Buffer.from(s, 'utf8')]);
