/**
 * The fast path of the safetensors header parser (header-fast.ts) against the general one:
 * on every header, generated or mutated, parseSafetensorsHeader (fast path first) must give
 * exactly what the general path alone gives — the same tensors in the same order, the same
 * metadata, or the same one-line FormatError. And the fast path must actually be taken for
 * the usual headers (otherwise the comparison proves nothing), and refused for the unusual.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FormatError } from '../../src/errors';
import { parseSafetensorsHeader, type SafetensorsHeader } from '../../src/formats/safetensors';
import { hasDtype, parseHeader } from '../../src/formats/safetensors/header';
import { DTYPE_LIST } from '../../src/formats/safetensors/tensor-table';
import { parseHeaderFast } from '../../src/formats/safetensors/header-fast';
import { runFuzz } from '../support/fuzz-harness';

const FILE = 'fast.safetensors';
const SIZE: Record<string, number> = { F64: 8, F32: 4, F16: 2, BF16: 2, F8_E4M3: 1, I64: 8, I32: 4, U8: 1, BOOL: 1 };

/** A file image: length field, header text as given, `data` bytes. */
function image(header: string, data: number): Uint8Array {
  const h = Buffer.from(header, 'utf8');
  const out = Buffer.alloc(8 + h.length + data);
  out.writeBigUInt64LE(BigInt(h.length), 0);
  h.copy(out, 8);
  return new Uint8Array(out.buffer, out.byteOffset, out.length);
}

/**
 * A comparable form of a parse: every field, tensors in map order, metadata entries in order,
 * the map's size and which dtypes it answers as present (a table answers from its own mask).
 */
function plain(h: SafetensorsHeader): unknown {
  return {
    ...h,
    tensors: [...h.tensors.entries()].map(([k, t]) => [k, { ...t }]),
    size: h.tensors.size,
    dtypes: DTYPE_LIST.filter((d) => hasDtype(h.tensors, (x) => x === d)),
    metadata: h.metadata ? Object.entries(h.metadata) : undefined,
  };
}

type Outcome = { ok: true; value: unknown } | { ok: false; message: string; byte: number | undefined };
function run(fn: () => SafetensorsHeader): Outcome {
  try {
    return { ok: true, value: plain(fn()) };
  } catch (e) {
    if (!(e instanceof FormatError)) throw e;
    expect(e.message).not.toContain('\n');
    return { ok: false, message: e.message, byte: e.byte };
  }
}

/** Both paths on `img`; returns whether the fast path read it. */
function same(img: Uint8Array): boolean {
  const general = run(() => parseHeader(img, img.length, FILE, false));
  const both = run(() => parseSafetensorsHeader(img, img.length, FILE));
  expect(both).toEqual(general);
  let fast = false;
  if (img.length >= 8) {
    const n = Number(Buffer.from(img).readBigUInt64LE(0));
    if (n > 0 && 8 + n <= img.length) fast = parseHeaderFast(img, n, img.length) !== undefined;
  }
  // The fast path only ever accepts what the general path accepts.
  if (fast) expect(general.ok).toBe(true);
  return fast;
}

interface T {
  key: string;
  dtype: string;
  shape: number[];
}
/** Keys the fast path reads: no escapes (quotes, backslashes, controls), not starting with a digit. */
const plainKey = fc.oneof(
  fc.constantFrom('model.embed_tokens.weight', 'lm_head.weight', 'a', '', '__proto__', 'clé.ü', '層.0.重み', 'x-1'),
  fc.string({ unit: 'grapheme', maxLength: 12 }).filter((s) => JSON.stringify(s) === `"${s}"` && !/^[0-9]/.test(s) && s !== '__metadata__'),
);
const tensor: fc.Arbitrary<T> = fc.record({
  key: plainKey,
  dtype: fc.constantFrom(...Object.keys(SIZE)),
  shape: fc.array(fc.nat(5), { maxLength: 3 }),
});
const FIELD_ORDERS = [
  ['dtype', 'shape', 'data_offsets'],
  ['data_offsets', 'dtype', 'shape'],
  ['shape', 'data_offsets', 'dtype'],
] as const;
/** Metadata values as writers put them: plain, with escapes, with non-ASCII text. */
const metaValue = fc.oneof(fc.constantFrom('pt', 'a "quoted" \\ value\n', 'ünïcødé ✓', ''), fc.string({ maxLength: 8 }));

/** Header text of a valid file, in one of several spellings, and its data size. */
const validHeader = fc
  .record({
    tensors: fc.uniqueArray(tensor, { selector: (t) => t.key, maxLength: 6 }),
    meta: fc.option(fc.dictionary(fc.string({ maxLength: 6 }), metaValue, { maxKeys: 3 }), { nil: undefined }),
    metaAt: fc.nat(6),
    order: fc.nat(FIELD_ORDERS.length - 1),
    indent: fc.constantFrom(undefined, 0, 1, 2, '\t'),
    pad: fc.nat(9),
    shuffle: fc.boolean(),
  })
  .map(({ tensors, meta, metaAt, order, indent, pad, shuffle }) => {
    let off = 0;
    const entries: [string, unknown][] = tensors.map((t) => {
      const n = t.shape.reduce((a, b) => a * b, 1) * SIZE[t.dtype]!;
      const fields = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + n] };
      off += n;
      return [t.key, Object.fromEntries(FIELD_ORDERS[order]!.map((f) => [f, fields[f]]))];
    });
    if (shuffle) entries.reverse(); // offsets no longer in key order: the sort must restore file order
    if (meta) entries.splice(Math.min(metaAt, entries.length), 0, ['__metadata__', meta]);
    // Built by hand: an object literal would move "__proto__" and digit keys.
    const text = `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v, null, indent)}`).join(indent === undefined ? ',' : ',\n ')}}`;
    return { text: text + ' '.repeat(pad), data: off };
  });

/** Text-level mutations of a header (its length field follows the text). */
const TOKENS = ['"', ',', ':', '{', '}', '[', ']', ' ', '\n', '\\', '\\u0041', '0', '1', '9', '-', '.', 'e', 'x', 'é', '\u0001', '"a"'];
const mutatedHeader = fc
  .tuple(
    validHeader,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom('replace', 'insert', 'delete'), fc.constantFrom(...TOKENS)), {
      minLength: 1,
      maxLength: 3,
    }),
    fc.integer({ min: -8, max: 8 }),
  )
  .map(([h, edits, dataDelta]) => {
    let s = h.text;
    for (const [at, kind, tok] of edits) {
      const i = s.length === 0 ? 0 : at % s.length;
      if (kind === 'replace') s = s.slice(0, i) + tok + s.slice(i + 1);
      else if (kind === 'insert') s = s.slice(0, i) + tok + s.slice(i);
      else s = s.slice(0, i) + s.slice(i + 1);
    }
    return image(s, Math.max(0, h.data + (edits.length === 1 ? dataDelta : 0)));
  });

describe('safetensors header fast path', () => {
  it('reads every usual header exactly as the general path does (seeded)', () => {
    let fast = 0;
    let total = 0;
    runFuzz('safetensors-fast-valid', 600, validHeader, (h) => {
      total++;
      if (same(image(h.text, h.data))) fast++;
    });
    // Every generated header is of the usual shape: all of them take the fast path.
    expect(fast).toBe(total);
  });

  it('gives the same tensors or the same error on mutated headers (seeded)', () => {
    let fast = 0;
    let refused = 0;
    runFuzz('safetensors-fast-mutated', 3000, mutatedHeader, (img) => {
      if (same(img)) fast++;
      else refused++;
    });
    expect(fast).toBeGreaterThan(50);
    expect(refused).toBeGreaterThan(500);
  });

  const t = (k: string, o: string, data = 4) => ({ k, img: image(o, data) });
  const refusedCases = [
    t('duplicate key', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('duplicate field', '{"a":{"dtype":"F32","dtype":"F32","shape":[1]}}'),
    t('extra field', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}'),
    t('escaped key', '{"\\u0061":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('array-index key', '{"0":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('unknown dtype', '{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,4]}}'),
    t('float shape', '{"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}}'),
    t('leading zero', '{"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}}'),
    t('16 digits', '{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,1000000000000004]}}'),
    t('gap', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', 8),
    t('trailing data', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', 5),
    t('size mismatch', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}'),
    t('trailing comma', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},}'),
    t('leading space', ' {"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('metadata twice', '{"__metadata__":{},"__metadata__":{},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('metadata key twice', '{"__metadata__":{"k":"1","\\u006b":"2"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('metadata number', '{"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    t('trailing NUL', '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}\u0000'),
  ];
  it.each(refusedCases)('leaves $k to the general path, which gives its answer', ({ img }) => {
    expect(same(img)).toBe(false);
  });

  it('refuses a key given twice even where the entries tile the data (the general path names it)', () => {
    const e = (b: number) => `{"dtype":"F32","shape":[1],"data_offsets":[${b},${b + 4}]}`;
    for (const header of [`{"a":${e(0)},"a":${e(4)}}`, `{"a":${e(4)},"b":${e(8)},"a":${e(0)}}`]) {
      const img = image(header, header.includes('"b"') ? 12 : 8);
      expect(same(img)).toBe(false);
      expect(() => parseSafetensorsHeader(img, img.length, FILE)).toThrow(/has the key "a" twice/);
    }
  });

  it('reads a 10 000-tensor header in file order, keys as their own strings', () => {
    const entries: string[] = [];
    for (let i = 0; i < 10_000; i++) entries.push(`"m.${i}.w":{"dtype":"BF16","shape":[2,3],"data_offsets":[${i * 12},${i * 12 + 12}]}`);
    const img = image(`{"__metadata__":{"format":"pt"},${entries.reverse().join(',')}}`, 120_000);
    expect(same(img)).toBe(true);
    const h = parseSafetensorsHeader(img, img.length, FILE);
    expect([...h.tensors.keys()].slice(0, 3)).toEqual(['m.0.w', 'm.1.w', 'm.2.w']);
    expect(h.tensors.get('m.9999.w')).toMatchObject({ dtype: 'BF16', shape: [2, 3], begin: 119_988, end: 120_000 });
    // One shape array for all (the language server keeps every header it reads).
    expect(h.tensors.get('m.0.w')!.shape).toBe(h.tensors.get('m.5.w')!.shape);
    expect(h.metadata).toEqual({ format: 'pt' });
  });
});
