/**
 * A node's attributes as the graph explorer shows them: each AttributeProto decoded to one line
 * of text (`perm = [0, 2, 1, 3]`, `value = int64[2] [1, -1]`). A tensor attribute (a Constant's
 * value) shows its dtype, dims and at most {@link MAX_SHOWN} elements, so a folded constant
 * reads as what it is instead of a box named `/const/ints_16`. Payloads past that are skipped.
 */
import { dtypeOfOnnx, nameOfDtype } from '../formats/dtype';
import { FIELD, WIRE } from '../formats/onnx/fields';
import type { FieldHead, FileReader } from '../formats/onnx/wire-reader';

/** One attribute: its name and its value as text. */
export interface NodeAttr {
  name: string;
  value: string;
}

/** Elements of a tensor or list shown before `…`. */
export const MAX_SHOWN = 16;

const A = FIELD.AttributeProto;
const T = FIELD.TensorProto;

const list = (xs: (number | string | bigint)[], total = xs.length) =>
  `[${xs.slice(0, MAX_SHOWN).map(String).join(', ')}${total > MAX_SHOWN ? `, … (${total})` : ''}]`;

/** A float as short text (`1e-06`, `0.125`). */
function num(f: number): string {
  return Number.isInteger(f) ? String(f) : String(Number(f.toPrecision(6)));
}

/** Little-endian elements of `raw` of ONNX data type `dt`, at most MAX_SHOWN. */
function rawElements(raw: Uint8Array, dt: number): (number | bigint)[] | undefined {
  const v = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const read: Record<number, [number, (o: number) => number | bigint]> = {
    1: [4, (o) => v.getFloat32(o, true)],
    2: [1, (o) => v.getUint8(o)],
    3: [1, (o) => v.getInt8(o)],
    5: [2, (o) => v.getInt16(o, true)],
    6: [4, (o) => v.getInt32(o, true)],
    7: [8, (o) => v.getBigInt64(o, true)],
    9: [1, (o) => v.getUint8(o)],
    11: [8, (o) => v.getFloat64(o, true)],
  };
  const r = read[dt];
  if (!r) return undefined;
  const out: (number | bigint)[] = [];
  for (let o = 0; o + r[0] <= raw.length && out.length < MAX_SHOWN; o += r[0]) out.push(r[1](o));
  return out;
}

/** A TensorProto as `int64[2] [1, -1]` (dtype, dims, leading elements). */
export function tensorText(r: FileReader, h: FieldHead): string {
  const dims: number[] = [];
  let dt = 0;
  let elems: (number | bigint)[] = [];
  let raw: FieldHead | undefined;
  let external = false;
  r.each(h.vStart, h.vEnd, 'TensorProto', (x) => {
    if (x.field === T.dims) dims.push(...r.ints(x, 'TensorProto', 'dims'));
    else if (x.field === T.data_type && x.wire === WIRE.VARINT) dt = x.int;
    else if (x.field === T.raw_data && x.wire === WIRE.LEN) raw = x;
    else if ((x.field === T.int64_data || x.field === T.int32_data) && elems.length < MAX_SHOWN)
      elems.push(...r.ints(x, 'TensorProto', 'int_data'));
    else if (x.field === T.float_data && elems.length < MAX_SHOWN) {
      const b = x.wire === WIRE.LEN ? r.bytes(x.vStart, Math.min(x.vEnd, x.vStart + 4 * MAX_SHOWN)) : r.bytes(x.vStart, x.vEnd);
      elems.push(...(rawElements(b, 1) ?? []));
    } else if (x.field === T.data_location && x.wire === WIRE.VARINT) external = x.int === 1;
  });
  const count = dims.reduce((a, b) => a * b, 1);
  if (raw) {
    const size = { 1: 4, 2: 1, 3: 1, 5: 2, 6: 4, 7: 8, 9: 1, 11: 8 }[dt] ?? 1;
    elems = rawElements(r.bytes(raw.vStart, Math.min(raw.vEnd, raw.vStart + size * MAX_SHOWN)), dt) ?? [];
  }
  const d = dtypeOfOnnx(dt);
  const type = `${d ? nameOfDtype(d) : `data_type ${dt}`}[${dims.join(', ')}]`;
  if (external) return `${type} (external data)`;
  if (!elems.length) return count === 0 ? `${type} []` : type;
  const shown = elems.map((e) => (typeof e === 'number' ? num(e) : e));
  return `${type} ${dims.length === 0 ? String(shown[0]) : list(shown, count)}`;
}

/** Decodes one AttributeProto (`h` is the NodeProto's `attribute` field). */
export function readAttribute(r: FileReader, h: FieldHead): NodeAttr {
  let name = '';
  const parts: string[] = [];
  const ints: number[] = [];
  const floats: number[] = [];
  const strings: string[] = [];
  r.each(h.vStart, h.vEnd, 'AttributeProto', (x) => {
    if (x.field === A.name && x.wire === WIRE.LEN) name = r.string(x.vStart, x.vEnd);
    else if (x.field === A.i && x.wire === WIRE.VARINT) parts.push(String(x.int));
    else if (x.field === A.f && x.wire === WIRE.I32) parts.push(num(new DataView(r.bytes(x.vStart, x.vEnd).buffer).getFloat32(0, true)));
    else if (x.field === A.s && x.wire === WIRE.LEN) parts.push(JSON.stringify(r.string(x.vStart, Math.min(x.vEnd, x.vStart + 200))));
    else if (x.field === A.t && x.wire === WIRE.LEN) parts.push(tensorText(r, x));
    else if (x.field === A.g || x.field === A.graphs) parts.push('(subgraph)');
    else if (x.field === A.ints) ints.push(...r.ints(x, 'AttributeProto', 'ints'));
    else if (x.field === A.floats) {
      const b = r.bytes(x.vStart, x.vEnd);
      const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
      for (let o = 0; o + 4 <= b.length; o += 4) floats.push(v.getFloat32(o, true));
    } else if (x.field === A.strings && x.wire === WIRE.LEN) strings.push(JSON.stringify(r.string(x.vStart, x.vEnd)));
  });
  if (ints.length) parts.push(list(ints));
  if (floats.length) parts.push(list(floats.map(num)));
  if (strings.length) parts.push(list(strings));
  return { name, value: parts.join(' ') || '[]' };
}
