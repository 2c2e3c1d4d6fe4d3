/**
 * The word a user most likely meant (command names, option names, JSON field names): the one
 * typo distance every "did you mean" of the CLI and the spec parser uses. Foundation: imports nothing of ours.
 */

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
