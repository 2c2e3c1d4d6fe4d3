/**
 * A guard shared by every JSON reader (safetensors headers, index files, specs): the
 * character offset where `[`/`{` nesting outside strings first exceeds `max`, or -1.
 * jsonc-parser and the offset walks recurse once per level, so a hostile file of a few
 * hundred KB of brackets would otherwise exhaust the stack (a fuzz finding).
 */
export function nestingBeyond(text: string, max: number): number {
  let depth = 0;
  let inStr = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inStr) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inStr = false;
    } else if (c === 0x22) inStr = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return i;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return -1;
}

/** What {@link scanJsonShape} found. */
export interface JsonShape {
  /** As {@link nestingBeyond}: where nesting first exceeds `max`, or -1 (the scan stops there). */
  deepAt: number;
  /** `:` characters outside strings: in valid JSON, exactly the number of property names. */
  properties: number;
  /** `[` and `{` outside strings (counted up to where the scan stopped). */
  containers: number;
}

/**
 * {@link nestingBeyond} and a count of property names in one pass. For text JSON.parse
 * accepted, `properties === ownKeyCount(JSON.parse(text))` exactly when no object repeats a
 * key (JSON.parse keeps one property per repeated name), so duplicate detection needs no
 * tokenizer and no per-key allocation in the common case.
 */
export function scanJsonShape(text: string, max: number): JsonShape {
  let depth = 0;
  let properties = 0;
  let containers = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    // Whitespace first: half of a pretty-printed spec's characters outside strings are its
    // indentation (nothing structural is this low).
    if (c <= 0x20) continue;
    if (c === 0x22) {
      // Skip the string with a native search for its closing quote: one not preceded by an
      // odd run of backslashes. (Unterminated: nothing after it counts.)
      let q = i;
      for (;;) {
        q = text.indexOf('"', q + 1);
        if (q < 0) return { deepAt: -1, properties, containers };
        let b = q - 1;
        while (b > i && text.charCodeAt(b) === 0x5c) b--;
        if ((q - 1 - b) % 2 === 0) break;
      }
      i = q;
    } else if (c === 0x3a) properties++;
    else if (c === 0x5b || c === 0x7b) {
      containers++;
      if (++depth > max) return { deepAt: i, properties, containers };
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return { deepAt: -1, properties, containers };
}

/** The number of own properties of every object in a JSON.parse value, nested ones included. */
export function ownKeyCount(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  let n = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) n += ownKeyCount(v[i]);
    return n;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  n = keys.length;
  for (let i = 0; i < keys.length; i++) {
    const x = o[keys[i]!];
    if (typeof x === 'object' && x !== null) n += ownKeyCount(x);
  }
  return n;
}
