/**
 * Text that fits a table cell without losing what tells rows apart: a key's end (the
 * `…gate_proj.weight` a user looks for) and the part of a shard name that differs between the
 * shards (`00003`, not the shared `model-0000…`).
 */

/**
 * `text` cut to at most `max` characters by an ellipsis in the middle, keeping more of the end
 * (the end of a tensor key names the tensor; its start is the shared `model.layers.` prefix).
 */
export function middleEllipsis(text: string, max: number): string {
  if (text.length <= max) return text;
  if (max <= 1) return '…'.slice(0, Math.max(0, max));
  const keep = max - 1;
  const head = Math.floor(keep / 3);
  return `${text.slice(0, head)}…${text.slice(text.length - (keep - head))}`;
}

const SEP = /[.\-_/\\]/;

/**
 * The part of each shard name that differs from the others, widened to whole separator-delimited
 * tokens (`model-00001-of-00002.safetensors`, `model-00002-of-00002.safetensors` → `00001`,
 * `00002`). One shard, or names with nothing in common, keep their full name.
 */
export function shardLabels(names: string[]): string[] {
  if (names.length < 2) return names.slice();
  const first = names[0]!;
  let pre = first.length;
  let suf = first.length;
  for (const n of names.slice(1)) {
    let i = 0;
    while (i < pre && i < n.length && n[i] === first[i]) i++;
    pre = i;
    let j = 0;
    while (j < suf && j < n.length && n[n.length - 1 - j] === first[first.length - 1 - j]) j++;
    suf = j;
  }
  // Back off to token boundaries: the shared prefix ends after a separator, the suffix starts at one.
  while (pre > 0 && !SEP.test(first[pre - 1]!)) pre--;
  while (suf > 0 && !SEP.test(first[first.length - suf]!)) suf--;
  const labels = names.map((n) => n.slice(pre, Math.max(pre, n.length - suf)));
  // The middles must still tell the shards apart and say something.
  return labels.some((l) => !l) || new Set(labels).size !== names.length ? names.slice() : labels;
}
