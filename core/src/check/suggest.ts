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
  private readonly oneOff = new Map<string, string[]>();
  private readonly bySuffix = new Map<string, string[]>();
  private readonly set: Set<string>;
  readonly keys: string[];

  constructor(keys: Iterable<string>) {
    this.keys = [...keys];
    this.set = new Set(this.keys);
    for (const k of this.keys) {
      const seg = k.split('.');
      for (let j = 0; j < seg.length; j++) push(this.oneOff, maskAt(seg, j), k);
      for (let j = 1; j < seg.length; j++) push(this.bySuffix, seg.slice(j).join('.'), k);
    }
  }

  /** Candidates found by lookups only (may be empty). */
  nearby(wanted: string): string[] {
    const seg = wanted.split('.');
    const out = new Set<string>();
    for (let j = 0; j < seg.length; j++) for (const k of this.oneOff.get(maskAt(seg, j)) ?? []) out.add(k);
    for (const k of this.bySuffix.get(wanted) ?? []) out.add(k); // the key has an extra prefix
    for (let j = 1; j < seg.length; j++) {
      const tail = seg.slice(j).join('.');
      if (this.set.has(tail)) out.add(tail); // the wanted name has an extra prefix
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

function maskAt(seg: string[], j: number): string {
  return `${j}\u0000${seg.length}\u0000${seg.slice(0, j).join('.')}\u0000${seg.slice(j + 1).join('.')}`;
}

function push(m: Map<string, string[]>, k: string, v: string): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
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

/**
 * Optimal-string-alignment distance (Levenshtein plus adjacent transpositions, so `dytpe` is
 * one edit from `dtype`), or `max + 1` once it is certain to exceed `max`.
 */
export function typoDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1);
    row[0] = i;
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row[j] = j;
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, rows[i - 2]![j - 2]! + 1);
      row[j] = v;
      if (v < rowMin) rowMin = v;
    }
    if (i > 0 && rowMin > max) return max + 1;
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/**
 * The word a user most likely meant, for command names, option names and JSON field names:
 * `_` and `-` count as the same (`ctx_len` → `ctx-len`), case is ignored, a unique prefix or
 * extension matches (`expor` → `export`, `max-new-token` → `max-new-tokens`), and otherwise
 * the nearest word within one edit (two for words of 5+ characters) wins, transpositions
 * counting as one edit. `undefined` when nothing is close.
 */
export function closestWord(wanted: string, words: Iterable<string>): string | undefined {
  const norm = (w: string) => w.toLowerCase().replace(/_/g, '-');
  const w = norm(wanted);
  if (w === '') return undefined;
  const list = [...words];
  const exact = list.find((c) => norm(c) === w);
  if (exact !== undefined) return exact;
  const prefixed = list.filter((c) => norm(c).startsWith(w) || (w.startsWith(norm(c)) && norm(c).length >= 3));
  if (prefixed.length === 1) return prefixed[0];
  const max = w.length >= 5 ? 2 : 1;
  let best: string | undefined;
  let bestDist = max + 1;
  for (const c of prefixed.length > 1 ? prefixed : list) {
    const d = typoDistance(w, norm(c), max);
    if (d < bestDist || (d === bestDist && best !== undefined && c < best)) {
      best = c;
      bestDist = d;
    }
  }
  return bestDist <= max ? best : undefined;
}

/** `; did you mean "a"?` (or `"a" or "b"`), empty without suggestions. */
export function didYouMean(suggestions: readonly string[]): string {
  if (suggestions.length === 0) return '';
  return `; did you mean ${suggestions.map((s) => JSON.stringify(s)).join(' or ')}?`;
}
