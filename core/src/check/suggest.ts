/**
 * "Did you mean …?" for tensor keys and input names. Candidates are ranked by edit distance
 * (Levenshtein, bounded so a 10 000-key checkpoint stays cheap) with ties broken by how many
 * trailing dot-segments they share with the wanted name — `q_proj.weight` and
 * `k_proj.weight` are one edit apart, but a key that keeps the same tail is the likelier fix.
 * Keys that contain the wanted name (or are contained in it) after a prefix such as
 * `model.` or `transformer.` rank first.
 */

/** Levenshtein distance of `a` and `b`, or `max + 1` once it is certain to exceed `max`. */
export function boundedEditDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  if (a === b) return 0;
  let prev = new Array<number>(b.length + 1);
  let cur = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = cur[0];
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const cost = ca === b.charCodeAt(j - 1) ? 0 : 1;
      const v = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
      cur[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > max) return max + 1;
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}

/** Number of trailing `.`-separated segments `a` and `b` share. */
export function commonSuffixSegments(a: string, b: string): number {
  const x = a.split('.');
  const y = b.split('.');
  let n = 0;
  while (n < x.length && n < y.length && x[x.length - 1 - n] === y[y.length - 1 - n]) n++;
  return n;
}

/** Whether one name is the other with a dotted prefix added (`wte.weight` ↔ `transformer.wte.weight`). */
function prefixVariant(wanted: string, cand: string): boolean {
  return (cand.length > wanted.length && cand.endsWith('.' + wanted)) || (wanted.length > cand.length && wanted.endsWith('.' + cand));
}

/**
 * The closest `limit` candidates to `wanted`, best first. A candidate must be within an edit
 * distance of about a third of the name's length (at least 3), or be a prefix variant
 * (`anyDistance` drops the bound, for candidates already known to be near).
 */
export function closestNames(wanted: string, candidates: Iterable<string>, limit = 3, anyDistance = false): string[] {
  const max = anyDistance ? Number.MAX_SAFE_INTEGER : Math.max(3, Math.ceil(wanted.length / 3));
  const scored: { name: string; variant: boolean; dist: number; sfx: number }[] = [];
  for (const cand of candidates) {
    if (cand === wanted) continue;
    const variant = prefixVariant(wanted, cand);
    const dist = variant ? Math.abs(cand.length - wanted.length) : boundedEditDistance(wanted, cand, max);
    if (!variant && dist > max) continue;
    scored.push({ name: cand, variant, dist, sfx: commonSuffixSegments(wanted, cand) });
  }
  scored.sort(
    (p, q) => Number(q.variant) - Number(p.variant) || p.dist - q.dist || q.sfx - p.sfx || (p.name < q.name ? -1 : p.name > q.name ? 1 : 0),
  );
  const seen = new Set<string>();
  const out: string[] = [];
  for (const s of scored) {
    if (seen.has(s.name)) continue;
    seen.add(s.name);
    out.push(s.name);
    if (out.length >= limit) break;
  }
  return out;
}

/**
 * An index over a checkpoint's keys that finds likely fixes without comparing the wanted
 * name with every key: keys differing in exactly one dot-segment (a typo in `gate_prj`, a
 * wrong layer number, `q_proj` for `k_proj`) and prefix variants come from hash lookups;
 * only when those find nothing does a caller fall back to a full edit-distance scan.
 */
export class KeyIndex {
  readonly keys: string[];
  /** Keys by their dot-segments with one segment masked (position and count included). */
  private readonly oneOff: HashTable;
  /** Keys by each proper suffix of whole segments (`layers.0.x` of `model.layers.0.x`). */
  private readonly bySuffix: HashTable;
  /** Keys by themselves (a membership test). */
  private readonly whole: HashTable;

  constructor(keys: Iterable<string>) {
    this.keys = [...keys];
    const oneOff = new HashTableBuilder();
    const bySuffix = new HashTableBuilder();
    const whole = new HashTableBuilder();
    this.keys.forEach((k, i) => {
      const h = segmentHashes(k);
      for (let j = 0; j < h.length; j++) oneOff.add(maskHash(h, j), i);
      for (let j = 1; j < h.length; j++) bySuffix.add(runHash(h, j), i);
      whole.add(runHash(h, 0), i);
    });
    this.oneOff = oneOff.build();
    this.bySuffix = bySuffix.build();
    this.whole = whole.build();
  }

  /** Candidates found by lookups only (may be empty). */
  nearby(wanted: string): string[] {
    const seg = wanted.split('.');
    const h = segmentHashes(wanted);
    const out = new Set<string>();
    for (let j = 0; j < h.length; j++) {
      this.oneOff.each(maskHash(h, j), (i) => {
        const k = this.keys[i]!;
        if (differsOnlyAt(k.split('.'), seg, j)) out.add(k);
      });
    }
    // the key has an extra prefix
    this.bySuffix.each(runHash(h, 0), (i) => {
      const k = this.keys[i]!;
      if (k.endsWith(`.${wanted}`)) out.add(k);
    });
    // the wanted name has an extra prefix
    for (let j = 1; j < h.length; j++) {
      const tail = seg.slice(j).join('.');
      this.whole.each(runHash(h, j), (i) => {
        if (this.keys[i] === tail) out.add(tail);
      });
    }
    out.delete(wanted);
    return [...out];
  }

  /**
   * The closest keys to `wanted`. `allowScan` permits the full edit-distance scan when the
   * lookups find nothing (callers ration it: a spec with 10 000 wrong keys must stay fast).
   */
  closest(wanted: string, limit = 3, allowScan: boolean | (() => boolean) = true): string[] {
    const near = this.nearby(wanted);
    if (near.length > 0) return closestNames(wanted, near, limit, true);
    const scan = typeof allowScan === 'function' ? allowScan() : allowScan;
    return scan ? closestNames(wanted, this.keys, limit) : [];
  }
}

/** Equal segment counts and equal segments everywhere but at `j`. */
function differsOnlyAt(a: string[], b: string[], j: number): boolean {
  if (a.length !== b.length) return false;
  for (let s = 0; s < a.length; s++) if (s !== j && a[s] !== b[s]) return false;
  return true;
}

/** FNV-1a (32-bit) of each dot-segment of `k`. */
function segmentHashes(k: string): Uint32Array {
  let n = 1;
  for (let i = 0; i < k.length; i++) if (k.charCodeAt(i) === 0x2e) n++;
  const out = new Uint32Array(n);
  let h = 0x811c9dc5;
  let s = 0;
  for (let i = 0; i <= k.length; i++) {
    const c = i < k.length ? k.charCodeAt(i) : 0x2e;
    if (c === 0x2e) {
      out[s++] = h >>> 0;
      h = 0x811c9dc5;
    } else h = Math.imul(h ^ c, 0x01000193);
  }
  return out;
}

function mix(h: number, v: number): number {
  return Math.imul(h ^ v, 0x01000193) ^ (h >>> 15);
}

/** Hash of segments `from ..` (in order). */
function runHash(h: Uint32Array, from: number): number {
  let x = mix(0x2545f491, h.length - from);
  for (let s = from; s < h.length; s++) x = mix(x, h[s]!);
  return x >>> 0;
}

/** Hash of all segments but `j` (with `j` and the count, so masks at different places differ). */
function maskHash(h: Uint32Array, j: number): number {
  let x = mix(mix(0x9e3779b9, j), h.length);
  for (let s = 0; s < h.length; s++) if (s !== j) x = mix(x, h[s]!);
  return x >>> 0;
}

/** Key-index bits packed below a 32-bit hash in one float64 (exact below 2^53). */
const IDX_BITS = 2 ** 21;

/**
 * A multimap from 32-bit hashes to key indices as one sorted Float64Array (hash · 2^21 +
 * index): lookups are a binary search, and the whole table lives outside the JS heap (a Map
 * of mask strings to key lists was a quarter of the language server's heap on a 20 000-key
 * checkpoint). Hash collisions only add candidates, which callers verify.
 */
class HashTable {
  constructor(private readonly packed: Float64Array) {}

  /** Calls `f` with every index stored under `hash`. */
  each(hash: number, f: (i: number) => void): void {
    const a = this.packed;
    const lo = hash * IDX_BITS;
    let l = 0;
    let r = a.length;
    while (l < r) {
      const m = (l + r) >>> 1;
      if (a[m]! < lo) l = m + 1;
      else r = m;
    }
    for (let i = l; i < a.length && a[i]! < lo + IDX_BITS; i++) f(a[i]! - lo);
  }
}

class HashTableBuilder {
  private buf = new Float64Array(1024);
  private n = 0;

  add(hash: number, i: number): void {
    if (i >= IDX_BITS) return; // beyond 2M keys: no lookup entry (the scan still finds it)
    if (this.n === this.buf.length) {
      const b = new Float64Array(this.buf.length * 2);
      b.set(this.buf);
      this.buf = b;
    }
    this.buf[this.n++] = hash * IDX_BITS + i;
  }

  build(): HashTable {
    return new HashTable(this.buf.slice(0, this.n).sort());
  }
}

const indexes = new WeakMap<object, KeyIndex>();

/** The {@link KeyIndex} of a key collection (e.g. a header's tensor map), built once. */
export function keyIndexOf(owner: object, keys: () => Iterable<string>): KeyIndex {
  let idx = indexes.get(owner);
  if (!idx) {
    idx = new KeyIndex(keys());
    indexes.set(owner, idx);
  }
  return idx;
}

/** `; did you mean "a"?` (or `"a" or "b"`), empty without suggestions. */
export function didYouMean(suggestions: readonly string[]): string {
  if (suggestions.length === 0) return '';
  return `; did you mean ${suggestions.map((s) => JSON.stringify(s)).join(' or ')}?`;
}
