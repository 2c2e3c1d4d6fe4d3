/**
 * A compact offset index of a strict JSON document: per value, its kind and range, its
 * children (contiguous, so `inputs[i]` is O(1)) and, for a property value, where its name is.
 * Built in one pass over text that JSON.parse accepted, into typed arrays: a 20 000-input spec
 * is ~140 000 values, and a tree of node objects for them was most of a cold check's
 * allocation and garbage-collection time. Property names are stored once each (a spec has a
 * dozen distinct ones) and referred to by number, so the index does not keep the text alive:
 * a parse patched through many edits (patch.ts) would otherwise pin the version it was built
 * from for its whole life.
 */

/** Value kinds. */
export const SCALAR = 0;
export const OBJECT = 1;
export const ARRAY = 2;

/** The index of one document (ranges in the text it was built from until {@link fold}ed). */
export class OffsetIndex {
  /** Use {@link OffsetIndex.build}. */
  constructor(
    readonly count: number,
    readonly kind: Uint8Array,
    readonly start: Int32Array,
    readonly end: Int32Array,
    private readonly kidStart: Int32Array,
    private readonly kidCount: Int32Array,
    private readonly kids: Int32Array,
    /** Start of the property name of a property value (-1 for array elements and the root). */
    readonly keyStart: Int32Array,
    /** Length of that name token, quotes included. */
    readonly keyLength: Int32Array,
    /** The property name of a property value, as an index into `names` (-1 where none). */
    private readonly nameId: Int32Array,
    /** The distinct property names, decoded. */
    private readonly names: readonly string[],
  ) {}

  /** The index of `text`, which must be valid JSON (undefined if it turns out not to be). */
  static build(text: string): OffsetIndex | undefined {
    try {
      return buildIndex(text);
    } catch {
      return undefined;
    }
  }

  /** Child `seg` of value `n`: an element of an array, the last property so named of an object. -1 if none. */
  child(n: number, seg: string | number): number {
    const k = this.kind[n];
    const first = this.kidStart[n]!;
    const count = this.kidCount[n]!;
    if (k === ARRAY) return typeof seg === 'number' && Number.isInteger(seg) && seg >= 0 && seg < count ? this.kids[first + seg]! : -1;
    if (k !== OBJECT || typeof seg !== 'string') return -1;
    for (let j = count - 1; j >= 0; j--) {
      const c = this.kids[first + j]!;
      if (this.nameIs(c, seg)) return c;
    }
    return -1;
  }

  private nameIs(n: number, name: string): boolean {
    const id = this.nameId[n]!;
    return id >= 0 && this.names[id] === name;
  }
}

/**
 * A copy of `s` that does not point into the text it was cut from. V8 makes a slice of 13 or
 * more characters a "sliced string" that keeps its whole parent alive; a string kept past
 * the parse (a patched key, an index's names) would pin one whole version of the document
 * (a heap snapshot after 200 edits of a 3.5 MB spec showed 200 retained versions: #14.3).
 */
export function detached(s: string): string {
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8');
}

function buildIndex(text: string): OffsetIndex | undefined {
  let cap = Math.max(64, text.length >> 4);
  let kind = new Uint8Array(cap);
  let start = new Int32Array(cap);
  let end = new Int32Array(cap);
  let kidStart = new Int32Array(cap);
  let kidCount = new Int32Array(cap);
  let keyStart = new Int32Array(cap);
  let keyLength = new Int32Array(cap);
  let nameId = new Int32Array(cap);
  const names: string[] = [];
  const ids = new Map<string, number>(); // name token → id, for this build only
  // The last name seen at each (length, first character): a spec repeats a dozen names, so
  // nearly every name is found by one comparison in place, without cutting a string.
  const recent = new Int32Array(1024).fill(-1);
  const tokens: string[] = []; // each id's name token as in the text, quotes included
  const idOf = (s: number, len: number): number => {
    const slot = (len * 31 + text.charCodeAt(s + 1)) & 1023;
    const hit = recent[slot]!;
    if (hit >= 0 && tokens[hit]!.length === len && text.startsWith(tokens[hit]!, s)) return hit;
    const token = text.slice(s, s + len);
    let id = ids.get(token);
    if (id === undefined) {
      id = names.length;
      const raw = token.slice(1, -1);
      names.push(detached(raw.indexOf('\\') === -1 ? raw : (JSON.parse(token) as string)));
      tokens.push(token);
      ids.set(token, id);
    }
    recent[slot] = id;
    return id;
  };
  let count = 0;
  const grow = () => {
    cap *= 2;
    const g8 = (a: Uint8Array) => {
      const b = new Uint8Array(cap);
      b.set(a);
      return b;
    };
    const g32 = (a: Int32Array) => {
      const b = new Int32Array(cap);
      b.set(a);
      return b;
    };
    kind = g8(kind);
    start = g32(start);
    end = g32(end);
    kidStart = g32(kidStart);
    kidCount = g32(kidCount);
    keyStart = g32(keyStart);
    keyLength = g32(keyLength);
    nameId = g32(nameId);
  };
  // Children of the open containers, innermost last; copied out when a container closes.
  let pending = new Int32Array(1024);
  let pendingTop = 0;
  let kids = new Int32Array(Math.max(64, text.length >> 4));
  let kidsTop = 0;
  const stack: number[] = [];
  const base: number[] = [];

  const n = text.length;
  let i = 0;
  const ws = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };
  const skipString = () => {
    // At the opening quote; leaves i after the closing one.
    for (i++; ; i++) {
      if (i >= n) throw new SyntaxError('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x5c) i++;
      else if (c === 0x22) break;
    }
    i++;
  };
  let nameStart = -1;
  let nameLength = 0;
  const readName = () => {
    ws();
    if (text.charCodeAt(i) !== 0x22) throw new SyntaxError('expected a property name');
    nameStart = i;
    skipString();
    nameLength = i - nameStart;
    ws();
    if (text.charCodeAt(i) !== 0x3a) throw new SyntaxError('expected ":"');
    i++;
  };
  const node = (k: number, s: number): number => {
    if (count === cap) grow();
    const id = count++;
    kind[id] = k;
    start[id] = s;
    keyStart[id] = nameStart;
    keyLength[id] = nameStart >= 0 ? nameLength : 0;
    nameId[id] = nameStart >= 0 ? idOf(nameStart, nameLength) : -1;
    nameStart = -1;
    if (stack.length > 0) {
      if (pendingTop === pending.length) {
        const b = new Int32Array(pending.length * 2);
        b.set(pending);
        pending = b;
      }
      pending[pendingTop++] = id;
    }
    return id;
  };

  for (;;) {
    // At a value.
    ws();
    const s = i;
    const c = text.charCodeAt(i);
    let closed = false;
    if (c === 0x7b || c === 0x5b) {
      const id = node(c === 0x7b ? OBJECT : ARRAY, s);
      stack.push(id);
      base.push(pendingTop);
      i++;
      ws();
      const close = text.charCodeAt(i);
      if (close === 0x7d || close === 0x5d) closed = true;
      else {
        if (c === 0x7b) readName();
        continue;
      }
    } else {
      if (c === 0x22) skipString();
      else {
        while (i < n) {
          const d = text.charCodeAt(i);
          if (d === 0x2c || d === 0x7d || d === 0x5d || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
          i++;
        }
        if (i === s) throw new SyntaxError('unexpected token');
      }
      const id = node(SCALAR, s);
      end[id] = i;
      if (stack.length === 0) break;
    }
    // After a value (or at the close of an empty container): close containers, or go on.
    for (;;) {
      if (!closed) {
        ws();
        const d = text.charCodeAt(i);
        if (d === 0x2c) {
          i++;
          if (kind[stack[stack.length - 1]!] === OBJECT) readName();
          break;
        }
        if (d !== 0x7d && d !== 0x5d) throw new SyntaxError('expected "," or a closing bracket');
      }
      closed = false;
      const id = stack.pop()!;
      const b = base.pop()!;
      if ((text.charCodeAt(i) === 0x7d) !== (kind[id] === OBJECT)) throw new SyntaxError('mismatched bracket');
      i++;
      end[id] = i;
      const m = pendingTop - b;
      if (kidsTop + m > kids.length) {
        const k2 = new Int32Array(Math.max(kids.length * 2, kidsTop + m));
        k2.set(kids);
        kids = k2;
      }
      kids.set(pending.subarray(b, pendingTop), kidsTop);
      kidStart[id] = kidsTop;
      kidCount[id] = m;
      kidsTop += m;
      pendingTop = b;
      if (stack.length === 0) break;
    }
    if (stack.length === 0) break;
  }
  ws();
  if (i !== n || count === 0) return undefined;
  return new OffsetIndex(
    count,
    kind.subarray(0, count),
    start.subarray(0, count),
    end.subarray(0, count),
    kidStart.subarray(0, count),
    kidCount.subarray(0, count),
    kids.subarray(0, kidsTop),
    keyStart.subarray(0, count),
    keyLength.subarray(0, count),
    nameId.subarray(0, count),
    names,
  );
}
